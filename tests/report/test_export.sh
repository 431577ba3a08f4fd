#!/usr/bin/env bash
# fabric-report export end to end, from documents this test makes with the
# real programs (a fabric-coll MPI run, its check --json, fabric-doctor
# cluster on saved clusters, a fabric-rdma TCP probe on loopback): promtool
# accepts the metrics, a real Prometheus scrapes them through
# node-exporter's textfile collector and holds the run's own busBW, JUnit
# parses with the right failures, CTRF passes the reference validator, and
# bad input is one line with exit 10.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
LISTS=$FB_ROOT/tests/fixtures/doctor/cluster
export XDG_CONFIG_HOME=$T_DIR/config
unset FABRIC_PROFILE_PATH FABRIC_REFERENCE_DIR

for tool in promtool prometheus prometheus-node-exporter node; do
  if ! command -v "$tool" >/dev/null; then
    not_ok "$tool present" "install it: scripts/install-deps.sh (Debian packages prometheus, prometheus-node-exporter, nodejs)"
    exit 1
  fi
done
if ! node_modules_ready; then
  not_ok "npm ci in tests/" "$(tail -n 3 "$T_DIR/npm.log" | tr '\n' ' ')"
  exit 1
fi

# ---- the documents, made by the real programs ----
D=$T_DIR/docs
mkdir -p "$D"
(cd "$T_DIR" && fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 1M -f 2 --backend mpi --cluster lab -J "$D/run.json") >"$T_DIR/coll.log" 2>&1
"$R" baseline "$D/run.json" --name lab-here --tolerance 99 >/dev/null 2>&1
"$R" check "$D/run.json" --profile lab-here --json >"$D/check.json" 2>"$T_DIR/check.err"
"$FB_BIN/fabric-doctor" cluster --from "$LISTS/tcpxo-healthy" -J "$D/doctor-healthy.json" >/dev/null 2>&1
env -i PATH="$PATH" "$FB_BIN/fabric-doctor" node --root "$FB_ROOT/tests/fixtures/doctor/node/ib-healthy" -J "$D/doctor-node.json" >/dev/null 2>&1
"$FB_BIN/fabric-doctor" cluster --from "$LISTS/tcpxo-broken" -J "$T_DIR/doctor-broken.json" >/dev/null 2>&1
fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp -D 0.3 -s 256K --cluster lab -J "$D/probe.json" >"$T_DIR/probe.log" 2>&1
for f in run check doctor-healthy doctor-node probe; do
  if [ -s "$D/$f.json" ]; then ok "made $f.json"; else not_ok "made $f.json" "$(tail -c 400 "$T_DIR/coll.log" "$T_DIR/check.err" "$T_DIR/probe.log")"; exit 1; fi
done
[ -s "$T_DIR/doctor-broken.json" ] || { not_ok "made doctor-broken.json" "fabric-doctor cluster --from tcpxo-broken wrote nothing"; exit 1; }

# ---- metrics ----
expect_exit "openmetrics export of the directory" 0 "$R" export --format openmetrics "$D"
cp "$T_OUT" "$T_DIR/all.om"
if promtool check metrics <"$T_DIR/all.om" >"$T_DIR/promtool.log" 2>&1; then ok "promtool accepts the OpenMetrics text"; else not_ok "promtool accepts the OpenMetrics text" "$(head -c 600 "$T_DIR/promtool.log")"; fi
expect_grep "OpenMetrics ends in # EOF" '^# EOF$' <(tail -n 1 "$T_DIR/all.om")
expect_grep "busBW carries its unit" '^# UNIT fabric_bench_busbw_bytes_per_second bytes_per_second$' "$T_DIR/all.om"
expect_grep "the check document's verdict is a sample" '^fabric_bench_verdict\{cluster="lab",collective="all_reduce",nodes="1",ranks="2",verdict="PASS"\} 0$' "$T_DIR/all.om"
expect_grep "doctor checks are samples" '^fabric_bench_doctor_check\{cluster="[^"]+",mode="cluster",check="[a-z0-9-]+",verdict="ok"\} 0$' "$T_DIR/all.om"
expect_grep "a node document's checks carry its host" '^fabric_bench_doctor_check\{cluster="[^"]+",mode="node",host="[^"]+",check="peermem",verdict="ok"\} 0$' "$T_DIR/all.om"
expect_grep "probe links are samples per pair" '^fabric_bench_probe_bandwidth_bytes_per_second\{cluster="lab",transport="tcp",src="[^"]+:lo\[0\]",dst="[^"]+:lo\[1\]",size="262144"\} [0-9.e+]+$' "$T_DIR/all.om"
n=$(grep -c '^# TYPE ' "$T_DIR/all.om")
if [ "$n" -eq "$(grep '^# TYPE ' "$T_DIR/all.om" | sort -u | wc -l)" ] && [ "$n" -eq 6 ]; then ok "one TYPE per family, six families"; else not_ok "one TYPE per family, six families" "$(grep '^# TYPE ' "$T_DIR/all.om")"; fi
"$R" export --format openmetrics "$D" >"$T_DIR/again.om" 2>/dev/null
check "the same documents give the same text" cmp "$T_DIR/all.om" "$T_DIR/again.om"

