#!/usr/bin/env bash
# The check to run on a machine with NVIDIA GPUs, CUDA and NCCL, where Open
# MPI and the -dev headers may be missing (they come from a bundle made
# beforehand on a Debian machine), NCCL may come only inside the Python
# packages, and no package registry or network is reachable. Builds
# fabric-bench (and nccl-tests from source, for the GPU family alone), runs
# all_reduce and all_gather over every visible GPU, one rank each, validated
# (-c 1) at every size up to a cap, plain, with CUDA graphs (-G) and with
# buffer registration (-R 1, -R 2) where NCCL has it, then all_reduce once at
# the largest size, and prints one summary: time and algBW per size beside
# nccl-tests' with the ratio, wrong elements, peak GPU memory against the
# goal, the versions. docs/gpu-check.md says how to read it.
#
#   scripts/gpu-check.sh                      build, run, summarize
#   scripts/gpu-check.sh --dry-run            the plan and its time estimate; builds and runs nothing
#   scripts/gpu-check.sh --bundle [DIR]       make the bundle here (scripts/gpu-bundle.sh)
#   scripts/gpu-check.sh --summary DIR        the summary of a finished check's outputs, again
#   FB_GPU_CHECK_BUNDLE=gpu-bundle scripts/gpu-check.sh     on the GPU machine
#
# Environment (all optional):
#   FB_GPU_CHECK_BUNDLE   the bundle (scripts/gpu-bundle.sh; relative to the repository):
#                         Open MPI and the headers (as FB_MPI_PREFIX), nccl.h, nccl-tests' source
#   FB_MPI_PREFIX         root of unpacked Open MPI packages (DIR/usr/bin/mpirun[.openmpi])
#   CUDA_HOME             the CUDA toolkit (default: nvcc's, else /usr/local/cuda)
#   NCCL_HOME             NCCL's root (lib/ or lib64/, include/); default: CUDA_HOME's, else
#                         the python3 packages' (nvidia/nccl/lib/libnccl.so.2)
#   NCCL_TESTS_DIR        nccl-tests binaries already built (all_reduce_perf, all_gather_perf)
#   FB_GPU_CHECK_NCCL_TESTS  0: no nccl-tests; FB_GPU_CHECK_GENCODE: nvcc's targets for it (sm_90)
#   FB_GPU_CHECK_MIN/CAP  the validated sweeps (1K to 1G); FB_GPU_CHECK_MAX, the one all_reduce
#                         at the largest size (16G); FB_GPU_CHECK_ITERS/WARMUP (20, 5);
#                         FB_GPU_CHECK_GRAPH, the -G launches (10)
#   FB_GPU_CHECK_GPUS     ranks (default: the GPUs of CUDA_VISIBLE_DEVICES, else nvidia-smi's)
#   FB_GPU_CHECK_DEADLINE seconds from the start after which no run starts (470)
#   FB_GPU_CHECK_OUT      where the outputs go (results/gpu-check/<UTC time>)
#   FB_GPU_CHECK_BUILD    the build tree (build); FB_GPU_CHECK_MPIRUN_ARGS, more mpirun flags
# Exit: 0 when every run passed validation; 3 for wrong results (either
# tool's, "#wrong" read as an integer or as %g, 1e+06); else the first
# failing run's exit code (docs/exit-codes.md; 8 for a run stopped or
# skipped at the deadline); 2 bad usage, 5 something the check needs absent.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FB_GPU_CHECK_BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
min=${FB_GPU_CHECK_MIN:-1K}
cap=${FB_GPU_CHECK_CAP:-1G}
max=${FB_GPU_CHECK_MAX:-16G}
iters=${FB_GPU_CHECK_ITERS:-20}
warmup=${FB_GPU_CHECK_WARMUP:-5}
graph=${FB_GPU_CHECK_GRAPH:-10}
deadline=${FB_GPU_CHECK_DEADLINE:-470}
gencode=${FB_GPU_CHECK_GENCODE:--gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90}
out=${FB_GPU_CHECK_OUT:-$root/results/gpu-check/$(date -u +%Y%m%dT%H%M%SZ)}
jobs=$(nproc)
colls=(all_reduce all_gather)

# The time model of --dry-run, in seconds, for one H200 on 16 cores. Both
# tools check on the GPU when fabric-bench is built with nvcc; without it,
# fabric-coll's checks stage through host memory: about 2.5 s per GiB
# checked, in and out of place.
est_build_fb=30      # make -j16 all
est_build_nt=60      # nccl-tests for one GPU family, two collectives
est_start_fb=6       # mpirun, CUDA context, NCCL communicator
est_start_nt=4       # one process, CUDA context, NCCL communicator
est_check_gib=2.5    # fabric-coll -c 1 staged, per GiB per placement (0.01 on the GPU)
est_gpu_bps=1e12     # bytes per second one GPU moves through a collective, at least
budget=480           # what the device allows for the whole check

die() { # die CODE MESSAGE
  echo "gpu-check: $2" >&2
  exit "$1"
}
say() { echo "gpu-check: $*" >&2; }

