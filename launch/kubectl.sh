#!/usr/bin/env bash
# Runs a fabric-bench sweep across the worker pods of manifests/ with
# `kubectl exec`, copies the result into results/<cluster>/ and prints
# fabric-report's verdict.
#
#   launch/kubectl.sh keygen [-n NS]       per-job ssh key into Secret fabric-bench-ssh
#   launch/kubectl.sh [options] [--] COLLECTIVE [fabric-coll options]
#
#   -n, --namespace NS    namespace of the pods (default fabric-bench)
#   -l, --selector SEL    worker pods (default app.kubernetes.io/name=fabric-bench,
#                         app.kubernetes.io/component=worker)
#   -c, --container NAME  container that runs MPI (default fabric-bench)
#   --pods N              wait for N pods (default: those that exist, at least 2)
#   --wait S              bound on waiting for every container Ready (default 600)
#   --ssh-wait S          bound on waiting for ssh between pods (default 60)
#   --fabric NAME         environment profile (default: the pods' fabric-bench/fabric
#                         annotation); the pods' own environment is kept as well
#   --env KEY=VALUE       more environment (repeatable)
#   --cluster NAME        results/<NAME>/ (default $FABRIC_CLUSTER, else the
#                         kubectl context)
#   --results DIR         local results directory (default results)
#   --ranks-per-node N    ranks per pod (default: the pod's nvidia.com/gpu limit, else 1)
#   --bind numa|core|none CPU binding of each rank (default numa)
#   --ssh-port N, --ssh-key FILE, --rsh CMD
#                         how pods reach each other (default port 222 and the key
#                         pod-sshd.sh installs at /run/fabric-bench/ssh/id)
#   --pod-root DIR        fabric-bench inside the pods (default /opt/fabric-bench)
#   --pod-bin DIR         its programs (default POD_ROOT/bin)
#   --workdir DIR         directory inside the first pod in which each run makes
#                         its own with mktemp -d (default the pod's $TMPDIR, else /tmp)
#   --iface NAME          interface for MPI's own traffic (default eth0)
#   --mpirun-arg ARG      extra mpirun argument (repeatable)
#   --profile NAME        reference profile for the verdict (default: the one
#                         fabric-report picks from GPU model, nodes and network)
#   --profiles DIR        more reference profiles (fabric-report check --profiles)
#   --kubectl CMD         kubectl to use (default $KUBECTL, else kubectl)
#   --dry-run             print every command and generated script, run nothing
#                         (pods are assumed to be fabric-bench-0..N-1)
#
# Option values and the collective's arguments may not hold control
# characters; --cluster is a label (letters, digits, '.', '_', '-'; not '.'
# or '..'), as is FABRIC_CLUSTER; the kubectl context as the default label
# has other characters made '_', '.' and '..' become '_.' and '_..'
# (docs/clusters.md).
#
# Exit: fabric-report's verdict (0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL,
# 23 INCOMPLETE; its 2 or 10 for an unknown --profile or a malformed result),
# or a launch error (docs/exit-codes.md): 2 a bad option or value, 5 no
# kubectl or jq, 6 a pod's host name does not resolve or ssh between pods
# fails, 8 the pods not Ready within --wait, or the API server or the name
# service not answering in time, 9 kubectl get pods, exec or cp failed, or
# the run wrote no result (exit 0), 10 a pod list with bad pod or host
# names, a malformed fabric.env, or a local results directory that cannot be
# made. A run that wrote no result exits with the run's code when that is not
# 0 (a rank's: fabric-coll's 1-9, 130 or 143, rank.sh's 10; or mpirun's or
# kubectl exec's own); with no fabric-report here or in the pod, the run's
# code.
set -uo pipefail
# The FB_* variables configure lib.sh's script generators.
# shellcheck disable=SC2034
FB_PROG=kubectl.sh
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

ns="fabric-bench"
selector=app.kubernetes.io/name=fabric-bench,app.kubernetes.io/component=worker
container="fabric-bench" want_pods="" wait_s=600 ssh_wait=60 slots="" ssh_port=222
ssh_key=/run/fabric-bench/ssh/id rsh="" pod_root=/opt/fabric-bench pod_bin="" workdir=""
read -r -a kubectl <<<"${KUBECTL:-kubectl}"
FB_OPT_FABRIC="" # empty: the pods' annotation

