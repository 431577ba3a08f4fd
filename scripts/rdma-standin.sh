#!/usr/bin/env bash
# Runs a command with the libibverbs stand-in of tests/standin (and its
# libmlx5, libefa and librdmacm stubs) in place of rdma-core: unmodified
# programs (ibv_devinfo, perftest's ib_write_bw ..., fabric-rdma), which
# load libibverbs.so.1 by name, find the stand-in first through
# LD_LIBRARY_PATH. Its devices are described by knobs; its queue pairs move
# bytes between processes of this machine (docs/standin.md, "The RDMA
# stand-in"). Nothing it measures is an HCA's figure.
#   scripts/rdma-standin.sh CMD...            e.g. ibv_devinfo -v
#   BUILD=DIR scripts/rdma-standin.sh CMD...  the stand-in of another build tree
# The knobs keep a value already set; the defaults are set here so that
# mpirun -x can pass them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
dir=$build/standin-rdma

if [ $# -eq 0 ]; then
  echo "usage: scripts/rdma-standin.sh CMD..." >&2
  exit 2
fi
for lib in libibverbs.so.1 libmlx5.so.1 libefa.so.1 librdmacm.so.1; do
  if [ ! -e "$dir/$lib" ]; then
    echo "rdma-standin: no stand-in in $dir ($lib missing); build it with 'make standin-rdma' (needs <infiniband/verbs.h>)" >&2
    exit 5
  fi
done

export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FB_STANDIN_IB_DEVICES=${FB_STANDIN_IB_DEVICES:-mlx5_0}
export FB_STANDIN_IB_LINK=${FB_STANDIN_IB_LINK:-ib}
export FB_STANDIN_IB_STATE=${FB_STANDIN_IB_STATE:-active}
export FB_STANDIN_IB_SPEED=${FB_STANDIN_IB_SPEED:-NDR}
export FB_STANDIN_IB_WIDTH=${FB_STANDIN_IB_WIDTH:-4}
export FB_STANDIN_IB_RATE_GBPS=${FB_STANDIN_IB_RATE_GBPS:-0}
export FB_STANDIN_IB_DMABUF=${FB_STANDIN_IB_DMABUF:-1}
export FB_STANDIN_IB_RETRY_MAX_MS=${FB_STANDIN_IB_RETRY_MAX_MS:-2000}
export FB_STANDIN_IB_DIR=${FB_STANDIN_IB_DIR:-/dev/shm/fb-standin-ib-$(id -u)}
exec "$@"
