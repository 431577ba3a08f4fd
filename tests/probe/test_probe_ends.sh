#!/usr/bin/env bash
# Bounded ends of fabric-rdma when a rank stops (SIGSTOP) or dies (SIGKILL)
# at the last step of a run: before its last report reaches rank 0 (the
# final gather), while it waits for the last verdict, rank 0 while it
# sends that verdict (the fault injector, tests/tools/mpi_fault.c, at the
# very MPI call: ends_at_fault in tests/ends.sh), and after its last size
# (ends_bounded). The other rank must be gone within the bound
# docs/probe.md states for that wait (Bounded waits), with its exit code,
# naming the rank and host that went silent, and the results must keep
# every size measured. Two ranks on one machine, each on a host of its own
# (a UTS namespace): needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ends.sh
. "$(dirname "$0")/../ends.sh"

ends_ready "fabric-rdma's bounded ends" || exit 0

# Tags of probe_tag (bench/probe/comm.h), read from the enum: it starts at
# a given value and counts on by one.
probe_tag() {
  awk -v want="$1" '/^enum probe_tag/ { on = 1; next } on && /^}/ { exit }
    on && match($0, /PROBE_TAG_[A-Z_]+/) {
      name = substr($0, RSTART, RLENGTH)
      if (match($0, /= *[0-9]+/)) v = substr($0, RSTART + 1) + 0; else v++
      if (name == want) { print v; exit } }' "$FB_ROOT/bench/probe/comm.h"
}
REPORT=$(probe_tag PROBE_TAG_REPORT)
VERDICT=$(probe_tag PROBE_TAG_VERDICT)
# Two sizes, --timeout T: a size's bound is T + -D + --margin + 1 s (its
# longest believable run, probe_size_spec_bound_s).
T=2
rdma=("$FB_BIN/fabric-rdma" --transport tcp -a --min-size 256K --max-size 512K -D 0.2 --margin 0.2
  --timeout "$T" -J "$T_DIR/r.json")
size_limit=$(awk -v t="$T" 'BEGIN { print t + 0.2 + 0.2 + 1 }')

# Rank 0 waits a size's bound for the report, then delivers its failed
# verdict within T and ends the job.
gather=$(awk -v l="$size_limit" -v t="$T" 'BEGIN { print l + t }')
# shellcheck disable=SC2016 # jq's variables: $base, the undisturbed run's results
{
  # The rows of every size before the last, and the run not complete.
  before_last='.complete == false and ([.links[].size_bytes] | unique) == ([$base[0].links[].size_bytes] | unique)[:-1]'
  every_size='(.links | length) == ($base[0].links | length)'
}

ends_at_fault "rank 1 stops before its last report" 2 "1:isend:$REPORT:stop:last" "$gather" 8 \
  'fabric-rdma: rank 1 \(h1\): .*did not report within' "$before_last"' and .fault.exit_code == 8 and .fault.host == "h1"' \
  -- "${rdma[@]}"

# Rank 0 delivers the good verdict within twice a size's bound, finishes,
# and hears nothing at the end handshake within T. Which of the two names
# rank 1 is MPI's: a send completes without its receiver where MPI buffers
# it (over TCP); in shared memory here it waits for the receiver.
verdict=$(awk -v l="$size_limit" -v t="$T" 'BEGIN { print 2 * l + t }')
ends_at_fault "rank 1 stops before it takes the last verdict" 2 "1:irecv:$VERDICT:stop:last" "$verdict" 8 \
  'rank 1 \(h1\)(: rank 1 \(h1\) did not answer .* verdict| did not reach the end of the job)' \
  "$every_size"' and (.complete or (.fault.exit_code == 8 and .fault.host == "h1"))' -- "${rdma[@]}"

# Rank 1 waits twice a size's bound for the verdict, then ends the job.
ends_at_fault "rank 0 stops before it sends the last verdict" 2 "0:isend:$VERDICT:stop:last" \
  "$(awk -v l="$size_limit" 'BEGIN { print 2 * l }')" 8 \
  'fabric-rdma: rank 1 \(h1\): rank 0 \(h0\) did not answer' "$every_size"' and .complete == false' -- "${rdma[@]}"

# A process that dies is the launcher's to report: mpirun names it, stops
# the others with SIGTERM (rank 0 records the stop, and rank 1 as not
# having reported by then: no timeout) and exits 128 + SIGKILL
# (docs/probe.md, Bounded waits). Its notice is shown (-q hides it).
ends_at_fault "rank 1 dies before its last report" 2 "1:isend:$REPORT:kill:last" "$gather" 137 \
  'process rank 1 .* exited on signal 9' \
  "$before_last"' and .fault.exit_code == 143 and any(.warnings[]; test("rank 1 [(]h1[)].* had not reported when the job was stopped"))' \
  --mca orte_execute_quiet 0 -- "${rdma[@]}"

# After its last size, while rank 0 writes the results: rank 0 hears
# nothing at the end handshake within --timeout.
ends_bounded "rank 1 stops after its last size" 2 1 3 \
  "$FB_BIN/fabric-rdma" --transport tcp -a --min-size 256K --max-size 1M -D 0.2 --timeout 3 -J "$T_DIR/r.fifo"

# Three ranks in a ring: rank 1 stops before it takes the last verdict
# while rank 2, which took it, may already be at the end handshake
# (waiting 3 x T for rank 0's answer, and ended at once by the stop
# signal of the job's end). Rank 0 gives the delivery T, so
# rank 1 is named, not rank 0: by the delivery or by the end handshake,
# as MPI completes the send.
ends_at_fault "rank 1 of 3 stops before it takes the last verdict" 3 "1:irecv:$VERDICT:stop:last" "$T" 8 \
  '^fab[a-z-]+: rank 1 \(h1\)(: rank 1 \(h1\) did not answer .* verdict| did not reach the end of the job)' \
  "$every_size"' and (.complete or (.fault.exit_code == 8 and .fault.host == "h1"))' -- "${rdma[@]}" --pattern ring
if grep -q 'rank 0 (h0) did not answer' "$T_DIR/end.err"; then
  not_ok "rank 1 of 3 stops before it takes the last verdict: rank 0 is not named for rank 1's silence" "$(head -c 400 "$T_DIR/end.err")"
else
  ok "rank 1 of 3 stops before it takes the last verdict: rank 0 is not named for rank 1's silence"
fi
