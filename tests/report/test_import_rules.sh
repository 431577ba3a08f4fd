#!/usr/bin/env bash
# nccl-tests text import, one small case of our own per rule: what an
# excerpt, a hang, a one-rank tail and an elided sweep prove, and what the
# verdict on each is without a profile that names the cluster.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
FIX=$FB_ROOT/tests/fixtures/report/ncclt
SCHEMA=$FB_ROOT/docs/schema
export XDG_CONFIG_HOME=$T_DIR/config
unset FABRIC_PROFILE_PATH FABRIC_REFERENCE_DIR
command -v jq >/dev/null || { skip "import rules" "jq is not installed"; exit 0; }

imp() { "$R" import "$FIX/$1.txt" -o "$T_DIR/$1.json" >"$T_OUT" 2>"$T_ERR"; }
fact() { jq -r "$2" "$T_DIR/$1.json"; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi; }

# One device line kept of 32 ranks, the table ending at "Out of bounds":
# 32 ranks, nodes not shown (one host of many listed), the run complete.
imp excerpt-last-rank-oob
same "an excerpt's last device line gives the ranks, not the nodes" \
  "$(fact excerpt-last-rank-oob '[.topology.ranks, .topology.nodes, .topology.ranks_per_node, .complete] | map(tostring) | join(" ")')" \
  "32 null null true"
check "an excerpt with nodes unknown is valid against collective.schema.json" \
  json_valid "$SCHEMA/collective.schema.json" "$T_DIR/excerpt-last-rank-oob.json"

# Rows elided ("...") up to the header's maxBytes, no footer: finished.
imp elided-reaches-maxbytes
same "a sweep that reaches maxBytes is finished without its footer" \
  "$(fact elided-reaches-maxbytes '.complete')" true
check "and says why" jq -e '.warnings | map(select(test("reach the header.s maxBytes"))) | length == 1' \
  "$T_DIR/elided-reaches-maxbytes.json"
# The same cut one row short of maxBytes did not finish.
grep -v '^  1073741824 ' "$FIX/elided-reaches-maxbytes.txt" >"$T_DIR/cut.txt"
"$R" import "$T_DIR/cut.txt" -o "$T_DIR/cut.json" >/dev/null 2>&1
same "one row short of maxBytes, it did not finish" "$(jq -r .complete "$T_DIR/cut.json")" false
expect_exit "and its verdict is INCOMPLETE" 23 "$R" check "$T_DIR/cut.json"

# Header and ranks, then nothing, and no collective named anywhere: kept,
# collective null, judged INCOMPLETE; with an NCCL failure line, FAIL.
imp hang-unnamed
same "a hang before the first row imports with its collective unknown" \
  "$(fact hang-unnamed '[.collective, (.rows | length), .topology.nodes] | map(tostring) | join(" ")')" "null 0 2"
check "a rowless unnamed run is valid against collective.schema.json" \
  json_valid "$SCHEMA/collective.schema.json" "$T_DIR/hang-unnamed.json"
expect_exit "a hang is INCOMPLETE" 23 "$R" check "$T_DIR/hang-unnamed.json"
expect_grep "the verdict says the collective was never named" '^INCOMPLETE: a collective it never named on node-0, 4 ranks on 2 nodes' "$T_OUT"
{ cat "$FIX/hang-unnamed.txt"; echo "node-1: Test NCCL failure common.cu:1012 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '"; } >"$T_DIR/failed.txt"
"$R" import "$T_DIR/failed.txt" -o "$T_DIR/failed.json" >/dev/null 2>&1
expect_exit "an unnamed run that failed before its first row is FAIL" 22 "$R" check "$T_DIR/failed.json"
expect_grep "the FAIL quotes the failure" "The run failed: node-1: Test NCCL failure common.cu:1012" "$T_OUT"

# The last lines of a one-rank log: named by "Collective test concluded",
# one rank because busBW is 0 where algBW is not, and not comparable.
imp one-rank-tail
same "a log tail is named by its concluded line and has one rank" \
  "$(fact one-rank-tail '[.collective, .topology.ranks] | map(tostring) | join(" ")')" "all_reduce 1"