mkdir -p "$T_DIR/textfile"
expect_exit "prometheus export to a file" 0 "$R" export --format prometheus -o "$T_DIR/textfile/fabric.prom" "$D"
if promtool check metrics <"$T_DIR/textfile/fabric.prom" >"$T_DIR/promtool.log" 2>&1; then ok "promtool accepts the Prometheus text"; else not_ok "promtool accepts the Prometheus text" "$(head -c 600 "$T_DIR/promtool.log")"; fi
if grep -q '^# UNIT\|^# EOF' "$T_DIR/textfile/fabric.prom"; then not_ok "the classic format has no UNIT or EOF" "$(grep '^# UNIT\|^# EOF' "$T_DIR/textfile/fabric.prom" | head -2)"; else ok "the classic format has no UNIT or EOF"; fi

# Label values are escaped: a cluster named with a quote, a backslash and a newline.
jq '.cluster = "a\"b\\c\nd"' "$D/doctor-healthy.json" >"$T_DIR/odd.json"
"$R" export --format prometheus "$T_DIR/odd.json" >"$T_DIR/odd.prom" 2>/dev/null
expect_grep "label values escaped" '^fabric_bench_doctor_check\{cluster="a\\"b\\\\c\\nd",' "$T_DIR/odd.prom"
check "promtool accepts the escaped labels" promtool check metrics <"$T_DIR/odd.prom"

# ---- a real Prometheus scrapes the textfile collector ----
# free_port: a port no socket holds now, listening or connected (the other
# tests' MPI jobs hold ephemeral ports in this range); one may still take
# it before the server binds it, so serve tries another.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Htan "( sport = :$p )")" ]; then echo "$p"; return 0; fi
  done
  return 1
}
stop_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}
SERVER_PIDS=()
on_exit stop_servers
# serve VAR LOG CMD...: CMD in the background on a free port (@PORT@ in its
# arguments), waited for until that very process listens there; VAR is set
# to the port. A server whose port was taken meanwhile ends at once: another
# port, five tries at most. False (its log says why) when none listens.
serve() {
  local var=$1 log=$2 port pid; shift 2
  for _ in 1 2 3 4 5; do
    port=$(free_port) || return 1
    "${@//@PORT@/$port}" >"$log" 2>&1 &
    pid=$!
    SERVER_PIDS+=("$pid")
    for _ in $(seq 1 300); do # 60 s: a busy machine starts Go servers in seconds
      if ss -Hltnp "( sport = :$port )" | grep -q "pid=$pid,"; then
        printf -v "$var" %s "$port"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill "$pid" 2>/dev/null
  done
  return 1
}
serve NE_PORT "$T_DIR/ne.log" prometheus-node-exporter --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$T_DIR/textfile" --web.listen-address=127.0.0.1:@PORT@ ||
  { not_ok "node-exporter listens" "$(tail -c 300 "$T_DIR/ne.log")"; exit 1; }
cat >"$T_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: fabric
    static_configs:
      - targets: ["127.0.0.1:$NE_PORT"]
EOF
serve PROM_PORT "$T_DIR/prom.log" prometheus --config.file="$T_DIR/prometheus.yml" \
  --storage.tsdb.path="$T_DIR/tsdb-@PORT@" --web.listen-address=127.0.0.1:@PORT@ ||
  { not_ok "prometheus listens" "$(tail -c 300 "$T_DIR/prom.log")"; exit 1; }

# The document's own busBW at 1 MiB, out of place, in bytes per second.
want=$(jq '[.rows[] | select(.bytes == 1048576) | .out_of_place.busbw_GBps] | max * 1e9' "$D/run.json")
if /usr/bin/python3 - "$PROM_PORT" "$want" >"$T_DIR/query.log" 2>&1 <<'PY'
import json, sys, time, urllib.parse, urllib.request
port, want = sys.argv[1], float(sys.argv[2])
q = 'fabric_bench_busbw_bytes_per_second{cluster="lab",size="1048576",placement="out_of_place"}'
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
deadline, last = time.time() + 120, "no answer"  # a wait, not a measure: ends at the first scrape
while time.time() < deadline:
    try:
        res = json.load(urllib.request.urlopen(url, timeout=2))["data"]["result"]
        if res:
            got = float(res[0]["value"][1])
            if abs(got - want) <= 1e-9 * want:
                print("scraped", got, res[0]["metric"])
                sys.exit(0)
            sys.exit("scraped %r, the document says %r" % (got, want))
        last = "no series yet"
    except Exception as e:
        last = repr(e)
    time.sleep(0.5)
