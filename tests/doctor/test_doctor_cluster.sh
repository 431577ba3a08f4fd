#!/usr/bin/env bash
# fabric-doctor cluster end to end, from saved kubectl lists (--from DIR)
# and through a stand-in kubectl: verdicts and exit codes per cluster, the
# culprits in the document, and one-line errors for bad input.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

LISTS=$FB_ROOT/tests/fixtures/doctor/cluster
SCHEMA=$FB_ROOT/docs/schema/doctor.schema.json


one_error() {
  local name=$1 code=$2 regex=$3; shift 3
  expect_stderr_line "$name" "$code" "$regex" doctor "$@"
}


# ---- saved clusters ----
run doctor cluster --from "$LISTS/tcpxo-healthy" -J "$T_DIR/healthy.json"
if [ "$T_RC" -eq 0 ] && [ "$(grep -c '^OK ' "$T_OUT")" -eq 8 ]; then
  ok "healthy GKE TCPXO cluster: 8 OK, exit 0"
else
  not_ok "healthy GKE TCPXO cluster: 8 OK, exit 0" "exit $T_RC: $(cat "$T_OUT")"
fi
check "healthy cluster document valid" json_valid "$SCHEMA" "$T_DIR/healthy.json"

run doctor cluster --from "$LISTS/tcpxo-broken" -J "$T_DIR/broken.json"
if [ "$T_RC" -eq 31 ]; then ok "broken cluster: exit 31"; else not_ok "broken cluster: exit 31" "exit $T_RC"; fi
verdict_line "broken: gpu-nic-7 ParamsReady=False named" gpu-nic-networks FAIL "gpu-nic-7 ParamsReady=False"
verdict_line "broken: gVNIC on node b's eth8 named" nic-info FAIL "gke-a3-pool-b: eth8 .* 'gvnic-1'"
verdict_line "broken: daemon v1.0.20 named" tcpxo-versions FAIL "v1.0.20 \(1 pod: default/nccl-test-1\)"
verdict_line "broken: pods still wired" pod-fabric OK "2 GPU pods"
check "broken cluster document valid" json_valid "$SCHEMA" "$T_DIR/broken.json"
culprit "document: culprit gpu-nic-7" gpu-nic-networks gpu-nic-7 "$T_DIR/broken.json"
culprit "document: culprit node b" nic-info gke-a3-pool-b "$T_DIR/broken.json"
culprit "document: culprit worker 1" tcpxo-versions default/nccl-test-1 "$T_DIR/broken.json"

run doctor cluster --from "$LISTS/tcpxo-unverified"
if [ "$T_RC" -eq 30 ]; then ok "node without nic-info: exit 30, not a pass"; else not_ok "node without nic-info: exit 30" "exit $T_RC"; fi
verdict_line "node without nic-info: unverified, named" nic-info WARN "unverified: gke-a3-pool-b"

expect_exit "InfiniBand cluster: exit 0" 0 doctor cluster --from "$LISTS/rdma-healthy"
verdict_line "InfiniBand cluster: GKE checks skip" gpu-nic-networks SKIP "not a GKE TCPXO cluster"
expect_exit "GPU pods without any fabric: exit 30" 30 doctor cluster --from "$LISTS/no-fabric"
verdict_line "GPU pods without any fabric: TCP named" pod-fabric WARN "TCP sockets"

# ---- only the lists the named checks need ----
mkdir -p "$T_DIR/pods-only" "$T_DIR/empty"
cp "$LISTS/tcpxo-healthy/pods.json" "$T_DIR/pods-only/"
expect_exit "tcpxo-versions needs only pods.json" 0 doctor cluster --from "$T_DIR/pods-only" tcpxo-versions
run doctor cluster --from "$T_DIR/pods-only"
verdict_line "pods.json alone: a check that needs the other lists skips naming them" gpu-nic-networks SKIP \
  "not judged: networks.json and nodes.json are not saved in $T_DIR/pods-only"
