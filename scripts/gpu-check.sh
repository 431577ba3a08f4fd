#!/usr/bin/env bash
# The check to run on a machine with NVIDIA GPUs, CUDA and NCCL, where Open
# MPI may come only as Debian packages unpacked by hand and no package
# registry is reachable. Builds fabric-bench, runs all_reduce and all_gather
# over every visible GPU (one rank each) with -c 1 from 1K to 16G, plain and
# with CUDA graphs (-G), and prints one summary: busBW and algBW per size,
# the peak GPU memory of each rank against the largest size, the versions,
# and, given an nccl-tests build, its figures beside ours with the ratio.
#
#   scripts/gpu-check.sh
#   FB_MPI_PREFIX=/opt/ompi scripts/gpu-check.sh      Open MPI from its .debs:
#       for d in debs/*.deb; do dpkg -x "$d" /opt/ompi; done
#   NCCL_TESTS_DIR=~/nccl-tests/build scripts/gpu-check.sh
#
# Environment (all optional):
#   FB_MPI_PREFIX         root of the unpacked packages (DIR/usr/bin/mpirun[.openmpi]);
#                         PATH, LD_LIBRARY_PATH, OPAL_PREFIX, PMIX_INSTALL_PREFIX and the
#                         compiler's search paths are set from it (-dev packages of json-c,
#                         hwloc and libibverbs unpacked there are found too)
#   NCCL_TESTS_DIR        nccl-tests binaries (all_reduce_perf, all_gather_perf), run as one
#                         process over the same GPUs (-g N)
#   FB_GPU_CHECK_MIN/MAX  the sweep (1K, 16G); FB_GPU_CHECK_ITERS/WARMUP (20, 5);
#                         FB_GPU_CHECK_GRAPH, the -G launches (10)
#   FB_GPU_CHECK_GPUS     ranks (default: the GPUs of CUDA_VISIBLE_DEVICES, else nvidia-smi's)
#   FB_GPU_CHECK_OUT      where the outputs go (results/gpu-check/<UTC time>)
#   FB_GPU_CHECK_BUILD    the build tree (build); FB_GPU_CHECK_MPIRUN_ARGS, more mpirun flags
# Exit: 0 when every run passed validation; else the first failing run's
# exit code (docs/exit-codes.md), 3 for wrong results.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FB_GPU_CHECK_BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
min=${FB_GPU_CHECK_MIN:-1K}
max=${FB_GPU_CHECK_MAX:-16G}
iters=${FB_GPU_CHECK_ITERS:-20}
warmup=${FB_GPU_CHECK_WARMUP:-5}
graph=${FB_GPU_CHECK_GRAPH:-10}
out=${FB_GPU_CHECK_OUT:-$root/results/gpu-check/$(date -u +%Y%m%dT%H%M%SZ)}
colls=(all_reduce all_gather)

die() { # die CODE MESSAGE
  echo "gpu-check: $2" >&2
  exit "$1"
}
say() { echo "gpu-check: $*" >&2; }

# Open MPI unpacked with dpkg -x has no alternatives links (mpirun ->
# mpirun.openmpi) and was built for /usr: OPAL_PREFIX and
# PMIX_INSTALL_PREFIX move it to where it lies.
use_mpi_prefix() {
  local p=$1 arch libdir bin=$out/mpi-bin name
  [ -d "$p/usr/bin" ] || die 2 "FB_MPI_PREFIX=$p has no usr/bin; unpack the Open MPI packages there (dpkg -x PKG.deb $p)"
  libdir=$(dirname "$(find "$p/usr/lib" -maxdepth 2 -name 'libmpi.so.*' | head -1)")
  [ "$libdir" != . ] || die 2 "FB_MPI_PREFIX=$p holds no libmpi.so (unpack libopenmpi3 there too)"
  arch=$(basename "$libdir")
  mkdir -p "$bin"
  for name in mpirun mpiexec mpicc; do
    if [ -e "$p/usr/bin/$name.openmpi" ]; then ln -sf "$p/usr/bin/$name.openmpi" "$bin/$name"; fi
  done
  [ -e "$bin/mpirun" ] || [ -e "$p/usr/bin/mpirun" ] || die 2 "FB_MPI_PREFIX=$p has no mpirun (unpack openmpi-bin there)"
  export PATH=$bin:$p/usr/bin:$PATH
  export OPAL_PREFIX=$p/usr
  if [ -d "$libdir/pmix2" ]; then export PMIX_INSTALL_PREFIX=$libdir/pmix2; fi
  export LD_LIBRARY_PATH=$libdir:$libdir/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=$p/usr/include:$p/usr/include/$arch${CPATH:+:$CPATH}
  export LIBRARY_PATH=$libdir${LIBRARY_PATH:+:$LIBRARY_PATH}
}

