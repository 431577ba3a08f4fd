#!/usr/bin/env bash
# Everything built with AddressSanitizer and UBSan: unit tests with leak
# checking, MPI runs without it (Open MPI's own allocations at finalize are
# not ours; our leaks are caught by the unit tests and by valgrind).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if variant_build asan SAN=1; then
  ok "builds with -fsanitize=address,undefined"
else
  not_ok "builds with -fsanitize=address,undefined" "$(grep -m3 -E 'error:' "$T_DIR/make.log")"
  exit 0
fi
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "$tree"/tests/test_*; do
  [ -x "$t" ] || continue
  name="ASan/UBSan: $(basename "$t")"
  # Open MPI's dlopened components leak by design and unload before the
  # leak report, out of reach of suppressions: tests that start MPI are
  # leak-checked by valgrind (test_valgrind.sh) instead.
  leaks=1
  grep -q 'MPI_Init' "$FB_ROOT/tests/unit/$(basename "$t").c" 2>/dev/null && leaks=0
  if (cd "$FB_ROOT" && ASAN_OPTIONS=detect_leaks=$leaks \
      LSAN_OPTIONS=suppressions="$FB_ROOT/tests/sanitize/lsan.supp" timeout 600 "$t") \
      >"$T_DIR/u.log" 2>&1; then
    ok "$name"
  else
    not_ok "$name" "$(grep -m5 -E 'ERROR|runtime error|not ok' "$T_DIR/u.log" | tr '\n' ' ')"
  fi
done
export ASAN_OPTIONS=detect_leaks=0
for c in all_reduce all_gather reduce_scatter alltoall; do
  run fb_mpirun 3 -x ASAN_OPTIONS -x UBSAN_OPTIONS "$tree/bin/fabric-coll" "$c" -b 1K -e 1M -f 8 \
    -n 2 -c 1 --backend mpi -J "$T_DIR/$c.json"
  if [ "$T_RC" -eq 0 ] && ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then
    ok "ASan/UBSan: fabric-coll $c on 3 ranks"
  else
    not_ok "ASan/UBSan: fabric-coll $c on 3 ranks" "exit $T_RC $(grep -m3 -E 'ERROR|runtime error' "$T_ERR" | tr '\n' ' ')"
  fi
done
run fb_mpirun 2 -x ASAN_OPTIONS "$tree/bin/fabric-coll" all_reduce -b 1M -e 1K -J "$T_DIR/bad.json"
if [ "$T_RC" -eq 2 ] && ! grep -q AddressSanitizer "$T_ERR"; then ok "ASan: error path exits cleanly"; else not_ok "ASan: error path exits cleanly" "exit $T_RC"; fi
# The NCCL backend too, on the GPU stand-in (docs/standin.md): graphs, and a
# peer lost mid-sweep (exit 9 through ncclCommGetAsyncError).
if [ -e "$tree/standin/libnccl.so.2" ]; then
  for c in all_reduce alltoall; do
    run env BUILD="$tree" "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 300 "${FB_MPIRUN[@]}" -np 3 \
      -x LD_LIBRARY_PATH -x ASAN_OPTIONS -x UBSAN_OPTIONS "$tree/bin/fabric-coll" "$c" -b 1K -e 256K -f 8 -n 2 -c 1 -G 2 \
      -J "$T_DIR/s-$c.json"
    if [ "$T_RC" -eq 0 ] && ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then
      ok "ASan/UBSan: fabric-coll $c -G 2 on 3 stand-in GPUs"
    else
      not_ok "ASan/UBSan: fabric-coll $c on the stand-in" "exit $T_RC $(grep -m3 -E 'ERROR|runtime error' "$T_ERR" | tr '\n' ' ')"
    fi
  done
  run env BUILD="$tree" FB_STANDIN_FAIL=async FB_STANDIN_AFTER=14 "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 300 \
    "${FB_MPIRUN[@]}" -np 3 -x LD_LIBRARY_PATH -x ASAN_OPTIONS -x UBSAN_OPTIONS "$tree/bin/fabric-coll" all_reduce \
    -b 1K -e 64K -f 4 -n 1 -w 1 -c 1 -T 20 -J "$T_DIR/s-async.json"
  if [ "$T_RC" -eq 9 ] && ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then
    ok "ASan/UBSan: a peer lost on the stand-in ends with exit 9, cleanly"
  else
    not_ok "ASan/UBSan: a peer lost on the stand-in" "exit $T_RC $(grep -m3 -E 'ERROR|runtime error' "$T_ERR" | tr '\n' ' ')"
  fi
fi
