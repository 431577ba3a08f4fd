#!/usr/bin/env bash
# fabric-report html on a results tree made of real runs (fabric-coll for
# clusters A and B, a fabric-rdma probe, a fabric-doctor node check): the
# page parses, has its sections, one SVG per plot with a point per size or
# run, the verdicts check gives, the history's outlier, and a hostile cluster
# name as text; then headless Chromium opens it from its file, offline: no
# console error, no request but the file, SVGs with a size. The screenshot is
# kept as build/test-artifacts/report-html.png.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/report/results-tree.sh
. "$(dirname "$0")/results-tree.sh"

R=$FB_BIN/fabric-report
command -v jq >/dev/null || { skip "html report" "jq is not installed"; exit 0; }
mkdir -p "$T_DIR/raw"
if ! real_runs A 1 "$T_DIR/raw" || ! real_runs B 3 "$T_DIR/raw"; then
  not_ok "fabric-coll runs for the report tree" "a 2-rank all_reduce did not run"
  exit 0
fi
# A: copies of its first real run at 100, 96 and 104 % (a steady history:
# repeats on this shared box spread by up to 30 %), then one at 30 % (the
# outlier). B: its three real runs as measured (too few to judge). C: a copy
# of B's first run with wrong elements (FAIL). hostile: one run whose
# cluster name is markup.
HOSTILE='<script>alert(1)</script>'
TREE=$T_DIR/results
days=(01 02 03) factors=(1.00 0.96 1.04)
for i in 0 1 2; do
  place "$T_DIR/raw/A-1.json" "$TREE" A "${days[i]}" "${factors[i]}"
  place "$T_DIR/raw/B-$((i + 1)).json" "$TREE" B "${days[i]}"
done
place "$T_DIR/raw/A-1.json" "$TREE" A 04 0.3
place "$T_DIR/raw/B-1.json" "$TREE" C 04 1 '.rows[0].out_of_place.wrong = 3'
place "$T_DIR/raw/B-1.json" "$TREE" hostile 05 1 ".cluster = \"$HOSTILE\""
mkdir -p "$TREE/checks"
timeout 60 "$FB_BIN/fabric-doctor" node -J "$TREE/checks/doctor.json" >/dev/null 2>&1
fb_mpirun 3 "$FB_BIN/fabric-rdma" --transport tcp --pattern ring -D 0.2 -s 64K -J "$TREE/checks/probe.json" >/dev/null 2>&1
if ! [ -s "$TREE/checks/doctor.json" ] || ! [ -s "$TREE/checks/probe.json" ]; then
  not_ok "fabric-doctor and fabric-rdma documents for the tree" "one did not run"
fi

# The verdicts are judged against a profile of the test's own, so that no
# profile of the machine's user (~/.config/fabric-bench/profiles) decides
# them: two ranks of one node at 64 MiB, 64x past these 1 MiB sweeps, which
# makes each INCOMPLETE (not comparable) however fast this machine is.
mkdir -p "$T_DIR/profiles"
cat >"$T_DIR/profiles/host-2rank.json" <<'EOF'
{
  "schema": "fabric-bench.profile",
  "schema_version": 1,
  "name": "host-2rank",
  "revision": 1,
  "role": "target",
  "description": "two MPI ranks on the host memory of one node, judged at 64 MiB",
  "match": {"nodes_max": 1, "ranks": 2},
  "collectives": {"all_reduce": {"at_bytes": 67108864, "busbw_GBps": 1, "floor_GBps": 0.5}},
  "sources": [{"what": "the html test's own profile", "ref": "tests/report/test_html.sh"}]
}
EOF
PAGE=$T_DIR/report.html
mkdir -p "$T_DIR/report.d"
echo "an older report" >"$PAGE"
expect_exit "html writes the page" 0 "$R" html "$TREE" -P "$T_DIR/profiles" -o "$PAGE"
expect_grep "... and says where" "^wrote $PAGE\$" "$T_OUT"
expect_grep "the page replaced the older file" '^<!DOCTYPE html>' "$PAGE"
if ls "$T_DIR"/.report.html* "$T_DIR"/report.html.* >/dev/null 2>&1; then
  not_ok "no temporary file left beside the page" "$(ls -a "$T_DIR")"
else
  ok "no temporary file left beside the page"
fi
/usr/bin/python3 "$FB_ROOT/tests/report/check-html.py" "$PAGE" "$HOSTILE" 5

expect_exit "html --per-host writes the page" 0 "$R" html --per-host "$TREE" -o "$T_DIR/per-host.html"
expect_grep "... with a history series per set of hosts" '<h3>A all_reduce \(mpi, 2 ranks, on [^<]+\)</h3>' "$T_DIR/per-host.html"

expect_error "html without -o" 2 'html needs -o REPORT.html' "fabric-report html" "$R" html "$TREE"
expect_error "html onto a directory" 7 'report.d' "fabric-report html" "$R" html "$TREE" -o "$T_DIR/report.d"

