#!/usr/bin/env bash
# fabric-rdma's verbs transport against perftest's ib_write_bw and
# ib_write_lat on the same link of the RDMA stand-in (docs/standin.md):
# two namespace hosts (root only, host set "fbvb"), nothing pinned (users
# do not pin, and a probe must not need it), the ports capped at
# FB_BENCH_VERBS_CAP Gb/s so both tools have a line rate to meet. The same
# method: one RC queue pair, 128 writes outstanding, a completion every 100,
# 5000 writes per size, 64 KiB .. 8 MiB (fabric-rdma -q 1 -t 128 -Q 100
# -a; ib_write_bw -a -F). Each round runs both tools in turn, the one going
# first alternating; the ratio per size is the median over rounds of
# fabric-rdma's average over ib_write_bw's BW average (target 0.95 .. 1.05).
# Latency: fabric-rdma --latency's median against ib_write_lat's typical
# (t_typical) at 2 B .. 4 KiB (target within 10 %). Nothing here is an HCA's
# figure: the stand-in copies with a system call per write. Called by
# scripts/bench.sh.
#   FB_BENCH_ROUNDS (5)  FB_BENCH_VERBS_CAP (20; 0: uncapped)  BUILD (build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
probe=$build/bin/fabric-rdma
rounds=${FB_BENCH_ROUNDS:-5}
cap=${FB_BENCH_VERBS_CAP:-20}
th=$root/scripts/testhosts.sh
standin=$root/scripts/rdma-standin.sh
hostset=fbvb

skip() { echo "fabric-rdma (verbs) vs ib_write_bw on the RDMA stand-in: skipped ($*)"; exit 0; }
[ -x "$probe" ] || skip "no $probe; run make first"
{ command -v ib_write_bw && command -v ib_write_lat; } >/dev/null || skip "perftest is not installed (scripts/install-deps.sh)"
[ -e "$build/standin-rdma/libibverbs.so.1" ] || skip "the RDMA stand-in is not built (make standin-rdma)"
[ "$(id -u)" -eq 0 ] || skip "needs root for namespace hosts"

# shellcheck source=scripts/bench/hosts.sh
. "$root/scripts/bench/hosts.sh"
export FB_STANDIN_IB_RATE_GBPS=$cap FB_STANDIN_IB_DIR=$work/registry

# on HOST CMD...: CMD on namespace host HOST, on the stand-in.
on() {
  local h=$1; shift
  "$th" exec "$hostset" "$h" "$standin" "$@"
}

# pair OUT CMD ARGS...: a perftest server on host 1 and its client on host
# 2; the client's report in OUT, its stderr apart (perftest's clock notes
# would otherwise land inside table lines).
pair() {
  local out=$1; shift
  on 1 timeout 120 "$@" >"$out.srv" 2>&1 &
  local server=$!
  for _ in $(seq 1 200); do
    "$th" exec "$hostset" 1 ss -Hltn 'sport = :18515' 2>/dev/null | grep -q 18515 && break
    sleep 0.05
  done
  on 2 timeout 120 "$@" 10.77.0.1 >"$out" 2>"$out.err" || true
  wait "$server" || true
}

# fabric-rdma on the pair; its result in OUT.
probe_run() {
  local out=$1; shift
  timeout 300 "$standin" "$th" mpirun "$hostset" -q -np 2 --map-by node --bind-to none \
    -x LD_LIBRARY_PATH -x FB_STANDIN_IB_RATE_GBPS -x FB_STANDIN_IB_DIR "$probe" \
    -q 1 "$@" -J "$out" >/dev/null
}

# size -> value tables, "SIZE VALUE" lines.
perftest_rows() { awk -v col="$2" '$1 ~ /^[0-9]+$/ && NF >= 5 { print $1, $col }' "$1"; }
probe_rows() { jq -r ".links[] | \"\\(.size_bytes) \\($2)\"" "$1"; }

bw=(-d mlx5_0 -q 1 -t 128 -Q 100 -n 5000 -F --report_gbits)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    probe_run "$work/p.$r.json" -a --min-size 64K --max-size 8M -t 128 -Q 100 -n 5000
    pair "$work/w.$r" ib_write_bw "${bw[@]}" -a
  else
    pair "$work/w.$r" ib_write_bw "${bw[@]}" -a
    probe_run "$work/p.$r.json" -a --min-size 64K --max-size 8M -t 128 -Q 100 -n 5000
  fi
  probe_rows "$work/p.$r.json" .avg_Gbps >"$work/ours.$r"
  perftest_rows "$work/w.$r" 4 >"$work/theirs.$r"
  probe_run "$work/pl.$r.json" --latency -a --min-size 2 --max-size 4K -n 2000
  pair "$work/l.$r" ib_write_lat -d mlx5_0 -n 2000 -F -a
  probe_rows "$work/pl.$r.json" .latency.p50_us >"$work/ourlat.$r"
  # ib_write_lat -a: #bytes #iterations t_min t_max t_typical t_avg ...
  perftest_rows "$work/l.$r" 5 >"$work/theirlat.$r"
done

/usr/bin/python3 - "$work" "$rounds" "$cap" <<'PY'
import statistics, sys
work, rounds, cap = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def table(name, r):
    out = {}
    try:
        for line in open(f"{work}/{name}.{r}"):
            size, value = line.split()
            out[int(size)] = float(value)
    except (OSError, ValueError):
        pass
    return out
def report(title, ours_name, theirs_name, lo, hi, unit, goal):
    print(title)
    print(f"{'size':>8} | {'fabric-rdma':>11} {'perftest':>9} {unit:>5} | ratio")
    size = lo
    misses = 0
    while size <= hi:
        ratios, a, b = [], [], []
        for r in range(1, rounds + 1):
            x, y = table(ours_name, r).get(size), table(theirs_name, r).get(size)
            if x and y:
                a.append(x); b.append(y); ratios.append(x / y)
        if ratios:
            m = statistics.median(ratios)
            ok = goal[0] <= m <= goal[1]
            misses += not ok
            print(f"{size:>8} | {statistics.median(a):>11.3f} {statistics.median(b):>9.3f} {'':>5} | {m:.3f} {'PASS' if ok else 'MISS'}")
        else:
            misses += 1
            print(f"{size:>8} | {'-':>11} {'-':>9} {'':>5} | no figures (a run failed)")
        size *= 2
    return misses
ports = f"ports capped at {cap} Gb/s" if float(cap) > 0 else "ports uncapped (memory copies set the pace)"
print(f"== fabric-rdma (verbs) vs perftest on the RDMA stand-in: 2 namespace hosts, {ports}, nothing pinned, median of {rounds} paired rounds ==")
report("bandwidth: fabric-rdma -q 1 -t 128 -Q 100 average vs ib_write_bw BW average (Gb/s), goal 0.95..1.05",
       "ours", "theirs", 65536, 8 << 20, "Gb/s", (0.95, 1.05))
report("latency: fabric-rdma --latency median vs ib_write_lat t_typical (us), goal 0.90..1.10",
       "ourlat", "theirlat", 2, 4096, "us", (0.90, 1.10))
PY
