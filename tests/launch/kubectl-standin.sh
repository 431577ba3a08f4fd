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

pod_host() { # <statefulset>-K -> K+1
  local k=${1##*-}
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