# Trees without a collective result: doctor and probe documents alone (a
# directory, or the files named) make a page of those; a directory of
# neither, or nothing but unrelated JSON, is one line and exit 10.
expect_exit "a tree of doctor and probe documents alone makes a page" 0 "$R" html "$TREE/checks" -o "$T_DIR/checks.html"
expect_grep "... that says there is no collective result" '^<p>No collective results \(fabric-coll -J\) in ' "$T_DIR/checks.html"
expect_grep "... and shows the probe's verdict" '<section id="probe"><h2>Link probes</h2>' "$T_DIR/checks.html"
if grep -q '<section id="verdicts"\|<svg' "$T_DIR/checks.html"; then
  not_ok "... with no empty verdicts table or plot" "$(grep -c '<svg' "$T_DIR/checks.html") plots"
else
  ok "... with no empty verdicts table or plot"
fi
expect_exit "a probe document named on its own makes a page" 0 "$R" html "$TREE/checks/probe.json" -o "$T_DIR/probe.html"
expect_grep "... showing it" '<section id="probe">' "$T_DIR/probe.html"
run "$R" html "$TREE/checks/probe.json" "$TREE/checks" -o "$T_DIR/both.html"
probe_mentions() { sed -n '/<section id="probe">/,/<\/section>/p' "$1" | grep -o 'probe\.json' | wc -l; }
if [ "$(probe_mentions "$T_DIR/both.html")" -eq "$(probe_mentions "$T_DIR/checks.html")" ]; then
  ok "... named and inside a directory given too: shown once"
else
  not_ok "... named and inside a directory given too: shown once" \
    "$(probe_mentions "$T_DIR/both.html") mentions, $(probe_mentions "$T_DIR/checks.html") from the directory alone"
fi
mkdir -p "$T_DIR/empty" "$T_DIR/other"
echo '{"not": "a result"}' >"$T_DIR/other/x.json"
expect_error "an empty directory" 10 'empty holds nothing the page shows' "fabric-report html" "$R" html "$T_DIR/empty" -o "$T_DIR/empty.html"
expect_error "a directory of unrelated JSON" 10 'other holds nothing the page shows' "fabric-report html" "$R" html "$T_DIR/other" -o "$T_DIR/other.html"
check "... and no page is written for either" test ! -e "$T_DIR/empty.html" -a ! -e "$T_DIR/other.html"
# Runs that stopped before their first row: verdicts, and no empty plot.
mkdir -p "$T_DIR/hung"
jq '.rows = [] | .complete = false' "$T_DIR/raw/B-1.json" >"$T_DIR/hung/run.json"
expect_exit "a tree of runs without rows makes a page" 0 "$R" html "$T_DIR/hung" -o "$T_DIR/hung.html"
expect_grep "... saying there is nothing to plot" 'No run measured a busBW' "$T_DIR/hung.html"
if grep -q '<svg' "$T_DIR/hung.html"; then not_ok "... and drawing no empty plot" "an <svg> in the page"; else ok "... and drawing no empty plot"; fi

# ---- in a browser ----
if [ ! -x /usr/bin/chromium ]; then
  not_ok "chromium installed" "apt-get install chromium (scripts/install-deps.sh)"
  exit 0
fi
if ! node_modules_ready; then
  not_ok "npm ci in tests/ (playwright-core)" "$(tail -n 3 "$T_DIR/npm.log" | tr '\n' ' ')"
  exit 0
fi
ART=$FB_BUILD/test-artifacts
mkdir -p "$ART"
(cd "$FB_ROOT/tests" && timeout 120 node report/render-html.mjs "$PAGE" "$ART/report-html.png") >"$T_DIR/browser.json" 2>"$T_DIR/browser.err"
rc=$?
if [ "$rc" -eq 3 ]; then
  skip "the page in headless Chromium" "$(head -1 "$T_DIR/browser.err")"
  exit 0
elif [ "$rc" -ne 0 ]; then
  not_ok "the page opens in headless Chromium" "exit $rc: $(tail -3 "$T_DIR/browser.err" | tr '\n' ' ')"
  exit 0
fi
ok "the page opens in headless Chromium"
B=$T_DIR/browser.json
jq_is "no console errors" "$B" '.console_errors + .page_errors' '[]'
jq_is "no request but the file itself" "$B" '.requests' "[\"file://$PAGE\"]"
jq_is "every SVG has a non-zero box" "$B" '[.svgs[] | select(.width > 0 and .height > 0)] | length' 5
jq_is "... of the five plots" "$B" '.svgs | length' 5
jq_is "the page title" "$B" '.title' '"fabric-bench report"'
if [ "$(head -c 8 "$ART/report-html.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  ok "the screenshot is a PNG (build/test-artifacts/report-html.png)"
else
  not_ok "the screenshot is a PNG (build/test-artifacts/report-html.png)" "not written"
fi
