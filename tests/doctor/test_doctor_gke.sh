#!/usr/bin/env bash
# fabric-doctor cluster on GKE GPU clusters: every GPU NIC link of a pod
# (pod-interfaces, --gpu-nics), the RxDM sidecar's NRI device list
# (nri-devices), the GPU nodes' DaemonSet pods (gke-daemonsets) and the
# sidecars' logs (rxdm-logs), over A3 High, A3 Mega and A3 Ultra clusters;
# and a real nic-info annotation taken from an A3 Mega node.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

LISTS=$FB_ROOT/tests/fixtures/doctor/cluster
REAL=$FB_ROOT/../shared/realworld/k8s
SCHEMA=$FB_ROOT/docs/schema/doctor.schema.json
GKE_CHECKS=(pod-interfaces nri-devices gke-daemonsets rxdm-logs)


# on DIR CHECK...: runs the GKE checks (or those named) on a saved cluster.
on() { local dir=$1; shift; run doctor cluster --from "$dir" "$@"; }

# ---- healthy clusters: every new check OK (or SKIP where it does not apply) ----
on "$LISTS/tcpxo-healthy" "${GKE_CHECKS[@]}" -J "$T_DIR/healthy.json"
if [ "$T_RC" -eq 0 ] && [ "$(grep -c '^OK ' "$T_OUT")" -eq 4 ]; then
  ok "A3 Mega healthy: the four GKE checks OK"
else
  not_ok "A3 Mega healthy: the four GKE checks OK" "exit $T_RC: $(cat "$T_OUT" "$T_ERR")"
fi
check "A3 Mega healthy: document valid" json_valid "$SCHEMA" "$T_DIR/healthy.json"
verdict_line "A3 Mega: both DaemonSets named" gke-daemonsets OK "nccl-tcpxo-installer, nri-device-injector Ready on all 2"

on "$LISTS/a3high-healthy" --pair v3.1.9=v2.0.12
verdict_line "A3 High: four TCPX NICs judged" pod-interfaces OK "2 pods map"
verdict_line "A3 High: tcpx-daemon device list without dmabuf_import_helper" nri-devices OK "2 pods"
verdict_line "A3 High: its installer" gke-daemonsets OK "nccl-tcpx-installer"
verdict_line "A3 High: pod-fabric knows the family" pod-fabric OK "2 GPU pods"
if [ "$T_RC" -eq 0 ]; then ok "A3 High healthy: exit 0"; else not_ok "A3 High healthy: exit 0" "exit $T_RC: $(cat "$T_OUT")"; fi

on "$LISTS/a3ultra-healthy"
if [ "$T_RC" -eq 0 ]; then ok "A3 Ultra healthy: exit 0"; else not_ok "A3 Ultra healthy: exit 0" "exit $T_RC: $(cat "$T_OUT")"; fi
verdict_line "A3 Ultra: eth2..eth9 on rdma-0..7" pod-interfaces OK "2 pods map"
verdict_line "A3 Ultra: no sidecar, nri-devices skips" nri-devices SKIP "no GPU pod with an RxDM sidecar"
verdict_line "A3 Ultra: no sidecar, rxdm-logs skips" rxdm-logs SKIP "no running pod with an RxDM sidecar"
verdict_line "A3 Ultra: gpu-nic-networks does not claim rdma-N" gpu-nic-networks SKIP "not a GKE TCPXO cluster"

# ---- the three things a healthy-looking cluster must not pass ----
on "$LISTS/tcpxo-one-network" pod-interfaces -J "$T_DIR/one.json"
verdict_line "eight GPU NICs on one Network: FAIL" pod-interfaces FAIL "default/nccl-test-1: all 8 GPU NICs eth1..eth8 on ONE Network 'gpu-nic-0'"
if [ "$T_RC" -eq 31 ]; then ok "one Network: exit 31"; else not_ok "one Network: exit 31" "exit $T_RC"; fi
if jq -e '.checks[0].culprits == ["default/nccl-test-1"]' "$T_DIR/one.json" >/dev/null; then
  ok "one Network: the pod is the culprit"
else
  not_ok "one Network: the pod is the culprit" "$(jq -c '.checks[0].culprits' "$T_DIR/one.json")"
fi
on "$LISTS/tcpxo-missing-network" pod-interfaces
verdict_line "eth8 on a Network that does not exist: FAIL" pod-interfaces FAIL "eth8 -> Network 'gpu-nic-8', which does not exist"
expect_grep "missing Network: fix says create it" "create the missing Network" "$T_OUT"
on "$LISTS/tcpxo-nri-short" nri-devices
verdict_line "6 of 8 GPUs in the NRI list: FAIL naming the missing" nri-devices FAIL "lists 6 of the 8 GPUs the pod requests, missing /dev/nvidia6, /dev/nvidia7"

