#!/usr/bin/env bash
# Without CUDA the probe still builds (the no-CUDA GPU back-end stands in)
# and --use-cuda says what is missing, as "unavailable".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if variant_build nocuda MODULES="core probe" CUDA_HOME=/nonexistent NCCL_HOME=/nonexistent; then
  ok "fabric-rdma builds with CUDA_HOME pointing nowhere"
else
  not_ok "fabric-rdma builds with CUDA_HOME pointing nowhere" "$(grep -m3 'error' "$T_DIR/make.log")"
  exit 0
fi
if [ -e "$tree/obj/bench/probe/mem_gpu_cuda.o" ] || readelf -d "$tree/bin/fabric-rdma" | grep -q libcuda; then
  not_ok "the CUDA back-end is left out" "mem_gpu_cuda.c was compiled or CUDA linked"
else
  ok "the CUDA back-end is left out"
fi
run timeout 60 "$tree/bin/fabric-rdma" --use-cuda -J "$T_DIR/r.json"
if [ "$T_RC" -eq 5 ] && grep -q '^fabric-rdma: --use-cuda: this fabric-rdma was built without CUDA' "$T_ERR" &&
   [ "$(grep -c . "$T_ERR")" -eq 1 ]; then
  ok "--use-cuda on a build without CUDA: exit 5, one line"
else
  not_ok "--use-cuda on a build without CUDA: exit 5, one line" "exit $T_RC $(cat "$T_ERR")"
fi
run fb_mpirun 2 "$tree/bin/fabric-rdma" --transport tcp -D 0.2 -J "$T_DIR/t.json"
if [ "$T_RC" -eq 0 ]; then ok "the build without CUDA measures TCP"; else not_ok "the build without CUDA measures TCP" "exit $T_RC"; fi