expect_exit "one rank is INCOMPLETE (not comparable)" 23 "$R" check "$T_DIR/one-rank-tail.json"
expect_grep "and says why" 'Not comparable: one rank moves nothing between GPUs' "$T_OUT"

# The verdicts without an exact profile, on the excerpt (H100, 32 ranks):
# its family (H100 multi-node profiles), with what was assumed.
run "$R" check "$T_DIR/excerpt-last-rank-oob.json" --json
same "an H100 excerpt is judged against its family" \
  "$(jq -r '[.verdict, .profile.picked, (.profile.why | test("assumed 8 ranks per node, network OFI"))] | map(tostring) | join(" ")' "$T_OUT")" \
  "PASS family true"
check "the family verdict is valid against report-check.schema.json" \
  json_valid "$SCHEMA/report-check.schema.json" "$T_OUT"
# A run whose nodes are not shown is on neither too few nor too many for
# a profile named for it: the note says the count is not shown, and a
# misfit it does show is still named.
run "$R" check "$T_DIR/excerpt-last-rank-oob.json" --profile h100-8gpu-nvlink
expect_grep "a named profile's node range, nodes not shown: said so" 'may not describe this run \(its node count is not shown\)' "$T_OUT"
run "$R" check "$T_DIR/excerpt-last-rank-oob.json" --profile aws-p5-efa
same "  and no node count claimed against a multi-node profile" "$(grep -Ec 'fewer than|more than [0-9]+ nodes|ranks per node\)' "$T_OUT")" 0
expect_grep "  while the network it does not match is named" 'may not describe this run \(network is not OFI\)' "$T_OUT"
# No profile at all for two ranks without device lines: "nodes not shown".
printf '%s\n' "     1048576        262144   float    100.0   10.49   10.49  0e+00    101.0   10.38   10.38  0e+00" \
  "     2097152        524288   float    150.0   13.98   13.98  0e+00    151.0   13.89   13.89  0e+00" >"$T_DIR/rows-only.txt"
"$R" import "$T_DIR/rows-only.txt" -o "$T_DIR/rows-only.json" --format nccl-tests-text --collective all_reduce >/dev/null 2>&1
expect_exit "two ranks without device lines match no profile" 2 "$R" check "$T_DIR/rows-only.json"
expect_grep "  and are not said to be on 0 nodes" '\(device unknown, nodes not shown, 2 ranks' "$T_ERR"

# The same rows on GPUs no profile names: physics alone, fabric in use.
sed 's/NVIDIA H100 80GB HBM3/NVIDIA GB300/' "$FIX/excerpt-last-rank-oob.txt" >"$T_DIR/gb300.txt"
"$R" import "$T_DIR/gb300.txt" -o "$T_DIR/gb300.json" >/dev/null 2>&1
expect_exit "an unknown GPU far above the TCP band across nodes is PASS" 0 "$R" check "$T_DIR/gb300.json"
expect_grep "as the fabric in use, nodes assumed from the ranks" 'Fabric in use: busBW peaks at .* across nodes \(assumed: more than 8 ranks\)' "$T_OUT"
# And the same at a hundredth of the bandwidth: the TCP band.
awk '/^ +[0-9]/ { $6 = sprintf("%.2f", $6 * 100); $7 = sprintf("%.2f", $7 / 100); $8 = sprintf("%.2f", $8 / 100);
                  $10 = sprintf("%.2f", $10 * 100); $11 = sprintf("%.2f", $11 / 100); $12 = sprintf("%.2f", $12 / 100) } { print }' \
  "$T_DIR/gb300.txt" >"$T_DIR/gb300-slow.txt"
"$R" import "$T_DIR/gb300-slow.txt" -o "$T_DIR/gb300-slow.json" >/dev/null 2>&1
expect_exit "the same GPUs inside the TCP band across nodes are TCP-FALLBACK" 21 "$R" check "$T_DIR/gb300-slow.json"
expect_grep "with the band named" 'inside the TCP-fallback band \(<= 12 GB/s, 3x profile tcp-fallback\)' "$T_OUT"

