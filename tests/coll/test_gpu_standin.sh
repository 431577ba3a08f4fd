#!/usr/bin/env bash
# The GPU path without a GPU: the production fabric-coll and fabric-rdma,
# loading the CUDA runtime and NCCL stand-in of tests/standin (through
# scripts/gpu-standin.sh) instead of the real libraries. Every collective
# validated at 1, 2 and 4 ranks and in graph mode, the device each rank
# picks, two namespace hosts whose NCCL log says Socket (early stop,
# TCP-FALLBACK) or IB with GPUDirect RDMA (PASS), and each fault knob with
# the exit code docs/exit-codes.md gives it (docs/standin.md).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

standin=$FB_BUILD/standin
gs=$FB_ROOT/scripts/gpu-standin.sh
standin_built "the GPU stand-in" || exit 0

# --- the libraries ------------------------------------------------------
cudart=$(cd "$standin" && echo libcudart.so.*)
if readelf -d "$standin/$cudart" | grep -q "SONAME.*\[$cudart\]" &&
   readelf -d "$standin/libnccl.so.2" | grep -q 'SONAME.*\[libnccl.so.2\]'; then
  ok "stand-in sonames: $cudart and libnccl.so.2"
else
  not_ok "stand-in sonames" "$(readelf -d "$standin/$cudart" "$standin/libnccl.so.2" | grep SONAME)"
fi
# What the programs import (cudaMalloc@libcudart.so.13, ncclAllReduce) the
# stand-in exports, with the same versions.
imports() { objdump -T "$@" | awk '/UND/ && $NF ~ /^(__)?(cuda|nccl)/ {print $(NF-1), $NF}' | tr -d '()' | sort -u; }
exports() { objdump -T "$@" | awk '!/UND/ && $NF ~ /^(__)?(cuda|nccl)/ {print $(NF-1), $NF}' | sort -u; }
missing=$(comm -23 <(imports "$FB_BIN/fabric-coll" "$FB_BIN/fabric-rdma") \
  <(exports "$standin/$cudart" "$standin/libnccl.so.2"))
if [ -z "$missing" ]; then
  ok "every CUDA and NCCL symbol fabric-coll and fabric-rdma import is exported, versions alike"
else
  not_ok "every imported CUDA and NCCL symbol is exported" "$(echo "$missing" | head -5 | tr '\n' ' ')"
fi
if readelf -d "$FB_BIN/fabric-coll" | grep -E 'RUNPATH|RPATH' | grep -q standin; then
  not_ok "the release binaries do not point at the stand-in" "$(readelf -d "$FB_BIN/fabric-coll" | grep PATH)"
else
  ok "the release binaries do not point at the stand-in"
fi
expect_exit "gpu-standin.sh without a command: exit 2" 2 "$gs"
expect_exit "gpu-standin.sh without a stand-in built: exit 5" 5 env BUILD="$T_DIR/none" "$gs" true

# The stand-in's own checks (tests/standin/selftest.c): events, graphs,
# memory, the last error, ncclCommSplit, ranks that disagree.
if mpicc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$FB_ROOT/bench" -isystem "${CUDA_HOME:-/usr/local/cuda}/include" \
    "$FB_ROOT/tests/standin/selftest.c" -o "$T_DIR/selftest" -lm -L"$standin" -l:libnccl.so.2 -l:"$cudart" \
    >"$T_DIR/cc.log" 2>&1; then
  run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 4 -x LD_LIBRARY_PATH "$T_DIR/selftest"
  grep -E '^(not )?ok - ' "$T_OUT"
  if [ "$T_RC" -ne 0 ] && ! grep -q '^not ok' "$T_OUT"; then not_ok "the stand-in's self-test" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
else
  not_ok "the stand-in's self-test builds" "$(head -5 "$T_DIR/cc.log")"
fi