expect_grep "pods.json alone: the fix is the commands that save them" \
  "fix: save them: kubectl get networks.networking.gke.io -o json > $T_DIR/pods-only/networks.json; kubectl get nodes -o json > $T_DIR/pods-only/nodes.json" "$T_OUT"
verdict_line "pods.json alone: the checks it is enough for still judge" tcpxo-versions OK "a released pair"
one_error "a directory without any list: exit 10 with the command" 10 \
  "networks.json.*kubectl get networks.networking.gke.io -o json" cluster --from "$T_DIR/empty"

# ---- partial saves: what a save left out is never judged missing ----
# The pods of a namespace holding nothing (kubectl get pods -o json there).
mkdir -p "$T_DIR/nopods" "$T_DIR/onens" "$T_DIR/nonodes"
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/nopods/"
echo '{"apiVersion": "v1", "items": [], "kind": "List", "metadata": {"resourceVersion": ""}}' >"$T_DIR/nopods/pods.json"
run doctor cluster --from "$T_DIR/nopods"
exit_is "no pod at all: no failure" 0
verdict_line "no pod at all: the DaemonSets are not judged" gke-daemonsets SKIP \
  "2 GKE GPU nodes, but pods.json holds no pod at all: it proves nothing about the node DaemonSets"
expect_grep "no pod at all: the fix saves every namespace's pods" \
  "fix: save the pods of every namespace: kubectl get pods -A -o json > $T_DIR/nopods/pods.json" "$T_OUT"
verdict_line "no pod at all: free GPUs unverified" gpu-capacity SKIP "unverified: 2 GPU nodes look free .*pods.json holds no pod at all"
# The workload's namespace only: its pods are judged, kube-system's are not.
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/onens/"
jq '.items |= map(select(.metadata.namespace == "default"))' "$LISTS/tcpxo-healthy/pods.json" >"$T_DIR/onens/pods.json"
run doctor cluster --from "$T_DIR/onens"
verdict_line "one namespace: the DaemonSets are not judged" gke-daemonsets SKIP "pods.json holds pods of namespace default only"
verdict_line "one namespace: its pods are" pod-fabric OK "2 GPU pods"
verdict_line "one namespace: the installer unverified, not failed" tcpxo-versions WARN "no nccl-plugin-gpudirecttcpx installer pod in the list"
# No nodes.json: every check that needs it skips, the rest judge.
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/nonodes/"
rm "$T_DIR/nonodes/nodes.json" "$T_DIR/nonodes/daemonsets.json"
run doctor cluster --from "$T_DIR/nonodes" --save "$T_DIR/resaved"
exit_is "no nodes.json: no failure" 0
verdict_line "no nodes.json: nic-info not judged" nic-info SKIP "not judged: nodes.json is not saved in $T_DIR/nonodes"
verdict_line "no nodes.json: gke-daemonsets not judged" gke-daemonsets SKIP "not judged: nodes.json is not saved"
expect_grep "no nodes.json: the fix saves it" "fix: save it: kubectl get nodes -o json > $T_DIR/nonodes/nodes.json" "$T_OUT"
verdict_line "no nodes.json: tcpxo-versions still judged" tcpxo-versions OK "a released pair"
if [ -s "$T_DIR/resaved/pods.json" ] && [ ! -e "$T_DIR/resaved/nodes.json" ] && [ ! -e "$T_DIR/resaved/daemonsets.json" ]; then
  ok "--save from a partial save writes what it read, no empty stand-in"
else
  not_ok "--save from a partial save writes no empty stand-in" "$(ls "$T_DIR/resaved")"
fi

# ---- bad input ----
mkdir -p "$T_DIR/bad"
cp "$LISTS/tcpxo-healthy/"*.json "$T_DIR/bad/"
printf '{"items": [' >"$T_DIR/bad/nodes.json"
one_error "truncated nodes.json: exit 10 naming it" 10 "nodes.json" cluster --from "$T_DIR/bad"
echo '"just a string"' >"$T_DIR/bad/nodes.json"
one_error "nodes.json not a list: exit 10" 10 "expected a kubectl list" cluster --from "$T_DIR/bad"
one_error "unknown check: exit 2" 2 "unknown cluster check 'nicinfo'; known: gpu-nic-networks" \
  cluster --from "$LISTS/tcpxo-healthy" nicinfo