# shellcheck disable=SC2317 # called by fb_parse_options
kubectl_option() {
  FB_TAKEN=2
  case $1 in
    -n | --namespace) fb_need_arg "$@"; ns=$2 ;;
    -l | --selector) fb_need_arg "$@"; selector=$2 ;;
    -c | --container) fb_need_arg "$@"; container=$2 ;;
    --pods) fb_need_arg "$@"; want_pods=$2 ;;
    --wait) fb_need_arg "$@"; wait_s=$2 ;;
    --ssh-wait) fb_need_arg "$@"; ssh_wait=$2 ;;
    --ranks-per-node) fb_need_arg "$@"; slots=$2 ;;
    --ssh-port) fb_need_arg "$@"; ssh_port=$2 ;;
    --ssh-key) fb_need_arg "$@"; ssh_key=$2 ;;
    --rsh) fb_need_arg "$@"; rsh=$2 ;;
    --pod-root) fb_need_arg "$@"; pod_root=$2 ;;
    --pod-bin) fb_need_arg "$@"; pod_bin=$2 ;;
    --workdir) fb_need_arg "$@"; workdir=$2 ;;
    --kubectl) fb_need_arg "$@"; read -r -a kubectl <<<"$2" ;;
    *) FB_TAKEN=0 ;;
  esac
}
fb_parse_options kubectl_option "$@"
set -- "${FB_REST[@]+"${FB_REST[@]}"}"

k() { "${kubectl[@]}" "$@"; }
kx() { fb_do "${kubectl[@]}" "$@"; }

# ---- keygen: one key per job, only ever in a Secret ------------------------------
if [ "${1:-}" = keygen ]; then
  fb_need ssh-keygen "install openssh-client"
  tmp=""
  fb_mktemp tmp -d
  fb_do ssh-keygen -q -t ed25519 -N '' -C "fabric-bench job key" -f "$tmp/id" >/dev/null ||
    fb_die "$FB_EXIT_RUNTIME" "ssh-keygen failed"
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" create secret generic fabric-bench-ssh --type=kubernetes.io/ssh-auth \
      --from-file=ssh-privatekey="$tmp/id" --from-file=ssh-publickey="$tmp/id.pub" --dry-run=client -o yaml) | $(fb_quote "${kubectl[@]}" apply -f -)"
    exit 0
  fi
  k -n "$ns" create secret generic fabric-bench-ssh --type=kubernetes.io/ssh-auth \
    --from-file=ssh-privatekey="$tmp/id" --from-file=ssh-publickey="$tmp/id.pub" --dry-run=client -o yaml |
    k apply -f - >/dev/null ||
    fb_die "$FB_EXIT_RUNTIME" "could not store the key in Secret $ns/fabric-bench-ssh: does namespace $ns exist (kubectl apply -k manifests/overlays/<fabric> creates it)?"
  fb_info "new ssh key in Secret $ns/fabric-bench-ssh; restart the workers to pick it up (kubectl -n $ns delete pods -l $selector)"
  exit 0
fi

