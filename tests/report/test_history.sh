#!/usr/bin/env bash
# fabric-report history on results trees made from a real fabric-coll run:
# each run against the median and MAD of the earlier runs of its series,
# exactly the run made slow (by jq, below) flagged, a wide spread or a
# small drop not flagged, incomplete runs listed but never a baseline, and
# exit 20 only when a series ends in an outlier.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/report/results-tree.sh
. "$(dirname "$0")/results-tree.sh"

R=$FB_BIN/fabric-report
command -v jq >/dev/null || { skip "history" "jq is not installed"; exit 0; }
mkdir -p "$T_DIR/raw"
real_runs A 1 "$T_DIR/raw" || { not_ok "fabric-coll runs for the history tree" "a 2-rank all_reduce did not run"; exit 0; }

# Tree 1: three runs of A (days 01-03) copied from one real run at 100, 96
# and 104 % (the spread a steady fabric shows: repeats on this shared 2-core
# box spread by up to 30 %, which would make the case depend on the load),
# then a copy of the real run at 30 % (day 04: the injected slow run), then
# one at 100 % (day 05), and an incomplete run at 1 % (day 06): listed, never
# a baseline.
T1=$T_DIR/t1
place "$T_DIR/raw/A-1.json" "$T1" A 01 1.00
place "$T_DIR/raw/A-1.json" "$T1" A 02 0.96
place "$T_DIR/raw/A-1.json" "$T1" A 03 1.04
place "$T_DIR/raw/A-1.json" "$T1" A 04 0.3
run "$R" history --json "$T1"
expect_exit "a series ending in an outlier exits 20" 20 "$R" history "$T1"
expect_grep "the text table marks the slow run" '2026-01-04T00:00:00Z .* OUTLIER .*20260104T000000Z-all_reduce.json' "$T_OUT"
jq_ok() { if jq -e "$2" "$T_OUT" >/dev/null; then ok "$1"; else not_ok "$1" "jq '$2' is false on $(head -c 600 "$T_OUT" | tr '\n' ' ')"; fi; }

place "$T_DIR/raw/A-1.json" "$T1" A 05
place "$T_DIR/raw/A-1.json" "$T1" A 06 0.01 '.complete = false | .summary.sizes_done = 3 | .rows |= .[0:3]
  | .fault = {"status": "timeout", "exit_code": 8, "message": "rank 1 stopped answering"}'
expect_exit "a series whose newest run is back within its history exits 0" 0 "$R" history --json "$T1"
jq_ok "exactly the injected run is an outlier" '[.series[].runs[] | select(.outlier) | .start_time] == ["2026-01-04T00:00:00Z"]'
jq_ok "its ratio to the median of the three earlier runs is 0.3" \
  '.series[0].runs[3] | .earlier_runs == 3 and (.ratio * 100 | round) == 30'
jq_ok "the first three runs have not enough history" '[.series[0].runs[0:3][].state] == ["not enough history","not enough history","not enough history"]'
jq_ok "the reference size is the largest common size (1M)" '.series[0].size_bytes == 1048576'
jq_ok "the incomplete run is listed, not judged" '.series[0].runs[5] | .state == "incomplete" and .complete == false'
jq_ok "the slow run counts in the later baseline, the incomplete one does not" \
  '.series[0].runs[4].earlier_runs == 4 and .series[0].runs[5].earlier_runs == 5'
if json_valid "$FB_ROOT/docs/schema/history.schema.json" "$T_OUT" 2>"$T_DIR/schema.err"; then
  ok "history --json matches docs/schema/history.schema.json"
else
  not_ok "history --json matches docs/schema/history.schema.json" "$(tail -3 "$T_DIR/schema.err")"
fi
expect_exit "--size picks another reference size" 0 "$R" history --json --size 256K "$T1"
jq_ok "... and the figures are at 256K" '.series[0].size_bytes == 262144 and ([.series[0].runs[] | select(.outlier)] | length) == 1'

