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
nccl_ebpf_single_rank_tail.txt - all_reduce 12 134217728 0 0 1
TABLE

# Runs that stopped before their first row and never named their
# collective are kept, to be judged: ranks and hosts as listed.
while read -r file ranks nodes; do
  [ -n "$file" ] || continue
  json=$T_DIR/out/${file%.*}.json
  "$R" import "$REAL/nccl-tests/$file" -o "$T_DIR/out/" >"$T_DIR/import.log" 2>&1
  got=$(jq -r '[.collective, (.rows | length), .topology.ranks, .topology.nodes, .complete] | map(tostring) | join(" ")' "$json" 2>/dev/null)
  want="null 0 $ranks $nodes false"
  if [ "$got" = "$want" ]; then ok "$file: no rows, $ranks ranks on $nodes nodes, kept"; else not_ok "$file is kept as a rowless run" "got '$got', want '$want' $(head -c 300 "$T_DIR/import.log")"; fi
done <<'TABLE'
alcf_sophia_a100_init_failure.dat 16 2
dranet_b200_2node_hang_no_rows.txt 4 2
TABLE
# Excerpts that do not list every rank's host leave the nodes unknown.
check "an excerpt listing one rank of 1440 does not claim one node" \
  jq -e '.topology.ranks == 1440 and .topology.nodes == null' "$T_DIR/out/coreweave_gb200_20racks_excerpt.json"

# Rows alone name the collective where the output does not: say so.
check "an excerpt without a collective says it was inferred" \
  jq -e '.warnings | map(select(test("collective inferred from the rows: all_reduce"))) | length == 1' \
  "$T_DIR/out/deepops_roce_sriov_k8s_noheader.json"
# The failed run of a file is kept as a failure, not dropped, its fault the
# NCCL error itself rather than the ".. Test failure" lines after it.
check "a run that failed before its first row is kept, incomplete, with its fault" \
  jq -e '.complete == false and (.rows | length) == 0 and (.fault.message | test("NCCL failure common.cu:401 .remote process exited"))' \
  "$T_DIR/out/xxrjun_ib_h100_alltoall_fail_then_sendrecv-alltoall.json"

# Real NCCL INFO logs: the network NCCL chose, whether GPUDirect RDMA was
# used (null: the log does not show it), ranks and hosts, NCCL's version.
while read -r file net gdr ranks hosts version; do
  [ -n "$file" ] || continue
  got=$("$R" transport --json "$REAL/nccl-logs/$file" 2>"$T_DIR/transport.err" |
        jq -r '"\(.net) \(.gdr) \(.ranks) \(.hosts) \(.nccl_version)"')
  want="$net $gdr $ranks $hosts $version"
  if [ "$got" = "$want" ]; then ok "$file: $want"; else not_ok "$file: $want" "got '$got' $(head -c 200 "$T_DIR/transport.err")"; fi
done <<'TABLE'
alcf_polaris_awsofi_cxi_gdrdma.log OFI true 8 2 2.20.5+cuda12.4
alcf_polaris_ib_nodevice_socket.log Socket false 8 2 2.20.5+cuda12.4
eks_efa_p3dn_libfabric_nogdr.log OFI false 16 2 2.6.4+cuda10.1
nccl_ebpf_nccl229_ib_fail_socket.log Socket null 1 1 2.29.7+cuda12.9
nebius_h100_ib_sharp_nvls.log IBext true 16 2 2.19.3+cuda12.3
stas00_ib_completion_error_warn.txt IB null null 1 null
TABLE
# What each log says beyond the network: plugin, provider, SHARP, NVLS,
# why NCCL gave up a network, the first WARN.
while read -r file key want; do
  [ -n "$file" ] || continue
  got=$("$R" transport --json "$REAL/nccl-logs/$file" 2>/dev/null | jq -r --arg k "$key" '.[$k] | if type == "object" then .text else tostring end')
  if [ "$got" = "$want" ]; then ok "$file: $key $want"; else not_ok "$file: $key $want" "got '$got'"; fi
done <<'TABLE'
alcf_polaris_awsofi_cxi_gdrdma.log provider cxi
alcf_polaris_awsofi_cxi_gdrdma.log plugin_version aws-ofi-nccl 1.6.0
eks_efa_p3dn_libfabric_nogdr.log provider efa
nebius_h100_ib_sharp_nvls.log coll_plugin SHARP (v6)
nebius_h100_ib_sharp_nvls.log nvls true
alcf_polaris_ib_nodevice_socket.log fallback_reason NET/IB : No device found.
stas00_ib_completion_error_warn.txt warn NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len
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
check "hwloc 1.x: the ConnectX IB HCA (class 0c06) is a NIC, its mlx4_0 the RDMA device" \
  jq -e '[.nics[] | select(.pci_bus_id == "0000:51:00.0" and .rdma_device == "mlx4_0")] | length == 1' \
  <("$T" --topology "$REAL/hwloc/hwloc_v1_dell_r410_ib.xml" --json)
