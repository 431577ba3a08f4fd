#!/usr/bin/env bash
# The nccl-tests names on a build with NCCL where CUDA sees no GPU (a pod
# that requested none, a broken driver): nccl-tests fails there, so its
# drop-in exits 5 with CUDA's error and the fixes and writes nothing,
# rather than measure host memory under a GPU benchmark's name. fabric-coll
# keeps its automatic choice and says it in its first line; --backend mpi
# under a *_perf name measures host memory on purpose (docs/coll.md,
# Backends). The GPU stand-in's FB_STANDIN_GPUS=0 is "no GPU visible".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

standin_built "the *_perf names without a GPU" || exit 0
gs=$FB_ROOT/scripts/gpu-standin.sh

# perf NP PROG ARGS...: PROG (all_reduce_perf, fabric-coll) on NP ranks
# under the stand-in, run in $T_DIR/cwd so that a default results
# directory would land there.
perf() {
  local np=$1 prog=$2
  shift 2
  local pass=(-x LD_LIBRARY_PATH -x FB_STANDIN_GPUS)
  [ -n "${CUDA_VISIBLE_DEVICES+set}" ] && pass+=(-x CUDA_VISIBLE_DEVICES)
  rm -rf "$T_DIR/cwd" && mkdir -p "$T_DIR/cwd"
  run env -C "$T_DIR/cwd" "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np "$np" "${pass[@]}" \
    "$FB_BIN/$prog" "$@"
}

# nothing_written NAME: the run left no file behind (nccl-tests' JSON,
# the record, a default results directory).
nothing_written() {
  local left
  left=$(find "$T_DIR/cwd" -mindepth 1 -print -quit)
  if [ -z "$left" ]; then ok "$1"; else not_ok "$1" "left $left"; fi
}

export FB_STANDIN_GPUS=0
perf 2 all_reduce_perf -b 1K -e 1K -n 1 -J nt.json --record rec.json
if [ "$T_RC" -eq 5 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] &&
   grep -q 'all_reduce_perf measures GPUs, as nccl-tests does, and CUDA sees none here (cudaGetDeviceCount: no CUDA-capable device is detected)' "$T_ERR" &&
   grep -q 'request GPUs .*check the driver (nvidia-smi), or add --backend mpi to measure host memory' "$T_ERR"; then
  ok "all_reduce_perf, no GPU: exit 5, one line with CUDA's error and the fixes"
else
  not_ok "all_reduce_perf, no GPU: exit 5 with CUDA's error" "exit $T_RC: $(head -c 600 "$T_ERR")"
fi
if [ ! -s "$T_OUT" ]; then ok "all_reduce_perf, no GPU: no table"; else not_ok "all_reduce_perf, no GPU: no table" "$(head -3 "$T_OUT")"; fi
nothing_written "all_reduce_perf, no GPU: no nccl-tests JSON, no --record file, no results directory"

# CUDA_VISIBLE_DEVICES that hides every GPU is named with the error.
FB_STANDIN_GPUS=8 CUDA_VISIBLE_DEVICES='' perf 1 all_gather_perf -b 1K -e 1K -n 1
if [ "$T_RC" -eq 5 ] && grep -q "^fabric-coll: all_gather_perf measures GPUs.*CUDA_VISIBLE_DEVICES=''" "$T_ERR"; then
  ok "all_gather_perf, CUDA_VISIBLE_DEVICES empty: exit 5 naming both"
else
  not_ok "all_gather_perf, CUDA_VISIBLE_DEVICES empty: exit 5 naming both" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi

# Host memory on purpose: --backend mpi.
perf 2 all_reduce_perf --backend mpi -b 1K -e 1K -n 1 -J nt.json --record rec.json
if [ "$T_RC" -eq 0 ] && [ "$(jq -r .backend "$T_DIR/cwd/rec.json")" = mpi ] && [ -s "$T_DIR/cwd/nt.json" ]; then
  ok "all_reduce_perf --backend mpi, no GPU: host memory measured, both files written"
else
  not_ok "all_reduce_perf --backend mpi, no GPU: host memory measured" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi

# fabric-coll keeps its automatic choice and says why in its first line.
perf 2 fabric-coll all_reduce -b 1K -e 1K -n 1 -J rec.json
if [ "$T_RC" -eq 0 ] && head -1 "$T_OUT" | grep -q \
   'backend mpi (host memory), chosen: CUDA sees no GPU (cudaGetDeviceCount: no CUDA-capable device is detected); '; then
  ok "fabric-coll, no GPU: mpi, its first line says CUDA sees no GPU"
else
  not_ok "fabric-coll, no GPU: mpi, said in its first line" "exit $T_RC: $(head -1 "$T_OUT") $(head -c 300 "$T_ERR")"
fi

# With GPUs the name measures them, and the line says nothing more.
FB_STANDIN_GPUS=2 perf 2 all_reduce_perf -b 1K -e 1K -n 1 --record rec.json
if [ "$T_RC" -eq 0 ] && [ "$(jq -r .backend "$T_DIR/cwd/rec.json")" = nccl ] &&
   grep -q '^# fabric-coll .* backend nccl (GPU memory); ' "$T_OUT"; then
  ok "all_reduce_perf with GPUs: the nccl backend"
else
  not_ok "all_reduce_perf with GPUs: the nccl backend" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
