#!/usr/bin/env bash
# Marks the Kubernetes nodes a fleet scan (fabric-scan, kind "scan") found
# failed or slow, and clears the marks of nodes that pass again.
#
#   launch/scan-mark.sh RESULTS.json [--apply] [--taint] [--label-prefix P] [options]
#
# Without --apply it prints the kubectl commands it would run and changes
# nothing. With --apply, each failed or slow node gets the labels
#   P/scan=failed|slow   P/scan-time=<the scan's UTC start, 20260102T030405Z>
# and with --taint also the taint P/scan=<verdict>:NoSchedule. A node that
# passes in a complete scan loses those labels and that taint, if it has
# them; no other label or taint is touched. A node named by several entries
# (two hosts that gave one FABRIC_NODE_NAME) takes the worst of their
# verdicts (failed, slow, untested, pass): it is cleared only when every
# entry passed. An incomplete scan (complete false) removes nothing: a node
# it did not reach has not passed. Untested nodes, and nodes of the cluster
# the scan does not name, keep what they have.
#
#   --apply               run the commands (default: print them)
#   --taint               taint failed and slow nodes too (default: labels only)
#   --label-prefix P      the labels' and taint's prefix (default fabric-bench.io)
#   --nodes FILE          the node list (`kubectl get nodes -o json`) to compare
#                         with, instead of asking kubectl
#   --wait S              bound on each kubectl call in seconds (default 30)
#   --kubectl CMD         kubectl to use (default $KUBECTL, else kubectl)
#   -h, --help            this help
#
# Node names come from the scan's nodes[].node (FABRIC_NODE_NAME of each
# pod, set by launch/kubectl.sh scan); a node without one is reported and
# skipped, a name that is not a DNS-1123 subdomain is refused and never
# reaches kubectl.
#
# Exit (docs/exit-codes.md): 0 every mark done (or printed), 2 a bad option,
# 5 no kubectl or jq, 8 kubectl did not answer within --wait, 9 a kubectl
# call failed or a node the scan names is not in the cluster (the other nodes
# are still done), 10 the results file is missing, not JSON, not a scan, or
# names a node by an invalid name or not at all while failed or slow (the
# other nodes are still done). Several problems: the first one's code.
set -uo pipefail
# shellcheck disable=SC2034 # read by lib.sh
FB_PROG=scan-mark.sh
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

apply=0 taint=0 prefix=fabric-bench.io nodes_file="" wait_s=30 doc=""
read -r -a kubectl <<<"${KUBECTL:-kubectl}"

parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
      --apply) apply=1 ;;
      --taint) taint=1 ;;
      --label-prefix) fb_need_arg "$@"; prefix=$2; shift ;;
      --nodes) fb_need_arg "$@"; nodes_file=$2; shift ;;
      --wait) fb_need_arg "$@"; wait_s=$2; shift ;;
      --kubectl) fb_need_arg "$@"; read -r -a kubectl <<<"$2"; shift ;;
      -h | --help) usage; exit 0 ;;
      --) shift; [ $# -eq 0 ] || { doc_arg "$1"; shift; }; [ $# -eq 0 ] || too_many "$1" ;;
      -*) fb_die "$FB_EXIT_USAGE" "unknown option $(fb_shown "$1"): see --help" ;;
      *) doc_arg "$1" ;;
    esac
    shift
  done
}
doc_arg() { [ -z "$doc" ] || too_many "$1"; doc=$1; }
too_many() { fb_die "$FB_EXIT_USAGE" "one results file only, got $(fb_shown "$doc") and $(fb_shown "$1")"; }