# nccl-tests -J JSON, strict about every number: a damaged file is refused
# (exit 10) naming the member, never half-read into a verdict.
J=$FB_ROOT/tests/fixtures/report/ncclt/all_reduce_perf-J.json
expect_exit "the intact -J file imports" 0 "$R" import "$J" -o "$T_DIR/j-ok.json"
bad_json() {
  local name=$1 pattern=$2
  expect_exit "-J with $name is refused" 10 "$R" import "$T_DIR/damaged.json" -o "$T_DIR/damaged-out.json"
  expect_grep "  naming it ($name)" "$pattern" "$T_ERR"
  check "  and writing nothing ($name)" test ! -e "$T_DIR/damaged-out.json"
}
jq '.results[2].out_of_place.nwrong = "abc"' "$J" >"$T_DIR/damaged.json"
bad_json "nwrong a word" 'results\[2\]\.out_of_place\.nwrong is "abc", not a count or null'
jq '.results[3].in_place.nwrong = 1.5' "$J" >"$T_DIR/damaged.json"
bad_json "nwrong a fraction" 'results\[3\]\.in_place\.nwrong is 1\.5'
jq '.results[1].out_of_place.alg_bw = -2' "$J" >"$T_DIR/damaged.json"
bad_json "a negative bandwidth" 'results\[1\]\.out_of_place\.alg_bw is -2, not a finite number >= 0'
jq '.results[0].type = "float33"' "$J" >"$T_DIR/damaged.json"
bad_json "an unknown type" 'results\[0\]\.type float33 is not an nccl-tests data type'
jq '.results[0].redop = "xor"' "$J" >"$T_DIR/damaged.json"
bad_json "an unknown operation" 'results\[0\]\.redop "xor" is not an nccl-tests operation'
jq '.results[4].size = 1048576.5' "$J" >"$T_DIR/damaged.json"
bad_json "a fractional size" 'results\[4\] has no size that is a whole number of bytes'
jq '.results[0].out_of_place.bus_bw = 123456' "$J" | sed 's/123456/Infinity/' >"$T_DIR/damaged.json"
bad_json "Infinity" 'line [0-9]+: Infinity is not a JSON number'
jq '.' "$J" | sed '0,/"size": /s//"size": 1, "size": /' >"$T_DIR/damaged.json"
bad_json "a duplicate key" 'line [0-9]+: duplicate key "size"'
{ cat "$J"; echo '{"x": 1}'; } >"$T_DIR/damaged.json"
bad_json "trailing garbage" 'not valid JSON'

# nccl-tests text, as strict: each damaged row refused with its line.
TXT=$FIX/nccl-tests-2.19-socket-16rank.txt
row=$(grep -n '^ *4096 ' "$TXT" | cut -d: -f1)
bad_text() {
  local name=$1 edit=$2 pattern=$3
  sed "$edit" "$TXT" >"$T_DIR/damaged.txt"
  expect_exit "a text row with $name is refused" 10 "$R" import "$T_DIR/damaged.txt" -o "$T_DIR/damaged-out.json"
  expect_grep "  with its line ($name)" "$pattern" "$T_ERR"
}
bad_text "its last column lost" "${row}s/ *[0-9]*\$//" "line $row: 12 columns where the table has 13"
bad_text "a column added" "${row}s/\$/  7/" "line $row: 14 columns where the table has 13"
bad_text "a size out of order" "${row}s/^        4096          1024/       65536         16384/" "line $((row + 1)): size 8192 after 65536: sizes out of order"
for v in nan inf -3.2; do
  bad_text "algBW $v" "${row}s/^\\( *[0-9]* *[0-9]* *float *sum *-1 *[0-9.]*\\) *[0-9.]*/\\1   $v/" "line $row: a value that is not a number >= 0"
done