bytes_of() { # bytes_of SIZE: 16G -> 17179869184 (nccl-tests' K, M, G: powers of 1024)
  awk -v s="$1" 'BEGIN {
    if (s !~ /^[0-9]+[KMGT]?$/) exit 1
    n = s + 0; u = substr(s, length(s)); m = 1
    if (u == "K") m = 1024; else if (u == "M") m = 1048576; else if (u == "G") m = 1073741824; else if (u == "T") m = 1099511627776
    printf "%.0f\n", n * m }' || die 2 "not a size: '$1' (a count of bytes, or with K, M, G or T)"
}

human() { # human BYTES: 16G, 512M, 1K
  awk -v b="$1" 'BEGIN { split("B K M G T", u, " "); i = 1; while (b >= 1024 && b % 1024 == 0 && i < 5) { b /= 1024; i++ }; printf "%d%s", b, (i == 1 ? "" : u[i]) }'
}

duration() { # duration SECONDS: "6 min 40 s", "8 min", "45 s"
  if [ "$1" -lt 60 ]; then echo "$1 s"; elif [ $(($1 % 60)) -eq 0 ]; then echo "$(($1 / 60)) min"; else echo "$(($1 / 60)) min $(($1 % 60)) s"; fi
}

quoted() { # quoted ARG...: the command line as a shell reads it back
  local q
  q=$(printf '%q ' "$@")
  echo "${q% }"
}

# ---- the machine: CUDA, NCCL, Open MPI ------------------------------------

find_cuda() {
  local nvcc
  if [ -z "${CUDA_HOME:-}" ]; then
    nvcc=$(command -v nvcc || true)
    if [ -n "$nvcc" ]; then CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$nvcc")")"); else CUDA_HOME=/usr/local/cuda; fi
  fi
  export CUDA_HOME
  cuda_lib=$(for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib"; do [ -d "$d" ] && echo "$d" && break; done || true)
  if [ ! -f "$CUDA_HOME/include/cuda_runtime.h" ] || [ -z "$cuda_lib" ]; then die 5 "no CUDA toolkit at CUDA_HOME=$CUDA_HOME (include/cuda_runtime.h, lib64/): set CUDA_HOME"; fi
}

# Directories python3 imports from: where pip put the nvidia-* packages.
python_dirs() {
  local py
  for py in python3 python; do
    command -v "$py" >/dev/null && "$py" -c 'import sys; print("\n".join(p for p in sys.path if p))' 2>/dev/null && break
  done
  compgen -G '/usr/local/lib/python3*/dist-packages' || true
  compgen -G '/usr/lib/python3*/site-packages' || true
  compgen -G '/opt/*/.venv/lib/python3*/site-packages' || true
}

nccl_lib_in() { # nccl_lib_in DIR: its libnccl.so.2 (or libnccl.so), if any
  local f
  for f in "$1/libnccl.so.2" "$1/libnccl.so"; do [ -e "$f" ] && echo "$f" && return 0; done
  return 1
}