# A DNS-1123 subdomain: what Kubernetes accepts as a node name.
is_node_name() {
  [ ${#1} -le 253 ] && [[ $1 =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]]
}

check_args() {
  [ -n "$doc" ] || fb_die "$FB_EXIT_USAGE" "no results file given: e.g. launch/scan-mark.sh results/prod/20260102T030405Z-scan.json"
  fb_check_text "the results file" "$doc"
  fb_check_uint --wait "$wait_s"
  # The prefix of a label key is a DNS subdomain of at most 253 characters.
  is_node_name "$prefix" ||
    fb_die "$FB_EXIT_USAGE" "--label-prefix wants a DNS subdomain (lower-case letters, digits, '-' and '.'), got $(fb_shown "$prefix")"
  fb_need jq "install jq (apt-get install jq)"
  if [ "$apply" = 1 ] || [ -z "$nodes_file" ]; then fb_need "${kubectl[0]}" "install kubectl or pass --kubectl"; fi
}

# read_doc: the scan's facts into $rows (one node per line: name state,
# name, host, verdict; \x1f between), $complete and $stamp.
read_doc() {
  if [ ! -f "$doc" ] || [ ! -r "$doc" ]; then
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") is not a readable file: give the scan's results file (results/<cluster>/<stamp>-scan.json)"
  fi
  [ "$(stat -c %s -- "$doc")" -le 268435456 ] ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") is over 256 MiB: not a scan's results file"
  jq -e 'type == "object"' "$doc" >/dev/null 2>&1 ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") is not a JSON object: give the results file fabric-scan wrote (-J)"
  local kind
  kind=$(jq -r 'if .schema == "fabric-bench.result" then (.kind | tostring) else "not a fabric-bench result" end' "$doc")
  [ "$kind" = scan ] ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") is $(fb_shown "$kind"), not a scan: give fabric-scan's results (kind \"scan\")"
  jq -e '(.nodes | type) == "array" and (.complete | type) == "boolean"' "$doc" >/dev/null ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") has no nodes list or complete flag: a damaged scan document; run the scan again"
  complete=$(jq -r .complete "$doc")
  local t
  t=$(jq -r '.start_time // "" | tostring' "$doc" | tr -d ':-')
  # The label value's characters ([A-Za-z0-9._-]): the stamp without ':'.
  [[ $t =~ ^[0-9]{8}T[0-9]{6}(\.[0-9]+)?Z$ ]] ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") has no UTC start_time (2026-01-02T03:04:05Z): a damaged scan document; run the scan again"
  stamp=${t%%.*}
  [[ $stamp == *Z ]] || stamp+=Z
  # shellcheck disable=SC2016 # a jq program
  rows=$(jq -r '.nodes[] | [
      (if .node == null then "null" elif (.node | type) == "string" then "name" else "bad" end),
      (.node // "" | tostring), (.host // "" | tostring), (.verdict // "" | tostring)
    ] | map(gsub("[\u0000-\u001f\u007f]"; "?")) | join("\u001f")' "$doc") ||
    fb_die "$FB_EXIT_INPUT" "$(fb_shown "$doc") has nodes that are not objects: a damaged scan document; run the scan again"
}

# read_cluster: the node list into $cluster_nodes (a file), from --nodes or
# kubectl get nodes, bounded.
read_cluster() {
  fb_mktemp cluster_nodes
  if [ -n "$nodes_file" ]; then
    if [ ! -f "$nodes_file" ] || [ ! -r "$nodes_file" ]; then
      fb_die "$FB_EXIT_INPUT" "--nodes $(fb_shown "$nodes_file") is not a readable file: save it with kubectl get nodes -o json"
    fi
    cp -- "$nodes_file" "$cluster_nodes"
  else
    local err
    fb_mktemp err
    timeout -k 2 "$wait_s" "${kubectl[@]}" get nodes -o json >"$cluster_nodes" 2>"$err"
    case $? in
      0) ;;
      124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get nodes did not answer within ${wait_s}s: check the API server (kubectl cluster-info)" ;;
      *) fb_die "$FB_EXIT_RUNTIME" "kubectl get nodes failed ($(head -c 200 "$err" | tr '\n' ' ')): check the context and that you may list nodes" ;;
    esac
  fi
  jq -e '(.items | type) == "array"' "$cluster_nodes" >/dev/null 2>&1 ||
    fb_die "$FB_EXIT_INPUT" "the node list is not a kubectl list (no items): give kubectl get nodes -o json"
}

# marks NODE: what of ours NODE carries, as "label-scan label-time taint"
# words (each 0 or 1), or "absent".
marks() {
  jq -r --arg n "$1" --arg k "$key" --arg t "$time_key" '
    [.items[] | select(.metadata.name == $n)][0]
    | if . == null then "absent" else
        [(.metadata.labels // {} | has($k)), (.metadata.labels // {} | has($t)),
         ([.spec.taints[]? | select(.key == $k and .effect == "NoSchedule")] | length > 0)]
        | map(if . then 1 else 0 end) | join(" ")
      end' "$cluster_nodes"
}

status=0
problem() { # problem CODE MESSAGE: reported now, the first code kept for the exit
  echo "$FB_PROG: $2" >&2
  [ "$status" -ne 0 ] || status=$1
}

# kube ARGS...: one kubectl call, printed under dry-run; a failure is
# reported and the caller goes on.
kube() {
  if [ "$apply" = 0 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" "$@")"
    return 0
  fi
  local err rc
  fb_mktemp err
  timeout -k 2 "$wait_s" "${kubectl[@]}" "$@" </dev/null >/dev/null 2>"$err"
  rc=$?
  [ "$rc" -eq 0 ] && return 0
  case $rc in
    124 | 137) problem "$FB_EXIT_RUNTIME" "kubectl $1 $2 $3 did not answer within ${wait_s}s: check the API server" ;;
    *) problem "$FB_EXIT_RUNTIME" "kubectl $1 $2 $3 failed ($(head -c 200 "$err" | tr '\n' ' ')): check that you may patch nodes" ;;
  esac
  return 1
}

mark() { # mark NODE VERDICT
  kube label node "$1" "$key=$2" "$time_key=$stamp" --overwrite || return
  [ "$taint" = 0 ] || kube taint node "$1" "$key=$2:NoSchedule" --overwrite || return
  fb_info "$1: $2, $done marked$([ "$taint" = 0 ] || echo " and tainted")"
}

unmark() { # unmark NODE "LABEL TIME TAINT"
  local has drop=()
  read -r -a has <<<"$2"
  [ "${has[0]}" = 0 ] || drop+=("$key-")
  [ "${has[1]}" = 0 ] || drop+=("$time_key-")
  if [ ${#drop[@]} -eq 0 ] && [ "${has[2]}" = 0 ]; then return 0; fi
  [ ${#drop[@]} -eq 0 ] || kube label node "$1" "${drop[@]}" || return
  [ "${has[2]}" = 0 ] || kube taint node "$1" "$key:NoSchedule-" || return
  fb_info "$1: passes again, marks $done removed"
}

# The order in which one node's entries combine: the worst counts. A node
# the scan names twice (two hosts that gave one FABRIC_NODE_NAME) is marked
# when any entry failed or was slow, and is cleared only when every entry
# passed; a damaged entry counts as untested, so it keeps the marks.
rank_of() {
  case $1 in failed) echo 4 ;; slow) echo 3 ;; untested) echo 2 ;; pass) echo 1 ;; *) echo 0 ;; esac
}

