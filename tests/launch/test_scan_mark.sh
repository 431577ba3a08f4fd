#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs and literal $( ) in single quotes
# launch/scan-mark.sh against the stand-in kubectl (kubectl-standin.sh), which
# records label and taint calls and applies them to a node list the test
# makes. The scan documents come from real fabric-scan runs (one rank per
# host, tests/launch/as-host.sh) with verdicts then edited.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

M=$FB_ROOT/launch/scan-mark.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
export FBL_STATE=$T_DIR/state FBL_NODES=$T_DIR/nodes.json
mkdir -p "$FBL_STATE"
K=(--kubectl "$STANDIN")

# ---- options (no scan needed) ------------------------------------------------------
expect_error "no results file: usage" 2 'no results file given' scan-mark.sh "$M" "${K[@]}"
expect_error "unknown option: usage" 2 "unknown option '--force'" scan-mark.sh "$M" "${K[@]}" --force x.json
expect_error "two results files: usage" 2 'one results file only' scan-mark.sh "$M" "${K[@]}" a.json b.json
expect_error "bad --label-prefix: usage" 2 '--label-prefix wants a DNS subdomain' scan-mark.sh \
  "$M" "${K[@]}" --label-prefix 'Bad_Prefix' x.json
expect_error "missing results file: input" 10 "is not a readable file" scan-mark.sh "$M" "${K[@]}" "$T_DIR/none.json"
echo '{"schema": "fabric-bench.result", "kind": "scan", "nodes": [' >"$T_DIR/cut.json"
expect_error "results file that is not JSON: input" 10 "is not a JSON object" scan-mark.sh "$M" "${K[@]}" "$T_DIR/cut.json"

scan_ready "scan-mark.sh on scan documents"

# ---- documents from real scans ---------------------------------------------------------
S=$T_DIR/scan.json
scan_doc "$S" gpu-a,gpu-b,gpu-c,gpu-d || exit 1
check "the scan names each node after its FABRIC_NODE_NAME" \
  jq -e '[.nodes[].node] == ["gpu-a","gpu-b","gpu-c","gpu-d"] and .complete == true' "$S"
stamp=$(jq -r .start_time "$S" | tr -d ':-')
verdicts() { # verdicts OUT JQ: the scan with gpu-b failed, gpu-c slow, then JQ
  jq '.nodes |= map(if .node == "gpu-b" then .verdict = "failed" elif .node == "gpu-c" then .verdict = "slow" else . end)'" | $2" "$S" >"$1"
}
D=$T_DIR/marked.json
verdicts "$D" .
jq '.kind = "collective"' "$S" >"$T_DIR/coll.json"
expect_error "a document of another kind: input" 10 "is 'collective', not a scan" scan-mark.sh "$M" "${K[@]}" "$T_DIR/coll.json"