# Sets nccl_so (the library), nccl_h (its header), nccl_from, and
# nccl_home: a root the Makefile and nccl-tests take (include/nccl.h,
# lib/libnccl.so). The Python packages ship libnccl.so.2 alone, without
# the unversioned name a link needs and maybe without the header, so for
# them nccl_home is a folder of links made in the build tree.
find_nccl() {
  local d lib
  nccl_so="" nccl_h="" nccl_home=""
  if [ -n "${NCCL_HOME:-}" ]; then
    for d in "$NCCL_HOME/lib64" "$NCCL_HOME/lib"; do nccl_so=$(nccl_lib_in "$d") && break; done
    [ -n "$nccl_so" ] || die 2 "NCCL_HOME=$NCCL_HOME has no lib/libnccl.so.2 or lib64/libnccl.so.2"
    nccl_from="NCCL_HOME" nccl_h=$NCCL_HOME/include/nccl.h
  elif lib=$(nccl_lib_in "$cuda_lib") && [ -f "$CUDA_HOME/include/nccl.h" ]; then
    nccl_so=$lib nccl_from="CUDA_HOME" nccl_h=$CUDA_HOME/include/nccl.h
  else
    while IFS= read -r d; do
      for lib in "$d"/nvidia/nccl/lib/libnccl.so.2 "$d"/nvidia/cu*/lib/libnccl.so.2; do
        [ -e "$lib" ] && nccl_so=$lib && break 2
      done
    done < <(python_dirs)
    [ -n "$nccl_so" ] || die 5 "no NCCL: not in CUDA_HOME=$CUDA_HOME, nor as nvidia/nccl/lib/libnccl.so.2 in python3's packages; set NCCL_HOME"
    nccl_from="python3's packages" nccl_h=$(dirname "$(dirname "$nccl_so")")/include/nccl.h
  fi
  if [ ! -f "$nccl_h" ]; then
    for nccl_h in "${bundle:-/nonexistent}/nccl/include/nccl.h" "$CUDA_HOME/include/nccl.h" ""; do [ -f "$nccl_h" ] && break; done
    [ -n "$nccl_h" ] || die 5 "no nccl.h beside $nccl_so: make the bundle (it carries one) or set NCCL_HOME"
  fi
  nccl_lib_dir=$(dirname "$nccl_so")
  if [ -e "$nccl_lib_dir/libnccl.so" ] && [ "$nccl_h" -ef "$nccl_lib_dir/../include/nccl.h" ]; then
    nccl_home=$(dirname "$nccl_lib_dir")
  else
    nccl_home=$build/nccl-home
  fi
  nccl_header_version=$(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$nccl_h" | paste -sd.)
  # The library says its version in its banner; a stand-in or a stripped
  # build may not, and then the header's counts.
  nccl_version=$(grep -a -o -m1 'NCCL version [0-9]*\.[0-9]*\.[0-9]*' "$nccl_so" 2>/dev/null | head -1 | awk '{ print $3 }' || true)
  nccl_version=${nccl_version:-$nccl_header_version}
  nccl_code=$(echo "$nccl_version" | awk -F. '{ printf "%d\n", $1 * 10000 + $2 * 100 + $3 }')
}

# The links of nccl_home, made when the build starts (never by --dry-run).
make_nccl_home() {
  [ "$nccl_home" = "$build/nccl-home" ] || return 0
  mkdir -p "$nccl_home/lib" "$nccl_home/include"
  ln -sfn "$nccl_so" "$nccl_home/lib/libnccl.so.2"
  ln -sfn "$nccl_so" "$nccl_home/lib/libnccl.so"
  ln -sfn "$nccl_h" "$nccl_home/include/nccl.h"
}

use_bundle() {
  bundle=${FB_GPU_CHECK_BUNDLE:-}
  [ -n "$bundle" ] || return 0
  case $bundle in /*) ;; *) bundle=$root/$bundle ;; esac
  [ -f "$bundle/MANIFEST" ] || die 2 "FB_GPU_CHECK_BUNDLE=$bundle is no bundle (no MANIFEST): make it with scripts/gpu-check.sh --bundle"
  FB_MPI_PREFIX=${FB_MPI_PREFIX:-$bundle}
}

# Open MPI unpacked with dpkg -x has no alternatives links (mpirun ->
# mpirun.openmpi) and was built for /usr: OPAL_PREFIX moves Open MPI, and
# PMIx, which keeps its own paths, is shown its components. Sets the
# environment only; link_mpi makes the links when the check runs.
use_mpi_prefix() {
  local p=$1 arch
  [ -d "$p/usr/bin" ] || die 2 "FB_MPI_PREFIX=$p has no usr/bin; unpack the Open MPI packages there (dpkg -x PKG.deb $p)"
  mpi_libdir=$(dirname "$(find "$p/usr/lib" -maxdepth 2 -name 'libmpi.so.*' | head -1)")
  [ "$mpi_libdir" != . ] || die 2 "FB_MPI_PREFIX=$p holds no libmpi.so (unpack libopenmpi3 there too)"
  [ -e "$p/usr/bin/mpirun.openmpi" ] || [ -e "$p/usr/bin/mpirun" ] || die 2 "FB_MPI_PREFIX=$p has no mpirun (unpack openmpi-bin there)"
  arch=$(basename "$mpi_libdir")
  mpi_prefix=$p
  export PATH=$out/mpi-bin:$p/usr/bin:$PATH
  export OPAL_PREFIX=$p/usr
  if [ -d "$mpi_libdir/pmix2" ]; then
    export PMIX_INSTALL_PREFIX=$mpi_libdir/pmix2 PMIX_PREFIX=$mpi_libdir/pmix2
    if [ -d "$mpi_libdir/pmix2/lib/pmix" ]; then export PMIX_MCA_mca_base_component_path=$mpi_libdir/pmix2/lib/pmix; fi
  fi
  export LD_LIBRARY_PATH=$mpi_libdir:$mpi_libdir/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=$p/usr/include:$p/usr/include/$arch${CPATH:+:$CPATH}
  export LIBRARY_PATH=$mpi_libdir${LIBRARY_PATH:+:$LIBRARY_PATH}
  # The compiler searches its own directories before LIBRARY_PATH: -L puts
  # the prefix's -dev links ahead of a machine's stale ones.
  make_ldflags=("LDFLAGS=-L$mpi_libdir")
}

link_mpi() {
  local name
  [ -n "${mpi_prefix:-}" ] || return 0
  mkdir -p "$out/mpi-bin"
  for name in mpirun mpiexec mpicc; do
    if [ -e "$mpi_prefix/usr/bin/$name.openmpi" ]; then ln -sf "$mpi_prefix/usr/bin/$name.openmpi" "$out/mpi-bin/$name"; fi
  done
}

# The bundle's fallback/ holds libraries every stock image has (zlib,
# libudev) and make: each is used only where the machine lacks it, through
# a folder of links to the missing ones alone, so that a newer copy there
# is never shadowed.
use_fallback() {
  local fb=${bundle:-}/fallback f name known
  fallback_missing=()
  [ -n "${bundle:-}" ] && [ -d "$fb" ] || return 0
  known=$(ldconfig -p 2>/dev/null | awk '{ print $1 }' || true)
  for f in "$fb"/lib/*/lib*.so.[0-9] "$fb"/usr/lib/*/lib*.so.[0-9]; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    grep -qxF "$name" <<<"$known" || fallback_missing+=("$f")
  done
  if [ ${#fallback_missing[@]} -gt 0 ]; then export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$out/fallback-lib; fi
  if ! command -v make >/dev/null && [ -x "$fb/usr/bin/make" ]; then export PATH=$PATH:$fb/usr/bin; fi
}

link_fallback() {
  local f
  [ ${#fallback_missing[@]} -gt 0 ] || return 0
  mkdir -p "$out/fallback-lib"
  for f in "${fallback_missing[@]}"; do ln -sf "$f" "$out/fallback-lib/"; done
}

have_program() { # have_program NAME: NAME on the PATH is a program file
  local p
  p=$(command -v "$1") && [ -f "$p" ] && [ -x "$p" ]
}

# Open MPI 4.1 launches even local ranks through its rsh launcher, which
# refuses to start without ssh or rsh on the PATH; the check runs on one
# machine, where the isolated launcher needs neither.
mpi_launcher() {
  if [ -z "${OMPI_MCA_plm:-}" ] && ! have_program ssh && ! have_program rsh; then
    export OMPI_MCA_plm=isolated
  fi
}

# The GPUs one rank each can take: CUDA_VISIBLE_DEVICES when set (nvidia-smi
# lists every GPU whatever it says), else nvidia-smi's list.
gpu_count() {
  if [ -n "${FB_GPU_CHECK_GPUS:-}" ]; then echo "$FB_GPU_CHECK_GPUS"; return; fi
  if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c . || true; return; fi
  command -v nvidia-smi >/dev/null || die 5 "no nvidia-smi: set FB_GPU_CHECK_GPUS to the number of GPUs"
  nvidia-smi -L | grep -c '^GPU ' || true
}

# nccl-tests: prebuilt (NCCL_TESTS_DIR), else built from the bundle's
# source into the build tree. Sets nt_dir ("" for none) and nt_src.
find_nccl_tests() {
  nt_dir="" nt_src=""
  [ "${FB_GPU_CHECK_NCCL_TESTS:-1}" != 0 ] || return 0
  if [ -n "${NCCL_TESTS_DIR:-}" ]; then
    nt_dir=$NCCL_TESTS_DIR
    for c in "${colls[@]}"; do [ -x "$nt_dir/${c}_perf" ] || die 2 "NCCL_TESTS_DIR=$nt_dir has no ${c}_perf"; done
  elif [ -n "${bundle:-}" ] && [ -f "$bundle/nccl-tests/src/Makefile" ]; then
    nt_src=$bundle/nccl-tests nt_dir=$build/nccl-tests
  fi
}

# ---- the plan --------------------------------------------------------------

# The variants of every validated sweep: -R 1 needs NCCL 2.19 (ncclMemAlloc
# and ncclCommRegister), -R 2 NCCL 2.27 (window registration).
variants() {
  echo plain graph
  [ "$nccl_code" -lt 21900 ] || echo reg1
  [ "$nccl_code" -lt 22700 ] || echo reg2
}

variant_flags() { # variant_flags VARIANT: into the array vflags
  case $1 in
    plain | largest) vflags=() ;;
    graph) vflags=(-G "$graph") ;;
    reg1) vflags=(-R 1) ;;
    reg2) vflags=(-R 2) ;;
  esac
}

variant_label() {
  case $1 in plain) echo "plain" ;; graph) echo "-G $graph" ;; reg1) echo "-R 1" ;; reg2) echo "-R 2" ;; largest) echo "at $max" ;; esac
}

run_name() { # run_name TOOL COLL VARIANT
  local n=$2
  [ "$1" = fb ] || n=ncclt-$2
  [ "$3" = plain ] || n=$n-$3
  echo "$n"
}

# estimate TOOL VARIANT FIRST LAST: seconds for one run of sizes FIRST..LAST (x2).
estimate() {
  local ck=$est_check_gib
  [ ! -x "${CUDA_HOME:-}/bin/nvcc" ] || ck=0.01
  awk -v tool="$1" -v v="$2" -v b="$3" -v e="$4" -v it="$iters" -v w="$warmup" -v g="$graph" \
    -v sf="$est_start_fb" -v sn="$est_start_nt" -v ck="$ck" -v bw="$est_gpu_bps" 'BEGIN {
    for (s = b; s <= e; s *= 2) sum += s
    ops = w + it * (v == "graph" ? g : 1)
    t = 2 * ops * sum / bw + (tool == "fb" ? sf + 2 * ck * sum / 1073741824 : sn)
    printf "%d\n", t + 0.999 }'
}

# plan STEP: calls STEP NAME TOOL COLL VARIANT SECONDS CMD... for every run,
# in order; --dry-run prints them, the check runs them.
plan() {
  local step=$1 c v name first last
  local launch=(mpirun -np "$ngpus") extra=() fc=$build/bin/fabric-coll nt_env sizes args
  [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
  read -r -a extra <<<"${FB_GPU_CHECK_MPIRUN_ARGS:-}"
  launch+=("${extra[@]}")
  # nccl-tests has no run path to NCCL or CUDA: added after what is there.
  nt_env=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$nccl_lib_dir:$cuda_lib")
  for c in "${colls[@]}"; do
    for v in $(variants) largest; do
      if [ "$v" = largest ]; then
        # The largest size once, all_reduce alone: what the memory goal is about.
        if [ "$c" != all_reduce ] || [ "$max_b" -le "$cap_b" ]; then continue; fi
        sizes=(-b "$max" -e "$max") first=$max_b last=$max_b
      else
        sizes=(-b "$min" -e "$cap_s") first=$min_b last=$cap_b
      fi
      variant_flags "$v"
      args=("${sizes[@]}" -f 2 -n "$iters" -w "$warmup" -c 1 "${vflags[@]}")
      name=$(run_name fb "$c" "$v")
      # --cap-memory keeps a sweep within the GPU's memory; the largest size
      # is the memory goal itself and must not be lowered.
      if [ "$v" = largest ]; then
        "$step" "$name" fb "$c" "$v" "$(estimate fb "$v" "$first" "$last")" "${launch[@]}" "$fc" "$c" "${args[@]}" --backend nccl -J "$out/$name.json"
      else
        "$step" "$name" fb "$c" "$v" "$(estimate fb "$v" "$first" "$last")" "${launch[@]}" "$fc" "$c" "${args[@]}" --cap-memory --backend nccl -J "$out/$name.json"
      fi
      if [ -n "$nt_dir" ]; then
        name=$(run_name nt "$c" "$v")
        "$step" "$name" nt "$c" "$v" "$(estimate nt "$v" "$first" "$last")" "${nt_env[@]}" "$nt_dir/${c}_perf" "${args[@]}" -g "$ngpus"
      fi
    done
  done
}

build_cmd() { # the fabric-bench build, into the array cmd
  cmd=(make -C "$root" -j"$jobs" BUILD="$build" CUDA_HOME="$CUDA_HOME" NCCL_HOME="$nccl_home" "${make_ldflags[@]}" all)
}

nt_build_cmd() { # the nccl-tests build (two collectives, one GPU family, no MPI), into cmd
  cmd=(make -C "$nt_src/src" -j"$jobs" MPI=0 BUILDDIR="$nt_dir" CUDA_HOME="$CUDA_HOME" NCCL_HOME="$nccl_home"
    NVCC_GENCODE="$gencode" "$nt_dir/all_reduce_perf" "$nt_dir/all_gather_perf")
}

# ---- --dry-run -------------------------------------------------------------

show_step() { # NAME TOOL COLL VARIANT SECONDS CMD...
  local name=$1 secs=$5
  shift 5
  step_n=$((step_n + 1)) est_runs=$((est_runs + secs)) n_runs=$((n_runs + 1))
  printf '%3d  run    %-24s %5s  %s\n' "$step_n" "$name" "${secs} s" "$(quoted "$@")"
}

dry_run() {
  local cmd total
  step_n=0 est_runs=0 n_runs=0
  echo "gpu-check plan: fabric-bench on $ngpus GPU$([ "$ngpus" -eq 1 ] || echo s), one rank each"
  echo "  CUDA       $CUDA_HOME$(command -v "$CUDA_HOME/bin/nvcc" >/dev/null || echo ' (no nvcc: no nccl-tests build)')"
  echo "  NCCL       $nccl_version: $nccl_so (from $nccl_from); nccl.h $nccl_header_version: $nccl_h"
  [ "$nccl_header_version" = "$nccl_version" ] || echo "  warning    nccl.h $nccl_header_version is not the library's $nccl_version: fabric-bench takes what the library has; nccl-tests may not build"
  echo "  NCCL_HOME  $nccl_home$([ "$nccl_home" != "$build/nccl-home" ] || echo ' (links, made at build time)')"
  echo "  MPI        $(if [ -n "${mpi_prefix:-}" ]; then echo "Open MPI from $mpi_prefix"; else command -v mpirun || echo 'none: give FB_GPU_CHECK_BUNDLE'; fi)$([ "${OMPI_MCA_plm:-}" != isolated ] || echo ', isolated launcher (no ssh here)')"
  [ ${#fallback_missing[@]} -eq 0 ] || echo "  fallback   $(for f in "${fallback_missing[@]}"; do basename "$f"; done | paste -sd' ') from the bundle (missing here)"
  echo "  sizes      $min to $cap_s validated at every size (-c 1), all_reduce once at $max"
  echo "  outputs    $out"
  echo "steps (seconds estimated for one H200):"
  build_cmd
  printf '%3d  build  %-24s %5s  %s\n' 1 fabric-bench "$est_build_fb s" "$(quoted "${cmd[@]}")"
  step_n=1 total=$est_build_fb
  if [ -n "$nt_src" ]; then
    nt_build_cmd
    step_n=2 total=$((total + est_build_nt))
    printf '%3d  build  %-24s %5s  %s\n' 2 nccl-tests "$est_build_nt s" "$(quoted "${cmd[@]}")"
  fi
  plan show_step
  total=$((total + est_runs))
  echo "estimate: $(duration "$total") (builds $(duration $((total - est_runs))), $n_runs runs $(duration "$est_runs")); the device allows $(duration "$budget")"
  [ "$total" -le "$budget" ] || echo "warning: over $(duration "$budget"): lower FB_GPU_CHECK_CAP or FB_GPU_CHECK_MAX"
}

# ---- the check -------------------------------------------------------------

build_tree() {
  local cmd
  command -v mpicc >/dev/null || die 5 "no mpicc: install Open MPI or give FB_GPU_CHECK_BUNDLE"
  command -v make >/dev/null || die 5 "no make on this machine"
  make_nccl_home
  # install-deps.sh cannot see packages unpacked by hand: the tree is
  # marked as checked once a test compile against the libraries passes.
  if ! "$root/scripts/install-deps.sh" --check >/dev/null 2>&1; then
    printf '#include <json-c/json.h>\n#include <hwloc.h>\n#include <infiniband/verbs.h>\nint main(void){return 0;}\n' >"$out/probe.c"
    mpicc "$out/probe.c" -o "$out/probe" ${mpi_libdir:+"-L$mpi_libdir"} -ljson-c -lhwloc -libverbs 2>"$out/probe.log" ||
      die 5 "cannot build against json-c, hwloc and libibverbs (unpack their -dev packages into FB_MPI_PREFIX): $(head -3 "$out/probe.log" | tr '\n' ' ')"
    mkdir -p "$build" && touch "$build/.deps-ok"
  fi
  build_cmd
  say "building fabric-bench: ${cmd[*]}"
  "${cmd[@]}" >"$out/build.log" 2>&1 || die 1 "the build failed: see $out/build.log"
  case $(make -C "$root" -s BUILD="$build" CUDA_HOME="$CUDA_HOME" NCCL_HOME="$nccl_home" help 2>/dev/null) in
    *"NCCL backend: yes"*) ;;
    *) die 5 "fabric-bench was built without NCCL: no cuda_runtime.h or nccl.h under CUDA_HOME=$CUDA_HOME, NCCL_HOME=$nccl_home" ;;
  esac
}

# nccl-tests only compares: a failed build leaves the check without it.
build_nccl_tests() {
  local cmd left
  [ -n "$nt_src" ] || return 0
  left=$((deadline - SECONDS))
  nt_build_cmd
  say "building nccl-tests: ${cmd[*]}"
  if [ ! -x "$CUDA_HOME/bin/nvcc" ] || ! timeout -k 5 "$((left > 30 ? left : 30))" "${cmd[@]}" >"$out/nccl-tests-build.log" 2>&1; then
    say "nccl-tests did not build (see $out/nccl-tests-build.log): no comparison"
    echo "nccl-tests did not build: see $out/nccl-tests-build.log" >"$out/nccl-tests-build.failed"
    nt_dir=""
  fi
}

# run_step NAME TOOL COLL VARIANT SECONDS CMD...: one run into $out/NAME.txt,
# its exit code into NAME.rc; bounded by three times its estimate and by
# the deadline, past which it is not started (exit 8, the timeout code).
run_step() {
  local name=$1 secs=$5 rc=0 left limit
  shift 5
  left=$((deadline - SECONDS))
  if [ "$left" -lt "$secs" ]; then
    say "$name: skipped, $(duration "$secs") would pass the deadline (FB_GPU_CHECK_DEADLINE=$deadline s)"
    echo "skipped: $(duration "$secs") would pass the deadline of $deadline s" >"$out/$name.err"
    echo 8 >"$out/$name.rc"
    return 0
  fi
  limit=$((3 * secs + 60))
  [ "$limit" -le "$left" ] || limit=$left
  say "$name: $*"
  local t0=$EPOCHREALTIME
  timeout -k 10 "$limit" "$@" >"$out/$name.txt" 2>"$out/$name.err" || rc=$?
  # The whole run's wall time: what -c 1's checks cost shows here.
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }' >"$out/$name.wall"
  case $rc in 124 | 137) echo "stopped after $limit s (timeout)" >>"$out/$name.err"; rc=8 ;; esac
  echo "$rc" >"$out/$name.rc"
  [ "$rc" -eq 0 ] || say "$name: exit $rc: $(tail -2 "$out/$name.err" | tr '\n' ' ')"
}

plan_line() { # NAME TOOL COLL VARIANT SECONDS CMD...: the run, for the summary
  echo "run $1 $2 $3 $4"
}

write_plan() {
  {
    echo "gpus $ngpus"
    echo "sizes $min $cap_s $max"
    echo "graph $graph"
    echo "nccl $nccl_so ($nccl_version, from $nccl_from; nccl.h $nccl_header_version: $nccl_h)"
    echo "mpi $(mpirun --version 2>/dev/null | head -1) ($(command -v mpirun))"
    echo "ncclt ${nt_dir:--}"
    plan plan_line
  } >"$out/plan.txt"
}

# ---- the summary -----------------------------------------------------------

meta() { sed -n "s/^$1 //p" "$sdir/plan.txt" | head -1; }

# Rows of an nccl-tests table (fabric-coll's is the same): size, time and
# algBW and busBW out of place, wrong elements of both placements. "#wrong"
# is an integer or %g (1e+06); "N/A" counts none; anything else unreadable
# counts as one, so that a mangled count never passes for zero.
rows() {
  [ -f "$1" ] || return 0
  awk 'function wrong(x) { return x == "N/A" ? 0 : (x ~ /^[0-9]+(\.[0-9]*)?([eE][+]?[0-9]+)?$/ ? x + 0 : 1) }
    $1 ~ /^[0-9]+$/ && NF >= 13 && $2 ~ /^[0-9]+$/ { printf "%s %s %s %s %.0f\n", $1, $6, $7, $8, wrong($9) + wrong($13) }' "$1"
}

json_field() { # json_field KEY FILE: the first string value of "KEY"
  sed -n "s/.*\"$1\": \"\\([^\"]*\\)\".*/\\1/p" "$2" 2>/dev/null | head -1
}

# One variant's table: ours, nccl-tests' beside, the ratio of algBW.
table() {
  local c=$1 v=$2 ours theirs
  ours=$sdir/$(run_name fb "$c" "$v").txt theirs=$sdir/$(run_name nt "$c" "$v").txt
  echo
  echo "$c $(variant_label "$v"), -c 1, $ngpus GPU$([ "$ngpus" -eq 1 ] || echo s): out of place; time in us, algBW and busBW in GB/s; ratio = our algBW / nccl-tests'"
  awk -v have_nt="$([ -f "$theirs" ] && echo 1 || echo 0)" '
    FILENAME == ARGV[1] { order[++n] = $1; t[$1] = $2; a[$1] = $3; b[$1] = $4; next }
    { nt[$1] = $2; na[$1] = $3 }
    function cell(x) { return x == "" ? "-" : x }
    END {
      printf "%12s %10s %9s %9s", "size", "time", "algBW", "busBW"
      if (have_nt) printf " | %10s %9s %6s", "nt time", "nt algBW", "ratio"
      printf "\n"
      for (i = 1; i <= n; i++) {
        s = order[i]; r = "-"
        if (na[s] + 0 > 0 && a[s] + 0 > 0) { r = sprintf("%.2f", a[s] / na[s]); k++; if (k == 1 || a[s] / na[s] < lo) lo = a[s] / na[s]; if (k == 1 || a[s] / na[s] > hi) hi = a[s] / na[s] }
        printf "%12s %10s %9s %9s", s, cell(t[s]), cell(a[s]), cell(b[s])
        if (have_nt) printf " | %10s %9s %6s", cell(nt[s]), cell(na[s]), r
        printf "\n"
      }
      if (n == 0) print "(no rows: see the run'"'"'s .err file)"
      if (k) printf "ratio over %d sizes: %.2f to %.2f\n", k, lo, hi
    }' <(rows "$ours") <(rows "$theirs")
}

