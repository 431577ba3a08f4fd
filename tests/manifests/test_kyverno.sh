#!/usr/bin/env bash
# Kyverno policies (manifests/policies/kyverno): each validates against
# Kyverno's ClusterPolicy schema; its match block selects only pods carrying
# the trigger annotation; and its mutation, applied by kubectl's own
# strategic-merge machinery to the plain worker pod of
# manifests/overlays/policy-<fabric>, gives exactly the wiring of
# manifests/overlays/<fabric> (the kustomize component). Broken policies, and
# a component that moved on without its policy, must fail the comparison.
# Kyverno's variables are resolved by kyverno.mjs (documented there).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

M=$FB_ROOT/manifests
P=$M/policies/kyverno
FABRICS=(aws-efa azure-ib gke-tcpxo oci-roce)
KY=$FB_ROOT/tests/manifests/kyverno.mjs

# shellcheck source=tests/manifests/validators.sh
. "$FB_ROOT/tests/manifests/validators.sh"

R=$T_DIR/render
mkdir -p "$R"
render "$P" "$R/policies.yaml"
policies=()
for f in "${FABRICS[@]}"; do
  policies+=("$P/$f.yaml")
  render "$M/overlays/policy-$f" "$R/trigger.$f.yaml"
  render "$M/overlays/$f" "$R/workers.$f.yaml"
  # The env launch's Indexed Job of plain pods, and of the component's wiring.
  render "$M/envjob/overlays/policy-$f" "$R/envtrigger.$f.yaml"
  render "$M/envjob/overlays/$f" "$R/envjob.$f.yaml"
done
# One policy per fabric, no stray file: a policy the test does not know
# would go unchecked.
found=$(cd "$P" && find . -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml -printf '%f\n' | sort | tr '\n' ' ')
expect_list="$(printf '%s.yaml\n' "${FABRICS[@]}" | sort | tr '\n' ' ')"
if [ "$found" = "$expect_list" ]; then
  ok "one policy per fabric in manifests/policies/kyverno"
else
  not_ok "one policy per fabric in manifests/policies/kyverno" "found '$found', want '$expect_list'"
fi

node "$KY" validate "${policies[@]}"

# wire POLICY TRIGGER OVERLAY DIR: the policy's match and variables, kubectl's
# strategic merge onto the plain pod, the comparison; test lines to stdout.
wire() {
  local policy=$1 trigger=$2 overlay=$3 dir=$4 fabric
  fabric=$(basename "$policy" .yaml)
  rm -rf "$dir" && mkdir -p "$dir"
  node "$KY" prepare "$policy" "$trigger" "$dir"
  [ -s "$dir/patch.json" ] || return 0
  local patch
  patch=$(cat "$dir/patch.json")
  if ! kubectl patch --local -f "$dir/pod.yaml" --type strategic -p "$patch" -o json >"$dir/mutated.json" 2>"$dir/patch.err"; then
    not_ok "$fabric: kubectl applies the policy's patch" "$(head -c 300 "$dir/patch.err")"
    return 0
  fi
  ok "$fabric: kubectl applies the policy's patch"
  node "$KY" compare "$dir/mutated.json" "$trigger" "$overlay"
}
for f in "${FABRICS[@]}"; do
  wire "$P/$f.yaml" "$R/trigger.$f.yaml" "$R/workers.$f.yaml" "$T_DIR/wire.$f"
  wire "$P/$f.yaml" "$R/envtrigger.$f.yaml" "$R/envjob.$f.yaml" "$T_DIR/wire-env.$f"
done

# ---- the comparison catches a broken policy ------------------------------------
# Each mutation breaks one property of a good policy (kept under its fabric's
# file name); the named check must then fail.
B=$T_DIR/broken
broken() { # broken NAME FABRIC CHECK_REGEX SED_EXPR
  local name=$1 f=$2 want=$3 expr=$4
  rm -rf "$B" && mkdir -p "$B"
  sed -e "$expr" "$P/$f.yaml" >"$B/$f.yaml"
  if cmp -s "$P/$f.yaml" "$B/$f.yaml"; then
    not_ok "policy check catches: $name" "the mutation changed nothing"
    return
  fi
  wire "$B/$f.yaml" "$R/trigger.$f.yaml" "$R/workers.$f.yaml" "$B/wire" >"$T_OUT" 2>&1
  if grep -Eq "^not ok - $f: .*$want" "$T_OUT"; then
    ok "policy check catches: $name"
  else
    not_ok "policy check catches: $name" "no failing check matching '$want': $(grep -v '^ok' "$T_OUT" | head -c 300)"
  fi
}
broken "env var dropped (NCCL_IB_TC)" oci-roce "wiring, field by field.*NCCL_IB_TC" '/name: NCCL_IB_TC$/,+1d'
broken "EFA devices per GPU wrong" aws-efa "wiring, field by field.*vpc.amazonaws.com/efa" \
  '/name: efaDevicesPerGPU/,+2 s/value: 4/value: 2/'
broken "sidecar without /sys" gke-tcpxo "wiring, field by field.*volumeMounts" '/mountPath: \/hostsysfs/d'
broken "IPC_LOCK dropped" azure-ib "wiring, field by field.*capabilities" 's/add: \[IPC_LOCK\]/add: []/'
broken "match on any annotation value" aws-efa "selects only pods annotated" \
  's|fabric-bench/inject: aws-efa|fabric-bench/inject: "*"|'
broken "match without the annotation" gke-tcpxo "selects only pods annotated" \
  '/^              annotations:$/,/fabric-bench\/inject/d'
broken "unresolvable variable" azure-ib "did not resolve|threw" 's/{{ rdmaDevices }}/{{ rdmaDevicez }}/'

# The component moves on (a new plugin/daemon pair) and the policy does not:
# the comparison names the drift.
W=$T_DIR/work
rm -rf "$W" && cp -r "$M" "$W"
sed -i 's/^TCPXO_DAEMON_VERSION=.*/TCPXO_DAEMON_VERSION=v1.0.99/' "$W/components/gke-tcpxo/tcpxo-versions.env"
if kubectl kustomize "$W/overlays/gke-tcpxo" >"$T_DIR/workers.gke-tcpxo.yaml" 2>"$T_ERR"; then
  wire "$P/gke-tcpxo.yaml" "$R/trigger.gke-tcpxo.yaml" "$T_DIR/workers.gke-tcpxo.yaml" "$T_DIR/drift" >"$T_OUT" 2>&1
  expect_grep "policy check catches: component drift (daemon version)" \
    '^not ok - gke-tcpxo: .*wiring.*FABRIC_TCPXO_DAEMON_VERSION' "$T_OUT"
else
  not_ok "policy check catches: component drift (daemon version)" "$(head -c 300 "$T_ERR")"
fi
