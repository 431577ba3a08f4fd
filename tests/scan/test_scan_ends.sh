#!/usr/bin/env bash
# Bounded ends: fabric-scan and fabric-rdma with one rank stopped (SIGSTOP)
# after its last test or size, while the job winds down. Before the bounded
# end, rank 0 (and mpirun) waited in MPI_Finalize for the stopped rank
# forever.
#
# The results go to a FIFO: rank 0 writes it once, at the end, and blocks
# opening it until the test reads it. So the moment is the same in every
# run: every measurement is done and reported, and rank 0 has not yet ended
# the job. The test stops the other rank then, reads the document, and
# every rank that is not stopped must be gone within the program's stated
# bound (the end handshake, then MPI_Finalize under its watchdog: twice the
# per-step bound, plus one second) and six times the time an undisturbed
# run of the same job took here (the launcher's start, and its teardown of
# a job that MPI_Abort ends). The stopped process is then let go so mpirun can
# finish. Ranks on one machine, each on a host of its own (a UTS
# namespace): needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ends.sh
. "$(dirname "$0")/../ends.sh"

if ! is_root; then
  skip "bounded ends with a stopped rank" "needs root for unshare --uts"
  exit 0
fi

# ends_bounded NAME NP STOP_RANK LIMIT CMD...: runs CMD (whose results go
# to $T_DIR/r.fifo) on NP ranks, stops rank STOP_RANK once rank 0 waits to
# write the results, reads them, and checks that every other rank is gone
# within 2 x LIMIT + 1 s plus six times an undisturbed run's time.
ends_bounded() {
  local name=$1 np=$2 rank=$3 limit=$4 base bound start left t p0 victim i
  shift 4
  base=$(took -np "$np" -- "${@/%r.fifo/base.json}")
  # The launcher's own start and teardown are in the base; tearing down a
  # job that MPI_Abort ends (a stopped process to kill) takes it longer:
  # measured here 2 to 3 s against a base of 0.5 to 1 s.
  bound=$(awk -v b="$base" -v l="$limit" 'BEGIN { print 6 * b + 2 * l + 1 }')
  rm -f "$T_DIR/r.fifo" "$T_DIR/r.json"
  mkfifo "$T_DIR/r.fifo"
  own_host -np "$np" -- "$@" >"$T_DIR/end.out" 2>"$T_DIR/end.err" &
  local job=$!
  for ((i = 0; i < 1200; i++)); do
    p0=$(rank_pid 0)
    [ -n "$p0" ] && [ "$(cat "/proc/$p0/wchan" 2>/dev/null)" = wait_for_partner ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  victim=$(rank_pid "$rank")
  [ -n "$victim" ] && kill -STOP "$victim"
  start=$(date +%s.%N)
  [ -n "$victim" ] && timeout 60 cat "$T_DIR/r.fifo" >"$T_DIR/r.json"
  gone_within "$start" "$bound"
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
  wait "$job"
  if [ -z "$victim" ]; then
    not_ok "$name" "rank $rank was not found to stop; stderr: $(head -c 400 "$T_DIR/end.err")"
  elif [ "$left" -eq 0 ] && jq -e '.complete == true' "$T_DIR/r.json" >/dev/null 2>&1; then
    ok "$name: the other ranks end in ${t%.*} s (bound ${bound%.*} s), the results complete"
  else
    not_ok "$name" "$left ranks still running after ${t%.*} s (bound ${bound%.*} s); stderr: $(head -c 400 "$T_DIR/end.err")"
  fi
}

ends_bounded "fabric-scan, a rank stopped after its last test" 3 2 3 \
  "$FB_BIN/fabric-scan" --backend mpi -b 64K -n 2 -w 1 --test-timeout 3 -J "$T_DIR/r.fifo"
ends_bounded "fabric-rdma, a rank stopped after its last size" 2 1 3 \
  "$FB_BIN/fabric-rdma" --transport tcp -a --min-size 256K --max-size 1M -D 0.2 --timeout 3 -J "$T_DIR/r.fifo"