# --- one host -----------------------------------------------------------
# sg, jq_is and checked: tests/lib.sh.
for np in 1 2 4; do
  for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
    out=$T_DIR/$c-$np.json
    sg "$np" "$c" -b 1K -e 1M -f 32 -n 2 -w 1 -c 1 -r $((np - 1)) -J "$out"
    if [ "$T_RC" -ne 0 ]; then
      not_ok "$c on $np stand-in GPUs, -c 1" "exit $T_RC: $(head -c 400 "$T_ERR")"
    elif [ "$(jq -r '.backend + " " + .devices[0].kind' "$out")" != "nccl gpu" ]; then
      not_ok "$c on $np stand-in GPUs, -c 1" "not the NCCL backend on GPUs: $(jq -c '[.backend, .devices[0]]' "$out")"
    else
      checked "$c on $np stand-in GPUs: 3 sizes validated in and out of place" "$out" --ranks "$np" --rows 3 --complete
    fi
  done
done
# -G 3 with -n 2: 2 calls captured, the graph launched 3 times, and the
# check's call through a graph of its own (as nccl-tests validates graphs),
# for each of 3 sizes and 2 placements: 42 calls replayed on each rank.
for c in all_reduce alltoall; do
  mkdir -p "$T_DIR/g-$c"
  NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$T_DIR/g-$c/nccl.%h.%p sg 3 "$c" -b 4K -e 256K -f 8 -n 2 -G 3 -c 1 -J "$T_DIR/g-$c.json"
  if [ "$T_RC" -eq 0 ] && grep -q 'graph: 3 unalign: 0$' "$T_OUT"; then
    checked "$c -G 3 (CUDA graphs captured and replayed) on 3 ranks validates" "$T_DIR/g-$c.json" --ranks 3 --rows 3 --complete
  else
    not_ok "$c -G 3 on 3 ranks" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
  n=$(cat "$T_DIR/g-$c"/nccl.* | grep -c 'standin: [0-9]* calls carried out, 42 of them replayed from CUDA graphs')
  if [ "$n" -eq 3 ]; then ok "$c -G 3: each rank carried 42 calls out of graph replays, the checked one too"; else not_ok "$c -G 3: 42 calls replayed on each rank" "$(grep -h 'standin: [0-9]* calls' "$T_DIR/g-$c"/nccl.*)"; fi
done
for spec in "half sum" "bfloat16 avg" "int8 prod" "uint64 min"; do
  read -r dtype op <<<"$spec"
  sg 3 all_reduce -b 1K -e 64K -f 8 -n 1 -d "$dtype" -o "$op" -c 1 -J "$T_DIR/d.json"
  if [ "$T_RC" -eq 0 ]; then checked "all_reduce -d $dtype -o $op validates on 3 ranks" "$T_DIR/d.json" --complete; else not_ok "all_reduce -d $dtype -o $op" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
done

# The GPU each rank takes: the launcher's local rank, SLURM_LOCALID
# without Open MPI's, the host-name census without either;
# CUDA_VISIBLE_DEVICES renumbers.
sg 4 all_reduce -b 1K -e 1K -n 1 --nccl-log -J "$T_DIR/dev.json"
jq_is "4 ranks take GPUs 0-3 by OMPI_COMM_WORLD_LOCAL_RANK" "$T_DIR/dev.json" '[.devices[].cuda_device]' '[0,1,2,3]'
jq_is "--nccl-log on one host: 4 ranks logged, P2P inside the node, no network" "$T_DIR/dev.json" \
  '[.transport.net, (.transport.per_rank | length), .transport.per_rank[0].intra[0]]' '[null,4,"P2P"]'
# shellcheck disable=SC2016 # expanded by the rank's shell
sg_slurm=(sh -c 'SLURM_LOCALID=$((OMPI_COMM_WORLD_RANK + 5)) exec env -u OMPI_COMM_WORLD_LOCAL_RANK "$0" "$@"')
run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x LD_LIBRARY_PATH "${sg_slurm[@]}" "$FB_BIN/fabric-coll" \
  all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/slurm.json"
jq_is "without Open MPI's local rank, SLURM_LOCALID picks the GPU (5, 6)" "$T_DIR/slurm.json" '[.devices[].cuda_device]' '[5,6]'
run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 3 -x LD_LIBRARY_PATH env -u OMPI_COMM_WORLD_LOCAL_RANK \
  "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/census.json"
