#!/usr/bin/env bash
# The probe schema against documents the code writes: a synthetic RDMA
# fleet from the results unit test (GIDs, line rates, GPU memory, flags,
# suspects), and proof the schema rejects what it should.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

SCHEMA=$FB_ROOT/docs/schema/probe.schema.json
unit=$FB_BUILD/tests/test_probe_results
if [ ! -x "$unit" ]; then
  not_ok "results unit test is built" "$unit missing; run make"
  exit 0
fi

run env FB_PROBE_DUMP="$T_DIR" "$unit"
doc=$T_DIR/rdma-fleet.json
if [ "$T_RC" -eq 0 ] && [ -s "$doc" ]; then ok "the results unit test wrote the fleet document"; else not_ok "the results unit test wrote the fleet document" "exit $T_RC"; fi

if json_valid "$SCHEMA" "$doc" 2>"$T_DIR/err"; then
  ok "RDMA fleet document matches the probe schema"
else
  not_ok "RDMA fleet document matches the probe schema" "$(tail -n 3 "$T_DIR/err")"
fi

# mutate NAME JQ: the schema must refuse the document changed by JQ.
mutate() {
  if ! jq "$2" "$doc" >"$T_DIR/bad.json" || ! json_valid "$SCHEMA" "$doc" 2>/dev/null; then
    not_ok "schema rejects $1" "the mutation '$2' did not apply to a valid document"
  elif json_valid "$SCHEMA" "$T_DIR/bad.json" 2>/dev/null; then
    not_ok "schema rejects $1" "accepted"
  else
    ok "schema rejects $1"
  fi
}
mutate "another kind" '.kind = "collective"'
mutate "a link without its Gb/s" 'del(.links[0].avg_Gbps)'
mutate "a string bandwidth" '.links[0].avg_Gbps = "392"'
mutate "an unknown GID type" '.endpoints[0].gid.type = "RoCE v3"'
mutate "an unknown registration path" '.endpoints[0].memory.registration = "magic"'
# shellcheck disable=SC2016 # a jq variable
mutate "more than 64 samples" '.links[0].samples[0] as $s | .links[0].samples = [range(65) | $s]'
mutate "a fault without a message" '.fault = {"status": "timeout", "exit_code": 8, "rank": 1, "host": "x"}'
