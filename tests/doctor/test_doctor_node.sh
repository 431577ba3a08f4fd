#!/usr/bin/env bash
# fabric-doctor node end to end: healthy fake trees pass, each broken copy
# fails the one check it breaks with the culprit named, bad input gets one
# line and its documented exit code, and the live machine (no GPU, no RDMA)
# gets a sensible checklist and a valid document.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# verdict_line from here; its doctor() gives way to this script's own below.
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

TREES=$FB_ROOT/tests/fixtures/doctor/node
TOPO=$FB_ROOT/tests/fixtures/doctor/topo
SCHEMA=$FB_ROOT/docs/schema/doctor.schema.json
DR_ENV=()

# A clean environment: the checks judge NCCL_* variables, and the caller's
# must not leak in. DR_ENV adds the ones a case wants.
doctor() { env -i PATH="$PATH" "${DR_ENV[@]}" "$FB_BIN/fabric-doctor" "$@"; }

# copy_tree NAME: a private copy of a fixture tree to break, in $TREE.
copy_tree() {
  TREE=$T_DIR/tree-$RANDOM$RANDOM
  cp -a "$TREES/$1" "$TREE"
}

# broken NAME CODE CHECK VERDICT REGEX ARGS...: runs, checks exit and line.
broken() {
  local name=$1 code=$2 check=$3 verdict=$4 regex=$5; shift 5
  run doctor node "$@"
  if [ "$T_RC" -ne "$code" ]; then
    not_ok "$name" "exit $T_RC, expected $code: $(cat "$T_OUT" "$T_ERR" | head -c 800)"
  else
    verdict_line "$name" "$check" "$verdict" "$regex"
  fi
}

# one_error NAME CODE REGEX ARGS...: exit CODE, one stderr line matching REGEX.
one_error() {
  local name=$1 code=$2 regex=$3; shift 3
  expect_stderr_line "$name" "$code" "$regex" doctor "$@"
}

# ---- healthy trees ----
run doctor node --root "$TREES/ib-healthy" -J "$T_DIR/ib.json"
if [ "$T_RC" -eq 0 ] && ! grep -Eq '^(WARN|FAIL) ' "$T_OUT"; then
  ok "healthy InfiniBand node: exit 0, no WARN or FAIL"
else
  not_ok "healthy InfiniBand node: exit 0, no WARN or FAIL" "exit $T_RC: $(grep -E '^(WARN|FAIL)' "$T_OUT")"
fi
verdict_line "healthy IB: peermem loaded" peermem OK "nvidia_peermem loaded"
verdict_line "healthy IB: 8 HCAs active" rdma-devices OK "8 devices"
check "healthy IB: document valid against doctor.schema.json" json_valid "$SCHEMA" "$T_DIR/ib.json"
expect_grep "healthy IB: document says exit 0" '"exit_code": 0' "$T_DIR/ib.json"

run doctor node --root "$TREES/roce-healthy"
expect_exit "healthy RoCE node with dma-buf: exit 0" 0 doctor node --root "$TREES/roce-healthy"
verdict_line "healthy RoCE: dma-buf instead of peermem" peermem OK "dma-buf works"
verdict_line "healthy RoCE: MTU 9000" mtu OK "RoCE netdevs: 2 x 9000"

run doctor node --root "$TREES/tcpxo-healthy" --pid 1
if [ "$T_RC" -eq 0 ] && grep -q "fabric tcpxo (detected" "$T_OUT"; then
  ok "healthy TCPXO pod (environment of PID 1): exit 0, fabric detected"
else
  not_ok "healthy TCPXO pod (environment of PID 1): exit 0, fabric detected" "exit $T_RC: $(head -c 600 "$T_OUT")"
fi
verdict_line "TCPXO: RDMA checks skipped" rdma-devices SKIP "applies to RDMA nodes"
verdict_line "TCPXO: FasTrak NIC MTUs agree" mtu OK "NCCL_FASTRAK_IFNAME interfaces: 8 x 8244"

# ---- one broken thing at a time ----
copy_tree ib-healthy
sed -i '/^nvidia_peermem /d' "$TREE/proc/modules"
broken "peermem unloaded: FAIL names nvidia_peermem (exit 31)" 31 peermem FAIL \
  "nvidia_peermem not in /proc/modules" --root "$TREE"