on "$LISTS/a3ultra-broken" pod-interfaces gke-daemonsets
verdict_line "A3 Ultra: rdma-6 twice" pod-interfaces FAIL "nccl-gib-1: eth2..eth9 map onto 7 distinct Networks"
verdict_line "A3 Ultra: rdma-7 ParamsReady=False" pod-interfaces FAIL "eth9 -> Network 'rdma-7' Ready=True ParamsReady=False"
verdict_line "A3 Ultra: installer pod not Ready on node b" gke-daemonsets FAIL "gke-a3u-pool-b: nccl-rdma-installer pod not Ready"

# ---- DaemonSets ----
on "$LISTS/tcpxo-daemonset-missing" gke-daemonsets
verdict_line "node b without nri-device-injector: FAIL naming it" gke-daemonsets FAIL "gke-a3-pool-b: nri-device-injector no pod"
verdict_line "node b's installer not Ready" gke-daemonsets FAIL "gke-a3-pool-b: nccl-tcpxo-installer pod not Ready"
expect_grep "DaemonSet fix names the manifest" "nri_device_injector/nri-device-injector\.yaml" "$T_OUT"
on "$LISTS/rdma-healthy" gke-daemonsets
verdict_line "no GKE GPU node: DaemonSets skip" gke-daemonsets SKIP "no GKE GPU node"

# ---- RxDM logs ----
on "$LISTS/tcpxo-logs-7gpus" rxdm-logs
verdict_line "7 GPUs in the PCI tree: FAIL" rxdm-logs FAIL "default/nccl-test-1 tcpxo-daemon found 7 GPUs"
expect_grep "7 GPUs: fix is the node pool's networks" "exactly the eight GPU NIC networks" "$T_OUT"
on "$LISTS/tcpxo-logs-nosys" rxdm-logs
verdict_line "0 GPUs: FAIL" rxdm-logs FAIL "default/nccl-test-0 tcpxo-daemon found 0 GPUs"
expect_grep "0 GPUs: fix is the /sys mount" "/sys -> /hostsysfs" "$T_OUT"
mkdir -p "$T_DIR/nologs" "$T_DIR/halflogs/logs"
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/nologs/"
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/halflogs/"
cp "$LISTS/tcpxo-healthy/logs/default.nccl-test-0.tcpxo-daemon.log" "$T_DIR/halflogs/logs/"
on "$T_DIR/nologs" rxdm-logs
verdict_line "no logs saved: unverified, SKIP" rxdm-logs SKIP "no log read, unverified"
on "$T_DIR/halflogs" rxdm-logs
verdict_line "one of two logs: WARN naming the unread" rxdm-logs WARN "1 of 2 RxDM logs read, clean; unverified: default/nccl-test-1"
if [ "$T_RC" -eq 30 ]; then ok "one of two logs: exit 30"; else not_ok "one of two logs: exit 30" "exit $T_RC"; fi

# ---- --gpu-nics FILE ----
GIVEN=$FB_ROOT/manifests/overlays/gke-tcpxo/gpu-nics.yaml
on "$LISTS/tcpxo-healthy" pod-interfaces --gpu-nics "$GIVEN"
verdict_line "--gpu-nics: the overlay's mapping equals the deployed one" pod-interfaces OK "as --gpu-nics gives them"
sed 's/eth8: gpu-nic-7/eth8: gpu-nic-9/' "$GIVEN" >"$T_DIR/nics-other.yaml"
on "$LISTS/tcpxo-healthy" pod-interfaces --gpu-nics "$T_DIR/nics-other.yaml"
verdict_line "--gpu-nics differing: FAIL naming the interface and both" pod-interfaces FAIL "eth8 deployed on 'gpu-nic-7', fabric-bench was given 'gpu-nic-9'"
jq -n '[{interfaceName: "eth0", network: "default"}] + [range(1; 9) | {interfaceName: "eth\(.)", network: "gpu-nic-\(. - 1)"}]' >"$T_DIR/nics.json"
on "$LISTS/tcpxo-healthy" pod-interfaces --gpu-nics "$T_DIR/nics.json"
verdict_line "--gpu-nics as a JSON interfaces array" pod-interfaces OK "as --gpu-nics gives them"
# A mapping that names only some GPU NICs differs from the pods' (the
# launcher's --gpu-nics rule too).
jq '.[0:2]' "$T_DIR/nics.json" >"$T_DIR/nics-part.json"
on "$LISTS/tcpxo-healthy" pod-interfaces --gpu-nics "$T_DIR/nics-part.json"
verdict_line "--gpu-nics naming eth1 only: FAIL on eth2" pod-interfaces FAIL "eth2 deployed on 'gpu-nic-1', absent from what fabric-bench was given"
printf 'data:\n  eth1 gpu-nic-0\n' >"$T_DIR/bad.yaml"
expect_stderr_line "--gpu-nics malformed: exit 10, one line naming the line" 10 \
  "bad.yaml line 2: 'eth1 gpu-nic-0' is not ethN: NETWORK" doctor cluster --from "$LISTS/tcpxo-healthy" --gpu-nics "$T_DIR/bad.yaml"
