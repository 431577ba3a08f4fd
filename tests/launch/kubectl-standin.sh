#!/usr/bin/env bash
# Stand-in for kubectl in the launcher tests: pods fabric-bench-0..N-1 are the
# network-namespace hosts FBL_SET1..N of scripts/testhosts.sh, so everything
# after kubectl (exec, ssh between pods, mpirun, cp) is real.
#
#   get pods -l SEL -o json            pod list in the state FBL_SCENARIO says
#   exec [-i] POD [-c C] -- CMD...     CMD inside the pod's host
#   cp [-c C] POD:PATH LOCAL           file from the pod's host
#   create secret generic ... --dry-run=client -o yaml   (real kubectl, offline)
#   apply -f -                         saves the object in $FBL_STATE/applied.yaml
#   config current-context             $FBL_CONTEXT (default "fbl-test")
#   get RESOURCE NAME -o json          the object of that kind and name among the
#                                      JSON and YAML files of $FBL_ARTIFACTS
#                                      (NotFound otherwise, as kubectl says it)
#   get nodes -o json                  $FBL_NODES, else two free GPU nodes
#   get nodes -l SEL -o json           those of them whose labels match SEL
#                                      (KEY=VALUE, comma-separated)
#   label node N K=V... K-... [--overwrite]
#   taint node N K=V:EFFECT|K:EFFECT- [--overwrite]
#                                      recorded in $FBL_STATE/marks and applied
#                                      to $FBL_NODES; on the node FBL_FAIL_NODE
#                                      they fail as a refused patch does
#   get pods -A -o json                $FBL_ALL_PODS, else no pods
#   delete KIND/NAME ...               records the names in $FBL_STATE/deleted
#   patch --local ...                  (real kubectl, offline)
#   kustomize DIR                      (real kubectl, offline)
#   logs POD [-c C]                    an env pod's output
#
# Once an Indexed Job, JobSet or PyTorchJob is applied (launch/kubectl.sh
# --launcher env), its pods start as the kubelet would start them: pod K's
# worker container (FBL_CONTAINER, else pytorch in a PyTorchJob, else the
# first with a command) runs its command and args in host K+1 with its env values and
# the variables the controller gives (JOB_COMPLETION_INDEX; a PyTorchJob's
# RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), under scripts/gpu-standin.sh.
# A pod beyond the hosts stays Pending (unschedulable). The Secrets it
# mounts are files under FBL_STATE (env values under the mount path follow
# them), and pod 0's name under its headless Service resolves to host 1, as
# the cluster's DNS would answer: any other name is left as given.
#
# Once a StatefulSet is applied (launch/kubectl.sh --from), the pods are
# named after it and have its pod template's containers and sidecars.
#
# Environment: FBL_SET (host set, "fbl"), FBL_COUNT (pods, 2), FBL_STATE (a
# directory for the call log and counters), FBL_SCENARIO: ready (default),
# pending, sidecar, none, badname, slow (Ready from the third poll on), probe
# (a pod is Ready while its host's sshd accepts TCP connections, as the
# workers' tcpSocket readinessProbe sees it; FBL_SSH_PORT, 2222), hang (get
# pods never answers, as an API server that accepts and stalls), noannot
# (pods without the fabric annotation), badhost (pod 1's host name is an ssh
# option); FBL_FABRIC (pod annotation, tcp-baseline; set and empty: an empty
# annotation), FBL_GPUS (GPU limit, "1"), FBL_POD_NODES (the pods' nodes,
# spec.nodeName: comma-separated, default gpu-node-K).
set -uo pipefail
set_name=${FBL_SET:-fbl}
count=${FBL_COUNT:-2}
state=${FBL_STATE:?FBL_STATE must name a directory}
scenario=${FBL_SCENARIO:-ready}
root=$(cd "$(dirname "$0")/../.." && pwd)
echo "kubectl $*" >>"$state/calls"

die() { echo "stand-in kubectl: $*" >&2; exit 1; }

