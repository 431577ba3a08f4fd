#!/usr/bin/env bash
# Bad input: each case exits with its documented code, prints one line on
# stderr that names the problem and the fix, prints nothing on stdout, and
# never hangs (every run is bounded by fb_mpirun's timeout).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

# bad_case NAME CODE PATTERN NP ARGS...: fabric-coll ARGS on NP ranks.
bad_case() {
  local name=$1 code=$2 pattern=$3 np=$4; shift 4
  expect_error "$name" "$code" "$pattern" fabric-coll mpi_quiet "$np" "$FB_BIN/fabric-coll" "$@"
}

J=(-J "$T_DIR/r.json")
bad_case "-b above -e (exit 2)" 2 "is above -e" 2 all_reduce -b 1M -e 1K "${J[@]}"
bad_case "zero size (exit 2)" 2 "at least 1 byte" 2 all_reduce -b 0 -e 1K "${J[@]}"
bad_case "negative size (exit 2)" 2 "negative" 2 all_reduce -b -1K "${J[@]}"
bad_case "unknown dtype lists the choices (exit 2)" 2 "choose one of int8" 2 all_reduce -d float128 "${J[@]}"
bad_case "unknown op (exit 2)" 2 "unknown op 'mul'" 2 all_reduce -o mul "${J[@]}"
bad_case "unknown collective (exit 2)" 2 "unknown collective 'allredux'" 2 allredux "${J[@]}"
bad_case "an option where a value belongs names the option as typed (exit 2)" 2 "option '-b' needs a value (BYTES)" 1 all_reduce -b --backend mpi "${J[@]}"
bad_case "a bad value names the spelling typed (exit 2)" 2 "^fabric-coll: --minbytes: size '-1K' is negative" 1 all_reduce --minbytes -1K "${J[@]}"
ln -s "$FB_BIN/fabric-coll" "$T_DIR/foo_perf"
expect_error "a *_perf link that names no collective (exit 2)" 2 "foo_perf names no collective" fabric-coll \
  mpi_quiet 1 "$T_DIR/foo_perf" all_reduce -b 1K -e 1K "${J[@]}"
bad_case "linear 1K..16G trap (exit 2)" 2 "add -f 2" 2 all_reduce -b 1K -e 16G "${J[@]}"
bad_case "root outside the job (exit 2)" 2 "-r 5 is not a rank" 2 broadcast -r 5 -b 1K -e 1K "${J[@]}"
bad_case "half on the MPI backend (exit 2)" 2 "no half type" 2 all_reduce -d half -b 1K -e 1K --backend mpi "${J[@]}"
bad_case "avg on the MPI backend (exit 2)" 2 "no 'avg' reduction" 2 all_reduce -o avg -b 1K -e 1K --backend mpi "${J[@]}"
bad_case "sizes that do not fit memory name the largest that does (exit 4)" 4 "largest size that fits is -e" 2 all_reduce -b 1K -e 1T -f 2 --backend mpi "${J[@]}"
bad_case "invalid -J path (exit 7)" 7 "/proc/fabric" 2 all_reduce -b 1K -e 1K -J /proc/fabric/r.json
bad_case "unwritable results dir (exit 7)" 7 "choose a writable" 1 all_reduce -b 1K -e 1K --results-dir /proc/nope

# --cap-memory turns the refusal into a capped sweep with a warning. The
# cap is the largest size that fits the memory free at that moment, so the
# sizes straddle it by far: 64M (256 MiB for 2 ranks) fits beside whatever
# the other tests hold, 64G (256 GiB) fits no test machine. (1G needed over
# 4 GiB free, which tests running beside this one can take.)
run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 64T -f 1024 -n 1 -c 0 --cap-memory \
  --backend mpi -J "$T_DIR/cap.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Warning: memory: sweep capped at 64M instead of 64T' "$T_OUT" &&
   grep -q 'capped' "$T_DIR/cap.json"; then
  ok "--cap-memory caps with a warning in the table and the JSON"
else
  not_ok "--cap-memory caps with a warning in the table and the JSON" "exit $T_RC $(head -c 400 "$T_OUT")"
fi

# Ranks started with different arguments: the odd rank is named.
run timeout 60 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -n 5 "${J[@]}" : \
  -np 1 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -n 6 "${J[@]}"
if [ "$T_RC" -eq 6 ] && grep -q 'rank 2 (.*) differs from the other 2' "$T_ERR"; then
  ok "ranks with different arguments: exit 6 naming rank 2"
else
  not_ok "ranks with different arguments: exit 6 naming rank 2" "exit $T_RC $(cat "$T_ERR")"
fi

# The launcher meant 4 ranks, MPI sees 1: the classic "not built with MPI".
run env OMPI_COMM_WORLD_SIZE=4 timeout 60 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K "${J[@]}"
if [ "$T_RC" -eq 6 ] && grep -q 'launcher started 4 ranks (OMPI_COMM_WORLD_SIZE=4) but MPI sees 1' "$T_ERR"; then
  ok "launcher/MPI mismatch: exit 6"
else
  not_ok "launcher/MPI mismatch: exit 6" "exit $T_RC $(cat "$T_ERR")"
fi

# NCCL backend without a GPU (compiled in when CUDA and NCCL exist).
if [ -e /usr/local/cuda/include/nccl.h ]; then
  bad_case "--backend nccl with no GPU visible (exit 5)" 5 "use --backend mpi" 2 all_reduce --backend nccl -b 1K -e 1K "${J[@]}"
  # Without --backend the default falls back to host memory and says so.
  run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -n 1 "${J[@]}"
  expect_grep "no GPU: the default backend is mpi, said in the first line" '^# fabric-coll .* backend mpi \(host memory\)' "$T_OUT"
else
  skip "--backend nccl with no GPU visible" "this machine has no CUDA/NCCL under /usr/local/cuda"
fi

# Help and version: exit 0, on stdout.
expect_exit "--help exits 0" 0 timeout 30 "$FB_BIN/fabric-coll" --help
expect_grep "--help lists the collectives and exit codes" 'exit codes: 0 ok, 1 internal error, 2 usage' "$T_OUT"
expect_exit "--version exits 0" 0 timeout 30 "$FB_BIN/all_gather_perf" --version