fb_check_common kubectl.sh "$@"
coll=$FB_COLLECTIVE
fb_check_uint --wait "$wait_s"
fb_check_uint --ssh-wait "$ssh_wait"
[ -z "$want_pods" ] || fb_check_uint --pods "$want_pods"
[ -z "$slots" ] || fb_check_uint --ranks-per-node "$slots"
fb_check_port --ssh-port "$ssh_port"
fb_check_word --ssh-key "$ssh_key"
[ -z "$rsh" ] || fb_check_word --rsh "$rsh"
[ -z "$workdir" ] || [[ $workdir == /* ]] ||
  fb_die "$FB_EXIT_USAGE" "--workdir wants an absolute path inside the pod, got $(fb_shown "$workdir")"
[ "$FB_DRY_RUN" = 1 ] || fb_need "${kubectl[0]}" "install kubectl or pass --kubectl"
fb_need jq "install jq (apt-get install jq)"
fb_mktemp FB_LAUNCH_ERR

# ---- wait until every pod and container is Ready, with a bound --------------------
# One line per pod: name, ready?, host name, GPUs, fabric annotation, and why
# it is not ready, separated by \x1f: a tab is white space to read, so an
# empty field (a pod without the annotation) would vanish between two.
# Control characters in any field (a multi-line message) become spaces.
# Native sidecars (initContainers with restartPolicy Always) count as
# containers, as kubectl get pods shows them (2/2).
# shellcheck disable=SC2016 # a jq program
pods_jq='
  .items[] |
  (.status.containerStatuses // []) as $cs |
  (.status.initContainerStatuses // []) as $ics |
  ([.spec.initContainers[]? | select(.restartPolicy == "Always") | .name]) as $sidecars |
  ($cs + [$ics[] | select(.name as $n | $sidecars | index($n))]) as $all |
  (([.spec.containers[].name] + $sidecars) | length) as $want |
  ([$all[] | select(.ready)] | length) as $ready |
  (.status.conditions // [] | map(select(.type == "PodScheduled" and .status == "False"))[0].message // "") as $unsched |
  ([$all[] | select(.ready | not) |
     "\(.name) \(.state.waiting.reason // (if .state.terminated then "terminated: " + (.state.terminated.reason // "") else "not ready" end))" +
     (if .state.waiting.message then " (" + .state.waiting.message + ")" else "" end)] | join(", ")) as $why |
  [ .metadata.name,
    (if .status.phase == "Running" and $ready == $want and $want > 0 then "ready" else "waiting" end),
    ((.spec.hostname // .metadata.name) + (if .spec.subdomain then "." + .spec.subdomain else "" end)),
    ((.spec.containers[] | select(.name == $c) | .resources.limits["nvidia.com/gpu"]) // "0"),
    (.metadata.annotations["fabric-bench/fabric"] // ""),
    (if .status.phase == "Pending" and $unsched != "" then "Pending, unschedulable: " + $unsched
     elif .status.phase != "Running" then "\(.status.phase // "Unknown") \($ready)/\($want) ready" + (if $why != "" then ": " + $why else "" end)
     else "\($ready)/\($want) containers ready" + (if $why != "" then ": " + $why else "" end) end)
  ] | map(tostring | gsub("[\u0000-\u001f\u007f]"; " ")) | join("\u001f")'

# The fix that goes with the first problem seen.
pod_fix() {
  case $1 in
    *unschedulable*) echo "free the resources it asks for (GPUs, fabric devices) or lower them in the overlay" ;;
    *tcpxo-daemon*) echo "kubectl -n $ns logs $2 -c tcpxo-daemon: RxDM seeing 0/8 GPUs means the /sys mount is missing, 7/8 a gVNIC in a GPU NIC slot" ;;
    *ContainerCreating*) echo "kubectl -n $ns describe pod $2: a missing Secret fabric-bench-ssh (launch/kubectl.sh keygen -n $ns) or ConfigMap keeps it there" ;;
    *ImagePull* | *ErrImage*) echo "the image cannot be pulled: check the image name and tag in the overlay and the registry's credentials" ;;
    *CrashLoop* | *terminated*) echo "kubectl -n $ns logs $2 --all-containers tells why a container exits" ;;
    *"$container not ready"*) echo "its sshd does not accept connections on port $ssh_port (the readinessProbe): kubectl -n $ns logs $2 -c $container" ;;
    *) echo "kubectl -n $ns describe pod $2" ;;
  esac
}

declare -a pods=() hosts=() gpus=() fabrics=()
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" get pods -l "$selector" -o json)   # until every container is Ready, at most ${wait_s}s"
  for ((i = 0; i < ${want_pods:-2}; i++)); do
    pods+=("fabric-bench-$i") hosts+=("fabric-bench-$i.fabric-bench") gpus+=(0) fabrics+=("")
  done
else
  deadline=$((SECONDS + wait_s))
  while :; do
    # An API server that accepts and stalls must not outlast the bound.
    left=$((deadline - SECONDS))
    json=$(timeout -k 2 $((left > 5 ? left : 5)) "${kubectl[@]}" -n "$ns" get pods -l "$selector" -o json 2>"$FB_LAUNCH_ERR")
    case $? in
      0) ;;
      124 | 137)
        fb_die "$FB_EXIT_TIMEOUT" "kubectl get pods did not answer within ${wait_s}s: check the API server (kubectl cluster-info) and the context (kubectl config current-context)" ;;
      *)
        fb_die "$FB_EXIT_RUNTIME" "kubectl get pods failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context (kubectl config current-context) and access to namespace $ns" ;;
    esac
    table=$(jq -r --arg c "$container" "$pods_jq" <<<"$json") ||
      fb_die "$FB_EXIT_RUNTIME" "kubectl get pods returned something that is not a pod list"
    n=0 nready=0 first_bad=""
    while IFS=$'\x1f' read -r name state _ _ _ why; do
      [ -n "$name" ] || continue
      n=$((n + 1))
      if [ "$state" = ready ]; then nready=$((nready + 1)); else [ -n "$first_bad" ] || first_bad="$name"$'\t'"$why"; fi
    done <<<"$table"
    need=${want_pods:-2}
    [ "$n" -ge "$need" ] && [ "$nready" -eq "$n" ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      if [ "$n" -eq 0 ]; then
        fb_die "$FB_EXIT_TIMEOUT" "no pods match -l $selector in namespace $ns after ${wait_s}s: apply the manifests (kubectl apply -k manifests/overlays/<fabric>) or fix -n/-l"
      elif [ -n "$first_bad" ]; then
        fb_die "$FB_EXIT_TIMEOUT" "pod ${first_bad%%$'\t'*} not Ready after ${wait_s}s (${first_bad#*$'\t'}): $(pod_fix "${first_bad#*$'\t'}" "${first_bad%%$'\t'*}")"
      else
        fb_die "$FB_EXIT_TIMEOUT" "only $n of $need pods exist after ${wait_s}s: scale the StatefulSet (replicas) or pass --pods $n"
      fi
    fi
    sleep 2
  done
  while IFS=$'\x1f' read -r name _ host gpu fab _; do
    # Names go to kubectl, ssh and mpirun as arguments: a pod list must not
    # slip an option or a bad name in.
    [[ $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
      fb_die "$FB_EXIT_INPUT" "kubectl get pods listed a pod named $(fb_shown "$name"), not a Kubernetes name: check the selector (-l) and the API server"
    fb_check_host "$FB_EXIT_INPUT" "pod $name (spec.hostname and spec.subdomain)" "$host"
    pods+=("$name") hosts+=("$host") gpus+=("$gpu") fabrics+=("$fab")
  done <<<"$(sort <<<"$table")"
fi
pod0=${pods[0]}

# Fabric: told, else what the pods were deployed with.
fabric=${FB_OPT_FABRIC:-${fabrics[0]:-}}
fabric=${fabric:-none}
fb_set_env "$fabric"

if [ -z "$slots" ]; then
  slots=${gpus[0]:-0}
  fb_is_uint "$slots" && [ "$slots" -ge 1 ] || slots=1
fi
# The context as the default label: fb_label_from maps what a label cannot
# hold ("..", "a/b"), no context at all is "kubernetes".
context=""
[ -n "$FB_OPT_CLUSTER_FROM" ] || context=$(k config current-context 2>/dev/null) || context=""
cluster=$(fb_cluster "$context" kubernetes)

if [ -n "$rsh" ]; then
  FB_SSH=("$rsh")
else
  FB_SSH=(ssh -p "$ssh_port" -i "$ssh_key" -o BatchMode=yes -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
fi
stamp=$(fb_utc_stamp)
fb_info "${#pods[@]} pods ready (${pods[*]}), $slots ranks each, fabric $fabric; mpirun in $pod0"

# ---- in the first pod: a private directory, the checks, then the run ----------------
# The directory comes from mktemp -d in the pod, under --workdir or the
# pod's TMPDIR: never a name another user of the pod could make first. Every
# value reaches the pod's shell as an argument ($1, $2), never inside the
# command string.
# shellcheck disable=SC2016 # expands in the pod's shell
mkjob='d=${1:-${TMPDIR:-/tmp}}; mkdir -p -- "$d" && mktemp -d "$d/$2"'
job_name=fabric-bench-$stamp-$coll.XXXXXX
in_pod=(-n "$ns" exec "$pod0" -c "$container" --)
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ $(fb_quote "${kubectl[@]}" "${in_pod[@]}" sh -c "$mkjob" sh "$workdir" "$job_name")"
  job=${workdir:-/tmp}/$job_name
else
  job=$(k "${in_pod[@]}" sh -c "$mkjob" sh "$workdir" "$job_name" </dev/null 2>"$FB_LAUNCH_ERR") ||
    fb_die "$FB_EXIT_RUNTIME" "cannot make a directory in pod $pod0 ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check --workdir and the container (-c $container)"
  if [[ $job != /*/"fabric-bench-$stamp-$coll".?????? ]] || fb_has_ctl "$job"; then
    fb_die "$FB_EXIT_RUNTIME" "mktemp -d in pod $pod0 gave $(fb_shown "$job"), not a directory under ${workdir:-its TMPDIR}: check the container's mktemp"
  fi