one_error "bad --pair: exit 2" 2 "PLUGIN=DAEMON" cluster --from "$LISTS/tcpxo-healthy" --pair v1.0.15
one_error "bad --timeout: exit 2" 2 "--timeout" cluster --timeout 0
run doctor cluster --from "$LISTS/tcpxo-broken" --pair v1.0.15=v1.0.20 tcpxo-versions
verdict_line "--pair accepts v1.0.20; two daemon versions still fail" tcpxo-versions FAIL \
  "tcpxo-daemon versions differ across pods"

# ---- through kubectl ----
cat >"$T_DIR/kubectl" <<SH
#!/bin/sh
if [ "\$1" = logs ]; then
  # kubectl logs -n NS POD -c CONTAINER --tail=N ...: the saved log, else kubectl's error
  f="\${FAKE_LISTS}/logs/\$3.\$4.\$6.log"
  [ -f "\$f" ] && exec cat "\$f"
  echo "error: container \$6 is not valid for pod \$4" >&2; exit 1
fi
res=; prev=; for a; do [ "\$prev" = get ] && res=\$a; prev=\$a; done
case "\${FAKE_KUBECTL:-ok}:\$res" in
  nocrd:networks.networking.gke.io)
    echo 'error: the server doesn'"'"'t have a resource type "networks"' >&2; exit 1;;
  down:*) echo 'E1130 memcache.go:265 couldn'"'"'t get current server API group list' >&2
          echo 'Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout' >&2; exit 1;;
esac
case "\$res" in
  networks.networking.gke.io) cat "\${FAKE_LISTS}/networks.json";;
  nodes) cat "\${FAKE_LISTS}/nodes.json";;
  pods) cat "\${FAKE_LISTS}/pods.json";;
  daemonsets) cat "\${FAKE_LISTS}/daemonsets.json" 2>/dev/null || echo '{"items": []}';;
  *.*) echo 'error: the server doesn'"'"'t have a resource type "crd"' >&2; exit 1;;
  *) echo "unexpected: \$*" >&2; exit 2;;
esac
SH
chmod +x "$T_DIR/kubectl"
kube() { env -i PATH="$PATH" FAKE_LISTS="$1" FAKE_KUBECTL="$2" "$FB_BIN/fabric-doctor" cluster --kubectl "$T_DIR/kubectl" "${@:3}"; }

run kube "$LISTS/tcpxo-broken" ok --save "$T_DIR/saved"
if [ "$T_RC" -eq 31 ] && grep -q '^FAIL  nic-info' "$T_OUT"; then ok "kubectl: same verdicts as the saved lists"; else not_ok "kubectl: same verdicts" "exit $T_RC: $(cat "$T_OUT" "$T_ERR")"; fi
expect_exit "--save then --from gives the same exit" 31 doctor cluster --from "$T_DIR/saved"
check "--save wrote pods.json" test -s "$T_DIR/saved/pods.json"
run kube "$LISTS/rdma-healthy" nocrd
if [ "$T_RC" -eq 0 ] && grep -q 'not served by this cluster' "$T_OUT"; then
  ok "kubectl: a cluster without the Network CRD is not an error"
else
  not_ok "kubectl: a cluster without the Network CRD is not an error" "exit $T_RC: $(cat "$T_OUT" "$T_ERR")"
fi
run kube "$LISTS/rdma-healthy" down
if [ "$T_RC" -eq 9 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] && grep -q 'Unable to connect' "$T_ERR"; then
  ok "kubectl failing: exit 9, one line with its message"
else
  not_ok "kubectl failing: exit 9, one line with its message" "exit $T_RC: $(cat "$T_ERR")"
fi
one_error "no kubectl: exit 5" 5 "install kubectl or read saved lists with --from DIR" \
  cluster --kubectl "$T_DIR/no-such-kubectl"
