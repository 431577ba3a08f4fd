#!/usr/bin/env bash
# fabric-rdma under AddressSanitizer/UBSan and valgrind: real TCP and
# libfabric runs on loopback and the no-RDMA / no-GPU error paths. LeakSanitizer cannot tell
# Open MPI's unloaded components from our code, so leaks are left to
# valgrind (definite leaks fail, Open MPI's suppressed).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if variant_build asan MODULES="core probe" SAN=1; then
  ok "fabric-rdma builds with -fsanitize=address,undefined"
else
  not_ok "fabric-rdma builds with -fsanitize=address,undefined" "$(grep -m3 'error:' "$T_DIR/make.log")"
  exit 0
fi
asan_bin=$tree/bin/fabric-rdma
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=0

# sanitized NAME CODE NP ARGS...: exit CODE and no sanitizer report.
sanitized() {
  local name=$1 code=$2 np=$3; shift 3
  if [ "$np" -eq 0 ]; then
    run timeout 120 "$asan_bin" "$@"
  else
    run timeout -k 5 300 "${FB_MPIRUN[@]}" -np "$np" -x ASAN_OPTIONS -x UBSAN_OPTIONS \
      "$asan_bin" "$@"
  fi
  if [ "$T_RC" -eq "$code" ] && ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then
    ok "$name"
  else
    not_ok "$name" "exit $T_RC: $(grep -m4 -E 'ERROR|runtime error|#[0-9] .*bench/' "$T_ERR" | tr '\n' ' ')"
  fi
}

J=(-J "$T_DIR/r.json")
sanitized "ASan: bidirectional 2-stream sweep, 2 ranks" 0 2 --transport tcp -b -P 2 -a --min-size 1K --max-size 256K -D 0.1 "${J[@]}"
sanitized "ASan: bidirectional ring of 3" 0 3 --transport tcp --pattern ring -b -D 0.2 "${J[@]}"
sanitized "ASan: latency" 0 2 --transport tcp --latency -a --max-size 4K -n 50 "${J[@]}"
sanitized "ASan: no RDMA (exit 5)" 5 0 "${J[@]}"
sanitized "ASan: --use-cuda without a GPU (exit 5)" 5 0 --use-cuda "${J[@]}"
sanitized "ASan: odd ranks for pairs (exit 2)" 2 3 --transport tcp "${J[@]}"
if "$asan_bin" --version | grep -q 'ofi)'; then
  OFI=(--transport ofi --provider tcp -d lo)
  sanitized "ASan: libfabric bidirectional sweep, 2 endpoints" 0 2 "${OFI[@]}" -b -a --min-size 1K --max-size 256K -n 50 "${J[@]}"
  sanitized "ASan: libfabric ring of 3, counter, reads" 0 3 "${OFI[@]}" --pattern ring --op read --completion counter -n 50 "${J[@]}"
  sanitized "ASan: libfabric bidirectional ring of 3, CQ: passive ends borrow two peers' endpoints" 0 3 "${OFI[@]}" --pattern ring -b -q 2 -n 50 "${J[@]}"
  sanitized "ASan: libfabric write and read latency" 0 2 "${OFI[@]}" --latency -a --max-size 1K -n 50 "${J[@]}"
  sanitized "ASan: libfabric read latency" 0 2 "${OFI[@]}" --latency --op read -n 50 "${J[@]}"
  sanitized "ASan: unknown provider (exit 5)" 5 2 --transport ofi --provider nosuch "${J[@]}"
fi

