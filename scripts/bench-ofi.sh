#!/usr/bin/env bash
# fabric-rdma --transport ofi against fabtests' fi_rma_bw on the same pair
# of namespace hosts (root only, host set "fbob"), the tcp provider, the
# same method: RMA writes both ways at once (fi_rma_bw -o write is
# bidirectional), one endpoint, a window of 64 posted and drained whole
# (fabric-rdma -b -q 1 -t 64 --completion counter), the same write count.
# Each side is pinned to a core of its own (host 1 to core 0, host 2 to
# core 1), both tools alike, so the two ends do not trade places with the
# kernel's network work from run to run.
# Each round runs both tools at one size, in turn going first; the ratio is
# the median over rounds of fabric-rdma / fi_rma_bw, each the sum of its two
# directions, so load that comes and goes on a shared machine cancels
# (target: within 5%). Called by scripts/bench.sh.
#   FI_RMA_BW (fi_rma_bw on PATH)  FB_BENCH_ROUNDS (11)  FB_BENCH_OFI_SIZES ("1M 2M 4M 8M")
#   FB_BENCH_OFI_ITERS (1000)  BUILD (build)  FB_BENCH_VERBOSE (set: every round's figures on stderr)
# fi_rma_bw is not packaged in Debian; build fabtests of the installed
# libfabric outside this tree: ./autogen.sh && ./configure --with-libfabric=/usr && make
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
probe=$build/bin/fabric-rdma
rounds=${FB_BENCH_ROUNDS:-11}
read -r -a sizes <<<"${FB_BENCH_OFI_SIZES:-1M 2M 4M 8M}"
iters=${FB_BENCH_OFI_ITERS:-1000}
th=$root/scripts/testhosts.sh
hostset=fbob

die() { echo "bench-ofi: $*" >&2; exit 1; }
[ -x "$probe" ] || die "$probe is missing; run make first"
peer=${FI_RMA_BW:-$(command -v fi_rma_bw || true)}
if [ -z "$peer" ] || [ ! -x "$peer" ]; then
  echo "fabric-rdma --transport ofi vs fi_rma_bw: skipped (set FI_RMA_BW to a fabtests build; see this script's header)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || [ ! -x "$th" ]; then
  echo "fabric-rdma --transport ofi vs fi_rma_bw: skipped (needs root for namespace hosts)"
  exit 0
fi
"$probe" --version | grep -q 'ofi)' || die "$probe is built without libfabric"
# shellcheck source=scripts/bench/hosts.sh
. "$root/scripts/bench/hosts.sh"

bytes_of() { numfmt --from=iec "$1"; }

# fabric-rdma at one size: MB/s (10^6 B/s) of both directions, summed.
probe_once() {
  timeout 120 "$th" mpirun "$hostset" -q -np 2 --map-by node --bind-to none "$work/pin" "$probe" \
    --transport ofi --provider tcp -b -q 1 -t 64 --completion counter -s "$1" -n "$iters" -w 10 \
    -J "$2" >/dev/null
  jq '[.links[].avg_GBps] | add * 1000' "$2"
}

# fi_rma_bw at one size: the server's and the client's MB/sec, summed.
peer_once() {
  local n; n=$(bytes_of "$1")
  local args=(-p tcp -E -o write -S "$n" -I "$iters" -w 10 -W 64 -m)
  timeout 120 "$th" exec "$hostset" 2 taskset -c "$(core_of_host 2)" "$peer" "${args[@]}" >"$2.srv" 2>&1 &
  local server=$!
  for _ in $(seq 1 200); do
    "$th" exec "$hostset" 2 ss -Hltn 'sport = :3000' 2>/dev/null | grep -q 3000 && break
    sleep 0.05
  done
  timeout 120 "$th" exec "$hostset" 1 taskset -c "$(core_of_host 1)" "$peer" "${args[@]}" 10.77.0.2 >"$2.cli" 2>&1
  wait "$server"
  cat "$2.srv" "$2.cli" | sed -n 's/.*MB\/sec: \([0-9.]*\).*/\1/p' | awk '{s += $1} END {print s}'
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "fabric-rdma --transport ofi vs fi_rma_bw ($peer): tcp provider, RMA write both ways, window 64, $iters writes, $rounds rounds, one core per host"
printf '%8s | %21s | %6s\n' "" "median MB/s (both ways)" "ratio"
printf '%8s | %10s %10s | %6s\n' size probe fi_rma_bw median
for s in "${sizes[@]}"; do
  : >"$work/ours"; : >"$work/theirs"; : >"$work/ratios"
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
      a=$(probe_once "$s" "$work/p.json"); b=$(peer_once "$s" "$work/f")
    else
      b=$(peer_once "$s" "$work/f"); a=$(probe_once "$s" "$work/p.json")
    fi
    echo "$a" >>"$work/ours"; echo "$b" >>"$work/theirs"
    [ -z "${FB_BENCH_VERBOSE:-}" ] || echo "  $s round $r: probe $a fi_rma_bw $b MB/s" >&2
    awk -v a="$a" -v b="$b" 'BEGIN { print a / b }' >>"$work/ratios"
  done
  printf '%8s | %10.0f %10.0f | %6.3f\n' "$s" "$(median <"$work/ours")" "$(median <"$work/theirs")" \
    "$(median <"$work/ratios")"
done
echo "MB/s = 10^6 bytes/s, the sum of both directions; ratio = median of per-round probe/fi_rma_bw; target 0.95..1.05"