jq_is "without any launcher's local rank, the host-name census picks GPUs 0-2" "$T_DIR/census.json" '[.devices[].cuda_device]' '[0,1,2]'
CUDA_VISIBLE_DEVICES=3,5 sg 2 all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/cvd.json"
jq_is "CUDA_VISIBLE_DEVICES=3,5: GPUs 0 and 1 are the stand-in's 3 and 5 (their PCI buses)" "$T_DIR/cvd.json" \
  '[.devices[] | [.cuda_device, .pci_bus_id]]' '[[0,"0000:38:00.0"],[1,"0000:58:00.0"]]'
FB_STANDIN_GPUS=2 sg 3 all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/x.json"
if [ "$T_RC" -eq 2 ] && grep -q 'rank 2 is local rank 2 on .* but only 2 GPUs are visible' "$T_ERR"; then
  ok "3 ranks on 2 GPUs: exit 2 naming the rank"
else
  not_ok "3 ranks on 2 GPUs: exit 2" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
FB_STANDIN_GPUS=0 sg 1 all_reduce --backend nccl -b 1K -e 1K -n 1 -J "$T_DIR/x.json"
if [ "$T_RC" -eq 5 ] && grep -q 'no usable CUDA device here (cudaGetDeviceCount: no CUDA-capable device is detected)' "$T_ERR"; then
  ok "no GPU: --backend nccl exits 5 with the CUDA error by name"
else
  not_ok "no GPU: --backend nccl exits 5" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
FB_STANDIN_GPUS=0 sg 1 all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/x.json"
jq_is "no GPU: the default backend is mpi" "$T_DIR/x.json" '.backend' '"mpi"'

# --- the knobs ----------------------------------------------------------
FB_STANDIN_CORRUPT_RANK=1 sg 2 all_reduce -b 1K -e 4K -f 2 -n 1 -c 1 -J "$T_DIR/corrupt.json"
if [ "$T_RC" -eq 3 ] && grep -q 'rank 1 on .*: all_reduce 1K float out-of-place: 1 wrong element, first at \[0\]' "$T_ERR" &&
   ! grep -q 'rank 0 on' "$T_ERR"; then
  ok "FB_STANDIN_CORRUPT_RANK=1: exit 3, rank 1 alone named with its first wrong element"
else
  not_ok "FB_STANDIN_CORRUPT_RANK=1: exit 3" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
checked "FB_STANDIN_CORRUPT_RANK=1: the complete results count 6 wrong elements" "$T_DIR/corrupt.json" --complete --wrong 6

# A rank whose stream stops completing: the watchdog lays the timeout at
# it (the other ranks wait on it further on), aborts NCCL, exits 8.
logs=$T_DIR/hang-logs
mkdir -p "$logs"
start=$SECONDS
FB_STANDIN_HANG_RANK=1 FB_STANDIN_AFTER=30 NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$logs/nccl.%h.%p \
  sg 2 all_reduce -b 1K -e 64K -f 4 -n 5 -c 1 -T 6 -J "$T_DIR/hang.json"
took=$((SECONDS - start))
if [ "$T_RC" -eq 8 ] && [ "$took" -le 30 ]; then ok "FB_STANDIN_HANG_RANK=1: exit 8 (timeout) in ${took}s"; else not_ok "FB_STANDIN_HANG_RANK=1: exit 8" "exit $T_RC after ${took}s: $(head -c 400 "$T_ERR")"; fi
expect_grep "FB_STANDIN_HANG_RANK=1: the timeout names rank 1, in its timed loop" \
  '^fabric-coll: timeout: all_reduce 16K (out-of-place|in-place) \((timed|warm-up|check) iteration [0-9]+\) did not complete within 6 s \(rank 1 on [^ ]+\)$' "$T_ERR"