# The cluster: gpu-a still marked from an earlier scan beside labels and a
# taint of its own, the others clean.
fresh_nodes() {
  jq -n '{apiVersion: "v1", kind: "List", items: [
    {metadata: {name: "gpu-a", labels: {"fabric-bench.io/scan": "failed", "fabric-bench.io/scan-time": "20250101T000000Z",
       "team": "ml", "fabric-bench.io/other": "keep"}},
     spec: {taints: [{key: "fabric-bench.io/scan", value: "failed", effect: "NoSchedule"},
                     {key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]}},
    (("gpu-b", "gpu-c", "gpu-d") | {metadata: {name: ., labels: {"kubernetes.io/hostname": .}}, spec: {}})]}' >"$FBL_NODES"
  rm -f "$FBL_STATE"/*
}
node_is() { # node_is NAME JQ-ON-NODE: the node in the stand-in's list satisfies it
  jq -e --arg n "$1" ".items[] | select(.metadata.name == \$n) | $2" "$FBL_NODES" >/dev/null
}

# ---- dry run: prints, changes nothing ---------------------------------------------------
fresh_nodes
cp "$FBL_NODES" "$T_DIR/before.json"
expect_exit "dry run exits 0" 0 "$M" "${K[@]}" "$D" --taint
expect_grep "dry run prints the label of the failed node" \
  "^\\+ .*kubectl-standin.sh label node gpu-b fabric-bench.io/scan=failed fabric-bench.io/scan-time=$stamp --overwrite\$" "$T_OUT"
expect_grep "dry run prints the taint of the slow node" \
  '^\+ .* taint node gpu-c fabric-bench.io/scan=slow:NoSchedule --overwrite$' "$T_OUT"
expect_grep "dry run prints the removal from the node that passes" \
  '^\+ .* label node gpu-a fabric-bench.io/scan- fabric-bench.io/scan-time-$' "$T_OUT"
if cmp -s "$FBL_NODES" "$T_DIR/before.json" && [ ! -e "$FBL_STATE/marks" ] &&
  ! grep -qE '^kubectl (label|taint)' "$FBL_STATE/calls"; then
  ok "dry run calls no label or taint and changes no node"
else
  not_ok "dry run calls no label or taint and changes no node" "$(grep -E 'label|taint' "$FBL_STATE/calls" | head -n 3 | tr '\n' ' ')"
fi
if grep -q 'gpu-d' "$T_OUT"; then not_ok "dry run: nothing for a clean node that passes" "$(grep gpu-d "$T_OUT")"
else ok "dry run: nothing for a clean node that passes"; fi

# ---- --apply: labels, no taint without --taint, marks cleared on a pass ------------------
fresh_nodes
expect_exit "--apply exits 0" 0 "$M" "${K[@]}" "$D" --apply
check "failed node labelled failed with the scan's stamp" node_is gpu-b \
  "(.metadata.labels[\"fabric-bench.io/scan\"] == \"failed\") and (.metadata.labels[\"fabric-bench.io/scan-time\"] == \"$stamp\")"
check "slow node labelled slow" node_is gpu-c '.metadata.labels["fabric-bench.io/scan"] == "slow"'
check "the stamp is a label value (63 characters of [A-Za-z0-9._-] at most)" \
  node_is gpu-b '.metadata.labels["fabric-bench.io/scan-time"] | test("^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")'
check "no taint without --taint" jq -e '[.items[] | select(.metadata.name != "gpu-a") | .spec.taints // [] | length] | add == 0' "$FBL_NODES"
check "the node that passes again loses the labels and the taint of the scan" \
  node_is gpu-a '(.metadata.labels | has("fabric-bench.io/scan") or has("fabric-bench.io/scan-time") | not)
    and ([.spec.taints[] | select(.key == "fabric-bench.io/scan")] == [])'
check "its other labels and taints stay (team, fabric-bench.io/other, nvidia.com/gpu)" \
  node_is gpu-a '.metadata.labels == {"team": "ml", "fabric-bench.io/other": "keep"}
    and .spec.taints == [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]'
check "a clean node that passes gets no call" bash -c "! grep -q gpu-d '$FBL_STATE/marks'"
check "labels are set in one call per node" test "$(grep -c '^label gpu-[bc] ' "$FBL_STATE/marks")" -eq 2

# ---- --taint ----------------------------------------------------------------------------
fresh_nodes
expect_exit "--apply --taint exits 0" 0 "$M" "${K[@]}" "$D" --apply --taint
check "failed node tainted fabric-bench.io/scan=failed:NoSchedule" node_is gpu-b \
  '.spec.taints == [{key: "fabric-bench.io/scan", value: "failed", effect: "NoSchedule"}]'
check "slow node tainted fabric-bench.io/scan=slow:NoSchedule" node_is gpu-c \
  '.spec.taints == [{key: "fabric-bench.io/scan", value: "slow", effect: "NoSchedule"}]'
# A node that is failed in the next scan again keeps one taint (overwritten).
expect_exit "a second --apply --taint exits 0" 0 "$M" "${K[@]}" "$D" --apply --taint
check "marking again keeps one taint per node" node_is gpu-b '[.spec.taints[] | select(.key == "fabric-bench.io/scan")] | length == 1'

fresh_nodes
expect_exit "--label-prefix: exits 0" 0 "$M" "${K[@]}" "$D" --apply --taint --label-prefix scan.example.com
check "--label-prefix names the labels and the taint" node_is gpu-b \
  '.metadata.labels["scan.example.com/scan"] == "failed" and .metadata.labels["scan.example.com/scan-time"] != null
   and .spec.taints[0].key == "scan.example.com/scan"'
check "--label-prefix leaves the marks of fabric-bench.io alone" node_is gpu-a '.metadata.labels["fabric-bench.io/scan"] == "failed"'

# ---- incomplete scan: nothing removed -------------------------------------------------------
fresh_nodes
verdicts "$T_DIR/incomplete.json" '.complete = false'
expect_exit "incomplete scan: exits 0" 0 "$M" "${K[@]}" "$T_DIR/incomplete.json" --apply
check "incomplete scan removes no mark from a node that passes" node_is gpu-a \
  '.metadata.labels["fabric-bench.io/scan"] == "failed" and (.spec.taints | length) == 2'
check "incomplete scan still marks the failed node" node_is gpu-b '.metadata.labels["fabric-bench.io/scan"] == "failed"'
expect_grep "incomplete scan says marks are kept" 'incomplete' "$T_OUT"
verdicts "$T_DIR/untested.json" '.nodes |= map(if .node == "gpu-a" then .verdict = "untested" else . end)'
fresh_nodes
expect_exit "untested node: exits 0" 0 "$M" "${K[@]}" "$T_DIR/untested.json" --apply
check "an untested node keeps its marks" node_is gpu-a '.metadata.labels["fabric-bench.io/scan"] == "failed"'

# ---- one node named twice: the worst verdict counts -----------------------------------------
# Two hosts that gave one FABRIC_NODE_NAME put two entries on one node (a
# document from before fabric-scan refused that, or one edited since).
twice() { # twice OUT NODE V1 V2: NODE's own entry V1, then another host's entry for it V2
  jq --arg n "$2" --arg a "$3" --arg b "$4" '.nodes |= (map(if .node == $n then .verdict = $a else . end)
    + [.[] | select(.node == $n) | .host += "-twin" | .verdict = $b])' "$S" >"$1"
}
# gpu-a carries the marks of an earlier scan beside its own labels and taint.
twice "$T_DIR/twice.json" gpu-a failed pass
fresh_nodes
expect_exit "failed, then pass on the same node: exits 0" 0 "$M" "${K[@]}" "$T_DIR/twice.json" --apply --taint
check "failed, then pass: the node stays labelled and tainted failed, with this scan's stamp" node_is gpu-a \
  "(.metadata.labels[\"fabric-bench.io/scan\"] == \"failed\") and (.metadata.labels[\"fabric-bench.io/scan-time\"] == \"$stamp\")
   and ([.spec.taints[].key] | sort) == [\"fabric-bench.io/scan\", \"nvidia.com/gpu\"]"
check "failed, then pass: no mark of it is ever removed" bash -c "! grep -E '^(label|taint) gpu-a .*-( |\$)' '$FBL_STATE/marks'"
expect_grep "failed, then pass: the merge is said, with both hosts" "node gpu-a is in the scan 2 times \\(hosts 'gpu-a', 'gpu-a-twin' gave it as FABRIC_NODE_NAME\\): the worst verdict, failed, counts" "$T_OUT"
# Pass then slow marks it slow without clearing it on the way; pass then
# untested keeps what it has.
twice "$T_DIR/twice-a.json" gpu-a pass slow
fresh_nodes
expect_exit "pass, then slow on a marked node: exits 0" 0 "$M" "${K[@]}" "$T_DIR/twice-a.json" --apply --taint
check "pass, then slow: labelled slow, its other taint kept" node_is gpu-a \
  '.metadata.labels["fabric-bench.io/scan"] == "slow" and ([.spec.taints[].key] | sort) == ["fabric-bench.io/scan", "nvidia.com/gpu"]'
check "pass, then slow: never cleared on the way" bash -c "! grep -E '^(label|taint) gpu-a .*-( |\$)' '$FBL_STATE/marks'"
twice "$T_DIR/twice-u.json" gpu-a pass untested
fresh_nodes
expect_exit "pass, then untested: exits 0" 0 "$M" "${K[@]}" "$T_DIR/twice-u.json" --apply --taint
check "pass, then untested: the marks of the earlier scan are kept" node_is gpu-a \
  '.metadata.labels["fabric-bench.io/scan"] == "failed" and (.spec.taints | length) == 2'
twice "$T_DIR/twice-p.json" gpu-a pass pass
fresh_nodes
expect_exit "pass twice: exits 0" 0 "$M" "${K[@]}" "$T_DIR/twice-p.json" --apply --taint
check "pass twice: cleared once" test "$(grep -c '^label gpu-a ' "$FBL_STATE/marks")" -eq 1

# ---- hostile node names: refused, never passed to kubectl ----------------------------------
fresh_nodes
verdicts "$T_DIR/hostile.json" '.nodes |= map(if .node == "gpu-b" then .node = "a;rm -rf /" elif .node == "gpu-c" then .node = "$(touch '"$T_DIR"'/pwned)" else . end)'
run "$M" "${K[@]}" "$T_DIR/hostile.json" --apply --taint
if [ "$T_RC" -eq 10 ] && grep -q "names node 'a;rm -rf /', not a Kubernetes node name" "$T_ERR" &&
  grep -qF "names node '\$(touch" "$T_ERR"; then
  ok "hostile node names: exit 10, each named"
else
  not_ok "hostile node names: exit 10, each named" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
check "hostile node names: two error lines, one each" test "$(grep -c '^scan-mark.sh: ' "$T_ERR")" -eq 2
if grep -qE 'rm -rf|touch' "$FBL_STATE/calls" || [ -e "$T_DIR/pwned" ]; then
  not_ok "hostile node names never reach kubectl" "$(grep -E 'rm -rf|touch' "$FBL_STATE/calls")"
else
  ok "hostile node names never reach kubectl"
fi
check "hostile node names: the other nodes are still done" node_is gpu-a '.metadata.labels | has("fabric-bench.io/scan") | not'
verdicts "$T_DIR/dash.json" '.nodes |= map(if .node == "gpu-b" then .node = "--all" else . end)'
fresh_nodes
expect_exit "a node name that is an option: exit 10" 10 "$M" "${K[@]}" "$T_DIR/dash.json" --apply
check "a node name that is an option never reaches kubectl" bash -c "! grep -q -- '--all' '$FBL_STATE/calls'"

# ---- kubectl failing on one node: the others still done --------------------------------------
fresh_nodes
FBL_FAIL_NODE=gpu-b run "$M" "${K[@]}" "$D" --apply --taint
if [ "$T_RC" -eq 9 ] && grep -q "kubectl label node gpu-b failed (.*forbidden" "$T_ERR"; then
  ok "kubectl refusing one node: exit 9, the node and kubectl's reason named"
else
  not_ok "kubectl refusing one node: exit 9, the node and kubectl's reason named" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
expect_one_line "kubectl refusing one node: one line" "$T_ERR"
check "kubectl refusing one node: the slow node is still marked and tainted" node_is gpu-c \
  '.metadata.labels["fabric-bench.io/scan"] == "slow" and (.spec.taints | length) == 1'
check "kubectl refusing one node: the node that passes is still cleared" node_is gpu-a '.metadata.labels | has("fabric-bench.io/scan") | not'

# A node the scan names that the cluster does not have.
fresh_nodes
jq '.items |= map(select(.metadata.name != "gpu-c"))' "$FBL_NODES" >"$FBL_NODES.x" && mv "$FBL_NODES.x" "$FBL_NODES"
expect_stderr_line "a node not in the cluster: exit 9, named" 9 'node gpu-c is not in the cluster' "$M" "${K[@]}" "$D" --apply
check "a node not in the cluster: the failed node is still marked" node_is gpu-b '.metadata.labels["fabric-bench.io/scan"] == "failed"'

# kubectl get nodes failing: nothing to compare with, nothing done.
fresh_nodes
expect_error "kubectl get nodes failing: exit 9" 9 'kubectl get nodes failed' scan-mark.sh \
  "$M" --kubectl false "$D" --apply

# ---- nodes without a Kubernetes name ------------------------------------------------------------
N=$T_DIR/nameless.json
scan_doc "$N" gpu-a,-,gpu-d || exit 1
check "a rank without FABRIC_NODE_NAME gives a node named null" jq -e '.nodes[1].node == null and .nodes[1].host == "rank-1"' "$N"
fresh_nodes
expect_exit "a nameless node that passes: reported, exit 0" 0 "$M" "${K[@]}" "$N" --apply
expect_grep "a nameless node that passes is reported as skipped" "host 'rank-1': no Kubernetes node name, skipped" "$T_OUT"
jq '.nodes[1].verdict = "failed"' "$N" >"$T_DIR/nameless-failed.json"
fresh_nodes
expect_stderr_line "a nameless node that failed: exit 10, named" 10 "host 'rank-1' is failed but has no Kubernetes node name" \
  "$M" "${K[@]}" "$T_DIR/nameless-failed.json" --apply
check "a nameless node that failed: the named nodes are still done" node_is gpu-a '.metadata.labels | has("fabric-bench.io/scan") | not'
