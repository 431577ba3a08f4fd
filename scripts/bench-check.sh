#!/usr/bin/env bash
# make bench, host validation speed: ratios against baselines measured in
# the same run on this machine.
#   1. fill and check in host memory (coll/pattern_host.h) of a 512 MiB
#      float call, all_reduce and all_gather, vs memcpy of the same bytes
#      (goal: each fill and check at least 1/3 of memcpy's GiB/s)
#   2. fabric-coll's MPI backend, all_reduce 512 MiB on 2 ranks, wall time of
#      the whole run with checks (-c 1) vs without (-c 0)
#      (goal: -c 1 at most 1.15 x -c 0)
# Median of FB_BENCH_ROUNDS (default 3) rounds; FB_BENCH_CHECK_MIB sets the
# size (default 512). Goals print PASS or MISS: the exit stays 0. A check
# that finds wrong elements in a correct result stops the script: a bug.
set -euo pipefail
# root, build, work (removed at exit), mpi: scripts/bench/common.sh.
# shellcheck source=scripts/bench/common.sh
. "$(dirname "$0")/bench/common.sh"
rounds=${FB_BENCH_ROUNDS:-3}
mib=${FB_BENCH_CHECK_MIB:-512}
for v in "$rounds" "$mib"; do
  [[ $v =~ ^[1-9][0-9]{0,5}$ ]] || { echo "bench-check.sh: FB_BENCH_ROUNDS and FB_BENCH_CHECK_MIB take a whole number, not '$v'" >&2; exit 2; }
done

# The libraries' link flags as the Makefile computes them for its own
# programs (CUDA and NCCL where the build found them): asked of make itself,
# so this link never drifts from the build's.
ldlibs=$({ make -C "$root" -s --no-print-directory -pnq help 2>/dev/null || true; } | sed -n 's/^LDLIBS := //p')
read -ra ldflags <<<"$ldlibs"
mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$build/inc/coll" -o "$work/check_speed" \
  "$root/scripts/bench/check_speed.c" "$build/libcoll.a" "$build/libnccl.a" "$build/libcore.a" "${ldflags[@]}"

# coll_run FILE C: one whole fabric-coll run with -c C; its start and end
# (bash's clock, seconds) appended to FILE.
coll_run() {
  local out=$1 c=$2 t0
  t0=$EPOCHREALTIME
  "${mpi[@]}" "$build/bin/fabric-coll" all_reduce -b "${mib}M" -e "${mib}M" -n 5 -w 1 --backend mpi -c "$c" \
    -J "$work/coll.$c.json" >/dev/null
  echo "$t0 $EPOCHREALTIME" >>"$out"
}

echo "== host validation speed: fill and check of $mib MiB (float, sum, 2 ranks, rank 0) vs memcpy; fabric-coll all_reduce $mib MiB on 2 ranks, -c 1 vs -c 0; median of $rounds rounds =="
for r in $(seq 1 "$rounds"); do
  "$work/check_speed" "$mib" >"$work/speed.$r"
  # The two runs of a round are neighbours in time, their order alternating
  # so that neither always inherits the other's warm (or dirty) caches.
  if [ $((r % 2)) -eq 1 ]; then
    coll_run "$work/c0" 0
    coll_run "$work/c1" 1
  else
    coll_run "$work/c1" 1
    coll_run "$work/c0" 0
  fi
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
gibs, ratio = {}, {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/speed.{r}"):
        if line.startswith("#"):
            continue
        name, g, x = line.split()
        gibs.setdefault(name, []).append(float(g))
        ratio.setdefault(name, []).append(float(x))
# Each run's ratios are against its own memcpy: the machine's drift
# between runs cancels; the median over rounds drops the outliers.
print(f"{'operation':>18} {'GiB/s':>8} {'vs memcpy':>10}")
worst = (float("inf"), "")
for name in gibs:
    x = statistics.median(ratio[name])
    if name != "memcpy":
        worst = min(worst, (x, name))
    print(f"{name:>18} {statistics.median(gibs[name]):>8.2f} {x:>10.3f}")
verdict = "PASS" if worst[0] >= 1 / 3 else "MISS"
print(f"goal: every fill and check at least 1/3 of memcpy: worst {worst[0]:.3f} ({worst[1]}): {verdict}")

def walls(path):
    # bash prints its clock with the locale's decimal point
    return [float(b.replace(",", ".")) - float(a.replace(",", ".")) for a, b in (l.split() for l in open(path))]
c0, c1 = walls(f"{work}/c0"), walls(f"{work}/c1")
x = statistics.median([b / a for a, b in zip(c0, c1)])
print(f"fabric-coll wall time, median: -c 0 {statistics.median(c0):.2f} s, -c 1 {statistics.median(c1):.2f} s; "
      f"paired ratios {' '.join(f'{b / a:.3f}' for a, b in zip(c0, c1))}")
print(f"goal: -c 1 at most 1.15 x -c 0: median ratio {x:.3f}: {'PASS' if x <= 1.15 else 'MISS'}")
PY