# Peak GPU memory of each rank (fabric-coll records it per device) against
# the largest size, and for all_reduce at FB_GPU_CHECK_MAX the goal: send
# and receive buffers and 1 GiB more, no further copy of the data.
peak_memory() {
  local c=$1 json largest goal
  json=$sdir/$(run_name fb "$c" largest).json
  [ -f "$json" ] || json=$sdir/$(run_name fb "$c" plain).json
  largest=$(rows "${json%.json}.txt" | awk 'END { print $1 + 0 }')
  [ -f "$json" ] && [ "$largest" -gt 0 ] || return 0
  sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p' "$json" | awk -v L="$largest" -v h="$(human "$largest")" '
    function size(b) { return b >= 1073741824 ? sprintf("%.1f GiB", b / 1073741824) : sprintf("%.1f MiB", b / 1048576) }
    { printf "%s rank %d %s (%.2fx)", (NR == 1 ? "peak GPU memory per rank against the largest size " h ":" : ","), NR - 1, size($1), $1 / L }
    END { if (NR) printf "\n"; else print "peak GPU memory: not recorded (a run cut short)" }'
  grep -h '^# Warning: memory' "${json%.json}.txt" || true
  [ "$c" = all_reduce ] && [ "$largest" -eq "$max_b" ] || return 0
  goal=$((2 * max_b + 1073741824))
  sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p' "$json" | awk -v G="$goal" -v m="$max" '
    { worst = ($1 > worst ? $1 : worst); n++ }
    END { if (n) printf "memory goal, all_reduce -c 1 at %s: at most 2 x %s + 1 GiB = %.1f GiB per rank: %s (largest rank %.1f GiB)\n",
            m, m, G / 1073741824, worst <= G ? "met" : "MISSED", worst / 1073741824 }'
}