expect_grep "FB_STANDIN_HANG_RANK=1: rank 0 is shown past its wait" 'rank 0 on .*: alive, at all_reduce 16K .*(time reduction|barrier|check)' "$T_ERR"
if grep -qh 'rank 0 nranks 2 .* - Abort COMPLETE' "$logs"/nccl.*; then ok "FB_STANDIN_HANG_RANK=1: rank 0 aborted its communicator (ncclCommAbort)"; else not_ok "FB_STANDIN_HANG_RANK=1: ncclCommAbort" "$(cat "$logs"/nccl.* | grep -v Channel | tail -5)"; fi
checked "FB_STANDIN_HANG_RANK=1: the results keep the 2 sizes done, marked incomplete" "$T_DIR/hang.json" --incomplete --rows 2
jq_is "FB_STANDIN_HANG_RANK=1: the fault record says timeout" "$T_DIR/hang.json" '[.fault.status, .fault.exit_code]' '["timeout",8]'
expect_exit "FB_STANDIN_HANG_RANK=1: fabric-report check says INCOMPLETE (exit 23)" 23 "$FB_BIN/fabric-report" check "$T_DIR/hang.json"

# A peer lost mid-sweep: NCCL's asynchronous error ends the wait (exit 9)
# long before the watchdog would. With -n 1 -w 1 every call is followed by
# a wait, so the failure is always met in one. Call 1 is the set-up's
# warm-up (NCCL connects there), so call 15 is the third size's second.
FB_STANDIN_FAIL=async FB_STANDIN_AFTER=15 sg 3 all_reduce -b 1K -e 64K -f 4 -n 1 -w 1 -c 1 -T 8 -J "$T_DIR/async.json"
if [ "$T_RC" -eq 9 ] && grep -q 'NCCL failed during the call on rank [0-9]* (ncclCommGetAsyncError: ' "$T_ERR"; then
  ok "FB_STANDIN_FAIL=async: exit 9 from ncclCommGetAsyncError, not a timeout"
else
  not_ok "FB_STANDIN_FAIL=async: exit 9" "exit $T_RC: $(head -c 500 "$T_ERR")"
fi
expect_grep "FB_STANDIN_FAIL=async: the failing rank says why" \
  'rank 2 on .*ncclCommGetAsyncError: unhandled system error.*network failure injected at operation 15' "$T_ERR"
checked "FB_STANDIN_FAIL=async: the results file keeps the sizes done before" "$T_DIR/async.json" --incomplete --rows 2
FB_STANDIN_FAIL=init sg 3 all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/init.json"
if [ "$T_RC" -eq 9 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] &&
   grep -q '^fabric-coll: ncclCommInitRank failed: .*rank 2 on .* failed to initialise' "$T_ERR"; then
  ok "FB_STANDIN_FAIL=init: exit 9, one line naming rank 2 (FB_STANDIN_FAIL_RANK defaults to the last)"
else
  not_ok "FB_STANDIN_FAIL=init: exit 9, one line" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
FB_STANDIN_FAIL=init FB_STANDIN_FAIL_RANK=0 sg 2 all_reduce -b 1K -e 1K -n 1 -J "$T_DIR/init.json"
if [ "$T_RC" -eq 9 ] && grep -q 'ncclCommInitRank failed: .*rank 0: initialisation failure injected' "$T_ERR"; then ok "FB_STANDIN_FAIL=init on rank 0: exit 9"; else not_ok "FB_STANDIN_FAIL=init on rank 0: exit 9" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi

# GPU memory: 1100M per GPU leaves 60M past fabric-coll's 1G + 16M reserve.
FB_STANDIN_MEM=1100M sg 2 all_reduce -b 1K -e 256M -f 4 -n 1 -J "$T_DIR/mem.json"
if [ "$T_RC" -eq 4 ] && grep -q 'of GPU memory on .* the largest size that fits is -e 16M' "$T_ERR"; then
  ok "FB_STANDIN_MEM=1100M, -e 256M: exit 4 naming -e 16M"
else
  not_ok "FB_STANDIN_MEM=1100M: exit 4" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