# Global flags the launchers use.
ns_args=()
while [ $# -gt 0 ]; do
  case $1 in
    -n | --namespace) ns_args=(-n "$2"); shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "no command"

pod_host() { # <statefulset>-K -> K+1; an env pod -> its host
  local k=${1##*-} h
  if [ -s "$state/envpods" ]; then
    h=$(awk -v p="$1" '$1 == p { print $2 }' "$state/envpods")
    [ -n "$h" ] || die "pods \"$1\" not found"
    [ "$h" != - ] || die "pod $1 is Pending: it has no node"
    echo "$h"
    return
  fi
  if ! [[ $k =~ ^[0-9]+$ ]] || [ "$k" -ge "$count" ]; then die "pods \"$1\" not found"; fi
  echo $((k + 1))
}

# The applied StatefulSet's name and pod template (null before one is applied).
applied_template() {
  [ -s "$state/applied.yaml" ] || { echo null; return; }
  jq -c '[(.items // [.])[] | select(.kind == "StatefulSet")][0].spec.template // null' "$state/applied.yaml" 2>/dev/null || echo null
}
pod_prefix() {
  local n=""
  [ -s "$state/applied.yaml" ] &&
    n=$(jq -r '[(.items // [.])[] | select(.kind == "StatefulSet")][0].metadata.name // empty' "$state/applied.yaml" 2>/dev/null)
  echo "${n:-fabric-bench}"
}

# artifact RESOURCE NAME: the fixture of that kind and name, as JSON.
artifact() {
  local res=${1%%.*} f
  res=${res,,}
  for f in "${FBL_ARTIFACTS:-/nonexistent}"/*.json "${FBL_ARTIFACTS:-/nonexistent}"/*.yaml; do
    [ -f "$f" ] || continue
    /usr/bin/kubectl patch --local -f "$f" --type merge -p '{}' -o json 2>/dev/null |
      jq -e --arg r "$res" --arg n "$2" --arg ns "${ns_args[1]:-default}" '
        select((.kind | ascii_downcase) + "s" == $r and .metadata.name == $n
               and (.metadata.namespace == null or .metadata.namespace == $ns))' && return 0
  done
  echo "Error from server (NotFound): $1 \"$2\" not found" >&2
  return 1
}

# pod_node K: the node pod K runs on: the Kth of the comma-separated
# FBL_POD_NODES, else gpu-node-K (the default node list's names).
pod_node() {
  local nodes=()
  IFS=, read -r -a nodes <<<"${FBL_POD_NODES:-}"
  echo "${nodes[$1]:-gpu-node-$1}"
}

pod_json() { # pod_json K: one pod object
  local k=$1
  local host="$set_name$((k + 1))" phase=Running sidecar_ready=true main_ready=true cond='[]'
  case $scenario in
    pending) if [ "$k" -eq 1 ]; then
        phase=Pending main_ready=false sidecar_ready=false
        cond='[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]'
      fi ;;
    sidecar) [ "$k" -eq 0 ] && sidecar_ready=false ;;
    badname) [ "$k" -eq 1 ] && host="nohost-$set_name" ;;
    badhost) [ "$k" -eq 1 ] && host="-oProxyCommand=touch${set_name}" ;;
    slow)
      local polls; polls=$(cat "$state/polls" 2>/dev/null || echo 0)
      [ "$polls" -lt 3 ] && main_ready=false ;;
    probe)
      # shellcheck disable=SC2016 # expands in the pod's shell
      "$root/scripts/testhosts.sh" exec "$set_name" $((k + 1)) timeout 2 \
        bash -c 'exec 3<>"/dev/tcp/$(hostname)/$0"' "${FBL_SSH_PORT:-2222}" </dev/null >/dev/null 2>&1 ||
        main_ready=false ;;
  esac
  jq -n --arg name "$(pod_prefix)-$k" --arg host "$host" --arg phase "$phase" \
    --argjson sr "$sidecar_ready" --argjson mr "$main_ready" --argjson cond "$cond" \
    --arg node "$(pod_node "$k")" --arg fabric "${FBL_FABRIC-tcp-baseline}" --arg gpus "${FBL_GPUS:-1}" --arg scenario "$scenario" \
    --argjson applied "$(applied_template)" '{
    metadata: ({name: $name} + if $scenario == "noannot" then {} else {annotations: {"fabric-bench/fabric": $fabric}} end),
    spec: ({hostname: $host, nodeName: $node,
      initContainers: [{name: "tcpxo-daemon", restartPolicy: "Always"}],
      containers: [{name: "fabric-bench", resources: {limits: {"nvidia.com/gpu": $gpus}}}]}
      + if $applied then {initContainers: ($applied.spec.initContainers // []),
          containers: $applied.spec.containers} else {} end)
  } | .status = {phase: $phase, conditions: $cond,
      initContainerStatuses: [.spec.initContainers[] | {name, ready: $sr,
        state: (if $sr then {running: {}} else {running: {}} end)}],
      containerStatuses: [.spec.containers[] | {name, ready: $mr,
        state: (if $phase == "Pending" then {waiting: {reason: "ContainerCreating"}} else {running: {}} end)}]}'
}

# ---- env-launched workloads ------------------------------------------------------
# env_pods: one line per pod of the applied workload, as JSON:
# {name, rank, hostname, labels, annotations, template, env: [{name, value}]}.
env_pods() {
  jq -c --arg c "${FBL_CONTAINER:-}" '
    [(.items // [.])[]] as $all
    | ($all[] | select(.kind == "Job" or .kind == "JobSet" or .kind == "PyTorchJob")) as $w
    | $w.metadata.name as $n
    | if $w.kind == "Job" then
        range($w.spec.completions // 1) as $k
        | {name: "\($n)-\($k)", rank: $k, hostname: "\($n)-\($k)", sub: $w.spec.template.spec.subdomain,
           labels: {"batch.kubernetes.io/job-name": $n, "job-name": $n},
           annotations: {"batch.kubernetes.io/job-completion-index": "\($k)"},
           template: $w.spec.template, env: [{name: "JOB_COMPLETION_INDEX", value: "\($k)"}]}
      elif $w.kind == "JobSet" then
        $w.spec.replicatedJobs[0] as $rj
        | range($rj.template.spec.completions // 1) as $k
        | {name: "\($n)-\($rj.name)-0-\($k)", rank: $k, hostname: "\($n)-\($rj.name)-0-\($k)",
           sub: ($w.spec.network.subdomain // $n),
           labels: {"jobset.sigs.k8s.io/jobset-name": $n, "jobset.sigs.k8s.io/job-index": "0"},
           annotations: {"batch.kubernetes.io/job-completion-index": "\($k)"},
           template: $rj.template.spec.template, env: [{name: "JOB_COMPLETION_INDEX", value: "\($k)"}]}
      else
        $w.spec.pytorchReplicaSpecs as $s
        | (($s.Master.replicas // 1) + ($s.Worker.replicas // 0)) as $size
        | ([$s.Master.template.spec.containers[] | select(.name == "pytorch") | .ports[]? | select(.name == "pytorchjob-port") | .containerPort][0] // 23456) as $port
        | range($size) as $k
        | (if $k == 0 then {t: "master", i: 0, tpl: $s.Master.template} else {t: "worker", i: ($k - 1), tpl: $s.Worker.template} end) as $r
        | {name: "\($n)-\($r.t)-\($r.i)", rank: $k, hostname: "\($n)-\($r.t)-\($r.i)", sub: null,
           labels: {"training.kubeflow.org/job-name": $n, "training.kubeflow.org/replica-type": $r.t,
                    "training.kubeflow.org/replica-index": "\($r.i)"},
           annotations: {}, template: $r.tpl,
           env: [{name: "RANK", value: "\($k)"}, {name: "WORLD_SIZE", value: "\($size)"},
                 {name: "MASTER_ADDR", value: "\($n)-master-0"}, {name: "MASTER_PORT", value: "\($port)"},
                 {name: "PYTHONUNBUFFERED", value: "1"}]}
      end
    | .container = (if $c != "" then $c elif $w.kind == "PyTorchJob" then "pytorch"
                    else ([.template.spec.containers[] | select(.command) | .name][0] // "fabric-bench") end)
    | .secrets = [$all[] | select(.kind == "Secret") | {key: .metadata.name,
                   value: ((.stringData // {}) + ((.data // {}) | map_values(@base64d)))}] ' "$state/applied.yaml"
}

# start_env_pods: runs every pod of the applied workload that has a host.
start_env_pods() {
  local line k host name pod0 rundir
  : >"$state/envpods"
  pod0=""
  while IFS= read -r line; do
    k=$(jq -r .rank <<<"$line") name=$(jq -r .name <<<"$line")
    [ -n "$pod0" ] || pod0=$(jq -r 'if .sub then "\(.hostname).\(.sub)" else .hostname end' <<<"$line")
    if [ "$k" -ge "$count" ]; then echo "$name -" >>"$state/envpods"; continue; fi
    host=$((k + 1))
    echo "$name $host" >>"$state/envpods"
    rundir=$state/mnt/$k
    mkdir -p "$rundir"
    # The Secrets the worker mounts, as files; env values under a mount
    # path point into them.
    local mounts
    mounts=$(jq -c '. as $p | [.template.spec.containers[] | select(.name == $p.container) | .volumeMounts[]?
      | .name as $v | ($p.template.spec.volumes[]? | select(.name == $v) | .secret.secretName // empty) as $s
      | {path: .mountPath, files: ([$p.secrets[] | select(.key == $s) | .value][0] // {})}]' <<<"$line")
    jq -r --arg d "$rundir" '.[] | .path as $p | .files | to_entries[] | "\($d)\($p)/\(.key)\u001f\(.value | @base64)"' <<<"$mounts" |
      while IFS=$'\x1f' read -r f v; do mkdir -p "$(dirname "$f")" && base64 -d <<<"$v" >"$f"; done
    local envs=() cmd=()
    while IFS= read -r kv; do envs+=("$kv"); done < <(jq -r --arg d "$rundir" --argjson mounts "$mounts" --arg pod0 "$pod0" --arg host0 "${set_name}1" '
      . as $p | ([.template.spec.containers[] | select(.name == $p.container) | .env[]? | select(.value != null)] + $p.env)
      | .[] | .value as $v
      | "\(.name)=\(if .name == "MASTER_ADDR" and $v == $pod0 then $host0
                     elif any($mounts[]; . as $m | $v | startswith($m.path)) then $d + $v else $v end)"' <<<"$line")
    while IFS= read -r a; do cmd+=("$a"); done < <(jq -r '. as $p | .template.spec.containers[] | select(.name == $p.container) | (.command // []) + (.args // []) | .[]' <<<"$line")
    [ ${#cmd[@]} -gt 0 ] || die "pod $name: its container has no command"
    (
      setsid "$root/scripts/gpu-standin.sh" "$root/scripts/testhosts.sh" exec "$set_name" "$host" \
        env "${envs[@]}" "${cmd[@]}" </dev/null >"$state/envpod-$k.log" 2>&1
      echo $? >"$state/envpod-$k.rc"
    ) >/dev/null 2>&1 &
    echo $! >"$state/envpod-$k.pid"
  done < <(env_pods)
}

# env_pod_json LINE: the pod in its state now.
env_pod_json() {
  local k phase=Running rc="" name
  k=$(jq -r .rank <<<"$1") name=$(jq -r .name <<<"$1")
  if [ "$(awk -v p="$name" '$1 == p { print $2 }' "$state/envpods")" = - ]; then phase=Pending
  elif [ -s "$state/envpod-$k.rc" ]; then rc=$(cat "$state/envpod-$k.rc"); if [ "$rc" = 0 ]; then phase=Succeeded; else phase=Failed; fi
  fi
  jq -c --arg phase "$phase" --arg rc "$rc" --arg node "$(pod_node "$k")" '{
    metadata: {name, labels: ((.template.metadata.labels // {}) + .labels),
               annotations: ((.template.metadata.annotations // {}) + .annotations)},
    spec: ((.template.spec | {containers, initContainers}) + {hostname: .hostname, subdomain: .sub}
           + (if $phase == "Pending" then {} else {nodeName: $node} end)),
    status: {phase: $phase,
      conditions: (if $phase == "Pending" then [{type: "PodScheduled", status: "False", reason: "Unschedulable",
        message: "0/\(.rank) nodes are available: \(.rank) Insufficient nvidia.com/gpu."}] else [] end),
      containerStatuses: [.template.spec.containers[] | {name, ready: ($phase == "Running"),
        state: (if $phase == "Pending" then {waiting: {reason: "ContainerCreating"}}
                elif $rc != "" then {terminated: {exitCode: ($rc | tonumber), reason: (if $rc == "0" then "Completed" else "Error" end)}}
                else {running: {}} end)}]}}' <<<"$1"
}

# mark_node label|taint NODE ARGS...: the change, applied to $FBL_NODES.
mark_node() {
  local what=$1 node=$2 a prog
  shift 2
  echo "$what $node $*" >>"$state/marks"
  [ "$node" != "${FBL_FAIL_NODE:-}" ] ||
    die "Error from server (Forbidden): nodes \"$node\" is forbidden: cannot patch resource \"nodes\""
  [ -n "${FBL_NODES:-}" ] || return 0
  jq -e --arg n "$node" 'any(.items[]; .metadata.name == $n)' "$FBL_NODES" >/dev/null ||
    die "Error from server (NotFound): nodes \"$node\" not found"
  # shellcheck disable=SC2016 # jq programs
  for a in "$@"; do
    local k="" v="" e=""
    case $what:$a in
      *:--overwrite) continue ;;
      label:*=*) k=${a%%=*} v=${a#*=} prog='.metadata.labels = ((.metadata.labels // {}) + {($k): $v})' ;;
      label:*-) k=${a%-} prog='.metadata.labels |= ((. // {}) | del(.[$k]))' ;;
      taint:*=*:*) k=${a%%=*} v=${a#*=} e=${v#*:} v=${v%%:*}
        prog='.spec.taints = ([(.spec.taints // [])[] | select(.key != $k or .effect != $e)] + [{key: $k, value: $v, effect: $e}])' ;;
      taint:*:*-) k=${a%%:*} e=${a#*:} e=${e%-} prog='.spec.taints |= [(. // [])[] | select(.key != $k or .effect != $e)]' ;;
      *) die "unsupported: $what $a" ;;
    esac
    jq --arg n "$node" --arg k "$k" --arg v "$v" --arg e "$e" \
      ".items |= map(if .metadata.name == \$n then $prog else . end)" "$FBL_NODES" >"$FBL_NODES.new" &&
      mv "$FBL_NODES.new" "$FBL_NODES"
  done
}

case $1 in
  label | taint)
    [ "${2:-}" = node ] || [ "${2:-}" = nodes ] || die "unsupported: $*"
    mark_node "$1" "${@:3}"
    ;;
  get)
    if [ "${2:-}" = nodes ]; then
      if [ -n "${FBL_NODES:-}" ]; then cat "$FBL_NODES"; else
        jq -n '{kind: "List", items: [range(2) | {metadata: {name: "gpu-node-\(.)"}, spec: {},
          status: {allocatable: {"nvidia.com/gpu": "8"}, conditions: [{type: "Ready", status: "True"}]}}]}'
      fi | if [ "${3:-}" = -l ]; then
        jq --arg sel "$4" '($sel | split(",") | map(split("=") | {key: .[0], value: .[1]}) | from_entries) as $want
          | .items |= map(select(.metadata.labels // {} | contains($want)))'
      else cat; fi
      exit 0
    fi
    if [ "${2:-}" = pods ] && [ "${3:-}" = -A ]; then
      if [ -n "${FBL_ALL_PODS:-}" ]; then cat "$FBL_ALL_PODS"; else echo '{"kind":"List","items":[]}'; fi
      exit 0
    fi
    if [ "${3:-}" != -l ] && [ "${3:-}" != -A ] && [ "${4:-}" = -o ]; then artifact "$2" "$3"; exit; fi
    [ "${2:-}" = pods ] || die "unsupported: get $*"
    polls=$(cat "$state/polls" 2>/dev/null || echo 0)
    echo $((polls + 1)) >"$state/polls"
    [ "$scenario" = hang ] && exec sleep 3600
    if [ -s "$state/envpods" ]; then
      env_pods | while IFS= read -r line; do env_pod_json "$line"; done | jq -s '{apiVersion: "v1", kind: "List", items: .}'
      exit 0
    fi
    if [ "$scenario" = none ]; then
      echo '{"apiVersion":"v1","kind":"List","items":[]}'
      exit 0
    fi
    for ((k = 0; k < count; k++)); do pod_json "$k"; done | jq -s '{apiVersion: "v1", kind: "List", items: .}'
    ;;
  exec)
    shift
    stdin=0
    [ "${1:-}" = -i ] && { stdin=1; shift; }
    pod=$1; shift
    [ "${1:-}" = -c ] && shift 2
    [ "${1:-}" = -- ] && shift
    i=$(pod_host "$pod") || exit 1
    if [ "$stdin" = 1 ]; then
      exec "$root/scripts/testhosts.sh" exec "$set_name" "$i" "$@"
    fi
    exec "$root/scripts/testhosts.sh" exec "$set_name" "$i" "$@" </dev/null
    ;;
  cp)
    shift
    [ "${1:-}" = -c ] && shift 2
    src=$1 dst=$2
    i=$(pod_host "${src%%:*}") || exit 1
    if ! "$root/scripts/testhosts.sh" exec "$set_name" "$i" cat "${src#*:}" >"$dst.part" </dev/null; then
      rm -f "$dst.part"
      die "${src#*:}: no such file"
    fi
    mv "$dst.part" "$dst"
    ;;
  create)
    # Client-side rendering needs no cluster: the real kubectl does it.
    /usr/bin/kubectl "${ns_args[@]}" "$@"
    ;;
  apply)
    if [ "${2:-}" != -f ] || [ "${3:-}" != - ]; then die "unsupported: $*"; fi
    cat >"$state/applied.yaml"
    if jq -e '[(.items // [.])[] | select(.kind == "Job" or .kind == "JobSet" or .kind == "PyTorchJob")] | length > 0' \
      "$state/applied.yaml" >/dev/null 2>&1; then
      start_env_pods
    fi
    ;;
  logs)
    k=$(awk -v p="$2" '$1 == p { print NR - 1 }' "$state/envpods" 2>/dev/null)
    [ -n "$k" ] || die "pods \"$2\" not found"
    cat "$state/envpod-$k.log" 2>/dev/null
    ;;
  kustomize)
    /usr/bin/kubectl "$@"
    ;;
  delete)
    shift
    for a in "$@"; do case $a in -*) ;; *) echo "$a" >>"$state/deleted" ;; esac; done
    ;;
  patch)
    [ "${2:-}" = --local ] || die "unsupported: $*"
    /usr/bin/kubectl "$@"
    ;;
  config)
    [ "${2:-}" = current-context ] || die "unsupported: $*"
    printf '%s\n' "${FBL_CONTEXT-fbl-test}"
    ;;
  *) die "unsupported: $*" ;;
esac