# The collectives beyond the first seven, as nccl-tests 2.19 prints them
# (written here): gather_perf on 4 ranks with root 2. The count column is
# the per-rank block (GatherGetCollByteCount), busBW = algBW x 3/4.
gather_table() {
  printf '%s\n' "# Collective test starting: gather_perf" \
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0" \
    "#" "# Using devices"
  for r in 0 1 2 3; do
    [ "${1:-}" = nodevs ] || printf '#  Rank %2d Group  0 Pid %6d on   gpu-node-0 device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n' "$r" $((4242 + r)) "$r" $((24 + 16 * r))
  done
  printf '%s\n' "#" \
    "#                                                              out-of-place                       in-place          " \
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong" \
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       " \
    "     1048576         65536     float    none       2    20.00   52.43   39.32       0    19.00   55.19   41.39       0" \
    "     2097152        131072     float    none       2    30.00   69.91   52.43       0    29.00   72.32   54.24       0" \
    "     4194304        262144     float    none       2    50.00   83.89   62.91       0    49.00   85.60   64.20       0" \
    "# Out of bounds values : 0 OK" "# Avg bus bandwidth    : 52.415 " "#" "# Collective test concluded: gather_perf"
}
gather_table >"$T_DIR/g.txt"
"$R" import "$T_DIR/g.txt" -o "$T_DIR/g.json" >"$T_OUT" 2>"$T_ERR"
same "gather_perf text: collective, ranks, root, rows, busBW" \
  "$(jq -r '[.collective, .topology.ranks, .root, (.rows | length), .rows[2].out_of_place.busbw_GBps, .complete] | map(tostring) | join(" ")' "$T_DIR/g.json" 2>&1)" \
  "gather 4 2 3 62.91 true"
check "the gather import is valid against collective.schema.json" json_valid "$SCHEMA/collective.schema.json" "$T_DIR/g.json"
gather_table nodevs >"$T_DIR/g-nodevs.txt"
"$R" import "$T_DIR/g-nodevs.txt" -o "$T_DIR/g-nodevs.json" >/dev/null 2>&1
same "without device lines, gather's busBW/algBW 0.75 gives 4 ranks" "$(jq -r .topology.ranks "$T_DIR/g-nodevs.json" 2>&1)" 4
sed 's/^\( *2097152 .*\)  52\.43 /\1  12.43 /' "$T_DIR/g.txt" >"$T_DIR/g-bad.txt"
expect_exit "a gather row whose busBW is not algBW x 3/4 is refused" 10 "$R" import "$T_DIR/g-bad.txt" -o "$T_DIR/g-bad.json"
expect_grep "  naming gather's bus factor on 4 ranks" 'busBW 12.43 is not algBW 69.91 x 0.7500 \(the gather bus factor on 4 ranks\)' "$T_ERR"
sed 's/gather_perf/scatter_perf/' "$T_DIR/g.txt" >"$T_DIR/s.txt"
"$R" import "$T_DIR/s.txt" -o "$T_DIR/s.json" >/dev/null 2>&1
same "the same table as scatter_perf is scatter" "$(jq -r .collective "$T_DIR/s.json" 2>&1)" scatter
# alltoallv on 4 ranks, 1M of float: the per-peer block 65536, the size
# one rank's distance-weighted shares, 16-byte rounded (alltoallv.cu:
# 174752 + 349520 + 524288 = 1048560); in place not checked (N/A).
gather_table nodevs | sed -e 's/gather_perf/alltoallv_perf/' -e '/^ *2097152 /d; /^ *4194304 /d' \
  -e 's/^     1048576         65536     float    none       2 /     1048560         65536     float    none      -1 /' \
  -e '/^     1048560 /s/       0$/     N\/A/' -e 's/maxBytes 4194304/maxBytes 1048576/' >"$T_DIR/v.txt"
"$R" import "$T_DIR/v.txt" -o "$T_DIR/v.json" >"$T_OUT" 2>"$T_ERR"
same "alltoallv_perf text: its uneven size fits its count on 4 ranks" \
  "$(jq -r '[.collective, .topology.ranks, (.rows | length), .rows[0].bytes, .rows[0].count, .rows[0].in_place.wrong] | map(tostring) | join(" ")' "$T_DIR/v.json" 2>&1)" \
  "alltoallv 4 1 1048560 65536 null"
