#!/usr/bin/env bash
# fabric-rdma --transport ofi against fabtests' fi_rma_bw on the same pair
# of namespace hosts (root only, host set "fbob"), the tcp provider, the
# same semantics: RMA writes both ways at once (fi_rma_bw -o write is
# bidirectional; fabric-rdma -b), nothing pinned (users do not pin, and a
# probe must not need it), the same write count. Two fabric-rdma rows:
#   default     -b and nothing else (2 endpoints, CQ completions, window 128)
#   rma_bw-like -b -q 1 -t 64 --completion counter: fi_rma_bw's own loop
#               (one endpoint, a window of 64 posted and drained whole)
# Each round runs fi_rma_bw, both fabric-rdma rows, fi_rma_bw again, at one
# size; a row's ratio is the median over rounds of its figure over the mean
# of the round's two fi_rma_bw runs (each the sum of its two directions),
# so load that comes and goes on a shared machine cancels (target: >= 0.95
# at every size). The noise floor is the median of |second / first - 1|
# of the round's two fi_rma_bw runs. Called by scripts/bench.sh.
#   FI_RMA_BW (a fabtests fi_rma_bw)  FB_LIBFABRIC_SRC (a libfabric git
#   checkout or source tree to build fabtests from)  FB_FABTESTS_DIR (where
#   the build goes; ~/.cache/fabric-bench/fabtests-VERSION)
#   FB_BENCH_ROUNDS (7)  FB_BENCH_OFI_SIZES ("1M 2M 4M 8M")  FB_BENCH_OFI_ITERS (400)
#   BUILD (build)  FB_BENCH_VERBOSE (set: every round's figures on stderr)
# fabtests is not packaged in Debian: without FI_RMA_BW this script builds
# it outside this tree, at the installed libfabric's version, from
# FB_LIBFABRIC_SRC (git archive of the tag vVERSION, or its fabtests/
# folder), once; without a source it says how and skips.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
probe=$build/bin/fabric-rdma
rounds=${FB_BENCH_ROUNDS:-7}
read -r -a sizes <<<"${FB_BENCH_OFI_SIZES:-1M 2M 4M 8M}"
iters=${FB_BENCH_OFI_ITERS:-400}
th=$root/scripts/testhosts.sh
hostset=fbob
title="fabric-rdma --transport ofi vs fi_rma_bw"

die() { echo "bench-ofi: $*" >&2; exit 1; }
[ -x "$probe" ] || die "$probe is missing; run make first"
"$probe" --version | grep -q 'ofi)' || { echo "$title: skipped (fabric-rdma is built without libfabric)"; exit 0; }

# fabtests_of VERSION: the path of a fi_rma_bw built at VERSION, building it
# when a source is at hand; empty (and why on stderr) when none can be had.
fabtests_of() {
  local version=$1 dir=${FB_FABTESTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fabric-bench/fabtests-$1}
  if [ -x "$dir/bin/fi_rma_bw" ]; then echo "$dir/bin/fi_rma_bw"; return; fi
  local src=${FB_LIBFABRIC_SRC:-}
  if [ -z "$src" ]; then
    echo "no fabtests build in $dir and no source (set FB_LIBFABRIC_SRC to a libfabric checkout, or FI_RMA_BW)" >&2
    return
  fi
  local tree
  tree=$(mktemp -d)
  if git -C "$src" rev-parse --verify -q "v$version^{commit}" >/dev/null 2>&1; then
    git -C "$src" archive "v$version" fabtests | tar -x -C "$tree"
  elif [ -d "$src/fabtests" ]; then
    cp -r "$src/fabtests" "$tree/"
  else
    echo "$src holds neither tag v$version nor a fabtests folder" >&2
    rm -rf "$tree"
    return
  fi
  echo "bench-ofi: building fabtests $version into $dir (once)" >&2
  if (cd "$tree/fabtests" && ./autogen.sh && ./configure --with-libfabric=/usr --prefix="$dir" && make -j"$(nproc)" &&
    make install) >"$tree/build.log" 2>&1; then
    rm -rf "$tree"
    echo "$dir/bin/fi_rma_bw"
  else
    echo "building fabtests failed (autoconf, automake, libtool installed? log: $tree/build.log)" >&2
  fi
}