sys.exit("no busBW series within 120 s: " + last)
PY
then
  ok "Prometheus scraped the run's busBW through the textfile collector"
else
  not_ok "Prometheus scraped the run's busBW through the textfile collector" "$(tail -c 300 "$T_DIR/query.log") $(tail -c 300 "$T_DIR/ne.log")"
fi
if curl -sf "http://127.0.0.1:$NE_PORT/metrics" | grep -q '^node_textfile_scrape_error 0$'; then ok "the textfile collector read the file without error"; else not_ok "the textfile collector read the file without error" "$(curl -s "http://127.0.0.1:$NE_PORT/metrics" | grep textfile | head -5)"; fi
stop_servers
SERVER_PIDS=()

# ---- JUnit ----
jq '.rows[0].out_of_place.wrong = 3' "$D/run.json" >"$T_DIR/wrong.json"
expect_exit "junit export" 0 "$R" export --format junit -o "$T_DIR/report.xml" "$D" "$T_DIR/doctor-broken.json" "$T_DIR/wrong.json"
if /usr/bin/python3 - "$T_DIR/report.xml" "$T_DIR/doctor-broken.json" >"$T_DIR/junit.log" 2>&1 <<'PY'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
cases = root.findall("./testsuite/testcase")
assert int(root.get("tests")) == len(cases), (root.get("tests"), len(cases))
for s in root.findall("testsuite"):
    assert int(s.get("tests")) == len(s.findall("testcase"))
    assert int(s.get("failures")) == len(s.findall("testcase/failure"))
    assert int(s.get("skipped")) == len(s.findall("testcase/skipped"))
broken = json.load(open(sys.argv[2]))
failed = [c for c in broken["checks"] if c["verdict"] in ("fail", "warn")]
suite = [s for s in root.findall("testsuite") if s.get("name").endswith("doctor-broken.json)")]
assert len(suite) == 1, [s.get("name") for s in root.findall("testsuite")]
for c in failed:
    tc = suite[0].find("testcase[@name='%s']" % c["name"])
    f = tc.find("failure")
    assert f is not None and f.get("message") == c["evidence"] and f.get("type") == c["verdict"], c["name"]
    assert (f.text or None) == c["fix"], (f.text, c["fix"])
for c in broken["checks"]:
    tc = suite[0].find("testcase[@name='%s']" % c["name"])
    assert (tc.find("skipped") is not None) == (c["verdict"] == "skip"), c["name"]
wrong = [tc for tc in cases if tc.get("classname").endswith("wrong.json)")]
assert len(wrong) == 1 and wrong[0].find("failure").get("type") == "FAIL", [ET.tostring(t) for t in wrong]
check = [tc for tc in cases if tc.get("classname").endswith("check.json)")]
assert len(check) == 1 and check[0].find("failure") is None, [ET.tostring(t) for t in check]
links = [tc for tc in cases if tc.get("classname").startswith("probe tcp lab")]
assert len(links) == 1 and links[0].find("failure") is None, len(links)
print(len(cases), "cases", len(failed), "doctor failures")
PY
then
  ok "JUnit parses; doctor FAIL/WARN checks and the FAIL verdict are failures with evidence and fix"
else
  not_ok "JUnit parses; doctor FAIL/WARN checks and the FAIL verdict are failures with evidence and fix" "$(tail -c 600 "$T_DIR/junit.log")"
fi

# ---- CTRF ----
expect_exit "ctrf export" 0 "$R" export --format ctrf -o "$T_DIR/report.ctrf.json" "$D" "$T_DIR/doctor-broken.json" "$T_DIR/wrong.json"
if (cd "$FB_ROOT/tests" && node --input-type=module - "$T_DIR/report.ctrf.json") >"$T_DIR/ctrf.log" 2>&1 <<'JS'
import { readFileSync } from "node:fs";
import { validate } from "ctrf";
const doc = JSON.parse(readFileSync(process.argv[2], "utf8"));
const r = validate(doc);
if (!r.valid) { console.log(JSON.stringify(r.errors).slice(0, 600)); process.exit(1); }
const t = doc.results.tests, s = doc.results.summary;
const count = (st) => t.filter((x) => x.status === st).length;
if (s.tests !== t.length || s.passed !== count("passed") || s.failed !== count("failed") || s.skipped !== count("skipped")) {
  console.log("summary disagrees", JSON.stringify(s)); process.exit(1);
}
const wrong = t.filter((x) => x.suite[0].endsWith("wrong.json)"));
if (wrong.length !== 1 || wrong[0].status !== "failed" || wrong[0].rawStatus !== "FAIL") {
  console.log("wrong.json", JSON.stringify(wrong)); process.exit(1);
}
const broken = t.filter((x) => x.suite[0].endsWith("doctor-broken.json)") && x.status === "failed");
if (broken.length === 0 || !broken.every((x) => x.message && x.message.length > 0)) {
  console.log("doctor-broken", JSON.stringify(broken).slice(0, 400)); process.exit(1);
}
console.log(t.length, "tests valid");
JS
then
  ok "CTRF passes the ctrf validator; the FAIL verdict and failed checks are failed tests"
