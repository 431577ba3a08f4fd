#!/usr/bin/env bash
# The scheduled scan's controller (manifests/scan, the CronJob's pod): runs
# launch/kubectl.sh scan over the worker pods with the options of the
# ConfigMap fabric-bench-scan, keeps the results under $SCAN_RESULTS, then,
# only when MARK_NODES=true, marks the nodes with launch/scan-mark.sh --apply.
#
# Environment (manifests/scan/scan.env documents each): SCAN_NAMESPACE,
# SCAN_SELECTOR, SCAN_MODE, SCAN_POOL, SCAN_RACK_LABEL (empty: no racks),
# SCAN_ARGS (fabric-scan's options, split at spaces, never evaluated),
# SCAN_RESULTS (default results), FABRIC_CLUSTER, MARK_NODES, MARK_TAINT,
# MARK_LABEL_PREFIX; SCAN_LAUNCHER_ARGS adds launcher options (split at
# spaces), KUBECTL names kubectl.
#
# Exit: the scan's code (0 no suspects, 24 suspects named, or the
# launcher's error, docs/exit-codes.md); with MARK_NODES=true a marking that
# failed exits with scan-mark.sh's code instead, 2 for a bad setting.
set -uo pipefail
# shellcheck disable=SC2034 # read by lib.sh
FB_PROG=scan-controller.sh
here=$(dirname "$0")
# shellcheck source=launch/lib.sh
. "$here/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in -h | --help) usage; exit 0 ;; esac

is_bool() { [ "$2" = true ] || [ "$2" = false ] || fb_die "$FB_EXIT_USAGE" "$1 wants true or false, got $(fb_shown "$2"): fix the ConfigMap fabric-bench-scan"; }
is_bool MARK_NODES "${MARK_NODES:=false}"
is_bool MARK_TAINT "${MARK_TAINT:=false}"
results=${SCAN_RESULTS:-results}

launch=(--namespace "${SCAN_NAMESPACE:-fabric-bench}" --results "$results")
[ -z "${SCAN_SELECTOR:-}" ] || launch+=(--selector "$SCAN_SELECTOR")
[ -z "${KUBECTL:-}" ] || launch+=(--kubectl "$KUBECTL")
read -r -a extra <<<"${SCAN_LAUNCHER_ARGS:-}"
launch+=("${extra[@]+"${extra[@]}"}" scan --mode "${SCAN_MODE:-fast}")
[ -z "${SCAN_POOL:-}" ] || launch+=(--pool "$SCAN_POOL")
if [ -n "${SCAN_RACK_LABEL-topology.kubernetes.io/zone}" ]; then
  launch+=(--rack-label "${SCAN_RACK_LABEL-topology.kubernetes.io/zone}")
else
  launch+=(--no-racks)
fi
read -r -a scan_args <<<"${SCAN_ARGS:-}"
launch+=(-- "${scan_args[@]+"${scan_args[@]}"}")

# The results this run writes: the newest *-scan.json after this mark.
mkdir -p "$results" || fb_die "$FB_EXIT_INPUT" "cannot create $results: check the volume mounted there (SCAN_RESULTS)"
since=""
fb_mktemp since
"$here/kubectl.sh" "${launch[@]}"
rc=$?
doc=$(find "$results" -name '*-scan.json' -newer "$since" -type f -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-)
[ -n "$doc" ] || exit "$rc"
fb_info "scan results: $doc (exit $rc)"
if [ "$MARK_NODES" != true ]; then
  fb_info "nodes not marked (MARK_NODES=false)"
  exit "$rc"
fi
mark=("$doc" --apply --label-prefix "${MARK_LABEL_PREFIX:-fabric-bench.io}")
[ "$MARK_TAINT" = false ] || mark+=(--taint)
[ -z "${KUBECTL:-}" ] || mark+=(--kubectl "$KUBECTL")
"$here/scan-mark.sh" "${mark[@]}"
m=$?
[ "$m" -eq 0 ] || exit "$m"
exit "$rc"
