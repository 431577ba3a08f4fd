#!/usr/bin/env bash
# Bounded ends of fabric-scan when a rank stops (SIGSTOP) or dies (SIGKILL)
# in the scan's last moments: a follower before its last report (the last
# round's gather) or before it takes its stop order, rank 0 before it sends
# the stop orders, a follower killed before its last report (the fault
# injector, tests/tools/mpi_fault.c, at the very MPI call: ends_at_fault in
# tests/ends.sh), and a rank stopped after its last test while rank 0
# writes the results (ends_bounded). Before the bounded end, rank 0 (and
# mpirun) waited in MPI_Finalize for a stopped rank forever. Every rank
# that is not stopped must be gone within the bound docs/scan.md states
# for that point (When a node is lost), with its exit code, naming the
# host that went silent, and the results must keep every round. Ranks on
# one machine, each on a host of its own (a UTS namespace): needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ends.sh
. "$(dirname "$0")/../ends.sh"

ends_ready "fabric-scan's bounded ends" || exit 0

# A fault at the scan's last moments (tests/tools/mpi_fault.c), launched
# as docs/scan.md launches a scan: a rank that exits does not end the job.
# Tags of bench/scan/run.c: TAG_ORDER, TAG_REPORT. --threshold 0.01 and a
# fixed seed: no figure is slow, so the undisturbed run passes and the
# schedule is the same in every run. SLACK_S (run.c): 5 s.
scan_tag() { sed -n "s/^#define $1 \([0-9]*\)$/\1/p" "$FB_ROOT/bench/scan/run.c"; }
ORDER=$(scan_tag TAG_ORDER)
REPORT=$(scan_tag TAG_REPORT)
TT=2
scan=(--mca orte_abort_on_non_zero_status 0 -- "$FB_BIN/fabric-scan" --backend mpi -b 64K -n 2 -w 1
  --threshold 0.01 --seed 1 --test-timeout "$TT" -J "$T_DIR/r.json")
# shellcheck disable=SC2016 # jq's variables: $base, the undisturbed run's results
{
  every_round='.complete and ([.tests[].round] | unique) == ([$base[0].tests[].round] | unique)'
  h2_failed=$every_round' and [.nodes[] | select(.host == "h2") | .verdict] == ["failed"]'
}

# Rank 0 collects a round's reports within the test's bound + 5 s, fails
# the silent node, writes the results and ends the job: suspects named.
ends_at_fault "fabric-scan, a follower stops before its last report" 3 "2:isend:$REPORT:stop:last" $((TT + 5)) 24 \
  'fabric-scan: round [0-9]+: h2 stopped answering' "$h2_failed" "${scan[@]}"
# Rank 0 sends the stop orders without waiting for them and hears nothing
# from that follower at the end handshake within the test's bound.
ends_at_fault "fabric-scan, a follower stops before it takes its stop order" 3 "2:irecv:$ORDER:stop:last" "$TT" 8 \
  'fabric-bench: rank 2 \(h2\) did not reach the end of the job' "$every_round"' and ([.nodes[].verdict] | unique) == ["pass"]' \
  "${scan[@]}"
# The followers wait twice the test's bound + 4 x 5 s for an order; the
# results were complete before the first stop order.
ends_at_fault "fabric-scan, rank 0 stops before it sends the stop orders" 3 "0:isend:$ORDER:stop:last-1" $((2 * TT + 20)) 8 \
  'rank 0 \(h0\), the scan.s coordinator, sent no order' "$every_round" "${scan[@]}"
# As a stopped one, but mpirun, which saw a process die, exits 128 +
# SIGKILL (docs/scan.md, When a node is lost).
ends_at_fault "fabric-scan, a follower dies before its last report" 3 "2:isend:$REPORT:kill:last" $((TT + 5)) 137 \
  'fabric-scan: round [0-9]+: h2 stopped answering' "$h2_failed" "${scan[@]}"

# No figure slow: a scan with suspects ends through MPI_Abort at once, not
# through the end handshake this case is about.
ends_bounded "fabric-scan, a rank stopped after its last test" 3 2 3 \
  "$FB_BIN/fabric-scan" --backend mpi -b 64K -n 2 -w 1 --threshold 0.01 --test-timeout 3 -J "$T_DIR/r.fifo"