# hypercube: busBW = algBW, so the ranks come from size / count.
sed -e 's/gather_perf/hypercube_perf/' -e 's/    none       2 /    none      -1 /' \
  -e 's/  52\.43   39\.32 /  39.32   39.32 /' -e 's/  55\.19   41\.39 /  41.39   41.39 /' \
  -e 's/  69\.91   52\.43 /  52.43   52.43 /' -e 's/  72\.32   54\.24 /  54.24   54.24 /' \
  -e 's/  83\.89   62\.91 /  62.91   62.91 /' -e 's/  85\.60   64\.20 /  64.20   64.20 /' \
  <(gather_table nodevs) >"$T_DIR/h.txt"
"$R" import "$T_DIR/h.txt" -o "$T_DIR/h.json" >"$T_OUT" 2>"$T_ERR"
same "hypercube_perf text without device lines: 4 ranks from size per count" \
  "$(jq -r '[.collective, .topology.ranks, (.rows | length)] | map(tostring) | join(" ")' "$T_DIR/h.json" 2>&1)" "hypercube 4 3"

# The first release's layout (nccl-tests 1.0: "bytes N" columns, times in
# ms, header and footer without "#", all_gather's algBW carrying (n-1)/n
# and busBW = algBW), written here from that rule: it imports restated in
# today's terms (busBW as printed, algBW = size / time, times in us) and
# says so. The same table with today's algBW is a rule no release printed
# in that layout: refused with its line.
v1_table() {
  awk -v today="${1:-0}" 'BEGIN {
    n = 4; print "nThread 1 nGpus 4 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1"
    for (r = 0; r < n; r++) printf "#   Rank %2d on %10s device %2d [0x%02x] Tesla V100-SXM2-16GB\n", r, "dgx1", r, r
    print "#      bytes             N    type     time  algbw  busbw      res     time  algbw  busbw      res"
    for (s = 1048576; s <= 2097152; s *= 2) {
      t = 10 + s / 40e3; a = s * (today ? 1 : (n - 1) / n) / (t * 1e3); b = today ? a * (n - 1) / n : a
      printf "%12d  %12d  %6s", s, s / 4 / n, "float"
      for (p = 0; p < 2; p++) printf "  %7.3f  %5.2f  %5.2f  %7.0e", t / 1000, a, b, 0
      printf "\n"
    }
    print " Out of bounds values : 0 OK"; print " Avg bus bandwidth    : 27.5" }'
}
v1_table >"$T_DIR/all_gather_v1.txt"
"$R" import "$T_DIR/all_gather_v1.txt" -o "$T_DIR/v1.json" >"$T_OUT" 2>"$T_ERR"
same "a first-release all_gather: time in us, busBW as printed, algBW = size / time" \
  "$(jq -r '.rows[0].out_of_place | [.time_us, .busbw_GBps, (.algbw_GBps * 100 | round)] | map(tostring) | join(" ")' "$T_DIR/v1.json" 2>&1)" \
  "36 21.72 2896"
check "  and says which rule and unit it read" jq -e '[.warnings[] | select(test("rule before 2020-06|printed in ms"))] | length == 2' "$T_DIR/v1.json"
v1_table today >"$T_DIR/all_gather_v1_today.txt"
expect_exit "today's all_gather rule in the first release's layout is refused" 10 "$R" import "$T_DIR/all_gather_v1_today.txt" -o "$T_DIR/v1-today.json"
expect_grep "  with its line" 'line 7: algBW 28.95 out of place does not follow from 1048576 bytes in 36 us' "$T_ERR"

# The older layouts' per-row column is a deviation, not a count: their
# footer's "Out of bounds values : N FAILED" is nccl-tests' only count of
# wrong values, and a run that has any is a FAIL whatever its bandwidth.
sed 's/Out of bounds values : 0 OK/Out of bounds values : 3 FAILED/' "$T_DIR/all_gather_v1.txt" >"$T_DIR/all_gather_v1_oob.txt"
"$R" import "$T_DIR/all_gather_v1_oob.txt" -o "$T_DIR/v1-oob.json" >"$T_OUT" 2>"$T_ERR"
expect_exit "out-of-bounds values counted by nccl-tests: check says FAIL" 22 "$R" check "$T_DIR/v1-oob.json"
expect_grep "  naming the count" 'nccl-tests counted 3 out-of-bounds values' "$T_OUT"
expect_exit "  and none counted: no FAIL from it" 2 "$R" check "$T_DIR/v1.json"
