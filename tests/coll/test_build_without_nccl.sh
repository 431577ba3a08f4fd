#!/usr/bin/env bash
# Without CUDA/NCCL the build still succeeds, minus the NCCL backend, and
# asking for that backend says how to get it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if variant_build nocuda MODULES="core coll report" CUDA_HOME=/nonexistent NCCL_HOME=/nonexistent; then
  ok "builds with CUDA_HOME pointing nowhere"
else
  not_ok "builds with CUDA_HOME pointing nowhere" "$(tail -5 "$T_DIR/make.log")"
  exit 0
fi
if readelf -d "$tree/bin/fabric-coll" | grep -q 'libnccl\|libcudart' || [ -e "$tree/obj/bench/coll/backend_nccl.o" ]; then
  not_ok "no NCCL flags without NCCL" "NCCL was compiled in or linked"
else
  ok "no NCCL flags without NCCL"
fi
run timeout -k 5 60 "${FB_MPIRUN[@]}" -q -np 2 "$tree/bin/fabric-coll" all_reduce --backend nccl \
  -b 1K -e 1K -J "$T_DIR/x.json"
if [ "$T_RC" -eq 5 ] && grep -q 'this build has no NCCL backend.*CUDA_HOME' "$T_ERR"; then
  ok "--backend nccl on a build without NCCL: exit 5 with the fix"
else
  not_ok "--backend nccl on a build without NCCL: exit 5 with the fix" "exit $T_RC $(cat "$T_ERR")"
fi
# Under an nccl-tests name too: there is no GPU backend to insist on, and
# the first line says why the run is on host memory.
run fb_mpirun 2 "$tree/bin/all_reduce_perf" -b 1K -e 4K -f 2 -n 1 -J "$T_DIR/y.json" --record "$T_DIR/y-rec.json"
if [ "$T_RC" -eq 0 ] && grep -q 'backend mpi (host memory), chosen: built without NCCL; ' "$T_OUT"; then
  ok "the build without NCCL runs on host memory and says why"
else
  not_ok "the build without NCCL runs on host memory and says why" "exit $T_RC: $(grep -m1 'backend' "$T_OUT")"
fi