# Wrong elements of one tool over one collective's runs.
wrong_total() { # wrong_total TOOL COLL
  local v n=0 w
  for v in "${run_variants[@]}"; do
    w=$(rows "$sdir/$(run_name "$1" "$2" "$v").txt" | awk '{ s += $5 } END { printf "%.0f\n", s }')
    n=$(awk -v a="$n" -v b="$w" 'BEGIN { printf "%.0f\n", a + b }')
  done
  echo "$n"
}

# wall_ratio COLL: the plain -c 1 sweep's wall time against nccl-tests'
# (start-up included in both), goal at most 1.1.
wall_ratio() {
  local a=$sdir/$1.wall b=$sdir/ncclt-$1.wall
  [ -f "$a" ] && [ -f "$b" ] || return 0
  awk -v a="$(cat "$a")" -v b="$(cat "$b")" -v c="$1" 'BEGIN {
    if (b <= 0) exit
    printf "wall time of the -c 1 %s sweep: %.1f s, nccl-tests %.1f s: ratio %.2f (goal at most 1.10: %s)\n",
      c, a, b, a / b, a / b <= 1.10 ? "met" : "MISSED" }'
}

versions() {
  local j=$sdir/all_reduce.json nt="" ntd
  ntd=$(meta ncclt)
  if [ "$ntd" != - ] && [ -n "$ntd" ]; then
    nt=$(sed -n '/^# nccl-tests version/{s/^# //;p;q}' "$sdir/ncclt-all_reduce.txt" 2>/dev/null || true)
    nt=", ${nt:-nccl-tests} ($ntd)"
  fi
  echo "versions: NCCL $(json_field nccl "$j"), CUDA runtime $(json_field cuda_runtime "$j"), CUDA driver $(json_field cuda_driver "$j"), $(meta mpi)$nt"
  echo "GPU: $(sed -n '/"devices"/,$ s/.*"name": "\([^"]*\)".*/\1/p' "$j" | head -1) x $ngpus on $(hostname)"
  echo "NCCL library: $(meta nccl)"
}

# summarize DIR: the summary of a check's outputs on stdout; its exit code
# into the global status.
summarize() {
  local c v name rc first_fail="" wrong=0 w line
  sdir=$1
  [ -f "$sdir/plan.txt" ] || die 2 "$sdir holds no gpu-check outputs (no plan.txt)"
  ngpus=$(meta gpus)
  read -r min cap_s max <<<"$(meta sizes)"
  max_b=$(bytes_of "$max")
  graph=$(meta graph)
  echo "== gpu-check: fabric-bench on $ngpus GPU$([ "$ngpus" -eq 1 ] || echo s), $min to $cap_s validated at every size, all_reduce at $max =="
  versions
  [ ! -f "$sdir/nccl-tests-build.failed" ] || cat "$sdir/nccl-tests-build.failed"
  for c in "${colls[@]}"; do
    mapfile -t run_variants < <(awk -v c="$c" '$1 == "run" && $3 == "fb" && $4 == c { print $5 }' "$sdir/plan.txt")
    for v in "${run_variants[@]}"; do table "$c" "$v"; done
    echo
    w=$(wrong_total fb "$c")
    echo "wrong elements: $w$([ "$w" != 0 ] || echo " (every size validated, in and out of place)")"
    if grep -q "^run ncclt-$c" "$sdir/plan.txt"; then
      line=$(wrong_total nt "$c")
      echo "nccl-tests wrong elements: $line"
      w=$(awk -v a="$w" -v b="$line" 'BEGIN { printf "%.0f\n", a + b }')
    fi
    wrong=$(awk -v a="$wrong" -v b="$w" 'BEGIN { printf "%.0f\n", a + b }')
    peak_memory "$c"
    wall_ratio "$c"
  done
  echo
  local n=0 failed=0
  while read -r _ name _; do
    n=$((n + 1))
    rc=$(cat "$sdir/$name.rc" 2>/dev/null || echo 8)
    [ "$rc" -ne 0 ] || continue
    failed=$((failed + 1))
    [ -n "$first_fail" ] || first_fail=$rc
    echo "failed: $name exit $rc: $(tail -1 "$sdir/$name.err" 2>/dev/null || echo 'not run')"
  done < <(grep '^run ' "$sdir/plan.txt")
  status=${first_fail:-0}
  if [ "$status" -eq 0 ] && [ "$wrong" != 0 ]; then status=3; fi
  case $status in
    0) echo "verdict: PASS, $n runs, every size validated" ;;
    3) echo "verdict: FAIL, wrong results ($wrong wrong elements; exit 3)" ;;
    *) echo "verdict: FAIL, $failed of $n runs failed (exit $status)" ;;
  esac
  echo "outputs: $sdir"
}

