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
#   --workdir DIR         scratch directory inside the first pod (default /tmp/fabric-bench)
#   --iface NAME          interface for MPI's own traffic (default eth0)
#   --mpirun-arg ARG      extra mpirun argument (repeatable)
#   --profile NAME        reference profile for the verdict (default: the one
#                         fabric-report picks from GPU model, nodes and network)
#   --profiles DIR        more reference profiles (fabric-report check --profiles)
#   --kubectl CMD         kubectl to use (default $KUBECTL, else kubectl)
#   --dry-run             print every command and generated script, run nothing
#                         (pods are assumed to be fabric-bench-0..N-1)
#
# Exit: fabric-report's verdict (0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL,
# 23 INCOMPLETE), or a launch error (docs/exit-codes.md).
set -uo pipefail
# The FB_* variables configure lib.sh's script generators.
# shellcheck disable=SC2034
FB_PROG=kubectl.sh
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

ns="fabric-bench"
selector=app.kubernetes.io/name=fabric-bench,app.kubernetes.io/component=worker
container="fabric-bench" want_pods="" wait_s=600 ssh_wait=60 fabric="" cluster=${FABRIC_CLUSTER:-}
results=results slots="" bind=numa ssh_port=222 ssh_key=/run/fabric-bench/ssh/id rsh=""
pod_root=/opt/fabric-bench pod_bin="" workdir=/tmp/fabric-bench iface=eth0
read -r -a kubectl <<<"${KUBECTL:-kubectl}"
extra_env=() mpirun_extra=() report_args=()

need_arg() { [ $# -ge 2 ] || fb_die "$FB_EXIT_USAGE" "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case $1 in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
  esac
  case $1 in
    -n | --namespace) need_arg "$@"; ns=$2; shift ;;
    -l | --selector) need_arg "$@"; selector=$2; shift ;;
    -c | --container) need_arg "$@"; container=$2; shift ;;
    --pods) need_arg "$@"; want_pods=$2; shift ;;
    --wait) need_arg "$@"; wait_s=$2; shift ;;
    --ssh-wait) need_arg "$@"; ssh_wait=$2; shift ;;
    --fabric) need_arg "$@"; fabric=$2; shift ;;
    --env) need_arg "$@"; extra_env+=("$2"); shift ;;
    --cluster) need_arg "$@"; cluster=$2; shift ;;
    --results) need_arg "$@"; results=$2; shift ;;
    --ranks-per-node) need_arg "$@"; slots=$2; shift ;;
    --bind) need_arg "$@"; bind=$2; shift ;;
    --ssh-port) need_arg "$@"; ssh_port=$2; shift ;;
    --ssh-key) need_arg "$@"; ssh_key=$2; shift ;;
    --rsh) need_arg "$@"; rsh=$2; shift ;;
    --pod-root) need_arg "$@"; pod_root=$2; shift ;;
    --pod-bin) need_arg "$@"; pod_bin=$2; shift ;;
    --workdir) need_arg "$@"; workdir=$2; shift ;;
    --iface) need_arg "$@"; iface=$2; shift ;;
    --mpirun-arg) need_arg "$@"; mpirun_extra+=("$2"); shift ;;
    --profile) need_arg "$@"; report_args+=(--profile "$2"); shift ;;
    --profiles) need_arg "$@"; report_args+=(--profiles "$2"); shift ;;
    --kubectl) need_arg "$@"; read -r -a kubectl <<<"$2"; shift ;;
    --dry-run) FB_DRY_RUN=1 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fb_die "$FB_EXIT_USAGE" "unknown option $1 (launcher options go before the collective; see --help)" ;;
    *) break ;;
  esac
  shift
done

k() { "${kubectl[@]}" "$@"; }
kx() { fb_do "${kubectl[@]}" "$@"; }

# ---- keygen: one key per job, only ever in a Secret ------------------------------
if [ "${1:-}" = keygen ]; then
  fb_need ssh-keygen "install openssh-client"
  tmp=$(mktemp -d) || fb_die "$FB_EXIT_RUNTIME" "cannot create a temporary directory"
  trap 'rm -rf "$tmp"' EXIT
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

[ $# -ge 1 ] || fb_die "$FB_EXIT_USAGE" "no collective given: e.g. kubectl.sh all_reduce -b 1K -e 16G -f 2"
coll=$(fb_collective "$1") ||
  fb_die "$FB_EXIT_USAGE" "unknown collective '$1': use all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv"
case $bind in numa | core | none) ;; *) fb_die "$FB_EXIT_USAGE" "--bind wants numa, core or none, got '$bind'" ;; esac
fb_check_uint --wait "$wait_s"
fb_check_uint --ssh-wait "$ssh_wait"
[ -z "$want_pods" ] || fb_check_uint --pods "$want_pods"
[ -z "$slots" ] || fb_check_uint --ranks-per-node "$slots"
for kv in "${extra_env[@]+"${extra_env[@]}"}"; do
  [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || fb_die "$FB_EXIT_USAGE" "--env wants KEY=VALUE, got '$kv'"
done
[ "$FB_DRY_RUN" = 1 ] || fb_need "${kubectl[0]}" "install kubectl or pass --kubectl"
fb_need jq "install jq (apt-get install jq)"
FB_LAUNCH_ERR=$(mktemp) || fb_die "$FB_EXIT_RUNTIME" "cannot create a temporary file"
trap 'rm -f "$FB_LAUNCH_ERR"' EXIT

# ---- wait until every pod and container is Ready, with a bound --------------------
# One line per pod: name, ready?, host name, GPUs, fabric annotation, and why
# it is not ready. Native sidecars (initContainers with restartPolicy Always)
# count as containers, as kubectl get pods shows them (2/2).
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
  ] | join("\t")'