FB_STANDIN_MEM=1100M sg 2 all_reduce -b 1K -e 256M -f 4 -n 1 --cap-memory -J "$T_DIR/mem.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Warning: memory: sweep capped at 16M instead of 256M' "$T_OUT"; then ok "--cap-memory caps the sweep at 16M"; else not_ok "--cap-memory caps at 16M" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
# The two 16M buffers and what the checks on the GPU keep there: one period
# of the reduction (12288 doubles) and the 16-byte count (docs/coll.md).
peak=$((2 * 16777216 + 12288 * 8 + 16))
jq_is "peak GPU memory per rank is recorded: the two 16M buffers and the check's table" "$T_DIR/mem.json" '[.devices[].peak_memory_bytes]' "[$peak,$peak]"

# fabric-rdma --use-cuda, as far as this machine goes: its GPU memory comes
# from the stand-in; the verbs device after it does not exist here.
rdma() { run "$gs" timeout -k 5 30 "$FB_BIN/fabric-rdma" --use-cuda -J "$T_DIR/r.json" "$@"; }
FB_STANDIN_GPUS=0 rdma
if [ "$T_RC" -eq 5 ] && grep -q 'no usable GPU: cudaGetDeviceCount failed with cudaErrorNoDevice (no CUDA-capable device is detected)' "$T_ERR"; then ok "fabric-rdma --use-cuda without a GPU: exit 5, cudaErrorNoDevice by name"; else not_ok "fabric-rdma --use-cuda without a GPU: exit 5" "exit $T_RC: $(cat "$T_ERR")"; fi
rdma --cuda-device 9
if [ "$T_RC" -eq 2 ] && grep -q 'no such GPU; this node has 8 (0-7)' "$T_ERR"; then ok "fabric-rdma --cuda-device 9 of 8: exit 2"; else not_ok "fabric-rdma --cuda-device 9: exit 2" "exit $T_RC: $(cat "$T_ERR")"; fi
FB_STANDIN_MEM=4M rdma -s 4M
if [ "$T_RC" -eq 4 ] && grep -q 'cannot allocate 8388608 bytes on GPU 0: cudaErrorMemoryAllocation (out of memory)' "$T_ERR"; then ok "fabric-rdma --use-cuda past the GPU's memory: exit 4, cudaErrorMemoryAllocation by name"; else not_ok "fabric-rdma --use-cuda past memory: exit 4" "exit $T_RC: $(cat "$T_ERR")"; fi
rdma
if [ "$T_RC" -ne 0 ] && ! grep -qi 'cuda\|GPU' "$T_ERR"; then ok "fabric-rdma --use-cuda: GPU memory allocated, then the missing RDMA device is what stops it (exit $T_RC)"; else not_ok "fabric-rdma --use-cuda gets past GPU memory" "exit $T_RC: $(cat "$T_ERR")"; fi

# --- two namespace hosts ------------------------------------------------
# The hosts: scripts/testhosts.sh, through hosts_up (tests/lib.sh).
hosts_up fbg 2 4 "the stand-in across two hosts" || exit 0
# sg2 NP ARGS...: fabric-coll across the hosts, one rank per host in turn.
sg2() {
  local np=$1 knobs=() v
  shift
  for v in $(compgen -e | grep -E '^FB_STANDIN_'); do knobs+=(-x "$v"); done
  run "$gs" timeout -k 5 120 "$th" mpirun fbg -np "$np" --map-by node -x LD_LIBRARY_PATH "${knobs[@]}" "$@"
}

# NCCL on sockets across nodes: the sweep stops at 64M and the verdict is
# TCP-FALLBACK, from the log fabric-coll captured by itself.
FB_STANDIN_NET=Socket sg2 2 "$FB_BIN/fabric-coll" all_reduce -b 32M -e 128M -f 2 -n 2 -w 1 -c 1 -J "$T_DIR/sock.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Early stop: TCP fallback suspected at 64M: .* on NET/Socket' "$T_OUT"; then
  ok "NET/Socket across 2 hosts: the sweep stops early at 64M"
else
  not_ok "NET/Socket across 2 hosts: early stop at 64M" "exit $T_RC: $(grep -i 'stop\|transport' "$T_OUT") $(head -c 300 "$T_ERR")"
