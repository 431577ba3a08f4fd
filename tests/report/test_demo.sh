#!/usr/bin/env bash
# make demo on a machine without GPUs: the host-memory sweep is judged
# against a limit measured with it, by the same ranks, in interleaved rounds
# (never against a profile an earlier run left in the user's configuration);
# the limit is kept beside the result so that check and html judge the run
# as the demo did; its exit code is the verdict's. A healthy path passes on
# this busy machine, ranks forced onto TCP loopback do not. Short runs (two
# rounds, a sweep to 16K): the judged size is 1K.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  skip "make demo on host memory" "this machine has GPUs: the demo runs NCCL"
  exit 0
fi
R=$FB_BIN/fabric-report
home=$T_DIR/home
# A profile an earlier run left in the user's directory, matching any
# host-memory all_reduce: neither the verdict nor the plot may use it.
mkdir -p "$home/.config/fabric-bench/profiles"
cat >"$home/.config/fabric-bench/profiles/stray-host.json" <<'JSON'
{"schema": "fabric-bench.profile", "schema_version": 1, "name": "stray-host", "revision": 1,
 "role": "target", "description": "left by an earlier run", "match": {"backend": "mpi"},
 "collectives": {"all_reduce": {"at_bytes": 1024, "busbw_GBps": 2000, "floor_GBps": 1000}},
 "sources": [{"what": "an earlier demo", "ref": "test"}]}
JSON

# demo NAME [ENV=VALUE...]: runs scripts/demo.sh, output in $T_DIR/NAME.out,
# exit code in $T_DIR/NAME.rc.
demo() {
  local name=$1
  shift
  (cd "$FB_ROOT" && env "$@" HOME="$home" XDG_CONFIG_HOME="$home/.config" BUILD="$FB_BUILD" \
    FABRIC_DEMO_RESULTS="$T_DIR/results/demo" FABRIC_DEMO_PLOT="$T_DIR/plots/demo-all_reduce.png" \
    FABRIC_DEMO_ROUNDS=2 FABRIC_DEMO_MAXBYTES=16K timeout 300 scripts/demo.sh) \
    >"$T_DIR/$name.out" 2>"$T_DIR/$name.err"
  echo $? >"$T_DIR/$name.rc"
}

# The user's own results/ and plots/ are not the test's to write into.
mine() { find "$FB_ROOT/results" "$FB_ROOT/plots" -newer "$T_DIR/started" -type f 2>/dev/null; }
touch "$T_DIR/started"
demo healthy
out=$T_DIR/healthy.out rc=$(cat "$T_DIR/healthy.rc")
expect_grep "the demo measures copies and all_reduces in rounds" '^demo: round 1: copy [0-9.]+ GB/s, all_reduce [0-9.]+ GB/s, ratio [0-9.]+$' "$out"
expect_grep "it states the limit it drew from them" '^demo: it must reach 0.1 of it less the rounds. spread \([0-9]+ %, at most 30 %\): [0-9.]+ GB/s at 1K$' "$out"
expect_grep "a healthy path passes on this machine, against that limit" '^PASS: all_reduce on demo, .*profile demo-host r1 \(its own, kept beside it as' "$out"
if [ "$rc" = 0 ]; then ok "make demo exits 0 on PASS"; else not_ok "make demo exits 0 on PASS" "exit $rc: $(grep -E '^demo: (round|the 1K|it must)' "$out" | tr '\n' ' ') $(tail -3 "$T_DIR/healthy.err")"; fi
json=$(sed -n 's/^demo: results \(.*\.json\), plot .*/\1/p' "$out")
own=${json%.json}.profile.json
check "the limit is kept beside the result" test -s "$own"
check "... and is a profile valid against its schema" json_valid "$FB_ROOT/docs/schema/profile.schema.json" "$own"
expect_grep "the plot draws the limit the verdict used, not the stray profile" \
  '^wrote .*/plots/demo-all_reduce.png \(1 result, 2 reference lines\)' "$out"
check "the demo drew its plot" test -s "$T_DIR/plots/demo-all_reduce.png"
# Every later reader judges the run as the demo did.
expect_exit "fabric-report check on the demo's result gives the demo's verdict" "$rc" "$R" check "$json"
run "$R" html "$json" -o "$T_DIR/demo.html"
expect_grep "fabric-report html shows it with that verdict" '<td class="v-PASS">PASS</td>' "$T_DIR/demo.html"

# Ranks forced onto TCP loopback: the 1K all_reduce takes ten times the
# limit at least, in every round.
demo tcp OMPI_MCA_btl=tcp,self
rc=$(cat "$T_DIR/tcp.rc")
if [ "$rc" = 20 ]; then ok "with the ranks on TCP loopback the demo is DEGRADED (exit 20)"; else not_ok "with the ranks on TCP loopback the demo is DEGRADED (exit 20)" "exit $rc: $(grep -E '^demo: (round|the 1K|it must)' "$T_DIR/tcp.out" | tr '\n' ' ') $(tail -3 "$T_DIR/tcp.err")"; fi
expect_grep "... below the floor, and the demo says what that means on one host" '^demo: on one host that means the ranks do not talk through shared memory' "$T_DIR/tcp.out"
verdict=$(sed -n 's/^(fabric-report check exit code \([0-9]*\):.*/\1/p' "$T_DIR/tcp.out")
if [ "$verdict" = "$rc" ]; then ok "make demo exits with the verdict's code ($rc)"; else not_ok "make demo exits with the verdict's code" "exit $rc, verdict '$verdict'"; fi

if [ "$(find "$home" -name '*.json' 2>/dev/null)" = "$home/.config/fabric-bench/profiles/stray-host.json" ]; then
  ok "the demo writes no profile into the user's configuration"
else
  not_ok "the demo writes no profile into the user's configuration" "$(find "$home" -name '*.json')"
fi
if [ -z "$(mine)" ]; then ok "the demo wrote where it was told, not into the checkout's results/ or plots/"; else not_ok "the demo wrote where it was told" "$(mine | head -3)"; fi