copy_tree ib-healthy
sed -i 's/^\(Max locked memory *\)unlimited *unlimited/\165536                65536/' "$TREE/proc/self/limits"
sed -i 's/^CapEff:.*/CapEff:\t00000000a80425fb/' "$TREE/proc/self/status"
broken "memlock 64 KiB without IPC_LOCK: FAIL memlock" 31 memlock FAIL "64 KiB without CAP_IPC_LOCK" --root "$TREE"
verdict_line "memlock 64 KiB without IPC_LOCK: FAIL ipc-lock" ipc-lock FAIL "CAP_IPC_LOCK not held"

copy_tree ib-healthy
rm -r "$TREE/dev/infiniband"
broken "no /dev/infiniband in the container: FAIL" 31 rdma-devices FAIL "no /dev/infiniband" --root "$TREE"

copy_tree ib-healthy
echo "1: DOWN" >"$TREE/sys/class/infiniband/mlx5_3/ports/1/state"
broken "one HCA port down: WARN naming mlx5_3 (exit 30)" 30 rdma-devices WARN "mlx5_3 port 1 DOWN" --root "$TREE"

DR_ENV=("NCCL_IB_HCA=mlx5_0,mlx5_9")
broken "NCCL_IB_HCA names a missing HCA: FAIL names mlx5_9" 31 ib-hca FAIL "'mlx5_9' matches no RDMA device" \
  --root "$TREES/ib-healthy"
DR_ENV=(NCCL_SOCKET_IFNAME=ens9)
broken "NCCL_SOCKET_IFNAME names a missing interface: FAIL names ens9" 31 socket-ifname FAIL \
  "'ens9' matches no interface" --root "$TREES/ib-healthy"
DR_ENV=(NCCL_SOCKET_IFNAME=^docker0)
broken "NCCL_SOCKET_IFNAME=^docker0 leaves loopback: WARN" 30 socket-ifname WARN "leaves lo selectable" \
  --root "$TREES/ib-healthy"
DR_ENV=()

copy_tree roce-healthy
echo 1500 >"$TREE/sys/class/net/ens2f0np0/mtu"
broken "RoCE netdev at MTU 1500: FAIL names ens2f0np0" 31 mtu FAIL "ens2f0np0 has MTU 1500 < 4200" --root "$TREE"

copy_tree roce-healthy
echo 4200 >"$TREE/sys/class/net/ens2f0np0/mtu"
broken "RoCE MTU mismatch 9000 vs 4200: WARN" 30 mtu WARN "most have 9000, but ens2f0np0 4200" --root "$TREE"

copy_tree ib-healthy
sed -i 's/size=67108864k/size=65536k/' "$TREE/proc/self/mounts"
broken "64 MiB /dev/shm: FAIL" 31 shm FAIL "/dev/shm is 64 MiB" --root "$TREE"

copy_tree tcpxo-healthy
rm -r "$TREE/dev/aperture_devices"
broken "TCPXO without aperture devices: FAIL" 31 tcpxo-aperture FAIL "no /dev/aperture_devices" --root "$TREE" --pid 1

copy_tree tcpxo-healthy
rm "$TREE/usr/local/nvidia/lib64/nccl-env-profile.sh"
broken "TCPXO without the env profile: FAIL" 31 tcpxo-profile FAIL "nccl-env-profile.sh" --root "$TREE" --pid 1

copy_tree tcpxo-healthy
echo 1460 >"$TREE/sys/class/net/eth5/mtu"
broken "TCPXO data NIC at another MTU: WARN names eth5" 30 mtu WARN "but eth5 1460" --root "$TREE" --pid 1

# ---- topology through --topology ----
broken "GPU/NIC affinity healthy from XML: OK" 0 gpu-nic-affinity OK "8 GPUs on 8 fabric NICs" \
  --root "$TREES/ib-healthy" --topology "$TOPO/h100-8gpu-8nic.xml"
broken "NIC on the wrong socket from XML: WARN (exit 30)" 30 gpu-nic-affinity WARN "GPU5" \
  --root "$TREES/ib-healthy" --topology "$TOPO/h100-nic-wrong-socket.xml"

# ---- naming checks ----
run doctor node --root "$TREES/bare" shm peermem
n=$(grep -cE '^(OK|WARN|FAIL|SKIP) ' "$T_OUT")
if [ "$n" -eq 2 ] && [ "$T_RC" -eq 31 ]; then ok "named checks run alone (2 lines, exit 31)"; else not_ok "named checks run alone" "$n lines, exit $T_RC"; fi
run doctor node --root "$TREES/bare" tcpxo-aperture
verdict_line "a named check runs outside its fabric" tcpxo-aperture FAIL "no /dev/aperture_devices"

