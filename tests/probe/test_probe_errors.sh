#!/usr/bin/env bash
# fabric-rdma's bad input and missing hardware: each case exits with its
# documented code (docs/probe.md), prints exactly one line on stderr naming
# the problem and the fix, and never hangs. This machine has no RDMA in the
# kernel and no GPU, so those paths run for real here.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"


# bad_case NAME CODE PATTERN NP ARGS...: NP 0 runs without mpirun (singleton).
bad_case() {
  local name=$1 code=$2 pattern=$3 np=$4; shift 4
  if [ "$np" -eq 0 ]; then
    expect_error "$name" "$code" "$pattern" fabric-rdma timeout -k 5 60 "$FB_BIN/fabric-rdma" "$@"
  else
    expect_error "$name" "$code" "$pattern" fabric-rdma mpi_quiet "$np" "$FB_BIN/fabric-rdma" "$@"
  fi
}

J=(-J "$T_DIR/r.json")

# No RDMA in this kernel: ibv_get_device_list fails with ENOSYS. Exit 5 says
# "skip", distinct from the runtime failure code 9.
bad_case "no RDMA in the kernel: exit 5, one line (singleton)" 5 \
  "no RDMA in this kernel (ibv_get_device_list: Function not implemented)" 0 "${J[@]}"
bad_case "no RDMA in the kernel: exit 5, one line from 2 ranks" 5 "use --transport tcp" 2 "${J[@]}"
expect_exit "no RDMA: no results file is left behind" 1 test -e "$T_DIR/r.json"

# RDMA in the kernel but no device a provider claims: libibverbs reads sysfs
# under $SYSFS_PATH, so an ABI file and no devices is exactly that case.
mkdir -p "$T_DIR/sys/class/infiniband_verbs"
echo 6 >"$T_DIR/sys/class/infiniband_verbs/abi_version"
export SYSFS_PATH=$T_DIR/sys
bad_case "RDMA without devices: exit 5, one line" 5 "no RDMA devices: the kernel has RDMA but no HCA" 0 "${J[@]}"
unset SYSFS_PATH

# --use-cuda without a usable GPU: the CUDA error by name, never a number.
if [ -e /usr/local/cuda/include/cuda_runtime.h ]; then
  bad_case "--use-cuda without a GPU: exit 5 naming the CUDA error" 5 \
    "cudaGetDeviceCount failed with cudaError[A-Za-z]* (" 0 --use-cuda "${J[@]}"
else
  bad_case "--use-cuda in a build without CUDA: exit 5" 5 "built without CUDA" 0 --use-cuda "${J[@]}"
fi

bad_case "unknown transport (exit 2)" 2 "--transport udp: use rdma, tcp or ofi" 0 --transport udp "${J[@]}"
bad_case "unknown pattern (exit 2)" 2 "--pattern mesh: use pairs, ring or all-pairs" 0 --pattern mesh "${J[@]}"
bad_case "a host name argument, perftest habit (exit 2)" 2 "takes no host name" 0 node2 "${J[@]}"
bad_case "-n and -D together (exit 2)" 2 "count messages or time" 0 -n 10 -D 1 "${J[@]}"
bad_case "CQ moderation deeper than the queue (exit 2)" 2 "use -t 100 or more" 0 -Q 100 -t 64 "${J[@]}"
bad_case "--use-cuda with tcp (exit 2)" 2 "applies to --transport rdma" 0 --transport tcp --use-cuda "${J[@]}"
bad_case "odd rank count for pairs (exit 2)" 2 "pairs needs an even number of ranks" 3 --transport tcp "${J[@]}"
bad_case "all-pairs on one node (exit 2)" 2 "all-pairs pairs nodes" 2 --transport tcp --pattern all-pairs "${J[@]}"
bad_case "a single rank (exit 2)" 2 "at least 2 ranks" 0 --transport tcp "${J[@]}"
bad_case "missing interface lists the existing ones (exit 2)" 2 \
  "interface nosuch0 does not exist on .*; it has: .*lo (127.0.0.1)" 2 --transport tcp --iface nosuch0 "${J[@]}"
bad_case "unwritable results directory (exit 7)" 7 "choose a writable" 2 --transport tcp --results-dir /proc/nope

# Ranks started with different options: named, exit 6.
run timeout 60 "${FB_MPIRUN[@]}" -q -np 1 "$FB_BIN/fabric-rdma" --transport tcp -s 1M "${J[@]}" : \
  -np 1 "$FB_BIN/fabric-rdma" --transport tcp -s 2M "${J[@]}"
if [ "$T_RC" -eq 6 ] && grep -q 'rank 1 (.*) differs' "$T_ERR"; then
  ok "ranks with different options: exit 6 naming rank 1"
else
  not_ok "ranks with different options: exit 6 naming rank 1" "exit $T_RC $(cat "$T_ERR")"
fi

run timeout 30 "$FB_BIN/fabric-rdma" --help
if [ "$T_RC" -eq 0 ] && grep -q -- '--gid-index' "$T_OUT" && grep -q 'exit codes' "$T_OUT"; then
  ok "--help lists the options and exit codes"
else
  not_ok "--help lists the options and exit codes" "exit $T_RC"
fi