# The build needs a compiler, make, mpicc and the -dev libraries; the
# package check of install-deps.sh cannot see packages unpacked by hand, so
# the tree is marked as checked here once a test compile passes.
build_tree() {
  command -v mpicc >/dev/null || die 5 "no mpicc: install Open MPI or give FB_MPI_PREFIX"
  command -v make >/dev/null || die 5 "no make on this machine"
  if ! "$root/scripts/install-deps.sh" --check >/dev/null 2>&1; then
    printf '#include <json-c/json.h>\n#include <hwloc.h>\n#include <infiniband/verbs.h>\nint main(void){return 0;}\n' >"$out/probe.c"
    mpicc "$out/probe.c" -o "$out/probe" -ljson-c -lhwloc -libverbs 2>"$out/probe.log" ||
      die 5 "cannot build against json-c, hwloc and libibverbs (unpack their -dev packages into FB_MPI_PREFIX): $(head -3 "$out/probe.log" | tr '\n' ' ')"
    mkdir -p "$build" && touch "$build/.deps-ok"
  fi
  say "building fabric-bench in $build"
  make -C "$root" -j"$(nproc)" BUILD="$build" all >"$out/build.log" 2>&1 || die 1 "the build failed: see $out/build.log"
  case $(make -C "$root" -s BUILD="$build" help 2>/dev/null) in
    *"NCCL backend: yes"*) ;;
    *) die 5 "fabric-bench was built without NCCL: no cuda_runtime.h or nccl.h under CUDA_HOME (${CUDA_HOME:-/usr/local/cuda})" ;;
  esac
}

# The GPUs one rank each can take: CUDA_VISIBLE_DEVICES when set (nvidia-smi
# lists every GPU whatever it says), else nvidia-smi's list.
gpu_count() {
  if [ -n "${FB_GPU_CHECK_GPUS:-}" ]; then echo "$FB_GPU_CHECK_GPUS"; return; fi
  if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c . || true; return; fi
  command -v nvidia-smi >/dev/null || die 5 "no nvidia-smi: set FB_GPU_CHECK_GPUS to the number of GPUs"
  nvidia-smi -L | grep -c '^GPU ' || true
}

# sweep NAME CMD...: runs one sweep into $out/NAME.txt; keeps the first
# failure's exit code.
status=0
sweep() {
  local name=$1 rc=0
  shift
  say "$name: $*"
  "$@" >"$out/$name.txt" 2>"$out/$name.err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    say "$name: exit $rc: $(tail -2 "$out/$name.err" | tr '\n' ' ')"
    [ "$status" -ne 0 ] || status=$rc
  fi
}

# Rows of an nccl-tests table (ours is the same): size, out-of-place algBW
# and busBW, wrong elements of both placements ("N/A" counts none).
rows() {
  [ -f "$1" ] || return 0
  awk '$1 ~ /^[0-9]+$/ && NF >= 13 && $2 ~ /^[0-9]+$/ {w = ($9 ~ /^[0-9]+$/ ? $9 : 0) + ($13 ~ /^[0-9]+$/ ? $13 : 0); print $1, $7, $8, w}' "$1"
}

json_field() { # json_field KEY FILE: the first string value of "KEY"
  sed -n "s/.*\"$1\": \"\\([^\"]*\\)\".*/\\1/p" "$2" 2>/dev/null | head -1
}

human() { # human BYTES: 16G, 512M, 1K
  awk -v b="$1" 'BEGIN { split("B K M G T", u, " "); i = 1; while (b >= 1024 && b % 1024 == 0 && i < 5) { b /= 1024; i++ }; printf "%d%s", b, (i == 1 ? "" : u[i]) }'
}

# One collective's table: ours plain and -G, nccl-tests' beside them.
summarize() {
  local c=$1 tmp=$out/$1.joined
  rows "$out/$c.txt" >"$tmp.a"
  rows "$out/$c-graph.txt" >"$tmp.b"
  : >"$tmp.c"
  : >"$tmp.d"
  if [ -n "${NCCL_TESTS_DIR:-}" ]; then
    rows "$out/ncclt-$c.txt" >"$tmp.c"
    rows "$out/ncclt-$c-graph.txt" >"$tmp.d"
  fi
  echo
  echo "$c over $ngpus GPUs, one rank each, -c 1 (out-of-place figures, GB/s; ratio = ours / nccl-tests)"
  awk -v have_nt="$([ -s "$tmp.c" ] && echo 1 || echo 0)" '
    FILENAME ~ /\.a$/ { order[++n] = $1; a_alg[$1] = $2; a_bus[$1] = $3; wrong += $4; next }
    FILENAME ~ /\.b$/ { b_alg[$1] = $2; b_bus[$1] = $3; wrong += $4; next }
    FILENAME ~ /\.c$/ { c_bus[$1] = $3; next }
    FILENAME ~ /\.d$/ { d_bus[$1] = $3; next }
    function cell(v) { return v == "" ? "-" : v }
    function ratio(x, y) { return (x == "" || y == "" || y + 0 == 0) ? "-" : sprintf("%.2f", x / y) }
    END {
      printf "%12s %9s %9s %9s %9s", "size", "algBW", "busBW", "-G algBW", "-G busBW"
      if (have_nt) printf " | %10s %6s %10s %6s", "nt busBW", "ratio", "nt -G", "ratio"
      printf "\n"
      for (i = 1; i <= n; i++) {
        s = order[i]
        printf "%12s %9s %9s %9s %9s", s, cell(a_alg[s]), cell(a_bus[s]), cell(b_alg[s]), cell(b_bus[s])
        if (have_nt) printf " | %10s %6s %10s %6s", cell(c_bus[s]), ratio(a_bus[s], c_bus[s]), cell(d_bus[s]), ratio(b_bus[s], d_bus[s])
        printf "\n"
      }
      printf "wrong elements: %d%s\n", wrong, wrong ? "" : " (every size validated, in and out of place)"
    }' "$tmp.a" "$tmp.b" "$tmp.c" "$tmp.d"
  rm -f "$tmp".?
  peak_memory "$c"
}