# Tree 2: the same slow run after a history spread wide (40 %, 100 %, 160 %
# of one run: MAD = 60 % of the median): median - 3*MAD is below zero, so a
# run at half the median is within the spread.
T2=$T_DIR/t2
place "$T_DIR/raw/A-1.json" "$T2" A 01 0.4
place "$T_DIR/raw/A-1.json" "$T2" A 02 1.0
place "$T_DIR/raw/A-1.json" "$T2" A 03 1.6
place "$T_DIR/raw/A-1.json" "$T2" A 04 0.5
expect_exit "a drop within a wide spread is not an outlier" 0 "$R" history --json "$T2"
jq_ok "... its state is ok" '.series[0].runs[3].state == "ok"'
expect_exit "a smaller --k makes the same drop an outlier" 20 "$R" history --k 0.5 "$T2"

# Tree 3: a history without spread (three copies of one run): a 10 % drop
# stays above the 80 % floor, a 30 % drop is flagged with its ratio.
T3=$T_DIR/t3
for d in 01 02 03; do place "$T_DIR/raw/A-1.json" "$T3" A "$d"; done
place "$T_DIR/raw/A-1.json" "$T3" A 04 0.9
expect_exit "a 10 % drop in a history without spread is above the floor" 0 "$R" history "$T3"
place "$T_DIR/raw/A-1.json" "$T3" A 05 0.7
expect_exit "a 30 % drop in a history without spread is an outlier" 20 "$R" history --json "$T3"
jq_ok "... at 70 % of the median" '.series[0].runs[4] | .outlier and (.ratio * 100 | round) == 70 and .mad_GBps == 0'
expect_exit "--floor 60 lets the 30 % drop pass" 0 "$R" history --floor 60 "$T3"

# Series are kept apart: three real runs of cluster B (their own repeats,
# as measured) never judge A's, and have not enough history of their own.
if real_runs B 3 "$T_DIR/raw"; then
  for i in 1 2 3; do place "$T_DIR/raw/B-$i.json" "$T3" B "0$((i + 5))"; done
  expect_exit "the runs of another cluster leave A's outlier the newest of its series" 20 "$R" history --json "$T3"
  jq_ok "two series, B's three runs with not enough history" \
    '[.series[] | [.cluster, ([.runs[].state] | unique)]] == [["A", ["not enough history", "ok", "outlier"]], ["B", ["not enough history"]]]'
else
  not_ok "fabric-coll runs of cluster B" "a 2-rank all_reduce did not run"
fi

# --per-host: runs on n1 and on n2 (hosts edited in), the last run on n2 at
# half speed, then one more on n1 at full speed. In the one mixed series the
# newest run is fine (exit 0); per host, n2's series ends in its slow run.
T4=$T_DIR/t4
place "$T_DIR/raw/A-1.json" "$T4" A 01 1 '.hosts = ["n1"]'
place "$T_DIR/raw/A-1.json" "$T4" A 02 1 '.hosts = ["n2"]'
place "$T_DIR/raw/A-1.json" "$T4" A 03 1 '.hosts = ["n2"]'
place "$T_DIR/raw/A-1.json" "$T4" A 04 1 '.hosts = ["n2"]'
place "$T_DIR/raw/A-1.json" "$T4" A 05 0.5 '.hosts = ["n2"]'
place "$T_DIR/raw/A-1.json" "$T4" A 06 1 '.hosts = ["n1"]'
expect_exit "without --per-host the newest run (n1) closes the one series" 0 "$R" history "$T4"
expect_exit "--per-host: n2's series ends in its slow run" 20 "$R" history --per-host --json "$T4"
jq_ok "... two series keyed by their hosts" '[.series[] | [.hosts, (.runs | length)]] == [["n1", 2], ["n2", 4]]'
jq_ok "... n1 has not enough history, n2's newest is the outlier" \
  '[.series[] | .runs[-1].state] == ["not enough history", "outlier"]'

expect_error "history without a directory" 2 'history needs a results directory' "fabric-report history" "$R" history
expect_error "--size no run measured" 2 '--size 3M: no run measured that size' "fabric-report history" "$R" history --size 3M "$T1"
expect_error "--size 0" 2 '--size 0: give a size the runs measured' "fabric-report history" "$R" history --size 0 "$T1"
