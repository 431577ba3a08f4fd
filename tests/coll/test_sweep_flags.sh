#!/usr/bin/env bash
# The flags that change what the sweep loops over and how it times, on the
# MPI backend (2 ranks) and on the GPU stand-in: -d all, -o all, -r all,
# -N 0, -I 1 with -K, -u, and integers spelled as nccl-tests reads them.
# Each expectation names the nccl-tests 2.19.6 source it comes from.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

check_py=$FB_ROOT/tests/tools/check_collective.py

# mp ARGS...: fabric-coll on 2 ranks of the MPI backend (sg, jq_is, checked:
# tests/lib.sh).
mp() { run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" "$@" --backend mpi; }
# The table's type, redop and root columns, one "type/redop/root" per row.
columns() { awk '/^ +[0-9]+ +[0-9]+ /{print $3 "/" $4 "/" $5}' "$T_OUT" | tr '\n' ' '; }
# Distinct values of a row key, in the order the rows first show them.
in_order() { jq -c "[.rows[].$2] | reduce .[] as \$x ([]; if index([\$x]) then . else . + [\$x] end)" "$1"; }

# nccl-tests' type and operator lists, in order (src/common.cu test_typenames,
# test_opnames, with bfloat16 and the fp8 types of NCCL >= 2.24 on sm_90).
all_types='["int8","uint8","int32","uint32","int64","uint64","half","float","double","bfloat16","f8e4m3","f8e5m2"]'
all_ops='["sum","prod","max","min","avg","mulsum"]'
mpi_types='["int8","uint8","int32","uint32","int64","uint64","float","double"]'
mpi_ops='["sum","prod","max","min"]'

# --- -d all / -o all (the collectives' RunTest loops: types outermost) -----
mp all_reduce -b 1K -e 4K -f 4 -n 1 -c 1 -d all -J "$T_DIR/dall.json"
if [ "$T_RC" -eq 0 ]; then
  got=$(in_order "$T_DIR/dall.json" type)
  if [ "$got" = "$mpi_types" ]; then ok "-d all on mpi: one sweep per type MPI has, in nccl-tests' order"; else not_ok "-d all on mpi: the types in order" "$got"; fi
  checked "-d all on mpi: 16 rows validated clean" "$T_DIR/dall.json" --ranks 2 --rows 16 --complete --wrong 0
  expect_grep "-d all on mpi: a note names the types left out" '^# Note: -d all on the mpi backend leaves out half, bfloat16, f8e4m3, f8e5m2' "$T_OUT"
  jq_is "-d all: the document's dtype says all" "$T_DIR/dall.json" '.dtype' '"all"'
else
  not_ok "-d all on mpi" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
mp all_reduce -b 1K -e 1K -n 1 -c 1 -o all -d int32 -J "$T_DIR/oall.json"
if [ "$T_RC" -eq 0 ]; then
  jq_is "-o all on mpi: the operators MPI has, in nccl-tests' order" "$T_DIR/oall.json" '[.rows[].redop]' "$mpi_ops"
  checked "-o all on mpi: validated clean" "$T_DIR/oall.json" --ranks 2 --rows 4 --complete --wrong 0
  expect_grep "-o all on mpi: a note names avg and mulsum" '^# Note: -o all on the mpi backend leaves out avg, mulsum' "$T_OUT"
  c=$(columns)
  if [ "$c" = "int32/sum/-1 int32/prod/-1 int32/max/-1 int32/min/-1 " ]; then ok "-o all: the table's redop column, one row each"; else not_ok "-o all: the table's redop column" "$c"; fi
else
  not_ok "-o all on mpi" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
# reduce: types, then operators, then roots (reduce.cu ReduceRunTest).
mp reduce -b 1K -e 1K -n 1 -c 1 -d all -o all -r all -J "$T_DIR/rall.json"
if [ "$T_RC" -eq 0 ]; then
  n=$(jq '.rows | length' "$T_DIR/rall.json")
  first=$(jq -c '[.rows[0:3][] | [.type, .redop, .root]]' "$T_DIR/rall.json")
  if [ "$n" -eq 64 ] && [ "$first" = '[["int8","sum",0],["int8","sum",1],["int8","prod",0]]' ]; then
    ok "reduce -d all -o all -r all: 8 types x 4 ops x 2 roots, roots innermost"
  else
    not_ok "reduce -d all -o all -r all" "$n rows, first $first"
  fi
  checked "reduce over every type, op and root: validated clean" "$T_DIR/rall.json" --ranks 2 --complete --wrong 0
else
  not_ok "reduce -d all -o all -r all" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi

# --- -r all: one row per root per size (broadcast.cu BroadcastRunTest) --------
mp broadcast -b 1K -e 2K -f 2 -n 1 -c 1 -r all -J "$T_DIR/bcast.json"
if [ "$T_RC" -eq 0 ]; then
  jq_is "broadcast -r all: each root sweeps every size" "$T_DIR/bcast.json" '[.rows[] | [.bytes, .root]]' '[[1024,0],[2048,0],[1024,1],[2048,1]]'
  c=$(columns)
  if [ "$c" = "float/none/0 float/none/0 float/none/1 float/none/1 " ]; then ok "broadcast -r all: the root column"; else not_ok "broadcast -r all: the root column" "$c"; fi
  checked "broadcast -r all: validated clean" "$T_DIR/bcast.json" --ranks 2 --rows 4 --complete --wrong 0
else
  not_ok "broadcast -r all" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
mp broadcast -b 1K -e 1K -n 1 -r -1 -J "$T_DIR/bcast1.json"
jq_is "-r -1 is nccl-tests' spelling of every root" "$T_DIR/bcast1.json" '[.rows[].root]' '[0,1]'
mp all_reduce -b 1K -e 1K -n 1 -r all -J "$T_DIR/ar-root.json"
jq_is "-r all on a collective without a root: one run, root -1" "$T_DIR/ar-root.json" '[.rows[].root]' '[-1]'

# --- what MPI has not ----------------------------------------------------
expect_error "-d f8e4m3 on mpi: exit 2, MPI has no 8-bit floats" 2 "MPI has no 8-bit floats" fabric-coll \
  timeout -k 5 60 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -d f8e4m3 --backend mpi
expect_error "-o mulsum on mpi: exit 2, MPI has no mulsum" 2 "no 'mulsum' reduction" fabric-coll \
  timeout -k 5 60 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -o mulsum --backend mpi

# --- -N 0: every size again until a signal (common.cu TimeTest: do ... while (--repeat)) ---
rank0_pid() {
  local p
  for p in $(pgrep -f "^$FB_BIN/fabric-coll all_reduce -b 1K -e 8K -f 2 -n 2 -N 0"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then echo "$p"; fi
  done
}
out=$T_DIR/endless.json
timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 8K -f 2 -n 2 -N 0 -c 1 \
  --backend mpi -J "$out" >"$T_DIR/endless.out" 2>"$T_DIR/endless.err" &
job=$!
rows=0
for _ in $(seq 1 300); do
  sleep 0.1
  rows=$(jq '.rows | length' "$out" 2>/dev/null || echo 0)
  [ "$rows" -ge 12 ] && break
done
rank0=$(rank0_pid)
if [ -n "$rank0" ]; then kill -INT "$rank0"; fi
wait "$job"
rc=$?
if [ "$rows" -ge 12 ] && [ "$rc" -eq 130 ]; then ok "-N 0: still sweeping after 3 cycles; SIGINT ends it with exit 130"; else not_ok "-N 0 ended by SIGINT: exit 130" "exit $rc after $rows rows: $(head -c 300 "$T_DIR/endless.err")"; fi
if jq -e '.complete == true and .fault == null and .summary.sizes_planned == null and (.rows | length) >= 12
    and ([.rows[].run] | max) >= 2 and (.warnings | map(test("^-N 0 ended: stopped by SIGINT")) | any)' "$out" >/dev/null; then
  ok "-N 0: the document is complete with every finished row, sizes_planned null, a warning says how it ended"
else
  not_ok "-N 0: complete document with the finished rows" "$(jq -c '{complete, fault, summary, warnings, n: (.rows | length)}' "$out" 2>&1)"
fi
checked "-N 0: the kept rows are valid and clean" "$out" --ranks 2 --wrong 0

# --- -I 1 and -K (common.cu BenchTime; util.cu computeIterStats, writePerIterReport) ---
mp all_reduce -b 1K -e 4K -f 4 -n 6 -I 1 -K 2 -J "$T_DIR/iter.json"
if [ "$T_RC" -eq 0 ]; then
  expect_grep "-I 1: the header has the per-iteration columns of both placements" \
    '^# +size +count +type +redop +root +time +algbw +busbw +#wrong +i_min +i_max +i_p99 +i_cv% +time +algbw +busbw +#wrong +i_min +i_max +i_p99 +i_cv%$' "$T_OUT"
  expect_grep "-I 1 -K 2: the preamble says the summary skips 2 iterations" '^# Per-Iteration Report: .*summary skips first 2 iterations$' "$T_OUT"
  n=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1( +[0-9.e+]+){3} +0( +[0-9.e+]+){7} +0( +[0-9.e+]+){4}$' "$T_OUT")
  if [ "$n" -eq 2 ]; then ok "-I 1: every row has 21 columns"; else not_ok "-I 1: every row has 21 columns" "$n rows: $(cat "$T_OUT")"; fi
  jq_is "-I 1 -K 2 -n 6: per_iter keeps 6 times and skips 2, in both placements" "$T_DIR/iter.json" \
    '[.rows[] | .out_of_place.per_iter, .in_place.per_iter | [(.times_us | length), .skipped_iterations]] | unique' '[[6,2]]'
  jq_is "-I 1: the summary is over the times after the skipped ones (p99 of < 100 is the max)" "$T_DIR/iter.json" \
    '[.rows[].out_of_place.per_iter | (.times_us[2:] | max) == .max_us and .p99_us == .max_us and (.times_us[2:] | min) == .min_us] | all' 'true'
  checked "-I 1: the document is valid" "$T_DIR/iter.json" --ranks 2 --rows 2 --complete
else
  not_ok "-I 1 -K 2" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
# With -C the time titles say cputime; with -I the per-iteration cells
# take the -S timestamp's place (util.cu writeBenchmarkLineBody).
mp all_reduce -b 1K -e 1K -n 3 -I 1 -C 1 -S 1 -J "$T_DIR/iter-cs.json"
if [ "$T_RC" -eq 0 ] && grep -Eq '^# +size +count +type +redop +root +cputime +algbw +busbw +#wrong +i_min +i_max +i_p99 +i_cv% +cputime ' "$T_OUT" &&
   [ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1( +[0-9.e+]+){3} +0( +[0-9.e+]+){7} +0( +[0-9.e+]+){4}$' "$T_OUT")" -eq 1 ]; then
  ok "-I 1 -C 1 -S 1: cputime titles, no timestamp beside the per-iteration cells"
else
  not_ok "-I 1 -C 1 -S 1: cputime titles, no timestamp beside the per-iteration cells" "exit $T_RC: $(head -c 1200 "$T_OUT")"
fi
mp all_reduce -b 1K -e 1K -n 4 -K 2 -J "$T_DIR/k-only.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Note: -K 2 needs per-iteration timing (-I 1); -K turned off$' "$T_OUT" &&
   jq -e '.rows[0].out_of_place | has("per_iter") | not' "$T_DIR/k-only.json" >/dev/null; then
  ok "-K without -I: turned off with a note, the run goes on (common.cu main)"
else
  not_ok "-K without -I: turned off with a note" "exit $T_RC: $(head -c 300 "$T_OUT")"
fi
mp all_reduce -b 1K -e 1K -n 4 -I 1 -K 4 -J "$T_DIR/k-big.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Note: -K 4: the iterations to skip must be 0 to 3 (-n 4); -K turned off$' "$T_OUT"; then
  jq_is "-K >= -n: turned off, every iteration in the summary" "$T_DIR/k-big.json" '.rows[0].out_of_place.per_iter.skipped_iterations' '0'
else
  not_ok "-K >= -n: turned off with a note" "exit $T_RC: $(head -c 300 "$T_OUT")"
fi
mp all_reduce -b 1K -e 1K -n 2 -I 2 -J "$T_DIR/i2.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Note: -I 2: per-iteration timing takes 0 (off) or 1 (on); turned off$' "$T_OUT"; then ok "-I 2: turned off with a note"; else not_ok "-I 2: turned off with a note" "exit $T_RC: $(head -c 300 "$T_OUT")"; fi

# --- -u N: both buffers start N elements in (common.cu TimeTest) ------------
bad=
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
  mp "$c" -b 1K -e 4K -f 4 -n 1 -c 1 -u 3 -d double -J "$T_DIR/u-$c.json"
  if [ "$T_RC" -ne 0 ] || ! /usr/bin/python3 "$check_py" "$T_DIR/u-$c.json" --ranks 2 --rows 2 --complete --wrong 0 >/dev/null 2>&1; then
    bad="$bad $c(exit $T_RC)"
  fi
done
if [ -z "$bad" ]; then ok "-u 3: every collective validates clean in and out of place on mpi"; else not_ok "-u 3 validates clean" "$bad"; fi
expect_grep "-u 3 is not a no-effect flag any more" '^# nThread' "$T_OUT"
if grep -q 'Note: -u' "$T_OUT"; then not_ok "-u 3: no 'has no effect' note" "$(grep 'Note: -u' "$T_OUT")"; else ok "-u 3: no 'has no effect' note"; fi

# --- integers as strtol(optarg, NULL, 0) reads them --------------------------
mp all_reduce -b 0x400 -e 1K -n 0x3 -w 010 -c 1 -J "$T_DIR/hex.json"
expect_grep "-n 0x3 -w 010: hex and octal, as nccl-tests reads them" 'minBytes 1024 maxBytes 1024 .*warmup iters: 8 iters: 3 ' "$T_OUT"

# --- the GPU stand-in: the full lists, mulsum, fp8, -u with the corrupt knob ---
if [ ! -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  skip "the sweep flags under the GPU stand-in" "not built (make standin)"
  exit 0
fi
sg 2 all_reduce -b 1K -e 1K -n 1 -c 1 -d all -J "$T_DIR/s-dall.json"
if [ "$T_RC" -eq 0 ]; then
  jq_is "stand-in -d all: exactly nccl-tests' type list (NCCL 2.28, sm_90), in order" "$T_DIR/s-dall.json" '[.rows[].type]' "$all_types"
  checked "stand-in -d all: every type validates clean" "$T_DIR/s-dall.json" --ranks 2 --rows 12 --complete --wrong 0
  if grep -q '^# Note: -d all' "$T_OUT"; then not_ok "stand-in -d all: nothing left out" "$(grep Note "$T_OUT")"; else ok "stand-in -d all: nothing left out, no note"; fi
else
  not_ok "stand-in -d all" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
sg 3 all_reduce -b 1K -e 1K -n 1 -c 1 -o all -J "$T_DIR/s-oall.json"
if [ "$T_RC" -eq 0 ]; then
  jq_is "stand-in -o all: sum prod max min avg mulsum" "$T_DIR/s-oall.json" '[.rows[].redop]' "$all_ops"
  checked "stand-in -o all on 3 ranks: mulsum (scalars 1, 2, 1) validates clean" "$T_DIR/s-oall.json" --ranks 3 --rows 6 --complete --wrong 0
else
  not_ok "stand-in -o all" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
for spec in "reduce_scatter f8e4m3 mulsum" "reduce f8e5m2 max" "all_gather f8e4m3 sum"; do
  read -r c dtype op <<<"$spec"
  sg 2 "$c" -b 1K -e 16K -f 4 -n 1 -c 1 -d "$dtype" -o "$op" -r 1 -J "$T_DIR/s-f8.json"
  if [ "$T_RC" -eq 0 ]; then checked "stand-in $c -d $dtype -o $op validates clean" "$T_DIR/s-f8.json" --complete --wrong 0; else not_ok "stand-in $c -d $dtype -o $op" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
done
sg 2 all_reduce -b 1K -e 4K -f 2 -n 1 -c 1 -u 3 -J "$T_DIR/s-u.json"
if [ "$T_RC" -eq 0 ]; then checked "stand-in -u 3: validates clean" "$T_DIR/s-u.json" --rows 3 --complete --wrong 0; else not_ok "stand-in -u 3" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
FB_STANDIN_CORRUPT_RANK=1 sg 2 all_reduce -b 1K -e 4K -f 2 -n 1 -c 1 -u 3 -J "$T_DIR/s-ucorrupt.json"
if [ "$T_RC" -eq 3 ] && grep -q 'rank 1 ' "$T_ERR"; then
  checked "stand-in -u 3 with FB_STANDIN_CORRUPT_RANK=1: exit 3, the wrong elements counted" "$T_DIR/s-ucorrupt.json" --complete --wrong 6
else
  not_ok "stand-in -u 3 with FB_STANDIN_CORRUPT_RANK=1: exit 3" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
sg 2 all_reduce -b 1K -e 1K -n 5 -I 1 -K 1 -J "$T_DIR/s-iter.json"
expect_grep "stand-in -I 1: CUDA events between the iterations (common.cu recordEvents)" '^# Per-Iteration Report: CUDA event timing; ' "$T_OUT"
jq_is "stand-in -I 1 -K 1: per_iter of 5 times, 1 skipped" "$T_DIR/s-iter.json" '[.rows[0].out_of_place.per_iter | (.times_us | length), .skipped_iterations]' '[5,1]'
