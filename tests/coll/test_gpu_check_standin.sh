#!/usr/bin/env bash
# scripts/gpu-check.sh, run where it can be here: on two stand-in GPUs
# (tests/standin) with a small sweep, beside a stand-in nccl-tests build,
# and with Open MPI taken from a prefix while the machine's own is hidden
# (what dpkg -x of Open MPI's packages gives on a GPU machine without it).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if [ ! -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  skip "gpu-check on the stand-in" "the stand-in is not built (make standin)"
  exit 0
fi
gc=$FB_ROOT/scripts/gpu-check.sh
export FB_STANDIN_GPUS=2 FB_GPU_CHECK_GPUS=2 FB_GPU_CHECK_MAX=64K FB_GPU_CHECK_ITERS=2 FB_GPU_CHECK_WARMUP=1 \
  FB_GPU_CHECK_GRAPH=2 FB_GPU_CHECK_BUILD=$FB_BUILD
export FB_GPU_CHECK_MPIRUN_ARGS="--oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"

# An nccl-tests stand-in: its table, busBW 2.00 at every size from 1K to 64K.
nt=$T_DIR/nccl-tests
mkdir -p "$nt"
cat >"$nt/all_reduce_perf" <<'EOF'
#!/bin/sh
echo "# nccl-tests version 2.13.11 nccl-headers=22809 nccl-library=22809"
echo "# Collective test starting: $(basename "$0") $*"
s=1024
while [ $s -le 65536 ]; do
  printf '%12d %13d %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n' $s $((s / 4)) float sum -1 1.0 1.00 2.00 0 1.0 1.00 2.00 0
  s=$((s * 2))
done
echo "# Avg bus bandwidth    : 2.00"
EOF
chmod +x "$nt/all_reduce_perf"
cp "$nt/all_reduce_perf" "$nt/all_gather_perf"

summary=$T_DIR/run1/summary.txt
run env FB_GPU_CHECK_OUT="$T_DIR/run1" NCCL_TESTS_DIR="$nt" timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 0 ] && [ -s "$summary" ]; then ok "gpu-check on 2 stand-in GPUs: exit 0 and a summary"; else not_ok "gpu-check on 2 stand-in GPUs" "exit $T_RC: $(tail -5 "$T_ERR")"; fi
expect_grep "the summary names the versions from the results" '^versions: NCCL [0-9]+\.[0-9]+\.[0-9]+, CUDA runtime [0-9.]+, CUDA driver [0-9.]+, mpirun \(Open MPI\)' "$summary"
expect_grep "the summary names the GPUs" '^GPU: fabric-bench stand-in GPU x 2 on ' "$summary"
for c in all_reduce all_gather; do
  # size, ours (4 figures), nccl-tests busBW 2.00 and the ratio ours/2.00
  n=$(awk -v c="$c" '/ over 2 GPUs/ { on = ($1 == c) } on && $1 ~ /^[0-9]+$/ && $7 == "2.00" && $9 == "2.00" && $8 == sprintf("%.2f", $3 / 2) && $10 == sprintf("%.2f", $5 / 2) { k++ } END { print k + 0 }' "$summary")
  if [ "$n" -eq 7 ]; then ok "$c: 7 sizes 1K-64K, plain and -G, nccl-tests beside with the ratio"; else not_ok "$c: 7 rows with nccl-tests and ratios" "$n rows: $(cat "$summary")"; fi
done
if [ "$(grep -c '^wrong elements: 0 (every size validated' "$summary")" -eq 2 ]; then ok "both collectives validated at every size"; else not_ok "validated" "$(grep wrong "$summary")"; fi
expect_grep "all_reduce: peak GPU memory per rank, twice the largest size (send + receive)" \
  '^peak GPU memory per rank against the largest size 64K: rank 0 0\.1 MiB \(2\.00x\), rank 1 0\.1 MiB \(2\.00x\)$' "$summary"
if grep -q '"cudagraph": 2' "$T_DIR/run1/all_reduce-graph.json" && grep -q 'graph: 2 unalign: 0$' "$T_DIR/run1/all_reduce-graph.txt"; then ok "the -G runs ran with graphs"; else not_ok "the -G runs ran with graphs" "$(head -3 "$T_DIR/run1/all_reduce-graph.txt")"; fi

# Wrong results make the check fail with exit 3, and the summary says so.
run env FB_GPU_CHECK_OUT="$T_DIR/run2" FB_STANDIN_CORRUPT_RANK=1 timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 3 ] && grep -q '^wrong elements: [1-9]' "$T_DIR/run2/summary.txt"; then ok "wrong results: exit 3, counted in the summary"; else not_ok "wrong results: exit 3" "exit $T_RC: $(grep wrong "$T_DIR/run2/summary.txt" 2>&1)"; fi
expect_exit "NCCL_TESTS_DIR without the binaries: exit 2" 2 env FB_GPU_CHECK_OUT="$T_DIR/run3" NCCL_TESTS_DIR="$T_DIR" "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
expect_exit "FB_MPI_PREFIX that holds no Open MPI: exit 2" 2 env FB_GPU_CHECK_OUT="$T_DIR/run4" FB_MPI_PREFIX="$T_DIR/nccl-tests" "$gc"

# Open MPI from a prefix, this machine's own hidden in a mount namespace:
# the prefix's files are a copy of its packages' (what dpkg -x unpacks).
if ! is_root || ! command -v unshare >/dev/null; then
  skip "FB_MPI_PREFIX with the machine's Open MPI hidden" "needs root and unshare"
  exit 0
fi
prefix=$T_DIR/ompi
for pkg in openmpi-bin libopenmpi3 openmpi-common libpmix2; do
  dpkg -L "$pkg" 2>/dev/null | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then mkdir -p "$prefix$(dirname "$f")" && cp -a "$f" "$prefix$f"; fi
  done
done
cat >"$T_DIR/hide.sh" <<'EOF'
#!/bin/sh
# Inside a private mount namespace: no Open MPI where Debian puts it.
lib=/usr/lib/x86_64-linux-gnu
for d in $lib/openmpi $lib/pmix2 /usr/share/openmpi /etc/openmpi; do
  [ -d "$d" ] && mount -t tmpfs none "$d"
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/opal_wrapper $lib/libmpi.so.40* $lib/libopen-rte.so.40* $lib/libopen-pal.so.40* $lib/libpmix.so.2*; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
done
exec "$@"
EOF
chmod +x "$T_DIR/hide.sh"
run unshare -m "$T_DIR/hide.sh" env FB_GPU_CHECK_OUT="$T_DIR/run5" FB_MPI_PREFIX="$prefix" FB_GPU_CHECK_MAX=4K \
  timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 0 ] && grep -q "^versions: .*mpirun (Open MPI) [0-9.]* ($T_DIR/run5/mpi-bin/mpirun)" "$T_DIR/run5/summary.txt"; then
  ok "FB_MPI_PREFIX: mpirun and libmpi from the prefix, the machine's own hidden"
else
  not_ok "FB_MPI_PREFIX with the machine's Open MPI hidden" "exit $T_RC: $(tail -5 "$T_ERR") $(grep versions "$T_DIR/run5/summary.txt" 2>&1)"
fi
run unshare -m "$T_DIR/hide.sh" mpirun --version
if [ "$T_RC" -ne 0 ]; then ok "the machine's mpirun is really hidden there"; else not_ok "the machine's mpirun is hidden" "$(head -1 "$T_OUT")"; fi