# The scan's verdict per node name, in the order of first appearance:
# names (an array), verdict_of, hosts_of and entries_of (by name).
declare -a names=()
declare -A verdict_of=() hosts_of=() entries_of=()

# check_entry STATE NAME HOST VERDICT: reports what is wrong with one entry
# of nodes[]; adds a named entry to its node's worst verdict.
check_entry() {
  local state=$1 name=$2 host=$3 verdict=$4
  case $verdict in pass | slow | failed | untested) ;;
    *) problem "$FB_EXIT_INPUT" "host $(fb_shown "$host") has verdict $(fb_shown "$verdict"), not pass, slow, failed or untested: a damaged scan document"
       verdict=untested ;;
  esac
  if [ "$state" != name ] || [ -z "$name" ]; then
    if [ "$verdict" = failed ] || [ "$verdict" = slow ]; then
      problem "$FB_EXIT_INPUT" "host $(fb_shown "$host") is $verdict but has no Kubernetes node name (FABRIC_NODE_NAME unset): mark its node by hand, or scan with launch/kubectl.sh scan"
    else
      fb_info "host $(fb_shown "$host"): no Kubernetes node name, skipped"
    fi
    return
  fi
  if ! is_node_name "$name"; then
    problem "$FB_EXIT_INPUT" "host $(fb_shown "$host") names node $(fb_shown "$name"), not a Kubernetes node name (DNS-1123): skipped; check the scan document"
    return
  fi
  if [ -z "${verdict_of[$name]+set}" ]; then
    names+=("$name")
    verdict_of[$name]=$verdict hosts_of[$name]=$(fb_shown "$host") entries_of[$name]=1
    return
  fi
  local n=${entries_of[$name]}
  entries_of[$name]=$((n + 1))
  hosts_of[$name]+=", $(fb_shown "$host")"
  [ "$(rank_of "$verdict")" -le "$(rank_of "${verdict_of[$name]}")" ] || verdict_of[$name]=$verdict
}

# one_node NAME: marks or clears NAME by its worst verdict.
one_node() {
  local name=$1 verdict=${verdict_of[$1]} have
  if [ "${entries_of[$name]}" -gt 1 ]; then
    fb_info "node $name is in the scan ${entries_of[$name]} times (hosts ${hosts_of[$name]} gave it as FABRIC_NODE_NAME): the worst verdict, $verdict, counts"
  fi
  have=$(marks "$name")
  if [ "$have" = absent ]; then
    problem "$FB_EXIT_RUNTIME" "node $name is not in the cluster (kubectl get nodes): skipped; check the context"
    return
  fi
  case $verdict in
    failed | slow) mark "$name" "$verdict" ;;
    pass)
      if [ "$complete" = true ]; then unmark "$name" "$have"
      else fb_info "$name: passes, but the scan is incomplete: marks kept"; fi ;;
    untested) fb_info "$name: untested, marks kept" ;;
  esac
}

main() {
  parse_args "$@"
  check_args
  key=$prefix/scan time_key=$prefix/scan-time done=now
  [ "$apply" = 1 ] || done="to be"
  local complete stamp rows cluster_nodes
  read_doc
  read_cluster
  [ "$complete" = true ] || fb_info "the scan is incomplete: no marks are removed"
  local state name host verdict
  while IFS=$'\x1f' read -r state name host verdict; do
    [ -n "$state" ] || continue
    check_entry "$state" "$name" "$host" "$verdict"
  done <<<"$rows"
  for name in "${names[@]+"${names[@]}"}"; do one_node "$name"; done
  exit "$status"
}

main "$@"
