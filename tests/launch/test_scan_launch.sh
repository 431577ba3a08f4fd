#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs in single quotes
# launch/kubectl.sh scan against the stand-in kubectl (kubectl-standin.sh):
# which workers are scanned (the pool, one per node), the mpirun command
# line, each rank's FABRIC_NODE_NAME, the node list given as the topology,
# and, across network-namespace hosts, a real fabric-scan whose results are
# copied back and whose exit code (24 with a throttled node) is the
# launcher's.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state FBL_NODES=$T_DIR/nodes.json FBL_SET=fks
mkdir -p "$FBL_STATE"
reset_state() { rm -f "$FBL_STATE"/*; }
K=(--kubectl "$STANDIN")

# Pool a: gpu-node-0..2 over two racks; gpu-node-3 is in pool b.
jq -n '{apiVersion: "v1", kind: "List", items: [
  ([0, "rack-1", "a"], [1, "rack-1", "a"], [2, "rack-2", "a"], [3, "rack-3", "b"]) |
  {metadata: {name: "gpu-node-\(.[0])", labels: {pool: .[2], "topology.kubernetes.io/zone": .[1], "example.com/rack": "r\(.[0])"}},
   spec: {}, status: {allocatable: {"nvidia.com/gpu": "8"}, conditions: [{type: "Ready", status: "True"}]}}]}' >"$FBL_NODES"

# ---- options ---------------------------------------------------------------------------
expect_error "bad --mode: usage" 2 "--mode wants fast or exhaustive" kubectl.sh "$L" "${K[@]}" scan --mode quick
expect_error "bad --pool: usage" 2 "--pool wants a node label LABEL=VALUE" kubectl.sh "$L" "${K[@]}" scan --pool 'a b'
expect_error "bad --rack-label: usage" 2 "--rack-label wants a node label key" kubectl.sh "$L" "${K[@]}" scan --rack-label 'x=y'
expect_error "fabric-scan's --topology is the launcher's: usage" 2 "fabric-scan's '--topology' is the launcher's" kubectl.sh \
  "$L" "${K[@]}" scan -- --topology /etc/passwd
expect_error "scan with --from: usage" 2 "--from and --from-file go with a benchmark run" kubectl.sh \
  "$L" "${K[@]}" --from-file /dev/null scan

# ---- dry run: the command lines ---------------------------------------------------------------
reset_state
expect_exit "dry run succeeds" 0 "$L" "${K[@]}" --dry-run --pods 2 --cluster c1 --results "$RES" \
  scan --mode exhaustive --pool pool=a -- -b 1M
expect_grep "dry run reads the pool's nodes" 'get nodes -l pool=a -o json' "$T_OUT"
expect_grep "dry run: mpirun goes on past a rank that exits non-zero" '^  \| .*--mca orte_abort_on_non_zero_status 0' "$T_OUT"
expect_grep "dry run: each pod's ranks in their own app context with their node's name" \
  'contexts=\(-np 1 --host fabric-bench-0\.fabric-bench:1 env FABRIC_NODE_NAME=NODE-OF-fabric-bench-0 .*/fabric-scan .* : -np 1 --host fabric-bench-1\.fabric-bench:1 env FABRIC_NODE_NAME=NODE-OF-fabric-bench-1 ' "$T_OUT"
expect_grep "dry run: the launching pod's node name is not forwarded" 'case \$v in FABRIC_NODE_NAME\) ;;' "$T_OUT"
expect_grep "dry run: fabric-scan gets the mode, the cluster, the node list and the rack label" \
  'fabric-scan --mode exhaustive --cluster c1 --topology /tmp/fabric-bench-[0-9TZ]+-scan\.XXXXXX/nodes\.json --rack-label topology\.kubernetes\.io/zone -b 1M -J ' "$T_OUT"
expect_grep "dry run copies the scan's results back" "cp -c fabric-bench fabric-bench-0:/tmp/fabric-bench-[0-9TZ]+-scan.XXXXXX/[0-9TZ]+-scan.json $RES/c1/[0-9TZ]+-scan.json" "$T_OUT"
if [ -s "$FBL_STATE/calls" ]; then not_ok "dry run calls no kubectl" "$(head -n 2 "$FBL_STATE/calls")"; else ok "dry run calls no kubectl"; fi
run "$L" "${K[@]}" --dry-run scan --no-racks
if [ "$T_RC" -eq 0 ] && ! grep -q -- '--topology' "$T_OUT"; then ok "--no-racks: no topology"; else not_ok "--no-racks: no topology" "exit $T_RC"; fi
run "$L" "${K[@]}" --dry-run scan --rack-label example.com/rack
expect_grep "--rack-label names the label" '--rack-label example\.com/rack' "$T_OUT"

# ---- which workers: the pool, one per node (no hosts needed: refused before any exec) ----------------
reset_state
FBL_POD_NODES=gpu-node-0,gpu-node-3 run "$L" "${K[@]}" --wait 10 scan --pool pool=a
if [ "$T_RC" -eq 11 ] && grep -q 'skipped: 1 worker(s) on nodes of pool pool=a, a scan needs two' "$T_ERR"; then
  ok "one worker in the pool: exit 11, skipped"
else
  not_ok "one worker in the pool: exit 11, skipped" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
expect_grep "a worker outside the pool is named as not scanned" 'not in pool pool=a, not scanned: fabric-bench-1 on gpu-node-3' "$T_OUT"
reset_state
FBL_POD_NODES=gpu-node-1,gpu-node-1 expect_error "two workers on one node: exit 10" 10 \
  'pods fabric-bench-0 and fabric-bench-1 both run on node gpu-node-1' kubectl.sh "$L" "${K[@]}" --wait 10 scan
reset_state
FBL_POD_NODES='gpu-node-0,x;touch' expect_error "a pod on a node with a bad name: exit 10" 10 \
  "runs on node 'x;touch', not a Kubernetes node name" kubectl.sh "$L" "${K[@]}" --wait 10 scan
if grep -qE '^kubectl .*exec' "$FBL_STATE/calls"; then not_ok "refused workers: nothing exec'd" "$(grep exec "$FBL_STATE/calls" | head -n 1)"
else ok "refused workers: nothing exec'd"; fi

# ---- real scans across namespace hosts -------------------------------------------------------------
hosts_up fks 3 "scans across namespace hosts"
[ -x "$FB_BIN/fabric-scan" ] || { skip "scans across namespace hosts" "no $FB_BIN/fabric-scan: build it (make)"; exit 0; }
TH=$FB_ROOT/scripts/testhosts.sh
export FBL_COUNT=3
common=("${K[@]}" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" --ssh-port 2222 --ssh-key "$dir/id_ed25519"
  --bind none --results "$RES" --workdir "$T_DIR/pod-work" --wait 30 --cluster kscan)
scan=(--backend mpi -b 256K -n 3 -w 1 --test-timeout 20)
first() { [ -e "$1" ] && echo "$1"; }

reset_state
run timeout 300 "$L" "${common[@]}" scan --pool pool=a -- "${scan[@]}"
result=$(first "$RES"/kscan/*-scan.json)
if [ -n "$result" ]; then
  ok "scan copies the results to results/<cluster>/<stamp>-scan.json"
else
  not_ok "scan copies the results to results/<cluster>/<stamp>-scan.json" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
  exit 1
fi
case $T_RC in 0 | 24) ok "scan exits with fabric-scan's code ($T_RC)" ;;
  *) not_ok "scan exits with fabric-scan's code" "exit $T_RC: $(head -c 400 "$T_ERR")" ;; esac
want=$(jq -r 'if .summary.verdict == "pass" then 0 else 24 end' "$result")
check "the exit code is the results' verdict (0 pass, 24 suspects)" test "$T_RC" = "$want"
if json_valid "$FB_ROOT/docs/schema/scan.schema.json" "$result" 2>"$T_DIR/schema.err"; then ok "results match the scan schema"
else not_ok "results match the scan schema" "$(tail -n 2 "$T_DIR/schema.err" | tr '\n' ' ')"; fi
jq_is "each pod's host is named after its node (FABRIC_NODE_NAME from spec.nodeName)" "$result" \
  '[.nodes[] | [.host, .node]]' '[["fks1","gpu-node-0"],["fks2","gpu-node-1"],["fks3","gpu-node-2"]]'
jq_is "racks from the node list's topology.kubernetes.io/zone" "$result" '[.nodes[].rack]' '["rack-1","rack-1","rack-2"]'
check "fabric-scan read the node list shipped into the first pod" jq -e '.config.topology | endswith("/nodes.json")' "$result"
check "the scan's cluster is --cluster's" jq -e '.cluster == "kscan"' "$result"
expect_grep "the scan's log is copied back" 'fabric-scan: 3 nodes' "${result%.json}.log"
expect_grep "mpirun ran inside the first pod" 'exec fabric-bench-0 -c fabric-bench -- bash .*/run.sh' "$FBL_STATE/calls"
expect_grep "the pool's node list was read" '^kubectl get nodes -l pool=a -o json$' "$FBL_STATE/calls"
expect_grep "the summary is printed" '^kubectl.sh: scan (pass|suspects): ' "$T_OUT"

# A throttled node: its pairs are far below the fleet's median, the scan
# names it and the launcher exits 24.
if "$TH" exec fks 3 tc qdisc add dev eth0 root tbf rate 40mbit burst 32kbit latency 400ms >"$T_OUT" 2>&1; then
  rm -rf "$RES"
  reset_state
  run timeout 300 "$L" "${common[@]}" scan --no-racks -- "${scan[@]}"
  result=$(first "$RES"/kscan/*-scan.json)
  if [ "$T_RC" -eq 24 ] && [ -n "$result" ]; then ok "a throttled node: exit 24 kept, results copied"
  else not_ok "a throttled node: exit 24 kept, results copied" "exit $T_RC: $(tail -c 400 "$T_ERR")"; fi
  if [ -n "$result" ]; then
    check "a throttled node: the scan names it" jq -e '.summary.verdict == "suspects" and ([.nodes[] | select(.host == "fks3") | .verdict] | .[0] != "pass")' "$result"
    check "--no-racks: no topology" jq -e '.config.topology == null' "$result"
    expect_grep "a node without a worker is named" '1 node\(s\) without a worker, not scanned: gpu-node-3' "$T_OUT"
    expect_grep "a throttled node: the summary names the suspects" '^kubectl.sh: scan suspects: .*suspects: ' "$T_OUT"
  fi
  # The CronJob's controller: the scan, then the marks only when asked.
  ctl=(env KUBECTL="$STANDIN" SCAN_RESULTS="$T_DIR/ctl" SCAN_RACK_LABEL= SCAN_ARGS="${scan[*]}"
    SCAN_LAUNCHER_ARGS="--pod-root $FB_ROOT --pod-bin $FB_BIN --ssh-port 2222 --ssh-key $dir/id_ed25519 --bind none --workdir $T_DIR/pod-work --wait 30 --cluster kscan")
  reset_state
  run timeout 300 "${ctl[@]}" MARK_NODES=false "$FB_ROOT/launch/scan-controller.sh"
  if [ "$T_RC" -eq 24 ] && [ -n "$(first "$T_DIR"/ctl/kscan/*-scan.json)" ]; then ok "controller: the scan's exit 24, results under SCAN_RESULTS"
  else not_ok "controller: the scan's exit 24, results under SCAN_RESULTS" "exit $T_RC: $(tail -c 400 "$T_ERR")"; fi
  if [ -e "$FBL_STATE/marks" ]; then not_ok "controller with MARK_NODES=false marks nothing" "$(head -n 2 "$FBL_STATE/marks")"
  else ok "controller with MARK_NODES=false marks nothing"; fi
  reset_state
  cp "$FBL_NODES" "$T_DIR/nodes.before"
  run timeout 300 "${ctl[@]}" MARK_NODES=true MARK_TAINT=true "$FB_ROOT/launch/scan-controller.sh"
  check "controller with MARK_NODES=true: exit 24" test "$T_RC" -eq 24
  check "controller with MARK_NODES=true labels and taints the throttled node's node" \
    jq -e '.items[] | select(.metadata.name == "gpu-node-2") | (.metadata.labels["fabric-bench.io/scan"] | IN("slow", "failed"))
      and .spec.taints[0].key == "fabric-bench.io/scan"' "$FBL_NODES"
  cp "$T_DIR/nodes.before" "$FBL_NODES"
  expect_error "controller: a bad MARK_NODES is a usage error" 2 "MARK_NODES wants true or false" scan-controller.sh \
    env MARK_NODES=yes "$FB_ROOT/launch/scan-controller.sh"
  "$TH" exec fks 3 tc qdisc del dev eth0 root >/dev/null 2>&1
else
  skip "a throttled node: exit 24 kept" "tc cannot add a tbf qdisc here: $(head -c 200 "$T_OUT")"
fi