check "hwloc 2.0: three NVIDIA GPUs (one with OS devices), the Radeon beside them not one" \
  jq -e '[.gpus[].pci_bus_id] == ["0000:03:00.0", "0000:83:00.0", "0000:84:00.0"]' <("$T" --topology "$v2" --json)

# Verdicts on real runs, no profile named: exit code = verdict class, as
# the collection's README names it ("fabric in use": PASS, or DEGRADED).
while read -r json codes class; do
  [ -n "$json" ] || continue
  run "$R" check "$T_DIR/out/$json"
  case " ${codes//,/ } " in
    *" $T_RC "*) ok "check $json is $class" ;;
    *) not_ok "check $json is $class" "exit $T_RC: $(head -c 300 "$T_OUT" "$T_ERR" | tr '\n' ' ')" ;;
  esac
done <<'TABLE'
awsome_p5_efa_srun_l.json 0 PASS
gke_a3mega_tcpxo_all_gather.json 0 PASS
xxrjun_nvlink_h100_8gpu_5collectives-all_reduce.json 0 PASS
coreweave_h100_sharp_kubectl_logs.json 0,20 fabric-in-use
coreweave_gb200_20racks_excerpt.json 0,20 fabric-in-use
alcf_polaris_a100_awsofi_cxi.json 0,20 fabric-in-use
alcf_polaris_a100_socket_default.json 20,21 DEGRADED-or-TCP-FALLBACK
dranet_b200_2node_hang_no_rows.json 23 INCOMPLETE
alcf_sophia_a100_init_failure.json 22 FAIL
xxrjun_ib_h100_alltoall_fail_then_sendrecv-alltoall.json 22 FAIL
xxrjun_ib_h100_alltoall_fail_then_sendrecv-sendrecv.json 20 DEGRADED
nccl_ebpf_single_rank_tail.json 23 not-comparable
TABLE
expect_exit "the single-rank tail is not comparable, and says so" 23 "$R" check "$T_DIR/out/nccl_ebpf_single_rank_tail.json"
expect_grep "(its reason)" 'Not comparable: one rank' "$T_OUT"
# The Socket run held against the Slingshot run of the same nodes.
run "$R" check "$T_DIR/out/alcf_polaris_a100_socket_default.json"
expect_grep "the Polaris Socket run is in the TCP band" 'busBW peaks at 9.45 GB/s \(at 1G\) across nodes, inside the TCP-fallback band' "$T_OUT"
# A real log given beside a real run: the Socket log's fallback on the
# Polaris Socket run names the ranks that used sockets.
expect_exit "the Socket run with its NCCL log is TCP-FALLBACK" 21 "$R" check "$T_DIR/out/alcf_polaris_a100_socket_default.json" \
  --nccl-log "$REAL/nccl-logs/alcf_polaris_ib_nodevice_socket.log"
expect_grep "naming the ranks and interfaces" 'NET/Socket\) on 4 of 8 logged ranks \(hosts x3006c0s1b1n0, x3006c0s25b0n0; interfaces bond0' "$T_OUT"
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

# Real perftest reports: measurements and the average at the largest size,
# in Gb/s (MB/sec columns are 2^20 bytes per second).
while read -r file links size gbps; do
  [ -n "$file" ] || continue
  out=$T_DIR/perftest-${file%.*}.json
  "$R" import "$REAL/perftest/$file" -o "$out" >"$T_DIR/import.log" 2>&1
  got=$(jq -r '[(.links | length), (.links | max_by(.size_bytes) | .size_bytes, (.avg_Gbps * 100 | round / 100))] | map(tostring) | join(" ")' "$out" 2>/dev/null)
  if [ "$got" = "$links $size $gbps" ]; then ok "$file: $links measurements, $gbps Gb/s at $size"; else not_ok "$file reads as its source" "got '$got', want '$links $size $gbps' $(head -c 200 "$T_DIR/import.log")"; fi
done <<'TABLE'
deepops_ib_write_bw_rdma_cm_roce.txt 1 65536 92.4
skypilot_nebius_ib_send_bw_ndr_TRANSCRIBED.txt 1 65536 353.53
superbench_ib_write_bw_loopback_8M.log 2 8388608 201.8
superbench_ib_write_bw_loopback_all_sizes.log 24 8388608 194.96
TABLE
