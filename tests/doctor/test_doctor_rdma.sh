#!/usr/bin/env bash
# fabric-doctor cluster's RDMA checks and the free-GPU-node gate, end to end
# from saved kubectl lists (tests/fixtures/doctor/cluster/make-rdma-lists.py)
# and from real kubectl outputs ($FB_ROOT/../shared/realworld/k8s): each
# check's verdicts, the culprits in the document, exit 11 and its precedence.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

LISTS=$FB_ROOT/tests/fixtures/doctor/cluster
REAL=$FB_ROOT/../shared/realworld/k8s
SCHEMA=$FB_ROOT/docs/schema/doctor.schema.json




# ---- the fixtures are what their generator writes ----
/usr/bin/python3 "$LISTS/make-rdma-lists.py" "$T_DIR/regen"
drift=
for d in "$T_DIR/regen"/*/; do
  diff -r "$d" "$LISTS/$(basename "$d")" >/dev/null || drift="$drift $(basename "$d")"
done
if [ -z "$drift" ]; then ok "make-rdma-lists.py reproduces the fixtures"; else not_ok "make-rdma-lists.py reproduces the fixtures" "differ:$drift"; fi

# ---- a healthy SR-IOV RDMA cluster: every RDMA check OK ----
run doctor cluster --from "$LISTS/sriov-healthy" -J "$T_DIR/healthy.json"
if [ "$T_RC" -eq 0 ] && [ "$(grep -c '^OK ' "$T_OUT")" -eq 7 ]; then
  ok "healthy SR-IOV cluster: 7 OK, exit 0"
else
  not_ok "healthy SR-IOV cluster: 7 OK, exit 0" "exit $T_RC: $(cat "$T_OUT")"
fi
check "healthy document valid" json_valid "$SCHEMA" "$T_DIR/healthy.json"
verdict_line "sriov: both nodes synced" sriov-node-states OK "oci-h100-b: Succeeded, 16 VFs on 2 PFs"
verdict_line "policy: ready components listed" nic-cluster-policy OK "4 components ready .*state-OFED.*3 ignored"
verdict_line "multus: net1 attached on both" multus-attachments OK "2 GPU pods: 2 requested networks"
verdict_line "ratio: 2 rdma-vf per GPU as BM.GPU.H100.8 has" devices-per-gpu OK "16 nvidia.com/rdma-vf / 8 GPUs = 2 per GPU as the instance has"
verdict_line "peermem after MOFED" gpudirect-rdma OK "nvidia-peermem-ctr ready, after MOFED"
verdict_line "own workers do not hold GPUs" gpu-capacity OK "oci-h100-a \(8 free\), oci-h100-b \(8 free\)"

# ---- each thing broken ----
run doctor cluster --from "$LISTS/sriov-stuck" -J "$T_DIR/stuck.json"
exit_is "stuck VFs: exit 31" 31
verdict_line "stuck VFs named" sriov-node-states FAIL "oci-h100-b: .*2 of 8 VFs: VF allocation stuck"
expect_grep "stuck VFs: the fix drains the node" "fix: .*kubectl drain oci-h100-b --ignore-daemonsets" "$T_OUT"
culprit "stuck VFs: culprit node b" sriov-node-states oci-h100-b "$T_DIR/stuck.json"
run doctor cluster --from "$LISTS/sriov-applying" sriov-node-states
exit_is "InProgress: exit 30" 30
verdict_line "InProgress: still applying" sriov-node-states WARN "oci-h100-b: still applying"
run doctor cluster --from "$LISTS/sriov-failed" sriov-node-states
verdict_line "sync Failed: lastSyncError shown" sriov-node-states FAIL "oci-h100-a: sync Failed: .*cannot allocate memory"

run doctor cluster --from "$LISTS/netop-notready" nic-cluster-policy
exit_is "operator not ready: exit 31" 31
verdict_line "state-OFED notReady explained" nic-cluster-policy FAIL "state-OFED notReady: MOFED driver not loaded on some nodes"

run doctor cluster --from "$LISTS/multus-missing" -J "$T_DIR/multus.json" multus-attachments
verdict_line "missing NAD named" multus-attachments FAIL "fabric-bench-1: asks bench/rdma-b, no such NetworkAttachmentDefinition"
verdict_line "unattached network named" multus-attachments FAIL "fabric-bench-0: sriov-rdma requested but not attached"
culprit "multus: culprit worker 1" multus-attachments bench/fabric-bench-1 "$T_DIR/multus.json"
run doctor cluster --from "$LISTS/multus-mtu" multus-attachments
exit_is "MTU differs: exit 30" 30
verdict_line "MTU against the NAD" multus-attachments WARN "sriov-rdma MTU 1500, its NAD says 4220$"
check "MTU: the fix is the MTU's alone" grep -Eq '^ +fix: give every NAD of one fabric the same "mtu"[^;]*$' "$T_OUT"
# Without an MTU in the NAD's config, the pods are compared with each other.
mkdir -p "$T_DIR/mtu-pods"
cp "$LISTS/multus-mtu/"*.json "$T_DIR/mtu-pods/"
jq '.items[].spec.config |= (fromjson | del(.mtu) | tojson)' "$LISTS/multus-mtu/netattachdefs.json" >"$T_DIR/mtu-pods/netattachdefs.json"
run doctor cluster --from "$T_DIR/mtu-pods" multus-attachments
verdict_line "MTU against the other pod" multus-attachments WARN "sriov-rdma MTU 1500, bench/fabric-bench-0 has 4220"

run doctor cluster --from "$LISTS/ratio-short" devices-per-gpu
verdict_line "2 of 16 VFs for 8 GPUs named" devices-per-gpu FAIL "fabric-bench-1: 8 GPUs but 2 of oci-h100-b's 16 nvidia.com/rdma-vf \(0.25 per GPU; in proportion 16\)"

run doctor cluster --from "$LISTS/peermem-missing" gpudirect-rdma
verdict_line "no peermem, no dma-buf" gpudirect-rdma FAIL "no nvidia-peermem-ctr and proprietary kernel modules"
expect_grep "peermem fix names driver.rdma.enabled" "fix: .*driver.rdma.enabled=true" "$T_OUT"
run doctor cluster --from "$LISTS/peermem-order" gpudirect-rdma
verdict_line "driver before MOFED" gpudirect-rdma WARN "oci-h100-b: driver pod .* before MOFED pod .*restart the driver pod after MOFED"

# ---- SKIP: clusters without these operators ----
run doctor cluster --from "$LISTS/rdma-healthy"
exit_is "shared-device IB cluster: still exit 0" 0
verdict_line "no SR-IOV operator: skip" sriov-node-states SKIP "no SriovNetworkNodeState"
verdict_line "no Network Operator: skip" nic-cluster-policy SKIP "no NicClusterPolicy"
verdict_line "no Multus request: skip" multus-attachments SKIP "no GPU pod asks for Multus"
verdict_line "shared rdma/*: no ratio" devices-per-gpu SKIP "rdma/\* shared resources count shares"
verdict_line "host driver: skip" gpudirect-rdma SKIP "no GPU Operator driver pod"
verdict_line "busy cluster: capacity skip does not gate" gpu-capacity SKIP "not gating the exit"

# ---- gpu-capacity: exit 11 ----
run doctor cluster --from "$LISTS/capacity-one-node"
exit_is "one free node, full run: the gate is not armed" 0
run doctor cluster --from "$LISTS/capacity-one-node" -J "$T_DIR/skipped.json" gpu-capacity
exit_is "one free node, gpu-capacity named: exit 11" 11
verdict_line "the skip says which nodes and why" gpu-capacity SKIP "skipped: needs two free GPU nodes .*oci-h100-b: cordoned; free: oci-h100-a \(8 free\)"
check "exit-11 document valid" json_valid "$SCHEMA" "$T_DIR/skipped.json"
jq_is "document: exit_code 11" "$T_DIR/skipped.json" .summary.exit_code 11
expect_exit "--gpus-per-node arms the gate in a full run" 11 doctor cluster --from "$LISTS/capacity-one-node" --gpus-per-node 1
run doctor cluster --from "$LISTS/sriov-healthy" --gpus-per-node 9 gpu-capacity
exit_is "9 GPUs per node asked of 8: exit 11" 11
verdict_line "the shortfall named per node" gpu-capacity SKIP "oci-h100-a: 8 of 8 GPUs free, needs 9"
mkdir -p "$T_DIR/failed-and-skipped"
cp "$LISTS/capacity-one-node/"*.json "$T_DIR/failed-and-skipped/"
cp "$LISTS/sriov-failed/sriovnetworknodestates.json" "$T_DIR/failed-and-skipped/"
expect_exit "a failed check wins over the skip: exit 31" 31 doctor cluster --from "$T_DIR/failed-and-skipped" --gpus-per-node 1
expect_stderr_line "--gpus-per-node 0: exit 2" 2 "--gpus-per-node" doctor cluster --from "$LISTS/sriov-healthy" --gpus-per-node 0

# ---- real kubectl outputs ----
yaml_to_list() { /usr/bin/python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' "$1" "$2"; }
real=$T_DIR/real
mkdir -p "$real"
yaml_to_list "$REAL/ocp_sriov_network_node_state_mlx5_i40e.yaml" "$real/sriovnetworknodestates.json"
run doctor cluster --from "$real" sriov-node-states
exit_is "OpenShift node state without syncStatus: exit 30" 30
verdict_line "real node state: sync unverified, 6 of 6 VFs read" sriov-node-states WARN \
  "cnfdf06.ran.dfwt5g.lab: syncStatus absent: sync unverified \(6 of 6 VFs on 1 PFs present\)"

/usr/bin/python3 - "$REAL/network_operator_nicclusterpolicy_status.yaml" "$real/nicclusterpolicies.json" <<'PY'
import json, sys, yaml
status = yaml.safe_load(open(sys.argv[1]))["status"]
policy = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
          "metadata": {"name": "nic-cluster-policy"}, "spec": {}, "status": status}
json.dump({"apiVersion": "v1", "kind": "List", "items": [policy]}, open(sys.argv[2], "w"))
PY
run doctor cluster --from "$real" nic-cluster-policy
exit_is "Network Operator README status: exit 0" 0
verdict_line "real policy: 4 ready, 5 ignored" nic-cluster-policy OK "ready: 4 components ready \(state-multus-cni, state-OFED, state-RDMA-device-plugin, state-nv-ipam-cni\), 5 ignored"

/usr/bin/python3 - "$REAL/multus_network_status_describe.txt" "$real" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
networks = re.search(r"k8s\.v1\.cni\.cncf\.io/networks: (\S+)", text).group(1)
status = json.loads(text.split("k8s.v1.cni.cncf.io/network-status:", 1)[1])
res = {"nvidia.com/gpu": "8", "nvidia.com/rdma_vf": "1"}
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "samplepod", "namespace": "default", "annotations": {
           "k8s.v1.cni.cncf.io/networks": networks,
           "k8s.v1.cni.cncf.io/network-status": json.dumps(status)}},
       "spec": {"nodeName": "node-1", "containers": [{"name": "samplepod", "image": "x",
                "resources": {"limits": res, "requests": res}}]},
       "status": {"phase": "Running"}}
nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
       "metadata": {"name": "macvlan-conf", "namespace": "default"},
       "spec": {"config": json.dumps({"cniVersion": "0.3.0", "type": "macvlan", "master": "eth0"})}}
for name, items in (("pods.json", [pod]), ("netattachdefs.json", [nad])):
    json.dump({"apiVersion": "v1", "kind": "List", "items": items},
              open(sys.argv[2] + "/" + name, "w"))
PY
run doctor cluster --from "$real" multus-attachments
exit_is "Multus quickstart pod asking an RDMA VF: exit 30" 30
verdict_line "real network-status: attached but no RDMA device" multus-attachments WARN \
  "default/samplepod: attached but no RDMA device \(device-info\)"
echo '{"apiVersion": "v1", "kind": "List", "items": []}' >"$real/netattachdefs.json"
run doctor cluster --from "$real" multus-attachments
verdict_line "real pod without its NAD listed: fail" multus-attachments FAIL "asks default/macvlan-conf, no such NetworkAttachmentDefinition"
rm "$real/netattachdefs.json"
run doctor cluster --from "$real" multus-attachments
verdict_line "netattachdefs.json not saved: not judged, the pod not failed" multus-attachments SKIP \
  "1 GPU pods ask for Multus networks, but netattachdefs.json is not saved"
expect_grep "netattachdefs.json not saved: the fix saves it" \
  "fix: save it: kubectl get network-attachment-definitions.k8s.cni.cncf.io -A -o json > $real/netattachdefs.json" "$T_OUT"

# ---- one network asked twice is two interfaces ----
# fabric-bench-0 asks sriov-rdma on net1 and net2: attached on both passes,
# on net1 only fails (the net1 entry answers one request, not two).
twice() { # twice DIR STATUS_FILTER: pod 0 asks sriov-rdma@net1,sriov-rdma@net2
  mkdir -p "$1"
  cp "$LISTS/sriov-healthy/"*.json "$1/"
  jq --arg filter "$2" '.items |= map(if .metadata.name == "fabric-bench-0" then
      .metadata.annotations["k8s.v1.cni.cncf.io/networks"] = "sriov-rdma@net1,sriov-rdma@net2"
      | .metadata.annotations["k8s.v1.cni.cncf.io/network-status"] |= (fromjson
          | . + (if $filter == "both" then [(.[] | select(.interface == "net1") | .interface = "net2")] else [] end)
          | tojson)
      else . end)' "$LISTS/sriov-healthy/pods.json" >"$1/pods.json"
}
twice "$T_DIR/twice-ok" both
run doctor cluster --from "$T_DIR/twice-ok" multus-attachments
verdict_line "one network on net1 and net2, both attached: OK" multus-attachments OK "3 requested networks attached"
twice "$T_DIR/twice-short" one
run doctor cluster --from "$T_DIR/twice-short" multus-attachments
verdict_line "one network asked twice, attached once: FAIL" multus-attachments FAIL "fabric-bench-0: sriov-rdma requested but not attached"