# ---- main ------------------------------------------------------------------

setup() {
  min_b=$(bytes_of "$min") cap_b=$(bytes_of "$cap") max_b=$(bytes_of "$max")
  [ "$min_b" -le "$max_b" ] || die 2 "FB_GPU_CHECK_MIN=$min is above FB_GPU_CHECK_MAX=$max"
  # The validated sweeps stop at the cap, or at the largest size below it.
  [ "$cap_b" -le "$max_b" ] || cap_b=$max_b
  cap_s=$(human "$cap_b")
  make_ldflags=() fallback_missing=() mpi_prefix="" mpi_libdir=""
  use_bundle
  if [ -n "${FB_MPI_PREFIX:-}" ]; then use_mpi_prefix "$FB_MPI_PREFIX"; fi
  use_fallback
  mpi_launcher
  find_cuda
  find_nccl
  find_nccl_tests
  ngpus=$(gpu_count)
  [ "$ngpus" -gt 0 ] || die 5 "no GPU visible (CUDA_VISIBLE_DEVICES is empty or nvidia-smi -L lists none)"
}

check() {
  mkdir -p "$out"
  link_mpi
  link_fallback
  command -v mpirun >/dev/null || die 5 "no mpirun: install Open MPI or give FB_GPU_CHECK_BUNDLE (scripts/gpu-check.sh --bundle)"
  build_tree
  build_nccl_tests
  write_plan
  plan run_step
  summarize "$out" >"$out/summary.txt"
  cat "$out/summary.txt"
  exit "$status"
}

main() {
  status=0
  case ${1:-} in
    --bundle) shift; exec "$root/scripts/gpu-bundle.sh" "$@" ;;
    --summary)
      [ $# -eq 2 ] || die 2 "usage: scripts/gpu-check.sh --summary DIR"
      summarize "$2"
      exit "$status" ;;
    --dry-run) [ $# -eq 1 ] || die 2 "usage: scripts/gpu-check.sh --dry-run"; setup; dry_run ;;
    "") setup; check ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" ;;
    *) die 2 "unknown argument '$1' (--dry-run, --bundle [DIR], --summary DIR)" ;;
  esac
}

main "$@"
