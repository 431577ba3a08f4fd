#!/usr/bin/env bash
# fabric-report check on fabric-rdma results: PASS when no link is flagged,
# DEGRADED naming the slow links and the suspects, INCOMPLETE when the probe
# did not finish; exit code = verdict, as for collective results.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
command -v jq >/dev/null || { skip "probe verdicts" "jq is not installed"; exit 0; }
# Loopback links on a busy machine differ by more than the default 10 %:
# flag only a link a twentieth of the others, so the PASS case is not noise.
# A rank kept off the CPUs for most of the 0.3 s can still make its links
# that slow (repeats here differ by 3x): a probe that flagged a link is run
# again, three runs at most, and the PASS case reads the first that did not.
for _ in 1 2 3; do
  rm -f "$T_DIR/ring.json"
  run fb_mpirun 3 "$FB_BIN/fabric-rdma" --transport tcp --pattern ring -D 0.3 -s 256K --threshold 0.05 -J "$T_DIR/ring.json"
  [ "$(jq '.summary.flagged' "$T_DIR/ring.json" 2>/dev/null)" = 0 ] && break
done
[ -s "$T_DIR/ring.json" ] || { not_ok "a TCP ring probe ran" "exit $T_RC: $(tail -3 "$T_ERR")"; exit 0; }

expect_exit "a probe with no flagged link is PASS" 0 "$R" check "$T_DIR/ring.json"
expect_grep "PASS names the probe and its slowest link" '^PASS: tcp probe \(ring\) on .*3 of 3 measurements' "$T_OUT"
expect_grep "... and its slowest link" 'Slowest link [0-9.]+ Gb/s, median [0-9.]+ Gb/s' "$T_OUT"

jq '.flags = [{"link": 0, "size_bytes": 262144, "src": {"rank": 0, "host": "n1", "device": "mlx5_0"},
               "dst": {"rank": 1, "host": "n2", "device": "mlx5_3"}, "avg_Gbps": 181.0,
               "reference_Gbps": 400.0, "reference": "line-rate", "threshold_Gbps": 360.0}]
    | .summary.flagged = 1
    | .suspects = [{"rank": 1, "host": "n2", "device": "mlx5_3", "slow_links": 2, "links": 2}]' \
  "$T_DIR/ring.json" >"$T_DIR/slow.json"
expect_exit "a probe with a slow link is DEGRADED" 20 "$R" check "$T_DIR/slow.json"
expect_grep "DEGRADED names the slow link and its share of the line rate" \
  'Slow: n1:mlx5_0\[0\] -> n2:mlx5_3\[1\] at 181.00 Gb/s, 45 % of its line rate \(400.00 Gb/s\)' "$T_OUT"
expect_grep "DEGRADED names the suspect" 'Suspect: n2:mlx5_3\[1\], slow in 2 of its 2 links' "$T_OUT"
# A suspect whose record says which of its paths is slow: named by it.
jq '.suspects = [{"rank": 1, "host": "n2", "device": "mlx5_3", "slow_links": 2, "links": 4, "paths": ["receive"],
                  "send": {"links": 2, "slow_links": 0, "ratio": 0.98, "slow": false},
                  "receive": {"links": 2, "slow_links": 2, "ratio": 0.03, "slow": true},
                  "reference": "median-of-others", "reference_Gbps": 9.5}]' "$T_DIR/slow.json" >"$T_DIR/slow-path.json"
expect_exit "a suspect's slow receive path: DEGRADED" 20 "$R" check "$T_DIR/slow-path.json"
expect_grep "  names the node and the path" 'Suspect: n2:mlx5_3\[1\]: receive path slow \(2 of 2 links into it at 0.03x the median of the links not touching it\)' "$T_OUT"

jq '.complete = false | .fault = {"status": "timeout", "exit_code": 8, "message": "rank 2 on n3 stopped answering", "rank": 2, "host": "n3"}' \
  "$T_DIR/ring.json" >"$T_DIR/cut.json"
expect_exit "a probe that did not finish is INCOMPLETE" 23 "$R" check "$T_DIR/cut.json"
expect_grep "INCOMPLETE quotes the fault" 'did not finish: rank 2 on n3 stopped answering' "$T_OUT"

jq 'del(.summary)' "$T_DIR/ring.json" >"$T_DIR/bad.json"
expect_error "a probe document without its summary" 10 'needs "complete" and summary.flagged' "fabric-report check" "$R" check "$T_DIR/bad.json"
