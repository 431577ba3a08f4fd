#!/usr/bin/env bash
# Real nccl-tests outputs published by others (../shared/realworld, kept
# beside the checkout, never in it): each run imports and reads as its
# source shows it. The figures below are read off the files themselves:
# collective, rows, the largest size and its out-of-place / in-place busBW,
# and the rank count (- where the file does not list ranks).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

REAL=${FB_REALWORLD:-$FB_ROOT/../shared/realworld}
R=$FB_BIN/fabric-report
if [ ! -d "$REAL/nccl-tests" ]; then
  skip "real nccl-tests outputs" "$REAL/nccl-tests is not there (set FB_REALWORLD)"
  exit 0
fi
command -v jq >/dev/null || { skip "real nccl-tests outputs" "jq is not installed"; exit 0; }

# file  result-suffix  collective  rows  largest  oop-busbw  ip-busbw  ranks
while read -r file suffix coll rows largest oop ip ranks; do
  [ -n "$file" ] || continue
  out=$T_DIR/out/
  name=${file%.*}
  [ "$suffix" = - ] && json=$out$name.json || json=$out$name-$suffix.json
  [ -f "$json" ] || "$R" import "$REAL/nccl-tests/$file" -o "$out" >"$T_DIR/import.log" 2>&1
  what="$file${suffix#-}"
  if [ ! -f "$json" ]; then
    not_ok "$what imports" "$(head -c 300 "$T_DIR/import.log")"
    continue
  fi
  got=$(jq -r --argjson b "$largest" '[.collective, (.rows | length),
          (.rows | map(select(.bytes == $b)) | last | .out_of_place.busbw_GBps, .in_place.busbw_GBps),
          .topology.ranks] | map(tostring) | join(" ")' "$json")
  want="$coll $rows $oop $ip"
  [ "$ranks" = - ] || want="$want $ranks"
  [ "$ranks" = - ] && got=${got% *}
  if [ "$got" = "$want" ]; then ok "$what: $want"; else not_ok "$what reads as its source" "got '$got', want '$want'"; fi
done <<'TABLE'
alcf_polaris_a100_awsofi_cxi.dat - all_reduce 29 1073741824 36.81 36.73 8
alcf_polaris_a100_socket_default.dat - all_reduce 29 1073741824 9.45 9.45 8
aws_do_eks_efa_t4_tagoutput.txt - all_reduce 31 1073741824 3.11 3.12 2
awsome_p5_efa_srun_l.txt - all_reduce 32 17179869184 487.09 487.26 -
cci_moc_roce_sendrecv_g4.log - sendrecv 13 26843545600 5.85 5.86 8
coreweave_gb200_20racks_excerpt.txt - all_reduce 6 17179869184 405.74 404.77 1440
coreweave_h100_sharp_kubectl_logs.txt - all_reduce 5 8589934592 386.56 385.56 -
deepops_roce_sriov_k8s_noheader.txt - all_reduce 29 2147483648 22.92 22.85 -
dranet_b200_1node_allgather_elided.txt - all_gather 8 8589934592 482.71 564.14 2
dranet_gke_h200_rdma_mpi_operator.txt - all_reduce 24 8589934592 31.89 31.88 2
eks_efa_v100_64ranks_nccl264.log - all_reduce 28 1073741824 5.26 5.26 64
gke_a3high_tcpx_all_gather.txt - all_gather 10 536870912 70.9 71.35 -
gke_a3mega_tcpxo_all_gather.txt - all_gather 31 8589934592 188.73 188.9 -
nccl_ebpf_socket_2ranks_tagoutput.txt - all_reduce 8 134217728 2.3 2.31 2
superbench_all_gather_a100_g8.log - all_gather 34 8589934592 223.39 230.07 8
superbench_broadcast_a100_g8.log - broadcast 34 8589934592 232.81 234.7 8
superbench_reduce_a100_g8.log - reduce 34 8589934592 228.38 228.83 8
xxrjun_ib_h100_alltoall_fail_then_sendrecv.log sendrecv sendrecv 10 17179869184 1.09 1.03 8
xxrjun_ib_h100_smoke_2runs.log all_reduce all_reduce 5 536870912 46.32 46.46 2
xxrjun_ib_h100_smoke_2runs.log sendrecv sendrecv 5 536870912 43.57 43.65 2
xxrjun_nvlink_h100_8gpu_5collectives.log all_reduce all_reduce 10 17179869184 482.27 482.12 8
xxrjun_nvlink_h100_8gpu_5collectives.log all_gather all_gather 10 17179869184 361.86 366.03 8
xxrjun_nvlink_h100_8gpu_5collectives.log reduce_scatter reduce_scatter 10 17179869184 364.76 365.09 8
xxrjun_nvlink_h100_8gpu_5collectives.log alltoall alltoall 10 17179869184 348.03 347.25 8
xxrjun_nvlink_h100_8gpu_5collectives.log sendrecv sendrecv 10 17179869184 367.25 367.23 8
TABLE