peer=${FI_RMA_BW:-$(command -v fi_rma_bw || true)}
if [ -z "$peer" ]; then
  version=$(pkg-config --modversion libfabric 2>/dev/null || true)
  [ -n "$version" ] || { echo "$title: skipped (no libfabric pkg-config file)"; exit 0; }
  peer=$(fabtests_of "$version" 2>"${TMPDIR:-/tmp}/bench-ofi.why.$$" || true)
  if [ -z "$peer" ]; then
    echo "$title: skipped ($(cat "${TMPDIR:-/tmp}/bench-ofi.why.$$"))"
    rm -f "${TMPDIR:-/tmp}/bench-ofi.why.$$"
    exit 0
  fi
  rm -f "${TMPDIR:-/tmp}/bench-ofi.why.$$"
fi
[ -x "$peer" ] || { echo "$title: skipped ($peer is not executable)"; exit 0; }
if [ "$(id -u)" -ne 0 ] || [ ! -x "$th" ]; then
  echo "$title: skipped (needs root for namespace hosts)"
  exit 0
fi
# shellcheck source=scripts/bench/hosts.sh
. "$root/scripts/bench/hosts.sh"

bytes_of() { numfmt --from=iec "$1"; }

# probe_once SIZE JSON ARGS...: fabric-rdma at one size, MB/s (10^6 B/s) of
# both directions, summed.
probe_once() {
  local s=$1 json=$2
  shift 2
  timeout 120 "$th" mpirun "$hostset" -q -np 2 --map-by node "$probe" --transport ofi --provider tcp -b \
    -s "$s" -n "$iters" -w 10 "$@" -J "$json" >/dev/null
  jq '[.links[].avg_GBps] | add * 1000' "$json"
}

# peer_once SIZE OUT: fi_rma_bw at one size, the server's and the client's
# MB/sec, summed.
peer_once() {
  local n
  n=$(bytes_of "$1")
  local args=(-p tcp -E -o write -S "$n" -I "$iters" -w 10 -W 64 -m)
  timeout 120 "$th" exec "$hostset" 2 "$peer" "${args[@]}" >"$2.srv" 2>&1 &
  local server=$!
  for _ in $(seq 1 200); do
    "$th" exec "$hostset" 2 ss -Hltn 'sport = :3000' 2>/dev/null | grep -q 3000 && break
    sleep 0.05
  done
  timeout 120 "$th" exec "$hostset" 1 "$peer" "${args[@]}" 10.77.0.2 >"$2.cli" 2>&1
  wait "$server"
  cat "$2.srv" "$2.cli" | sed -n 's/.*MB\/sec: \([0-9.]*\).*/\1/p' | awk '{s += $1} END {print s}'
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "$title ($peer): tcp provider, RMA write both ways, $iters writes, $rounds rounds, nothing pinned"
printf '%8s | %29s | %15s | %6s\n' "" "median MB/s (both ways)" "ratio to fi_rma_bw" "noise"
printf '%8s | %9s %9s %9s | %7s %7s | %6s\n' size default rma_bw fi_rma_bw default rma_bw floor
for s in "${sizes[@]}"; do
  for f in def like peer rdef rlike noise; do : >"$work/$f"; done
  for r in $(seq 1 "$rounds"); do
    b1=$(peer_once "$s" "$work/f")
    a=$(probe_once "$s" "$work/p.json")
    c=$(probe_once "$s" "$work/q.json" -q 1 -t 64 --completion counter)
    b2=$(peer_once "$s" "$work/f")
    echo "$a" >>"$work/def"; echo "$c" >>"$work/like"
    awk -v x="$b1" -v y="$b2" 'BEGIN { print (x + y) / 2 }' >>"$work/peer"
    awk -v a="$a" -v x="$b1" -v y="$b2" 'BEGIN { print 2 * a / (x + y) }' >>"$work/rdef"
    awk -v a="$c" -v x="$b1" -v y="$b2" 'BEGIN { print 2 * a / (x + y) }' >>"$work/rlike"
    awk -v x="$b1" -v y="$b2" 'BEGIN { d = y / x - 1; print d < 0 ? -d : d }' >>"$work/noise"
    [ -z "${FB_BENCH_VERBOSE:-}" ] || echo "  $s round $r: fi_rma_bw $b1, default $a, rma_bw-like $c, fi_rma_bw $b2 MB/s" >&2
  done
  printf '%8s | %9.0f %9.0f %9.0f | %7.3f %7.3f | %6.3f\n' "$s" "$(median <"$work/def")" "$(median <"$work/like")" \
    "$(median <"$work/peer")" "$(median <"$work/rdef")" "$(median <"$work/rlike")" "$(median <"$work/noise")"
done
echo "MB/s = 10^6 bytes/s, the sum of both directions; ratio = median of per-round probe / mean of the round's two fi_rma_bw runs; target >= 0.95"
echo "noise floor = median of per-round |second fi_rma_bw / first - 1|"
