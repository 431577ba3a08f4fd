#!/usr/bin/env bash
# Runs a command with the CUDA runtime and NCCL stand-in of tests/standin in
# place of the real libraries: the same fabric-bench binaries, which load
# libcudart.so.13 and libnccl.so.2 by name, find the stand-in first through
# LD_LIBRARY_PATH. For tests and for trying the GPU paths on a machine
# without a GPU; nothing it measures is a GPU's figure (docs/standin.md).
#   scripts/gpu-standin.sh CMD...            e.g. mpirun -np 2 -x LD_LIBRARY_PATH build/bin/fabric-coll ...
#   BUILD=DIR scripts/gpu-standin.sh CMD...  the stand-in of another build tree
# The knobs (FB_STANDIN_GPUS, FB_STANDIN_MEM, FB_STANDIN_NET, ...) keep a
# value already set; the defaults are set here so that mpirun -x can pass them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
dir=$build/standin

if [ $# -eq 0 ]; then
  echo "usage: scripts/gpu-standin.sh CMD..." >&2
  exit 2
fi
if [ ! -e "$dir/libnccl.so.2" ] || ! compgen -G "$dir/libcudart.so.*" >/dev/null; then
  echo "gpu-standin: no stand-in in $dir; build it with 'make standin' (needs the CUDA and NCCL headers)" >&2
  exit 5
fi

export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FB_STANDIN_GPUS=${FB_STANDIN_GPUS:-8}
export FB_STANDIN_MEM=${FB_STANDIN_MEM:-80G}
export FB_STANDIN_NET=${FB_STANDIN_NET:-Socket}
export FB_STANDIN_GDR=${FB_STANDIN_GDR:-1}
export FB_STANDIN_AFTER=${FB_STANDIN_AFTER:-100}
export FB_STANDIN_CUDA_DMABUF=${FB_STANDIN_CUDA_DMABUF:-1}
exec "$@"
