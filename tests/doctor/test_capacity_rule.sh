#!/usr/bin/env bash
# The free GPU node rule has two homes: fabric-doctor's gpu-capacity check
# (C) and launch/capacity.jq, which the launcher runs before it waits. Both
# must name the same nodes out on every saved cluster, at every GPU need.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

LISTS=$FB_ROOT/tests/fixtures/doctor/cluster
LAUNCH=$FB_ROOT/tests/fixtures/launch/from

# out_by_jq NODES PODS N: the GPU nodes capacity.jq leaves out, sorted,
# given the pods the doctor counts (all but fabric-bench's workers, as the
# launcher leaves its own run's out).
out_by_jq() {
  jq '.items |= map(select(.metadata.labels["app.kubernetes.io/name"] != "fabric-bench"))' "$2" >"$T_DIR/counted.json"
  jq -rn --slurpfile nodes "$1" --slurpfile pods "$T_DIR/counted.json" --argjson need "$3" \
    -f "$FB_ROOT/launch/capacity.jq" | awk -F '\t' '$1 != "-" && $2 != "free" { print $1 }' | sort
}

# out_by_doctor DIR N: the nodes gpu-capacity names as culprits, sorted.
out_by_doctor() {
  doctor cluster --from "$1" --gpus-per-node "$2" gpu-capacity --json 2>/dev/null |
    jq -r '.checks[] | select(.name == "gpu-capacity") | .culprits[]' | sort
}

compared=0 differ=""
compare() { # compare LABEL DIR N
  local a b
  a=$(out_by_jq "$2/nodes.json" "$2/pods.json" "$3")
  b=$(out_by_doctor "$2" "$3")
  compared=$((compared + 1))
  [ "$a" = "$b" ] || differ+="$1 need $3: jq [${a//$'\n'/ }] doctor [${b//$'\n'/ }]; "
}

for dir in "$LISTS"/*/; do
  if [ ! -f "$dir/nodes.json" ] || [ ! -f "$dir/pods.json" ]; then continue; fi
  for n in 1 4 8 9; do compare "$(basename "$dir")" "${dir%/}" "$n"; done
done
# The launcher's own busy cluster, as a saved directory.
mkdir -p "$T_DIR/busy"
cp "$LAUNCH/nodes-busy.json" "$T_DIR/busy/nodes.json"
cp "$LAUNCH/pods-busy.json" "$T_DIR/busy/pods.json"
echo '{"items": []}' >"$T_DIR/busy/networks.json"
for n in 1 2 8; do compare busy "$T_DIR/busy" "$n"; done

if [ -z "$differ" ] && [ "$compared" -gt 40 ]; then
  ok "capacity.jq and gpu-capacity leave out the same nodes ($compared clusters and needs)"
else
  not_ok "capacity.jq and gpu-capacity leave out the same nodes" "${differ:-only $compared compared}"
fi

# And the comparison is not empty: some case leaves a node out.
run out_by_doctor "$LISTS/capacity-one-node" 1
check "a cordoned node is out by both" grep -q . "$T_OUT"