# Peak GPU memory of each rank (fabric-coll records it per device) against
# the largest size the sweep reached.
peak_memory() {
  local c=$1 json=$out/$1.json largest
  largest=$(rows "$out/$c.txt" | awk 'END { print $1 + 0 }')
  [ -f "$json" ] && [ "$largest" -gt 0 ] || return 0
  sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p' "$json" | awk -v L="$largest" -v h="$(human "$largest")" '
    function size(b) { return b >= 1073741824 ? sprintf("%.1f GiB", b / 1073741824) : sprintf("%.1f MiB", b / 1048576) }
    { printf "%s rank %d %s (%.2fx)", (NR == 1 ? "peak GPU memory per rank against the largest size " h ":" : ","), NR - 1, size($1), $1 / L }
    END { if (NR) printf "\n"; else print "peak GPU memory: not recorded (a run cut short)" }'
  grep -h '^# Warning: memory' "$out/$c.txt" || true
}

versions() {
  local j=$out/all_reduce.json mpi nt=""
  mpi=$(mpirun --version 2>/dev/null | head -1)
  if [ -n "${NCCL_TESTS_DIR:-}" ]; then
    nt=$(grep -m1 '^# nccl-tests version' "$out/ncclt-all_reduce.txt" 2>/dev/null | sed 's/^# //')
    nt=", ${nt:-nccl-tests} ($NCCL_TESTS_DIR)"
  fi
  echo "versions: NCCL $(json_field nccl "$j"), CUDA runtime $(json_field cuda_runtime "$j"), CUDA driver $(json_field cuda_driver "$j"), $mpi ($(command -v mpirun))$nt"
  echo "GPU: $(sed -n '/"devices"/,$ s/.*"name": "\([^"]*\)".*/\1/p' "$j" | head -1) x $ngpus on $(hostname)"
}

main() {
  mkdir -p "$out"
  if [ -n "${FB_MPI_PREFIX:-}" ]; then use_mpi_prefix "$FB_MPI_PREFIX"; fi
  command -v mpirun >/dev/null || die 5 "no mpirun: install Open MPI or give FB_MPI_PREFIX (Open MPI's .debs unpacked with dpkg -x)"
  build_tree
  ngpus=$(gpu_count)
  [ "$ngpus" -gt 0 ] || die 5 "no GPU visible (CUDA_VISIBLE_DEVICES is empty or nvidia-smi -L lists none)"
  local launch=(mpirun -np "$ngpus")
  [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
  # shellcheck disable=SC2206 # flags, split on purpose
  launch+=(${FB_GPU_CHECK_MPIRUN_ARGS:-})
  local args=(-b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" -c 1)
  for c in "${colls[@]}"; do
    sweep "$c" "${launch[@]}" "$build/bin/fabric-coll" "$c" "${args[@]}" --cap-memory --backend nccl -J "$out/$c.json"
    sweep "$c-graph" "${launch[@]}" "$build/bin/fabric-coll" "$c" "${args[@]}" -G "$graph" --cap-memory --backend nccl -J "$out/$c-graph.json"
    if [ -n "${NCCL_TESTS_DIR:-}" ]; then
      [ -x "$NCCL_TESTS_DIR/${c}_perf" ] || die 2 "NCCL_TESTS_DIR=$NCCL_TESTS_DIR has no ${c}_perf"
      sweep "ncclt-$c" "$NCCL_TESTS_DIR/${c}_perf" "${args[@]}" -g "$ngpus"
      sweep "ncclt-$c-graph" "$NCCL_TESTS_DIR/${c}_perf" "${args[@]}" -g "$ngpus" -G "$graph"
    fi
  done
  {
    echo "== gpu-check: fabric-bench on $ngpus GPUs, $min to $max =="
    versions
    for c in "${colls[@]}"; do summarize "$c"; done
    echo
    echo "outputs: $out"
  } | tee "$out/summary.txt"
  if [ "$status" -eq 0 ] && grep -q '^wrong elements: [1-9]' "$out/summary.txt"; then status=3; fi
  exit "$status"
}

main "$@"
