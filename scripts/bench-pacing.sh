#!/usr/bin/env bash
# Time saved on a slow fabric: two namespace hosts whose veth link plays the
# TCP fallback. The same sweep three ways, in the same run:
#   fixed    nccl-tests style: every size, fixed -n (--full)
#   early    default: stops once >= 64M sits in the fallback band
#   budget   --time-budget B --full: every size, iterations fitted to B
# Prints each wall time and its ratio to the fixed sweep.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/bin
th=$root/scripts/testhosts.sh
max=${FB_BENCH_PACING_MAX:-512M}
ranks=${FB_BENCH_PACING_RANKS:-2}
budget=${FB_BENCH_PACING_BUDGET:-30}
if [ "$(id -u)" -ne 0 ]; then
  echo "bench-pacing: needs root for network namespaces; skipped"
  exit 0
fi
work=$(mktemp -d)
trap '"$th" down fbb >/dev/null 2>&1; rm -rf "$work"' EXIT
"$th" up fbb 2 "$ranks" >/dev/null

sweep() { # sweep NAME ARGS...: prints the wall seconds
  local name=$1 start end; shift
  start=$(date +%s.%N)
  "$th" mpirun fbb -np "$ranks" --map-by node "$bin/fabric-coll" all_reduce -b 1K -e "$max" -f 2 \
    -c 0 -J "$work/$name.json" "$@" >"$work/$name.out" 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }' 
}

echo "all_reduce 1K..$max on $ranks ranks over 2 namespace hosts (veth), wall seconds:"
fixed=$(sweep fixed -n 20 --full)
early=$(sweep early -n 20)
budgeted=$(sweep budget --time-budget "$budget" --full)
rows() { /usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$work/$1.json"; }
printf '%-8s %8s %6s %7s\n' sweep seconds sizes ratio
printf '%-8s %8.1f %6s %7.3f\n' fixed "$fixed" "$(rows fixed)" 1
printf '%-8s %8.1f %6s %7.3f\n' early "$early" "$(rows early)" "$(awk -v a="$early" -v b="$fixed" 'BEGIN { print a / b }')"
printf '%-8s %8.1f %6s %7.3f\n' budget "$budgeted" "$(rows budget)" "$(awk -v a="$budgeted" -v b="$fixed" 'BEGIN { print a / b }')"
grep -h '^# Early stop' "$work/early.out" || echo "(no early stop: the link was faster than the fallback band)"