# Rows alone name the collective where the output does not: say so.
check "an excerpt without a collective says it was inferred" \
  jq -e '.warnings | map(select(test("collective inferred from the rows: all_reduce"))) | length == 1' \
  "$T_DIR/out/deepops_roce_sriov_k8s_noheader.json"
# The failed run of a file is kept as a failure, not dropped, its fault the
# NCCL error itself rather than the ".. Test failure" lines after it.
check "a run that failed before its first row is kept, incomplete, with its fault" \
  jq -e '.complete == false and (.rows | length) == 0 and (.fault.message | test("NCCL failure common.cu:401 .remote process exited"))' \
  "$T_DIR/out/xxrjun_ib_h100_alltoall_fail_then_sendrecv-alltoall.json"

# Real NCCL INFO logs: the network NCCL chose and whether GPUDirect RDMA was
# used (null: the log does not show it).
while read -r file net gdr; do
  [ -n "$file" ] || continue
  got=$("$R" transport --json "$REAL/nccl-logs/$file" 2>"$T_DIR/transport.err" | jq -r '"\(.net) \(.gdr)"')
  if [ "$got" = "$net $gdr" ]; then ok "$file: NET/$net, GPUDirect $gdr"; else not_ok "$file: NET/$net, GPUDirect $gdr" "got '$got' $(head -c 200 "$T_DIR/transport.err")"; fi
done <<'TABLE'
alcf_polaris_awsofi_cxi_gdrdma.log OFI true
alcf_polaris_ib_nodevice_socket.log Socket false
eks_efa_p3dn_libfabric_nogdr.log OFI false
nccl_ebpf_nccl229_ib_fail_socket.log Socket null
nebius_h100_ib_sharp_nvls.log IBext true
stas00_ib_completion_error_warn.txt IB null
TABLE

# Real hwloc exports: GPU-to-NIC closeness as nvidia-smi names it, and an
# InfiniBand HCA of the old PCI class (0c06) counted as a NIC.
T=$FB_BIN/fabric-topo
v2=$REAL/hwloc/hwloc_v2_supermicro_x9drg_gpu_ib.xml
while read -r gpu level; do
  got=$("$T" --topology "$v2" --json | jq -r --arg g "$gpu" '.gpus[] | select(.pci_bus_id == $g) | "\(.nearest_nics | join(",")) \(.nearest_level)"')
  if [ "$got" = "mlx5_0 $level" ]; then ok "hwloc 2.0: GPU $gpu to mlx5_0 is $level"; else not_ok "hwloc 2.0: GPU $gpu to mlx5_0 is $level" "got '$got'"; fi
done <<'TABLE'
0000:84:00.0 PIX
0000:83:00.0 PHB
0000:03:00.0 SYS
TABLE
check "hwloc 1.x: the ConnectX IB HCA (class 0c06) is a NIC" \
  jq -e '[.nics[] | select(.pci_bus_id == "0000:51:00.0")] | length == 1' \
  <("$T" --topology "$REAL/hwloc/hwloc_v1_dell_r410_ib.xml" --json)

# Verdicts on real runs, no profile named: exit code = verdict class.
while read -r json code class; do
  [ -n "$json" ] || continue
  expect_exit "check $json is $class" "$code" "$R" check "$T_DIR/out/$json"
done <<'TABLE'
xxrjun_ib_h100_alltoall_fail_then_sendrecv-alltoall.json 22 FAIL
xxrjun_ib_h100_alltoall_fail_then_sendrecv-sendrecv.json 20 DEGRADED
xxrjun_nvlink_h100_8gpu_5collectives-all_reduce.json 0 PASS
TABLE
got=$("$T" --topology "$REAL/hwloc/hwloc_v3_power8_4gpu_nvlink.xml" --json | jq -r '[.gpus[] | "\(.pci_bus_id)@\(.numa)"] | join(" ")')
want="0002:01:00.0@0 0003:01:00.0@0 000a:01:00.0@1 000b:01:00.0@1"
if [ "$got" = "$want" ]; then ok "hwloc 3.0: four P100s on their NUMA nodes"; else not_ok "hwloc 3.0: four P100s on their NUMA nodes" "got '$got'"; fi

# Real nvidia-smi topo -m matrices: the closest NIC of each GPU.
run "$T" --topology "$REAL/hwloc/nvidia_smi_topo_h100_6nic_princeton.txt"
while read -r gpu nics level numa; do
  expect_grep "nvidia-smi: $gpu nearest $nics at $level, NUMA $numa" "^$gpu +$nics +$level +$numa " "$T_OUT"
done <<'TABLE'
GPU0 mlx5_0,mlx5_1 PIX 0
GPU1 mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5 NODE 0
GPU3 mlx5_2 PIX 0
GPU4 mlx5_3,mlx5_4 PIX 1
GPU6 mlx5_5 PIX 1
TABLE
run "$T" --topology "$REAL/hwloc/nvidia_smi_topo_a100_space_separated.txt"
expect_grep "nvidia-smi pasted with spaces: GPU4's CPUs and NUMA node" '^GPU4 +- +- +1 +24-47$' "$T_OUT"
