#!/usr/bin/env bash
# fabric-rdma --transport tcp against iperf3 on the same pair with the same
# stream count, write size and time: loopback, then two network-namespace
# hosts (root only, host set "fbpb"). Each round runs iperf3, fabric-rdma,
# iperf3 back to back: the ratio is the median over rounds of fabric-rdma
# over the mean of the two iperf3 runs around it, so load that comes and
# goes on a shared machine cancels (target >= 0.95). The noise floor is the
# median over rounds of how far the two iperf3 runs of a round differ
# (|second/first - 1|): ratios closer to 1 than that cannot be told apart.
# Each tool's median and best are shown.
# Called by scripts/bench.sh.
#   FB_BENCH_ROUNDS (7)  FB_BENCH_PROBE_SECONDS (2)  FB_BENCH_PROBE_SIZE (128K)
#   FB_BENCH_PROBE_STREAMS ("1 4")  BUILD (build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
probe=$build/bin/fabric-rdma
rounds=${FB_BENCH_ROUNDS:-7}
secs=${FB_BENCH_PROBE_SECONDS:-2}
size=${FB_BENCH_PROBE_SIZE:-128K}
read -r -a stream_counts <<<"${FB_BENCH_PROBE_STREAMS:-1 4}"
warm=1 # seconds both tools run before measuring (iperf3 -O, fabric-rdma --margin)
th=$root/scripts/testhosts.sh
hostset=fbpb
port=5399

die() { echo "bench-probe: $*" >&2; exit 1; }
[ -x "$probe" ] || die "$probe is missing; run make first"
command -v iperf3 >/dev/null || die "iperf3 is missing; run scripts/install-deps.sh"
work=$(mktemp -d)
cleanup() {
  [ -n "${ns_up:-}" ] && "$th" down "$hostset" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

mpi_local=(mpirun --oversubscribe --bind-to none --mca btl "self,vader,tcp"
  --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -np 2)
[ "$(id -u)" -eq 0 ] && mpi_local=(mpirun --allow-run-as-root "${mpi_local[@]:1}")
probe_args=(--transport tcp -D "$secs" --margin "$warm" -s "$size")
iperf_args=(-t "$secs" -O "$warm" -l "$size" -J)

gbps_probe() { jq -r '.links[0].avg_Gbps' "$1"; }
gbps_iperf() { jq -r '.end.sum_received.bits_per_second / 1e9' "$1"; }

# One measurement; $1 = streams, $2 = output file.
probe_loopback() { "${mpi_local[@]}" "$probe" "${probe_args[@]}" -P "$1" -J "$2" >/dev/null; }
iperf_loopback() {
  iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -P "$1" "${iperf_args[@]}" >"$2"
  wait "$server" || true
}
probe_namespaces() {
  timeout 120 "$th" mpirun "$hostset" -q -np 2 --map-by node --bind-to none "$probe" \
    "${probe_args[@]}" -P "$1" -J "$2" >/dev/null
}
iperf_namespaces() {
  "$th" exec "$hostset" 2 iperf3 -s -1 -B 10.77.0.2 -p "$port" >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  "$th" exec "$hostset" 1 iperf3 -c 10.77.0.2 -p "$port" -P "$1" "${iperf_args[@]}" >"$2"
  wait "$server" || true
}

# Round r of a setting: fabric-rdma between two iperf3 runs.
run_round() {
  local setting=$1 p=$2 r=$3 out=$work/$1.$2.$3
  "iperf_$setting" "$p" "$out.iperf.json"
  "probe_$setting" "$p" "$out.probe.json"
  "iperf_$setting" "$p" "$out.iperf2.json"
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
best() { sort -g | tail -n 1; }

report() {
  local setting=$1 p=$2 r
  for r in $(seq 1 "$rounds"); do gbps_probe "$work/$setting.$p.$r.probe.json"; done >"$work/ours"
  for r in $(seq 1 "$rounds"); do gbps_iperf "$work/$setting.$p.$r.iperf.json"; done >"$work/first"
  for r in $(seq 1 "$rounds"); do gbps_iperf "$work/$setting.$p.$r.iperf2.json"; done >"$work/second"
  cat "$work/first" "$work/second" >"$work/theirs"
  paste "$work/ours" "$work/first" "$work/second" | awk '{print $1 / (($2 + $3) / 2)}' >"$work/ratios"
  paste "$work/first" "$work/second" | awk '{d = $2 / $1 - 1; print d < 0 ? -d : d}' >"$work/noise"
  awk -v s="$setting" -v p="$p" -v am="$(median <"$work/ours")" -v bm="$(median <"$work/theirs")" \
    -v ab="$(best <"$work/ours")" -v bb="$(best <"$work/theirs")" -v r="$(median <"$work/ratios")" \
    -v n="$(median <"$work/noise")" \
    'BEGIN { printf "%-11s %7d | %9.2f %9.2f | %9.2f %9.2f | %6.3f | %5.3f\n", s, p, am, bm, ab, bb, r, n }'
}

bench_setting() {
  local setting=$1 p r
  for p in "${stream_counts[@]}"; do
    for r in $(seq 1 "$rounds"); do run_round "$setting" "$p" "$r"; done
    report "$setting" "$p"
  done
}

echo "fabric-rdma --transport tcp vs iperf3: $size writes, ${secs} s after ${warm} s warm-up, $rounds rounds"
printf '%-11s %7s | %19s | %19s | %6s | %5s\n' "" "" "median Gb/s" "best Gb/s" "ratio" "noise"
printf '%-11s %7s | %9s %9s | %9s %9s | %6s | %5s\n' setting streams probe iperf3 probe iperf3 median floor
bench_setting loopback
if [ "$(id -u)" -eq 0 ] && [ -x "$th" ]; then
  "$th" up "$hostset" 2 2 >/dev/null && ns_up=1
  bench_setting namespaces
else
  echo "namespaces: skipped (needs root and scripts/testhosts.sh)"
fi
echo "Gb/s received; ratio = median of per-round probe / mean of the round's two iperf3 runs; target >= 0.95"
echo "noise floor = median of per-round |second iperf3 / first iperf3 - 1|"
