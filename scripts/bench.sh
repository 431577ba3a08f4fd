#!/usr/bin/env bash
# make bench: speed figures as ratios against baselines measured in the same
# run on this machine. Never a pass/fail test: machines differ; ratios don't.
#   1. fabric-coll's MPI backend vs a minimal MPI_Allreduce loop, 8 B..16 MiB
#      at 2 ranks (target: harness overhead <= 2 % at >= 64 KiB)
#   2. every scripts/bench-*.sh present (probes, sweeps) in turn
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --mca op ^avx --mca btl "self,vader" -np 2)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root "${mpi[@]:1}")
rounds=${FB_BENCH_ROUNDS:-3}
iters=${FB_BENCH_ITERS:-200}

mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$work/loop" "$root/scripts/bench/mpi_allreduce_loop.c"

echo "== fabric-coll (mpi backend, with and without its watchdog) vs a minimal MPI_Allreduce loop, 2 ranks, $iters iterations, median of $rounds paired rounds =="
# Alternate the two so drift on a busy machine hits both alike.
for r in $(seq 1 "$rounds"); do
  "${mpi[@]}" "$work/loop" 8 16777216 "$iters" 10 >"$work/base.$r"
  "${mpi[@]}" "$build/bin/fabric-coll" all_reduce -b 8 -e 16M -f 2 -n "$iters" -w 10 -c 0 \
    --backend mpi --no-watchdog -J "$work/bare.$r.json" >/dev/null
  "${mpi[@]}" "$build/bin/fabric-coll" all_reduce -b 8 -e 16M -f 2 -n "$iters" -w 10 -c 0 \
    --backend mpi -J "$work/coll.$r.json" >/dev/null
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
base, bare, coll = {}, {}, {}
def rows(path, into):
    for row in json.load(open(path))["rows"]:
        into.setdefault(row["bytes"], []).append(row["out_of_place"]["time_us"])
for r in range(1, rounds + 1):
    for line in open(f"{work}/base.{r}"):
        b, t = line.split()
        base.setdefault(int(b), []).append(float(t))
    rows(f"{work}/bare.{r}.json", bare)
    rows(f"{work}/coll.{r}.json", coll)
# The runs of a round are neighbours in time: their ratio cancels the
# machine's drift; the median over rounds drops the outliers.
# harness: fabric-coll --no-watchdog / loop; watchdog: fabric-coll / loop
# (the watchdog needs MPI_THREAD_MULTIPLE, which Open MPI makes dearer).
def ratio(a, b):
    return statistics.median([x / y for x, y in zip(a, b)])
print(f"{'bytes':>10} {'loop us':>9} {'harness':>8} {'+watchdog':>10}")
worst = [0.0, 0.0]
for b in sorted(base):
    h, w = ratio(bare[b], base[b]), ratio(coll[b], base[b])
    if b >= 65536:
        worst = [max(worst[0], h), max(worst[1], w)]
    print(f"{b:>10} {statistics.median(base[b]):>9.2f} {h:>8.3f} {w:>10.3f}")
print(f"worst median ratio at >= 64 KiB: harness {worst[0]:.3f}, with watchdog {worst[1]:.3f} (target <= 1.020)")
PY

for extra in "$root"/scripts/bench-*.sh; do
  [ -x "$extra" ] || continue
  echo
  echo "== $(basename "$extra") =="
  "$extra"
done
