#!/usr/bin/env bash
# How much of a sweep runs: the early stop on a slow multi-node fabric (two
# namespace hosts, whose veth link plays the TCP fallback), --full, the time
# budget, and -N's stability report.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

# Time budget on one host: iterations per size from a calibration.
run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 16M -f 4 --time-budget 4 -c 0 -J "$T_DIR/tb.json"
if [ "$T_RC" -eq 0 ] && /usr/bin/python3 - "$T_DIR/tb.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
its = [r["iterations"] for r in d["rows"]]
assert d["time_budget_s"] == 4, d["time_budget_s"]
assert all(i >= 2 for i in its), its
assert its[0] > its[-1], its  # small sizes afford more iterations
PY
then ok "--time-budget: iterations per size recorded, more for small sizes"; else not_ok "--time-budget" "exit $T_RC, iterations $(jq -c '[.rows[].iterations]' "$T_DIR/tb.json" 2>/dev/null) $(head -c 300 "$T_ERR")"; fi
expect_grep "--time-budget is announced" '^# Time budget 4 s: timed iterations per size' "$T_OUT"

# -N: per-size spread, in the footer and the JSON.
run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 4K -f 2 -n 3 -N 3 --cv-threshold 1000 -J "$T_DIR/n.json"
expect_grep "-N 3: the footer says every size is stable under a 1000% threshold" '^# Stable: every size.s time varies <= 1000% across 3 runs' "$T_OUT"
if /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stability"]; assert s["runs"]==3 and len(s["sizes"])==3 and s["unstable_sizes"]==0' "$T_DIR/n.json"; then
  ok "-N 3: stability per size in the JSON"
else
  not_ok "-N 3: stability per size in the JSON" "$(head -c 300 "$T_DIR/n.json")"
fi
run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 4K -f 2 -n 3 -N 3 --cv-threshold 0 -J "$T_DIR/n0.json"
expect_grep "-N 3: a 0% threshold flags the sizes" '^# Unstable sizes \(time varies > 0% across 3 runs\): 1K' "$T_OUT"

if ! is_root; then
  skip "early stop across namespace hosts" "needs root for network namespaces"
  exit 0
fi
th=$FB_ROOT/scripts/testhosts.sh
hosts_lock fbs
on_exit "$th down fbs >/dev/null 2>&1"
"$th" up fbs 2 2 >"$T_DIR/up.log" 2>&1 || { not_ok "test hosts up" "$(cat "$T_DIR/up.log")"; exit 0; }

# The veth path is far below 8 GB/s: the sweep ends after 64M.
run timeout -k 5 300 "$th" mpirun fbs -np 2 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 16M -e 1G \
  -f 2 -n 2 -c 0 -J "$T_DIR/es.json"
if [ "$T_RC" -eq 0 ] && /usr/bin/python3 - "$T_DIR/es.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["early_stop"]
assert e["at_bytes"] == 64 << 20, e
assert e["sizes_skipped"] == 4, e
assert [r["bytes"] for r in d["rows"]] == [16 << 20, 32 << 20, 64 << 20]
assert d["complete"] is True
PY
then ok "early stop at 64M across two hosts: 4 sizes skipped, recorded"; else not_ok "early stop at 64M" "exit $T_RC $(head -c 400 "$T_ERR") $(grep -c . "$T_DIR/es.json")"; fi
expect_grep "early stop says why, in the words a person acts on" '^# Early stop: TCP fallback suspected at 64M: [0-9.]+ GB/s busBW on the MPI path' "$T_OUT"

# --full measures every size and only notes the suspicion.
run timeout -k 5 300 "$th" mpirun fbs -np 2 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 32M -e 128M \
  -f 2 -n 2 -c 0 --full -J "$T_DIR/full.json"
if [ "$T_RC" -eq 0 ] && [ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$T_OUT")" -eq 3 ] &&
   grep -q '^# Note: TCP fallback suspected at 64M.*--full: measuring on' "$T_OUT"; then
  ok "--full: every size measured, the suspicion noted once"
else
  not_ok "--full" "exit $T_RC $(head -c 400 "$T_OUT")"
fi

# A band below the measured busBW: no stop.
run timeout -k 5 300 "$th" mpirun fbs -np 2 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 64M -e 128M \
  -f 2 -n 2 -c 0 --fallback-band 0.0001 -J "$T_DIR/band.json"
if [ "$T_RC" -eq 0 ] && ! grep -q 'Early stop' "$T_OUT" && [ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$T_OUT")" -eq 2 ]; then
  ok "--fallback-band under the measured busBW: no early stop"
else
  not_ok "--fallback-band" "exit $T_RC $(head -c 400 "$T_OUT")"
fi