fi
jq_is "NET/Socket: transport Socket on 2 hosts, hosts fbg1 and fbg2, early_stop at 64M" "$T_DIR/sock.json" \
  '[.transport.net, .transport.hosts, .hosts, .early_stop.at_bytes, (.rows | length)]' '["Socket",2,["fbg1","fbg2"],67108864,2]'
expect_exit "NET/Socket: fabric-report check says TCP-FALLBACK (exit 21)" 21 "$FB_BIN/fabric-report" check "$T_DIR/sock.json"
expect_grep "NET/Socket: the verdict line" 'TCP-FALLBACK' "$T_OUT"

# NCCL on IB with GPUDirect RDMA: PASS against a profile for it; the GPU
# of each rank from the host-name census (2 ranks per host).
prof=$T_DIR/profiles
mkdir -p "$prof"
cat >"$prof/standin-ib.json" <<'EOF'
{
  "schema": "fabric-bench.profile", "schema_version": 1, "name": "standin-ib", "revision": 1, "role": "target",
  "description": "the GPU stand-in across namespace hosts, logging NET/IB with GPUDirect RDMA",
  "fabric": "IB",
  "match": {"gpu": "stand-in", "backend": "nccl", "nodes_min": 2, "net": "IB"},
  "collectives": {"all_reduce": {"at_bytes": 1048576, "busbw_GBps": 0.01, "floor_GBps": 0.001}},
  "sources": [{"what": "a floor any working stand-in run passes", "ref": "tests/coll/test_gpu_standin.sh"}]
}
EOF
FB_STANDIN_NET=IB sg2 4 env -u OMPI_COMM_WORLD_LOCAL_RANK "$FB_BIN/fabric-coll" all_reduce -b 64K -e 1M -f 4 -n 3 -c 1 -J "$T_DIR/ib.json"
if [ "$T_RC" -eq 0 ]; then checked "NET/IB across 2 hosts, 4 ranks: validated" "$T_DIR/ib.json" --ranks 4 --nodes 2 --rows 3 --complete; else not_ok "NET/IB across 2 hosts" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
jq_is "NET/IB: transport IB with GPUDirect RDMA on every rank" "$T_DIR/ib.json" \
  '[.transport.net, .transport.gdr, ([.transport.per_rank[].gdr] | unique)]' '["IB",true,[true]]'
jq_is "2 ranks per host: the census gives GPUs 0 and 1 on each" "$T_DIR/ib.json" \
  '[.devices[] | [.host, .cuda_device]]' '[["fbg1",0],["fbg2",0],["fbg1",1],["fbg2",1]]'
expect_exit "NET/IB: fabric-report check against the profile says PASS" 0 "$FB_BIN/fabric-report" check "$T_DIR/ib.json" \
  --profiles "$prof" --profile standin-ib
expect_grep "NET/IB: the verdict names the profile" 'PASS.*standin-ib' "$T_OUT"

# IB without GPUDirect RDMA caps the verdict at DEGRADED; OFI is named by
# its plugin (AWS Libfabric) and provider.
FB_STANDIN_NET=IB FB_STANDIN_GDR=0 sg2 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 1M -f 4 -n 3 -c 1 -J "$T_DIR/nogdr.json"
jq_is "NET/IB, FB_STANDIN_GDR=0: transport IB without GPUDirect RDMA" "$T_DIR/nogdr.json" '[.transport.net, .transport.gdr]' '["IB",false]'
expect_exit "NET/IB without GPUDirect RDMA: fabric-report check says DEGRADED (exit 20)" 20 "$FB_BIN/fabric-report" check \
  "$T_DIR/nogdr.json" --profiles "$prof" --profile standin-ib
FB_STANDIN_NET=OFI sg2 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 64K -n 1 -c 1 -J "$T_DIR/ofi.json"
jq_is "NET/OFI: transport OFI, provider efa, GPUDirect RDMA" "$T_DIR/ofi.json" '[.transport.net, .transport.provider, .transport.gdr]' '["OFI","efa",true]'
