#!/usr/bin/env bash
# make demo on a machine without GPUs: the host-memory sweep is judged
# against this host's copy bandwidth measured in the same run (never
# against a profile an earlier run left in the user's configuration), and
# its exit code is the verdict's.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  skip "make demo on host memory" "this machine has GPUs: the demo runs NCCL"
  exit 0
fi
home=$T_DIR/home
# A profile an earlier run left in the user's directory, matching any
# host-memory all_reduce: neither the verdict nor the plot may use it.
mkdir -p "$home/.config/fabric-bench/profiles"
cat >"$home/.config/fabric-bench/profiles/stray-host.json" <<'JSON'
{"schema": "fabric-bench.profile", "schema_version": 1, "name": "stray-host", "revision": 1,
 "role": "target", "description": "left by an earlier run", "match": {"backend": "mpi"},
 "collectives": {"all_reduce": {"at_bytes": 67108864, "busbw_GBps": 2.2, "floor_GBps": 1.65}},
 "sources": [{"what": "an earlier demo", "ref": "test"}]}
JSON
(cd "$FB_ROOT" && HOME=$home XDG_CONFIG_HOME=$home/.config BUILD=$FB_BUILD timeout 300 scripts/demo.sh) \
  >"$T_DIR/demo.out" 2>"$T_DIR/demo.err"
rc=$?
expect_grep "the demo measures this host's copy bandwidth" '^demo: this host copies memory at [0-9.]+ GB/s' "$T_DIR/demo.out"
expect_grep "the verdict is against that measurement" '^(PASS|DEGRADED|FAIL): all_reduce on demo, .*profile demo-host r1' "$T_DIR/demo.out"
verdict=$(sed -n 's/^(fabric-report check exit code \([0-9]*\):.*/\1/p' "$T_DIR/demo.out")
if [ -n "$verdict" ] && [ "$rc" = "$verdict" ]; then
  ok "make demo exits with the verdict's code ($rc)"
else
  not_ok "make demo exits with the verdict's code" "exit $rc, verdict '$verdict': $(tail -3 "$T_DIR/demo.err")"
fi
expect_grep "the plot draws the limit the verdict used, not the stray profile" \
  '^wrote plots/demo-all_reduce.png \(1 result, 2 reference lines\)' "$T_DIR/demo.out"
if [ "$(find "$home" -name '*.json' 2>/dev/null)" = "$home/.config/fabric-bench/profiles/stray-host.json" ]; then
  ok "the demo writes no profile into the user's configuration"
else
  not_ok "the demo writes no profile into the user's configuration" "$(find "$home" -name '*.json')"
fi
check "the demo drew its plot" test -s "$FB_ROOT/plots/demo-all_reduce.png"