printf 'kind: ConfigMap\n' >"$T_DIR/empty.yaml"
expect_stderr_line "--gpu-nics without data: exit 10" 10 "no data: block" \
  doctor cluster --from "$LISTS/tcpxo-healthy" --gpu-nics "$T_DIR/empty.yaml"
expect_stderr_line "--gpu-nics missing file: exit 10" 10 "no-such.yaml" \
  doctor cluster --from "$LISTS/tcpxo-healthy" --gpu-nics "$T_DIR/no-such.yaml"

# ---- logs through kubectl, and --save ----
cat >"$T_DIR/kubectl" <<'SH'
#!/bin/sh
if [ "$1" = logs ]; then
  f="$FAKE_LISTS/logs/$3.$4.$6.log"
  [ -f "$f" ] && exec cat "$f"
  echo "Error from server (BadRequest): container \"$6\" in pod \"$4\" is waiting to start" >&2; exit 1
fi
res=; prev=; for a; do [ "$prev" = get ] && res=$a; prev=$a; done
case "$res" in
  networks.networking.gke.io) cat "$FAKE_LISTS/networks.json";;
  nodes) cat "$FAKE_LISTS/nodes.json";;
  pods) cat "$FAKE_LISTS/pods.json";;
  daemonsets) cat "$FAKE_LISTS/daemonsets.json";;
  *) echo "unexpected: $*" >&2; exit 2;;
esac
SH
chmod +x "$T_DIR/kubectl"
run env -i PATH="$PATH" FAKE_LISTS="$LISTS/tcpxo-logs-7gpus" "$FB_BIN/fabric-doctor" cluster \
  --kubectl "$T_DIR/kubectl" --save "$T_DIR/saved" rxdm-logs
verdict_line "kubectl logs: the 7-GPU line found" rxdm-logs FAIL "found 7 GPUs"
check "--save wrote the sidecar's log" grep -q "PCI tree 7" "$T_DIR/saved/logs/default.nccl-test-1.tcpxo-daemon.log"
on "$T_DIR/saved" rxdm-logs
verdict_line "--save then --from: the same verdict" rxdm-logs FAIL "found 7 GPUs"
run env -i PATH="$PATH" FAKE_LISTS="$T_DIR/halflogs" "$FB_BIN/fabric-doctor" cluster \
  --kubectl "$T_DIR/kubectl" rxdm-logs
verdict_line "kubectl logs failing for one pod: unverified with kubectl's reason" rxdm-logs WARN "nccl-test-1: kubectl logs .* is waiting to start"

# ---- a real nic-info annotation (A3 Mega node, transcribed) ----
REAL_NIC_INFO=$REAL/gke_a3mega_node_nic_info_TRANSCRIBED.txt
# put_real DIR DROP: tcpxo-healthy with node a carrying the real annotation
# (its # lines stripped), north-interfaces putting each GPU NIC on a gpu-nic
# Network, and DROP (a birthName) left out of the annotation.
put_real() {
  mkdir -p "$1"
  cp "$LISTS/tcpxo-healthy/"*.json "$1/"
  /usr/bin/python3 - "$REAL_NIC_INFO" "$1/nodes.json" "$2" <<'PY'
import json, sys
src, nodes_path, drop = sys.argv[1:]
info = json.loads("".join(l for l in open(src) if not l.lstrip().startswith("#")))
info = [e for e in info if e["birthName"] != drop]
north = [{"ipAddress": e["birthIP"], "network": "gpu-nic-%d" % (int(e["birthName"][3:]) - 1)}
         for e in info if e["birthName"] != "eth0"]
nodes = json.load(open(nodes_path))
ann = nodes["items"][0]["metadata"]["annotations"]
ann["networking.gke.io/nic-info"] = json.dumps(info)
ann["networking.gke.io/north-interfaces"] = json.dumps(north)
json.dump(nodes, open(nodes_path, "w"))
PY
}
if put_real "$T_DIR/real" none; then
  on "$T_DIR/real" nic-info
  verdict_line "real A3 Mega nic-info (9 interfaces) passes" nic-info OK "2 of 2 a3-megagpu-8g nodes map eth1..eth8"
  put_real "$T_DIR/real-7" eth8
  on "$T_DIR/real-7" nic-info
  verdict_line "the same without eth8 fails" nic-info FAIL "missing eth8"
else
  not_ok "real A3 Mega nic-info readable" "cannot read $REAL_NIC_INFO"
fi