fi
FB_HOSTS=("${hosts[@]}") FB_SLOTS=$slots FB_BIND=$FB_OPT_BIND FB_IFACE=$FB_OPT_IFACE FB_SSH_WAIT=$ssh_wait
FB_WORKDIR=$job FB_RESULT=$job/$stamp-$coll.json FB_LOG=$job/$stamp-$coll.log
pod_bin=${pod_bin:-$pod_root/bin}
FB_RANK_SH=$pod_root/launch/rank.sh FB_COLL=$pod_bin/fabric-coll
FB_COLL_ARGS=("$@" --cluster "$cluster")
FB_MPIRUN_EXTRA=("${FB_OPT_MPIRUN[@]+"${FB_OPT_MPIRUN[@]}"}")
local_dir=$FB_OPT_RESULTS/$cluster

# ship SCRIPT NAME: copies a generated script into the job's directory.
# shellcheck disable=SC2016 # expands in the pod's shell
ship() {
  local to=(-n "$ns" exec -i "$pod0" -c "$container" -- sh -c 'cat >"$1"' sh "$job/$2")
  fb_show_script "$2 (in $pod0)" < <(printf '%s\n' "$1")
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" "${to[@]}") < $2"
    return 0
  fi
  printf '%s\n' "$1" | k "${to[@]}" ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl exec into $pod0 failed: check the pod and container names (-c $container)"
}
ship "$(fb_preflight_script)" preflight.sh
ship "$(fb_run_script)" run.sh
rc=0
kx "${in_pod[@]}" bash "$job/preflight.sh" || rc=$?
case $rc in
  0) ;;
  "$FB_EXIT_LAUNCH" | "$FB_EXIT_TIMEOUT") exit "$rc" ;; # the checks' own one line
  *) fb_die "$FB_EXIT_RUNTIME" "the checks did not run in pod $pod0 (kubectl exec exit $rc): check the pod, the container (-c $container) and bash in its image" ;;