# The fix that goes with the first problem seen.
pod_fix() {
  case $1 in
    *unschedulable*) echo "free the resources it asks for (GPUs, fabric devices) or lower them in the overlay" ;;
    *tcpxo-daemon*) echo "kubectl -n $ns logs $2 -c tcpxo-daemon: RxDM seeing 0/8 GPUs means the /sys mount is missing, 7/8 a gVNIC in a GPU NIC slot" ;;
    *ContainerCreating*) echo "kubectl -n $ns describe pod $2: a missing Secret fabric-bench-ssh (launch/kubectl.sh keygen -n $ns) or ConfigMap keeps it there" ;;
    *ImagePull* | *ErrImage*) echo "the image cannot be pulled: check the image name and tag in the overlay and the registry's credentials" ;;
    *CrashLoop* | *terminated*) echo "kubectl -n $ns logs $2 --all-containers tells why a container exits" ;;
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
    if ! json=$(k -n "$ns" get pods -l "$selector" -o json 2>"$FB_LAUNCH_ERR"); then
      fb_die "$FB_EXIT_RUNTIME" "kubectl get pods failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context (kubectl config current-context) and access to namespace $ns"
    fi
    table=$(jq -r --arg c "$container" "$pods_jq" <<<"$json") ||
      fb_die "$FB_EXIT_RUNTIME" "kubectl get pods returned something that is not a pod list"
    n=0 nready=0 first_bad=""
    while IFS=$'\t' read -r name state _ _ _ why; do
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
  while IFS=$'\t' read -r name _ host gpu fab _; do
    pods+=("$name") hosts+=("$host") gpus+=("$gpu") fabrics+=("$fab")
  done <<<"$(sort <<<"$table")"
fi
pod0=${pods[0]}

# Fabric: told, else what the pods were deployed with.
if [ -z "$fabric" ]; then
  fabric=${fabrics[0]:-}
  [ -n "$fabric" ] || fabric=none
fi
lines=$(fb_fabric_env "$fabric") || exit $?
FB_ENV=()
[ -z "$lines" ] || mapfile -t FB_ENV <<<"$lines"
FB_ENV+=("${extra_env[@]+"${extra_env[@]}"}")

if [ -z "$slots" ]; then
  slots=${gpus[0]:-0}
  fb_is_uint "$slots" && [ "$slots" -ge 1 ] || slots=1
fi
if [ -z "$cluster" ]; then
  cluster=$(k config current-context 2>/dev/null) || cluster=""
  [ -n "$cluster" ] || cluster=kubernetes
fi
cluster=$(fb_sanitize_cluster "$cluster")

if [ -n "$rsh" ]; then
  FB_SSH=("$rsh")
else
  FB_SSH=(ssh -p "$ssh_port" -i "$ssh_key" -o BatchMode=yes -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
fi
stamp=$(fb_utc_stamp)
job=$workdir/$stamp-$coll
FB_HOSTS=("${hosts[@]}") FB_SLOTS=$slots FB_BIND=$bind FB_IFACE=$iface FB_SSH_WAIT=$ssh_wait
FB_WORKDIR=$job FB_RESULT=$job/$stamp-$coll.json FB_LOG=$job/$stamp-$coll.log
pod_bin=${pod_bin:-$pod_root/bin}
FB_RANK_SH=$pod_root/launch/rank.sh FB_COLL=$pod_bin/fabric-coll
FB_COLL_ARGS=("$@" --cluster "$cluster")
FB_MPIRUN_EXTRA=("${mpirun_extra[@]+"${mpirun_extra[@]}"}")
local_dir=$results/$cluster

fb_info "${#pods[@]} pods ready (${pods[*]}), $slots ranks each, fabric $fabric; mpirun in $pod0"

# ---- in the first pod: preflight, then the run ----------------------------------
# ship SCRIPT NAME: copies a generated script into the first pod.
ship() {
  fb_show_script "$2 (in $pod0)" < <(printf '%s\n' "$1")
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" exec -i "$pod0" -c "$container" -- sh -c "mkdir -p '$job' && cat > '$job/$2'") < $2"
    return 0
  fi
  printf '%s\n' "$1" | k -n "$ns" exec -i "$pod0" -c "$container" -- sh -c "mkdir -p '$job' && cat > '$job/$2'" ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl exec into $pod0 failed: check the pod and container names (-c $container)"
}
ship "$(fb_preflight_script)" preflight.sh
ship "$(fb_run_script)" run.sh
kx -n "$ns" exec "$pod0" -c "$container" -- bash "$job/preflight.sh" || exit $?
rc=0
kx -n "$ns" exec "$pod0" -c "$container" -- bash "$job/run.sh" || rc=$?

# ---- results back, verdict ----------------------------------------------------------
result=$local_dir/$stamp-$coll.json
if [ "$FB_DRY_RUN" = 1 ]; then
  kx -n "$ns" cp -c "$container" "$pod0:$FB_RESULT" "$result"
  kx -n "$ns" cp -c "$container" "$pod0:$FB_LOG" "$local_dir/$stamp-$coll.log"
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
  "$report" check "$result" "${report_args[@]+"${report_args[@]}"}"
  exit $?
fi
# No fabric-report here: the image has one.
k -n "$ns" exec "$pod0" -c "$container" -- "$pod_bin/fabric-report" check "$FB_RESULT" "${report_args[@]+"${report_args[@]}"}"
v=$?
[ "$v" -eq 126 ] || [ "$v" -eq 127 ] && exit "$rc"
exit "$v"
