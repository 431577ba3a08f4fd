#!/usr/bin/env bash
# fabric-report end to end: exit code per verdict and at its boundaries,
# one-line errors with documented codes for bad input, every output form
# valid against its schema, imports that check/compare read, a real plot,
# and a baseline made from this machine's own fabric-coll run.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
FIX=$FB_ROOT/tests/fixtures/report
RES=$FIX/results
SCHEMA=$FB_ROOT/docs/schema
# Profiles come from results/reference only: no user directory leaks in.
export XDG_CONFIG_HOME=$T_DIR/config
unset FABRIC_PROFILE_PATH FABRIC_REFERENCE_DIR

if [ ! -x "$R" ]; then
  not_ok "fabric-report built" "$R missing (make MODULES=\"core report\")"
  exit 1
fi

# edit IN OUT JQ-FILTER: a variant of a fixture.
edit() { jq "$3" "$1" >"$2"; }
G16=17179869184

# ---- the fixtures themselves follow the results schema ----
for f in "$RES"/*.json; do
  check "fixture $(basename "$f") is valid against collective.schema.json" json_valid "$SCHEMA/collective.schema.json" "$f"
done

# ---- verdicts and their exit codes ----
expect_exit "check PASS exits 0" 0 "$R" check "$RES/gke-tcpxo-allreduce.json"
expect_grep "PASS names the auto-picked profile" '^PASS: .*profile gke-a3-mega-tcpxo r[0-9]+ \(auto: ' "$T_OUT"
expect_grep "PASS gives both averages" 'average over sizes >= 1 MiB .*nccl-tests average' "$T_OUT"
expect_exit "check DEGRADED exits 20" 20 "$R" check "$RES/ib-nogdr-allreduce.json"
expect_exit "check TCP-FALLBACK exits 21" 21 "$R" check "$RES/gke-socket-allreduce.json"
expect_grep "fallback says why and what to look at" 'whatever its numbers say.*Look at: .*tcpxo-daemon' "$T_OUT"
expect_exit "check INCOMPLETE exits 23" 23 "$R" check "$RES/gke-tcpxo-incomplete.json"
expect_exit "a sweep stopped early on NET/Socket is TCP-FALLBACK, not INCOMPLETE" 21 "$R" check "$RES/gke-socket-earlystop.json"
edit "$RES/gke-tcpxo-allreduce.json" "$T_DIR/wrong.json" '.rows[3].in_place.wrong = 2'
expect_exit "check FAIL (wrong results) exits 22" 22 "$R" check "$T_DIR/wrong.json"

at16g() { edit "$RES/$1" "$T_DIR/$2" "(.rows[] | select(.bytes == $G16) | .out_of_place.busbw_GBps) = $3 | (.rows[] | select(.bytes == $G16) | .in_place.busbw_GBps) = $3"; }
at16g gke-tcpxo-allreduce.json floor.json 300
expect_exit "exactly at the floor is PASS" 0 "$R" check "$T_DIR/floor.json"
at16g gke-tcpxo-allreduce.json under10.json 270
expect_exit "10 % under the floor is DEGRADED" 20 "$R" check "$T_DIR/under10.json"
at16g gke-tcpxo-allreduce.json far.json 120
expect_exit "far below the floor is FAIL" 22 "$R" check "$T_DIR/far.json"
at16g gke-socket-allreduce.json sockfast.json 345
expect_exit "NET/Socket with numbers that would pass is still TCP-FALLBACK" 21 "$R" check "$T_DIR/sockfast.json"
edit "$RES/gke-tcpxo-allreduce.json" "$T_DIR/unfinished.json" '.complete = false'
expect_exit "complete:false is INCOMPLETE" 23 "$R" check "$T_DIR/unfinished.json"

# ---- check --json against its schema, for every verdict ----
for f in gke-tcpxo-allreduce gke-socket-allreduce ib-nogdr-allreduce gke-tcpxo-incomplete; do
  run "$R" check --json "$RES/$f.json"
  cp "$T_OUT" "$T_DIR/check-$f.json"
  check "check --json ($f) is valid against report-check.schema.json" json_valid "$SCHEMA/report-check.schema.json" "$T_DIR/check-$f.json"
done
if [ "$(jq -r '.verdict + " " + (.exit_code|tostring)' "$T_DIR/check-gke-socket-allreduce.json")" = "TCP-FALLBACK 21" ]; then
  ok "check --json carries the verdict and its exit code"
else
  not_ok "check --json carries the verdict and its exit code" "$(head -c 300 "$T_DIR/check-gke-socket-allreduce.json")"
fi

# ---- bad input: documented code, one line naming the problem ----
bad() { # NAME CODE REGEX CMD...
  local name=$1 code=$2 re=$3; shift 3
  expect_exit "$name exits $code" "$code" "$@"
  expect_one_line "$name: one line on stderr" "$T_ERR"
  expect_grep "$name: message" "$re" "$T_ERR"
}
bad "missing file" 10 'nope.json' "$R" check "$T_DIR/nope.json"
printf 'not json at all\n' >"$T_DIR/text.json"
bad "not JSON" 10 'not valid JSON' "$R" check "$T_DIR/text.json"
: >"$T_DIR/empty.json"
bad "empty file" 10 'empty' "$R" check "$T_DIR/empty.json"
head -c 3000 "$RES/gke-tcpxo-allreduce.json" >"$T_DIR/cut.json"
bad "truncated file" 10 'truncated' "$R" check "$T_DIR/cut.json"
edit "$RES/gke-tcpxo-allreduce.json" "$T_DIR/v2.json" '.schema_version = 2'
bad "newer schema version" 10 'schema_version 2' "$R" check "$T_DIR/v2.json"
bad "nccl-tests text given to check" 10 'fabric-report import' "$R" check "$FIX/ncclt/nccl-tests-2.19-socket-16rank.txt"
bad "unknown profile lists the known ones" 2 "unknown profile 'nope'; known: .*gke-a3-mega-tcpxo" "$R" check --profile nope "$RES/gke-tcpxo-allreduce.json"
bad "no profile for a host run" 2 'no reference profile matches.*baseline' "$R" check "$RES/vm-mpi-allreduce-4.json"
bad "two files that are no --split intra-inter pair" 2 'not such a pair' "$R" check "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allreduce-2.json"
bad "three files to check" 2 'takes one RESULT.json, or the two of a --split intra-inter launch \(got 3\)' "$R" check "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allreduce-2.json" "$RES/vm-mpi-allreduce-2.json"
bad "unknown option" 2 "unknown option '--frobnicate' for fabric-report check" "$R" check --frobnicate "$RES/vm-mpi-allreduce-4.json"
bad "option without value" 2 'needs a value' "$R" check "$RES/vm-mpi-allreduce-4.json" --profile
bad "unknown command" 2 "unknown command 'verify'" "$R" verify
mkdir -p "$T_DIR/emptydir"
bad "empty directory" 10 'holds no collective results' "$R" compare "$T_DIR/emptydir"
bad "different collectives" 10 'different collectives' "$R" compare "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allgather-4.json"
bad "interleaved nccl-tests tables are named INVALID" 25 'INVALID: .* independent 1-rank runs' "$R" import "$FIX/ncclt/nccl-tests-interleaved.txt"
expect_exit "--help exits 0" 0 "$R" --help
for c in check compare import plot baseline transport profiles; do
  expect_exit "$c --help exits 0" 0 "$R" "$c" --help
  if grep -q '%%' "$T_OUT"; then not_ok "$c --help prints no printf escapes" "$(grep '%%' "$T_OUT")"; else ok "$c --help prints no printf escapes"; fi
done

# ---- NCCL logs given separately ----
LOGS=$FIX/nccl-logs
expect_exit "transport of an IB run" 0 "$R" transport "$LOGS/ib-gdr"
expect_grep "transport: net and GPUDirect" '^NET/IB with GPUDirect RDMA across 4 logged ranks' "$T_OUT"
expect_grep "transport: a line per rank" '^3 +gpu-b +IB +yes +mlx5_0:1/IB,mlx5_1:1/IB +P2P,CUMEM$' "$T_OUT"
expect_exit "transport --json" 0 "$R" transport --json "$LOGS"/socket/nccl.gpu-a.5200 "$LOGS"/socket/nccl.gpu-b.5202
check "transport --json is the schema's object" jq -e '.net == "Socket" and .source == "nccl-log" and (.per_rank | length) == 2' "$T_OUT"
bad "transport of mixed runs" 10 'different runs are mixed' "$R" transport "$LOGS/mixed-runs"
bad "transport of a truncated log" 10 'ends before NCCL chose' "$R" transport "$LOGS/truncated"
bad "transport of a file without INFO lines" 10 'NCCL_DEBUG=INFO' "$R" transport "$LOGS/no-info"
jq 'del(.transport)' "$RES/gke-tcpxo-allreduce.json" >"$T_DIR/nolog.json"
expect_exit "check --nccl-log: the logs say Socket, so TCP-FALLBACK" 21 "$R" check "$T_DIR/nolog.json" --nccl-log "$LOGS/socket"
expect_exit "check --nccl-log: the logs say FasTrak, so PASS" 0 "$R" check "$T_DIR/nolog.json" --nccl-log "$LOGS/tcpxo"
expect_exit "import --nccl-log" 0 "$R" import "$FIX/ncclt/all_reduce_perf-J.json" --nccl-log "$LOGS/ib-gdr" -o "$T_DIR/with-logs.json"
check "import --nccl-log adds the transport" jq -e '.transport.net == "IB" and .transport.gdr == true' "$T_DIR/with-logs.json"

# ---- compare ----
expect_exit "compare a directory" 0 "$R" compare "$RES" --collective all_reduce
expect_grep "compare lists every all_reduce result" '^# \[7\] ' "$T_OUT"
expect_exit "compare --latest" 0 "$R" compare "$RES" --collective all_reduce --latest
expect_grep "--latest keeps one run of gke-a3-demo" '^# \[6\] ' "$T_OUT"
if grep -q '^# \[7\] ' "$T_OUT"; then not_ok "--latest drops the older run" "$(grep '^# \[' "$T_OUT" | tr '\n' '|')"; else ok "--latest drops the older run"; fi
expect_exit "compare --markdown" 0 "$R" compare "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allreduce-2.json" --markdown
expect_grep "markdown table header" '^\| size \| \[1\] vm-4rank \| \[2\] vm-2rank \| ratio 2/1 \|$' "$T_OUT"
expect_exit "compare --csv" 0 "$R" compare "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allreduce-2.json" --csv
if [ "$(awk -F, 'NR > 1 { n++ } END { print n }' "$T_OUT")" = 15 ] && [ "$(awk -F, '{ print NF }' "$T_OUT" | sort -u)" = 5 ]; then
  ok "csv: one rectangular row per size"
else
  not_ok "csv: one rectangular row per size" "$(head -3 "$T_OUT")"
fi
run "$R" compare --json "$RES/gke-tcpxo-allreduce.json" "$RES/gke-socket-allreduce.json" --baseline 2
cp "$T_OUT" "$T_DIR/compare.json"
check "compare --json is valid against report-compare.schema.json" json_valid "$SCHEMA/report-compare.schema.json" "$T_DIR/compare.json"
if [ "$(jq '.baseline_index' "$T_DIR/compare.json")" = 1 ] && [ "$(jq -r '.sizes[-1].flag[0]' "$T_DIR/compare.json")" = "+" ]; then
  ok "compare --baseline 2: the TCPXO run is flagged faster"
else
  not_ok "compare --baseline 2: the TCPXO run is flagged faster" "$(jq -c '.sizes[-1]' "$T_DIR/compare.json")"
fi

# ---- import ----
mkdir -p "$T_DIR/imported"
for f in "$FIX"/ncclt/nccl-tests-2.19-socket-16rank.txt "$FIX"/ncclt/old-format-8rank-all_gather.txt \
         "$FIX"/ncclt/nccl-tests-two-collectives.txt "$FIX"/ncclt/all_reduce_perf-J.json \
         "$FIX"/ncclt/nccl-tests-killed.txt "$FIX"/ncclt/fabric-coll-mpi-allreduce-4.txt \
         "$FIX"/ncclt/nccl-tests-collapse.txt "$FIX"/ncclt/nccl-tests-init-failure.txt; do
  expect_exit "import $(basename "$f")" 0 "$R" import "$f" -o "$T_DIR/imported/"
done
for f in "$T_DIR"/imported/*.json; do
  check "imported $(basename "$f") is valid against collective.schema.json" json_valid "$SCHEMA/collective.schema.json" "$f"
done
expect_exit "two runs in one file become two results" 0 test -f "$T_DIR/imported/nccl-tests-two-collectives-all_gather.json"
expect_exit "an imported TCP fallback is judged TCP-FALLBACK" 21 "$R" check "$T_DIR/imported/nccl-tests-2.19-socket-16rank.json"
expect_exit "an imported killed run is INCOMPLETE" 23 "$R" check "$T_DIR/imported/nccl-tests-killed.json"
expect_exit "a run NCCL failed before its first row is FAIL" 22 "$R" check "$T_DIR/imported/nccl-tests-init-failure.json"
expect_grep "the FAIL names the NCCL error" "The run failed: node1: Test NCCL failure common.cu:892 'unhandled system error" "$T_OUT"
expect_exit "a GPU run whose busBW collapses at large sizes is DEGRADED without a profile" 20 "$R" check "$T_DIR/imported/nccl-tests-collapse.json"
expect_grep "the DEGRADED says where it collapsed" 'busBW collapses from 41.65 GB/s at 16M to 8.00 GB/s at 128M' "$T_OUT"
expect_exit "import to stdout" 0 "$R" import "$FIX/ncclt/all_reduce_perf-J.json"
check "import stdout is JSON" jq -e '.kind == "collective"' "$T_OUT"
bad "several results need a directory" 2 '-o DIR/' "$R" import "$FIX/ncclt/nccl-tests-two-collectives.txt"
bad "table whose rows fit two collectives" 10 '--collective' "$R" import "$FIX/ncclt/table-rows-fit-two.txt"
# The probe schema names fabric-rdma as the only tool; imports say perftest.
/usr/bin/python3 - "$SCHEMA/probe.schema.json" "$T_DIR/probe.schema.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["properties"]["tool"]["properties"]["name"] = {"enum": ["fabric-rdma", "perftest"]}
json.dump(s, open(sys.argv[2], "w"))
PY
for f in "$FIX"/perftest/ib_write_bw-report_gbits.txt "$FIX"/perftest/ib_write_bw-all-sizes-roce.txt "$FIX"/perftest/perftest_out.json; do
  expect_exit "import $(basename "$f")" 0 "$R" import "$f" -o "$T_DIR/imported/$(basename "$f").probe.json"
  check "imported $(basename "$f") is valid against probe.schema.json" json_valid "$T_DIR/probe.schema.json" "$T_DIR/imported/$(basename "$f").probe.json"
done
bad "perftest latency report" 10 'latency' "$R" import "$FIX/perftest/ib_write_lat.txt"
# A size perftest printed as zeros (its clock calibration failed) is said
# on the import's line, and the document is still valid.
sed 's/^\( *65536[[:space:]]*[0-9]*[[:space:]]*\).*$/\1 0.00 0.00 0.000000/' "$FIX/perftest/ib_write_bw-all-sizes-roce.txt" \
  >"$T_DIR/zeros.txt"
run "$R" import "$T_DIR/zeros.txt" -o "$T_DIR/imported/zeros.probe.json"
expect_grep "import of a table with a size of zeros says it was not measured" \
  '^imported .*zeros.txt -> .* \(probe, 4 measurements, 1 not measured \(see warnings\)\)$' "$T_OUT"
check "... and the document is valid against probe.schema.json" json_valid "$T_DIR/probe.schema.json" "$T_DIR/imported/zeros.probe.json"
bad "import to a path that cannot be written names -o" 7 'cannot create directory /proc/fb-none.*\(-o OUT.json\|DIR/\)' \
  "$R" import "$FIX/ncclt/table-only.txt" -o /proc/fb-none/x.json
bad "baseline to a path that cannot be written names -o" 7 'cannot create /proc/fb-prof.json.*\(-o FILE\)' \
  "$R" baseline "$RES/vm-mpi-allreduce-4.json" --name unwritable -o /proc/fb-prof.json

# ---- plot ----
png_size() { /usr/bin/python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); assert d[:8]==b"\x89PNG\r\n\x1a\n"; print("%dx%d" % struct.unpack(">II", d[16:24]))' "$1"; }
if command -v gnuplot >/dev/null; then
  expect_exit "plot PNG" 0 "$R" plot "$RES/gke-tcpxo-allreduce.json" "$RES/gke-socket-allreduce.json" -o "$T_DIR/p.png" --script "$T_DIR/p.gp"
  if [ "$(png_size "$T_DIR/p.png")" = 1200x700 ]; then ok "PNG is 1200x700"; else not_ok "PNG is 1200x700" "$(png_size "$T_DIR/p.png")"; fi
  expect_grep "plot draws the profile's reference lines" 'gke-a3-mega-tcpxo: floor 300 GB/s' "$T_DIR/p.gp"
  expect_exit "the kept script redraws the plot alone, without a message" 0 bash -c "cd '$T_DIR' && rm p.png && gnuplot p.gp 2>err && test ! -s err && test -s p.png"
  expect_exit "plot SVG at a chosen size" 0 "$R" plot "$RES" --collective all_reduce -o "$T_DIR/p.svg" --size 900x500
  expect_grep "SVG has that size" 'viewBox="0 0 900 500"' "$T_DIR/p.svg"
  bad "plot of mixed collectives" 10 'different collectives' "$R" plot "$RES" -o "$T_DIR/x.png"
else
  skip "plot PNG" "gnuplot not installed (gnuplot-nox)"
fi
FABRIC_GNUPLOT=/nonexistent/gnuplot bad "plot without gnuplot" 5 'gnuplot' "$R" plot "$RES/vm-mpi-allreduce-4.json" -o "$T_DIR/none.png"
expect_exit "no picture left behind" 1 test -e "$T_DIR/none.png"
bad "plot to a .jpg" 2 '.png or .svg' "$R" plot "$RES/vm-mpi-allreduce-4.json" -o "$T_DIR/p.jpg"
bad "plot to a path that cannot be written" 7 'not writable.*-o FILE' "$R" plot "$RES/vm-mpi-allreduce-4.json" -o /proc/fb-plot.png
bad "plot into a directory that cannot be made" 7 'cannot create directory.*-o FILE' "$R" plot "$RES/vm-mpi-allreduce-4.json" -o /proc/fb-none/p.png
edit "$RES/vm-mpi-allreduce-4.json" "$T_DIR/no-bw.json" '(.rows[] | .out_of_place.busbw_GBps, .in_place.busbw_GBps) = null'
bad "plot of a result without a busBW figure" 10 'no-bw.json has no rows with a busBW figure: no rows to draw' \
  "$R" plot "$RES/vm-mpi-allreduce-4.json" "$T_DIR/no-bw.json" -o "$T_DIR/nobw.png" --script "$T_DIR/nobw.gp"
expect_exit "... leaves no picture, script or data" 1 bash -c "ls '$T_DIR'/nobw.* 2>/dev/null | grep ."
bad "FABRIC_PLOT_TIMEOUT must be whole seconds" 2 'FABRIC_PLOT_TIMEOUT=soon' env FABRIC_PLOT_TIMEOUT=soon "$R" plot "$RES/vm-mpi-allreduce-4.json" -o "$T_DIR/t.png"
# A gnuplot that hangs with a child of its own: the timeout ends both.
gone() { [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
FABRIC_PLOT_TIMEOUT=1 FABRIC_GNUPLOT=$FB_ROOT/tests/report/fake-gnuplot-hangs.sh FAKE_GNUPLOT_CHILD=$T_DIR/child.pid \
  bad "a hanging gnuplot times out" 8 'gnuplot did not finish within 1 s' timeout 30 "$R" plot "$RES/vm-mpi-allreduce-4.json" -o "$T_DIR/hang.png"
child=$(cat "$T_DIR/child.pid" 2>/dev/null)
for _ in 1 2 3 4 5 6 7 8 9 10; do { [ -z "$child" ] || gone "$child"; } && break; sleep 0.2; done
if [ -n "$child" ] && gone "$child"; then ok "the timeout kills gnuplot's children too"; else not_ok "the timeout kills gnuplot's children too" "child '${child:-none}' still runs"; kill "$child" 2>/dev/null; fi
expect_exit "... and leaves no picture" 1 bash -c "ls '$T_DIR'/hang.png* 2>/dev/null | grep ."

# ---- baseline and profiles ----
expect_exit "baseline from a known-good run" 0 "$R" baseline "$RES/vm-mpi-allreduce-4.json" "$RES/vm-mpi-allgather-4.json" --name vm4 --tolerance 50
check "baseline written to the user directory" test -f "$XDG_CONFIG_HOME/fabric-bench/profiles/vm4.json"
check "baseline is valid against profile.schema.json" json_valid "$SCHEMA/profile.schema.json" "$XDG_CONFIG_HOME/fabric-bench/profiles/vm4.json"
expect_exit "its run passes against it, picked automatically" 0 "$R" check "$RES/vm-mpi-allreduce-4.json"
expect_grep "picked the baseline" 'profile vm4 r1 \(auto' "$T_OUT"
bad "same name again" 2 'already exists' "$R" baseline "$RES/vm-mpi-allreduce-4.json" --name vm4
expect_exit "--force replaces it" 0 "$R" baseline "$RES/vm-mpi-allreduce-4.json" --name vm4 --force
bad "a fallback run is no baseline" 10 'TCP fallback' "$R" baseline "$RES/gke-socket-allreduce.json" --name broken
bad "an unfinished run is no baseline" 10 'did not finish' "$R" baseline "$RES/gke-tcpxo-incomplete.json" --name half
bad "a profile name is a file name" 2 'letters, digits' "$R" baseline "$RES/vm-mpi-allreduce-4.json" --name ../evil
# One rank moves nothing between ranks: busBW 0, a profile every run would pass.
edit "$RES/vm-mpi-allreduce-2.json" "$T_DIR/one-rank.json" \
  '.topology.ranks = 1 | .topology.ranks_per_node = 1 | (.rows[] | .out_of_place.busbw_GBps, .in_place.busbw_GBps) = 0'
bad "a 1-rank run (busBW 0) is no baseline" 10 'busBW 0 GB/s at its largest size \(1 rank\)' \
  "$R" baseline "$T_DIR/one-rank.json" --name zero -o "$T_DIR/zero-profile.json"
expect_exit "... and no profile is written" 1 test -e "$T_DIR/zero-profile.json"
mkdir -p "$T_DIR/badprof"
edit "$XDG_CONFIG_HOME/fabric-bench/profiles/vm4.json" "$T_DIR/badprof/floor-high.json" \
  '.name = "floor-high" | .collectives.all_reduce.floor_GBps = .collectives.all_reduce.busbw_GBps * 2'
bad "a profile whose floor is above its typical figure is refused, naming it" 10 'floor-high.json: .*floor_GBps .* is above busbw_GBps' \
  "$R" check "$RES/vm-mpi-allreduce-4.json" --profiles "$T_DIR/badprof"
rm "$T_DIR/badprof/floor-high.json"
edit "$XDG_CONFIG_HOME/fabric-bench/profiles/vm4.json" "$T_DIR/badprof/zero.json" \
  '.name = "zero" | .collectives.all_reduce.busbw_GBps = 0 | .collectives.all_reduce.floor_GBps = 0'
bad "a profile with a 0 GB/s figure is refused, naming it" 10 'zero.json: .*busbw_GBps must be a number > 0' \
  "$R" check "$RES/vm-mpi-allreduce-4.json" --profiles "$T_DIR/badprof"
edit "$T_DIR/badprof/zero.json" "$T_DIR/badprof/zero.json.tmp" '.collectives.all_reduce.busbw_GBps = -3' && mv "$T_DIR/badprof/zero.json.tmp" "$T_DIR/badprof/zero.json"
bad "a profile with a negative figure is refused" 10 'zero.json: .*must be a number > 0' "$R" profiles --profiles "$T_DIR/badprof"
rm -r "$T_DIR/badprof"
expect_exit "profiles lists shipped and user profiles" 0 "$R" profiles
expect_grep "profiles shows the user one" '^  vm4 ' "$T_OUT"
expect_grep "profiles shows a shipped one" '^  gke-a3-mega-tcpxo ' "$T_OUT"
for f in "$FB_ROOT"/results/reference/*.json; do
  check "shipped $(basename "$f") is valid against profile.schema.json" json_valid "$SCHEMA/profile.schema.json" "$f"
done

# ---- this machine's own run: fabric-coll -> import of its table, baseline, check ----
if [ -x "$FB_BIN/fabric-coll" ]; then
  (cd "$T_DIR" && fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 4M -f 2 --backend mpi --cluster here -J run1.json) >"$T_DIR/run1.txt" 2>&1
  (cd "$T_DIR" && fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 4M -f 2 --backend mpi --cluster here -J run2.json) >/dev/null 2>&1
  if [ -s "$T_DIR/run1.json" ] && [ -s "$T_DIR/run2.json" ]; then
    # Runs of this sweep on this shared 2-core box differ at 4M by up to 6x
    # back to back and 7x within a minute (0.19 to 1.39 GB/s): the floor is a
    # hundredth of run1's, which only a broken path (TCP, stopped ranks) is under.
    expect_exit "baseline from a real run" 0 "$R" baseline "$T_DIR/run1.json" --name here --tolerance 99
    expect_exit "the next run on this machine passes against it" 0 "$R" check "$T_DIR/run2.json" --profile here
    expect_exit "fabric-coll's table imports" 0 "$R" import "$T_DIR/run1.txt" --cluster here -o "$T_DIR/run1-imported.json"
    # The table prints two decimals: the imported numbers match the JSON to that.
    if jq -s -e '[.[0].rows, .[1].rows] | transpose | all(.[0].bytes == .[1].bytes and ((.[0].out_of_place.busbw_GBps - .[1].out_of_place.busbw_GBps) | fabs) <= 0.006)' \
         "$T_DIR/run1.json" "$T_DIR/run1-imported.json" >/dev/null; then
      ok "imported table agrees with the run's own JSON"
    else
      not_ok "imported table agrees with the run's own JSON" "$(jq -c '.rows[0].out_of_place' "$T_DIR/run1.json" "$T_DIR/run1-imported.json")"
    fi
  else
    not_ok "fabric-coll runs for the baseline test" "$(tail -3 "$T_DIR/run1.txt")"
  fi
else
  skip "baseline from a real fabric-coll run" "fabric-coll not built in $FB_BIN"
fi
