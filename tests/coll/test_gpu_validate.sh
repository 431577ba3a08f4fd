#!/usr/bin/env bash
# Validation where the GPU buffers are: on the stand-in, fabric-coll's fill
# and check kernels run (by their host twins) and only counts cross to the
# host, so a -c 1 sweep copies at most 1 % of the bytes it validates
# between host and device (FB_STANDIN_COPY_STATS); every type and operator
# still validates, wrong results are still found, and a build without nvcc
# stages through host memory and says so in its first line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

standin_built "the GPU stand-in" || exit 0
if ! objdump -T "$FB_BIN/fabric-coll" | grep -q __cudaRegisterFatBinary; then
  skip "checks on the GPU" "this build has no validation kernels (no nvcc under CUDA_HOME)"
  exit 0
fi

# copied FILE: total bytes the processes' stand-in lines say crossed
# (H2D + D2H), and how many processes said it.
copied() { awk '/^standin: copied H2D/ {n++; s += $4 + $7} END {print s + 0, n + 0}' "$1"; }
# validated FILE.json: bytes each rank checked (both placements of every row).
validated() { jq '[.rows[] | select(.out_of_place.wrong != null) | .bytes * 2] | add' "$1"; }

# --- a -c 1 sweep copies almost nothing --------------------------------
FB_STANDIN_COPY_STATS=1 sg 2 all_reduce -b 1K -e 64M -f 2 -n 1 -w 1 -c 1 -J "$T_DIR/sweep.json"
read -r bytes procs < <(copied "$T_ERR")
if [ "$T_RC" -ne 0 ] || [ "$procs" -ne 2 ]; then
  not_ok "the -c 1 sweep 1K..64M on 2 stand-in GPUs" "exit $T_RC, $procs copy lines: $(head -c 300 "$T_ERR")"
else
  checked "the -c 1 sweep 1K..64M validates every size" "$T_DIR/sweep.json" --ranks 2 --rows 17 --complete
  per_rank=$(validated "$T_DIR/sweep.json")
  if [ $((bytes * 100 / 2)) -le "$per_rank" ]; then
    ok "a -c 1 sweep copies at most 1 % of what it validates ($((bytes / 2)) of $per_rank bytes per rank)"
  else
    not_ok "a -c 1 sweep copies at most 1 % of what it validates" "$((bytes / 2)) of $per_rank bytes per rank"
  fi
fi
if head -1 "$T_OUT" | grep -q 'backend nccl (GPU memory); checks on the GPU; results' &&
   [ "$(jq -r .validation "$T_DIR/sweep.json")" = device ]; then
  ok "the first line and the results say the checks ran on the GPU"
else
  not_ok "the first line and the results say the checks ran on the GPU" "$(head -1 "$T_OUT"); $(jq -c .validation "$T_DIR/sweep.json")"
fi
if json_valid "$FB_ROOT/docs/schema/collective.schema.json" "$T_DIR/sweep.json" >"$T_DIR/schema.log" 2>&1; then
  ok "the results with validation: device match the schema"
else
  not_ok "the results with validation: device match the schema" "$(head -3 "$T_DIR/schema.log")"
fi
sg 1 all_reduce -b 1K -e 4K -c 0 -J "$T_DIR/c0.json"
if [ "$T_RC" -eq 0 ] && head -1 "$T_OUT" | grep -q '; no checks (-c 0);' && [ "$(jq .validation "$T_DIR/c0.json")" = null ]; then
  ok "-c 0 says no checks"
else
  not_ok "-c 0 says no checks" "exit $T_RC: $(head -1 "$T_OUT")"
fi

# --- every type and operator, every collective, offsets ------------------
for c in all_reduce reduce_scatter reduce; do
  sg 3 "$c" -b 4K -e 64K -f 16 -n 1 -w 0 -c 1 -d all -o all -J "$T_DIR/all-$c.json"
  if [ "$T_RC" -eq 0 ] && [ "$(jq '[.rows[] | .out_of_place.wrong, .in_place.wrong] | add' "$T_DIR/all-$c.json")" = 0 ]; then
    ok "$c: every type and operator checked right on the GPU ($(jq '.rows | length' "$T_DIR/all-$c.json") rows)"
  else
    not_ok "$c: every type and operator on the GPU" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
done
for c in all_gather alltoall alltoallv broadcast scatter gather sendrecv hypercube; do
  sg 4 "$c" -b 1K -e 256K -f 16 -n 1 -w 0 -c 1 -u 3 -d all -J "$T_DIR/mv-$c.json"
  if [ "$T_RC" -eq 0 ]; then
    checked "$c -u 3, every type: checked right on the GPU" "$T_DIR/mv-$c.json" --ranks 4 --complete
  else
    not_ok "$c -u 3 on the GPU" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
done

# --- wrong results are found, counted exactly, named -------------------
for c in all_reduce alltoallv all_gather; do
  FB_STANDIN_CORRUPT_RANK=1 FB_STANDIN_CORRUPT_ELEMS=70 sg_logged 2 "$c" -b 64K -e 64K -n 1 -w 0 -c 1 \
    --results-dir "$T_DIR/results"
  if [ "$T_RC" -eq 3 ] && grep -q "rank 1 on .*: 70 wrong elements, first at \[0\]" "$T_ERR"; then
    ok "$c: a corrupted rank's 70 wrong elements found on the GPU, exit 3"
  else
    not_ok "$c: a corrupted rank found on the GPU" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
done

# --- a build without nvcc stages through host memory ---------------------
tree=$FB_BUILD-nonvcc
if make -C "$FB_ROOT" -j2 MODULES=coll BUILD="$tree" NVCC= >"$T_DIR/make.log" 2>&1; then
  FB_STANDIN_COPY_STATS=1 BUILD=$tree run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 \
    -x LD_LIBRARY_PATH "$tree/bin/fabric-coll" all_reduce -b 1M -e 4M -f 2 -n 1 -w 0 -c 1 -J "$T_DIR/staged.json"
  read -r bytes procs < <(copied "$T_ERR")
  per_rank=$(jq '[.rows[] | .bytes * 2] | add' "$T_DIR/staged.json" 2>/dev/null || echo 0)
  if [ "$T_RC" -eq 0 ] && head -1 "$T_OUT" | grep -q 'checks staged through host memory (built without nvcc' &&
     [ "$(jq -r .validation "$T_DIR/staged.json")" = staged ] && [ $((bytes / 2)) -ge "$per_rank" ]; then
    ok "without nvcc: checks staged through host memory, said in the first line ($((bytes / 2)) bytes copied per rank)"
  else
    not_ok "without nvcc: checks staged through host memory" "exit $T_RC: $(head -1 "$T_OUT"); $bytes bytes"
  fi
  FB_STANDIN_CORRUPT_RANK=0 BUILD=$tree run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 "${FB_MPIRUN[@]}" -q \
    -np 2 -x LD_LIBRARY_PATH -x FB_STANDIN_CORRUPT_RANK "$tree/bin/fabric-coll" reduce_scatter -b 64K -e 64K -n 1 -w 0 -c 1 \
    --results-dir "$T_DIR/results"
  expect_grep "without nvcc: a corrupted rank still found (exit 3)" "rank 0 on .*: 1 wrong element" "$T_ERR"
else
  not_ok "builds without nvcc (NVCC=)" "$(tail -5 "$T_DIR/make.log")"
fi