# ---- bad input ----
one_error "unknown check: exit 2, one line listing the known ones" 2 \
  "unknown node check 'peermen'; known: peermem, memlock" node peermen
one_error "cluster check asked of node: exit 2" 2 "unknown node check 'nic-info'" node nic-info
one_error "unknown option: exit 2" 2 "unknown option '--rot'" node --rot /x
one_error "no mode: exit 2" 2 "say fabric-doctor node, cluster or list" ""
one_error "unknown mode: exit 2" 2 "unknown mode 'nodes'" nodes
one_error "bad --fabric: exit 2" 2 "use auto, rdma or tcpxo" node --fabric ib
one_error "--json with -J: exit 2" 2 "exclusive" node --json -J "$T_DIR/x.json"
one_error "--root not a directory: exit 10" 10 "--root $T_DIR/nope is not a directory" node --root "$T_DIR/nope"
one_error "--pid of no process: exit 10" 10 "no process 999999" node --root "$TREES/ib-healthy" --pid 999999
one_error "--pid not a number: exit 2" 2 "--pid" node --pid abc
one_error "--topology missing: exit 10" 10 "cannot open .*none.xml" node --topology "$T_DIR/none.xml"
printf '<topology version="2.0"><object' >"$T_DIR/bad.xml"
one_error "--topology not hwloc XML: exit 10" 10 "not an hwloc XML topology" node --topology "$T_DIR/bad.xml"
run doctor node --root "$TREES/ib-healthy" -J /proc/fabric-doctor/x.json
if [ "$T_RC" -eq 7 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] && grep -q '^OK ' "$T_OUT"; then
  ok "unwritable -J: exit 7, one line, checklist still printed"
else
  not_ok "unwritable -J: exit 7, one line, checklist still printed" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi

# ---- the live machine: no GPU and no RDMA here ----
run doctor node --json
if [ "$T_RC" -eq 30 ] || [ "$T_RC" -eq 31 ] || [ "$T_RC" -eq 0 ]; then
  ok "live node: a verdict exit code ($T_RC), no crash"
else
  not_ok "live node: a verdict exit code" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
cp "$T_OUT" "$T_DIR/live.json"
check "live node: document valid" json_valid "$SCHEMA" "$T_DIR/live.json"
run doctor node
n=$(grep -cE '^(OK|WARN|FAIL|SKIP) +[a-z-]+ +[^ ]' "$T_OUT")
if [ "$n" -eq 13 ]; then ok "live node: all 13 checks report with evidence"; else not_ok "live node: all 13 checks report" "$n lines"; fi
if [ -e /dev/infiniband ] || [ -d /sys/class/infiniband ]; then
  skip "live node: missing RDMA is named" "this machine has RDMA"
else
  verdict_line "live node: missing RDMA is named" rdma-devices FAIL "no RDMA device"
fi
run doctor node --fabric tcpxo
verdict_line "live node as TCPXO: aperture devices missing" tcpxo-aperture FAIL "no /dev/aperture_devices"

# ---- a document that breaks the schema is caught ----
sed 's/"verdict": "ok"/"verdict": "fine"/' "$T_DIR/ib.json" >"$T_DIR/broken.json"
expect_exit "schema rejects an unknown verdict" 1 json_valid "$SCHEMA" "$T_DIR/broken.json"

run doctor list
expect_grep "list names every check" '^  gpu-nic-affinity ' "$T_OUT"

# ---- help and the cluster label ----
expect_exit "node --help: exit 0" 0 doctor node --help
expect_grep "node --help: usage on stdout" '^usage: fabric-doctor node' "$T_OUT"
run doctor node --root "$TREES/ib-healthy" --cluster lab-a --json
expect_grep "--cluster labels the document" '"cluster": "lab-a"' "$T_OUT"
DR_ENV=(FABRIC_CLUSTER=lab-b)
run doctor node --root "$TREES/ib-healthy" --json
expect_grep "FABRIC_CLUSTER labels the document" '"cluster": "lab-b"' "$T_OUT"
expect_grep "FABRIC_* is kept in the document's env" '"FABRIC_CLUSTER": "lab-b"' "$T_OUT"
DR_ENV=()
