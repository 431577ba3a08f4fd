#!/usr/bin/env bash
# valgrind over the unit tests (definite leaks and memory errors fail) and
# over an MPI run, with Open MPI's own suppression file.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if ! command -v valgrind >/dev/null; then
  not_ok "valgrind present" "install valgrind (scripts/install-deps.sh)"
  exit 0
fi
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
supp=/usr/share/openmpi/openmpi-valgrind.supp
[ -f "$supp" ] && vg+=(--suppressions="$supp")
vg+=(--suppressions="$FB_ROOT/tests/sanitize/mpi.supp")
for t in "$FB_BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  name="valgrind: $(basename "$t")"
  if (cd "$FB_ROOT" && timeout 900 "${vg[@]}" "$t") >"$T_DIR/v.log" 2>&1; then
    ok "$name"
  else
    not_ok "$name" "$(grep -m5 -E '==[0-9]+==|not ok' "$T_DIR/v.log" | tr '\n' ' ')"
  fi
done
run fb_mpirun 2 valgrind -q --error-exitcode=99 --suppressions="$supp" \
  --suppressions="$FB_ROOT/tests/sanitize/mpi.supp" \
  "$FB_BIN/fabric-coll" all_reduce -b 1K -e 64K -f 4 -n 1 -c 1 --backend mpi -J "$T_DIR/v.json"
if [ "$T_RC" -eq 0 ]; then
  ok "valgrind: fabric-coll all_reduce on 2 ranks, no memory errors"
else
  not_ok "valgrind: fabric-coll all_reduce on 2 ranks" "exit $T_RC $(grep -m8 '==' "$T_ERR" | tr '\n' ' ')"
fi
# The NCCL backend on the GPU stand-in (docs/standin.md), graphs included.
if [ -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 300 "${FB_MPIRUN[@]}" -q -np 2 -x LD_LIBRARY_PATH \
    valgrind -q --error-exitcode=99 --suppressions="$supp" --suppressions="$FB_ROOT/tests/sanitize/mpi.supp" \
    --leak-check=full --errors-for-leak-kinds=definite \
    "$FB_BIN/fabric-coll" all_reduce -b 1K -e 256K -f 8 -n 2 -c 1 -G 2 -J "$T_DIR/vs.json"
  if [ "$T_RC" -eq 0 ]; then
    ok "valgrind: fabric-coll all_reduce -G 2 on 2 stand-in GPUs, no memory errors or leaks"
  else
    not_ok "valgrind: fabric-coll on the stand-in" "exit $T_RC $(grep -m8 '==' "$T_ERR" | tr '\n' ' ')"
  fi
fi