# The verbs transport on the RDMA stand-in (this build's, not sanitized): a
# bidirectional sweep and a pair on local ranks, one HCA each.
rs=$FB_ROOT/scripts/rdma-standin.sh
have_rdma_standin=
[ -e "$FB_BUILD/standin-rdma/libibverbs.so.1" ] && have_rdma_standin=1
export FB_STANDIN_IB_DIR=$T_DIR/ib-registry FB_STANDIN_IB_DEVICES=mlx5_0,mlx5_1
if [ -n "$have_rdma_standin" ]; then
  run env BUILD="$FB_BUILD" "$rs" timeout -k 5 120 "${FB_MPIRUN[@]}" -np 2 -x LD_LIBRARY_PATH -x FB_STANDIN_IB_DIR -x FB_STANDIN_IB_DEVICES \
    -x ASAN_OPTIONS -x UBSAN_OPTIONS "$asan_bin" -b -a --min-size 1K --max-size 256K -n 50 "${J[@]}"
  if [ "$T_RC" -eq 0 ] && ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then ok "ASan: verbs bidirectional sweep on the RDMA stand-in"
  else not_ok "ASan: verbs bidirectional sweep on the RDMA stand-in" "exit $T_RC: $(grep -m4 -E 'ERROR|runtime error|#[0-9] .*bench/|fabric-rdma:' "$T_ERR" | tr '\n' ' ')"; fi
else
  skip "ASan: verbs on the RDMA stand-in" "the stand-in is not built (no <infiniband/verbs.h>)"
fi

if ! command -v valgrind >/dev/null; then
  not_ok "valgrind present" "install valgrind (scripts/install-deps.sh)"
  exit 0
fi
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
  --suppressions="$FB_ROOT/tests/sanitize/mpi.supp")
[ -f /usr/share/openmpi/openmpi-valgrind.supp ] && vg+=(--suppressions=/usr/share/openmpi/openmpi-valgrind.supp)
run fb_mpirun 2 "${vg[@]}" "$FB_BIN/fabric-rdma" --transport tcp -b -D 0.3 -s 64K --timeout 60 "${J[@]}"
if [ "$T_RC" -eq 0 ]; then ok "valgrind: bidirectional TCP pair, no memory errors or definite leaks"; else not_ok "valgrind: bidirectional TCP pair" "exit $T_RC $(grep -m6 '==[0-9]*==' "$T_ERR" | tr '\n' ' ')"; fi
if "$FB_BIN/fabric-rdma" --version | grep -q 'ofi)'; then
  run fb_mpirun 2 "${vg[@]}" "$FB_BIN/fabric-rdma" --transport ofi --provider tcp -d lo -b -s 64K -n 100 --timeout 60 "${J[@]}"
  if [ "$T_RC" -eq 0 ]; then ok "valgrind: bidirectional libfabric pair, no memory errors or definite leaks"; else not_ok "valgrind: bidirectional libfabric pair" "exit $T_RC $(grep -m6 '==[0-9]*==' "$T_ERR" | tr '\n' ' ')"; fi
  run fb_mpirun 2 "${vg[@]}" "$FB_BIN/fabric-rdma" --transport ofi --provider tcp -d lo --latency -n 50 --timeout 60 "${J[@]}"
  if [ "$T_RC" -eq 0 ]; then ok "valgrind: libfabric latency, no memory errors or definite leaks"; else not_ok "valgrind: libfabric latency" "exit $T_RC $(grep -m6 '==[0-9]*==' "$T_ERR" | tr '\n' ' ')"; fi
fi
if [ -n "$have_rdma_standin" ]; then
  run "$rs" timeout -k 5 300 "${FB_MPIRUN[@]}" -np 2 -x LD_LIBRARY_PATH -x FB_STANDIN_IB_DIR -x FB_STANDIN_IB_DEVICES \
    "${vg[@]}" "$FB_BIN/fabric-rdma" -s 64K -n 200 --timeout 60 "${J[@]}"
  if [ "$T_RC" -eq 0 ]; then ok "valgrind: verbs pair on the RDMA stand-in, no memory errors or definite leaks"; else not_ok "valgrind: verbs pair on the RDMA stand-in" "exit $T_RC $(grep -m6 '==[0-9]*==\|fabric-rdma:' "$T_ERR" | tr '\n' ' ')"; fi
fi
run timeout 120 "${vg[@]}" "$FB_BIN/fabric-rdma" "${J[@]}"
if [ "$T_RC" -eq 5 ]; then ok "valgrind: the no-RDMA path, no errors or definite leaks"; else not_ok "valgrind: the no-RDMA path" "exit $T_RC $(grep -m6 '==[0-9]*==' "$T_ERR" | tr '\n' ' ')"; fi