else
  not_ok "CTRF passes the ctrf validator; the FAIL verdict and failed checks are failed tests" "$(tail -c 600 "$T_DIR/ctrf.log")"
fi

# Cross-check: junit-to-ctrf's reading of our JUnit is our CTRF, test by test
# (it keeps the message and text of failures only).
"$R" export --format junit -o "$T_DIR/cross.xml" "$D" "$T_DIR/doctor-broken.json" "$T_DIR/wrong.json" 2>/dev/null
if (cd "$T_DIR" && "$FB_ROOT/tests/node_modules/.bin/junit-to-ctrf" cross.xml -o converted.json -t fabric-bench) >"$T_DIR/j2c.log" 2>&1 &&
   jq -e -s '(.[0].results.summary | del(.start, .stop)) == (.[1].results.summary | del(.start, .stop))
     and ([.[0].results.tests[] | [.name, .status, .message, .trace]]
          == [.[1].results.tests[] | [.suite[0] + ": " + .name, .status, (if .status == "failed" then .message else null end),
                                      (if .status == "failed" then .trace else null end)]])' \
     "$T_DIR/converted.json" "$T_DIR/report.ctrf.json" >/dev/null; then
  ok "junit-to-ctrf turns our JUnit into our CTRF"
else
  not_ok "junit-to-ctrf turns our JUnit into our CTRF" "$(tail -c 300 "$T_DIR/j2c.log") $(jq -c '.results.tests[0]' "$T_DIR/converted.json" "$T_DIR/report.ctrf.json" 2>&1 | head -c 600)"
fi

# ---- bad input: one line, exit 10 (2 for usage) ----
head -c 200 "$D/run.json" >"$T_DIR/cut.json"
expect_error "a cut document is one line naming it, exit 10" 10 "cut.json" "fabric-report export" "$R" export --format junit "$T_DIR/cut.json"
echo '{"schema": "fabric-bench.profile", "name": "x"}' >"$T_DIR/other.json"
expect_error "a named document of another kind is exit 10 naming it" 10 "other.json: .* is no document export reads" "fabric-report export" "$R" export --format ctrf "$T_DIR/other.json"
mkdir -p "$T_DIR/empty"
cp "$T_DIR/other.json" "$T_DIR/empty/"
expect_error "a directory without documents is exit 10" 10 "no results, check, probe, doctor or scan documents" "fabric-report export" "$R" export --format openmetrics "$T_DIR/empty"
expect_error "an unknown format is a usage error" 2 "openmetrics, prometheus, junit or ctrf, not xml" "fabric-report export" "$R" export --format xml "$D"
expect_error "an -o that cannot be written is exit 7 naming -o" 7 "-o FILE" "fabric-report export" "$R" export --format junit -o "$T_DIR/empty" "$D"
expect_error "no documents is a usage error" 2 "export needs documents" "fabric-report export" "$R" export --format junit

# ---- one series given twice: the later document (the newer run) wins ----
mkdir -p "$T_DIR/twice"
cp "$D/run.json" "$T_DIR/twice/20260101T000000Z-all_reduce.json"
jq '(.rows[] | select(.bytes == 1048576) | .out_of_place.busbw_GBps) = 123.5' "$D/run.json" >"$T_DIR/twice/20260102T000000Z-all_reduce.json"
"$R" export --format prometheus "$T_DIR/twice" >"$T_DIR/twice.prom" 2>"$T_DIR/twice.err"
if grep -Eq '^fabric_bench_busbw_bytes_per_second\{cluster="lab",.*size="1048576",placement="out_of_place"\} 123500000000$' "$T_DIR/twice.prom" &&
  grep -q 'given again: the last document' "$T_DIR/twice.err"; then
  ok "a series given twice: the newer run's value, said on stderr"
else
  not_ok "a series given twice: the newer run's value" "$(grep 'size="1048576",placement="out_of_place"' "$T_DIR/twice.prom" | head -2) $(cat "$T_DIR/twice.err")"
fi