esac
kx "${in_pod[@]}" bash "$job/run.sh" || rc=$?

# ---- results back, verdict ----------------------------------------------------------
result=$local_dir/$stamp-$coll.json
if [ "$FB_DRY_RUN" = 1 ]; then
  kx -n "$ns" cp -c "$container" "$pod0:$FB_RESULT" "$result"
  kx -n "$ns" cp -c "$container" "$pod0:$FB_LOG" "$local_dir/$stamp-$coll.log"
  kx "${in_pod[@]}" rm -rf -- "$job"
  exit 0
fi
mkdir -p "$local_dir" || fb_die "$FB_EXIT_INPUT" "cannot create $local_dir: choose another --results"
k -n "$ns" cp -c "$container" "$pod0:$FB_RESULT" "$result" >/dev/null 2>&1 || rm -f "$result"
k -n "$ns" cp -c "$container" "$pod0:$FB_LOG" "$local_dir/$stamp-$coll.log" >/dev/null 2>&1 || true
if [ ! -s "$result" ]; then
  fb_die "$(( rc ? rc : FB_EXIT_RUNTIME ))" "the run wrote no result (exit $rc): see $local_dir/$stamp-$coll.log"
fi
fb_info "result: $result"
[ "$rc" -ne 0 ] && fb_info "the run exited $rc; judging what was measured"
if report=$(fb_report_bin); then
  "$report" check "$result" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  v=$?
else
  # No fabric-report here: the image has one.
  k "${in_pod[@]}" "$pod_bin/fabric-report" check "$FB_RESULT" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  v=$?
  [ "$v" -ne 126 ] && [ "$v" -ne 127 ] || v=$rc
fi
# The result and log are here now; a run that failed keeps its directory.
k "${in_pod[@]}" rm -rf -- "$job" </dev/null >/dev/null 2>&1
exit "$v"
