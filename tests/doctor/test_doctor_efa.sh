#!/usr/bin/env bash
# fabric-doctor node's AWS EFA checks end to end over fake trees built here:
# a p5 pod with EFA devices, the OFI plugin and the settings it wants
# passes; each broken setting fails or warns naming its variable, with a
# fix; a node without EFA skips; efa-provider skips under --root, on this
# machine (no EFA) and in a build without libfabric, and fails naming the
# library when a fake EFA device (a mount namespace, as root) makes it ask
# this machine's libfabric; documents validate.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/doctor/common.sh
. "$(dirname "$0")/common.sh"

SCHEMA=$FB_ROOT/docs/schema/doctor.schema.json
PLUGIN_DIR=/opt/amazon/ofi-nccl/lib
DR_ENV=()

# The checks judge the environment: nothing of the caller's leaks in.
doctor() { env -i PATH="$PATH" "${DR_ENV[@]}" "$FB_BIN/fabric-doctor" "$@"; }

# efa_tree DIR N: a p5.48xlarge pod's view with N EFA devices (driver link,
# node type, an ACTIVE port, uverbs files) and aws-ofi-nccl installed.
efa_tree() {
  local tree=$1 n=$2 i d
  mkdir -p "$tree/dev/infiniband" "$tree/sys/devices/virtual/dmi/id" "$tree$PLUGIN_DIR"
  for ((i = 0; i < n; i++)); do
    d=$tree/sys/class/infiniband/rdmap$((16 * (i + 1)))s27
    mkdir -p "$d/device" "$d/ports/1"
    ln -s ../../../../bus/pci/drivers/efa "$d/device/driver"
    echo "7: unspecified" >"$d/node_type"
    echo "4: ACTIVE" >"$d/ports/1/state"
    echo "Unknown" >"$d/ports/1/link_layer"
    echo "100 Gb/sec (4X EDR)" >"$d/ports/1/rate"
    : >"$tree/dev/infiniband/uverbs$i"
  done
  echo p5.48xlarge >"$tree/sys/devices/virtual/dmi/id/product_name"
  : >"$tree$PLUGIN_DIR/libnccl-net-ofi.so"
  ln -s libnccl-net-ofi.so "$tree$PLUGIN_DIR/libnccl-net.so"
}

GOOD_ENV=("LD_LIBRARY_PATH=$PLUGIN_DIR:/opt/amazon/efa/lib" FI_PROVIDER=efa FI_EFA_USE_DEVICE_RDMA=1)

# efa_case NAME CODE VERDICT REGEX CHANGE...: the efa check alone on the
# healthy tree, under the good settings with each CHANGE made: VAR=VALUE
# sets, -VAR unsets.
efa_case() {
  local name=$1 code=$2 verdict=$3 regex=$4 e a; shift 4
  DR_ENV=()
  for e in "${GOOD_ENV[@]}"; do
    for a in "$@"; do [ "$a" = "-${e%%=*}" ] && continue 2; done
    DR_ENV+=("$e")
  done
  for a in "$@"; do case $a in -*) ;; *) DR_ENV+=("$a") ;; esac; done
  run doctor node --root "$EFA" efa
  DR_ENV=()
  if [ "$T_RC" -ne "$code" ]; then
    not_ok "$name" "exit $T_RC, expected $code: $(cat "$T_OUT" "$T_ERR" | head -c 800)"
  else
    verdict_line "$name" efa "$verdict" "$regex"
  fi
}

EFA=$T_DIR/efa
efa_tree "$EFA" 4

# ---- a healthy EFA node ----
DR_ENV=("${GOOD_ENV[@]}")
run doctor node --root "$EFA" -J "$T_DIR/efa.json"
DR_ENV=()
verdict_line "EFA pod: efa OK, devices and instance named" efa OK \
  "4 EFA devices \(rdmap16s27, rdmap32s27, rdmap48s27, rdmap64s27\).*instance p5.48xlarge \(EFA with RDMA\)"
verdict_line "EFA pod: the plugin found on LD_LIBRARY_PATH" efa OK "plugin $PLUGIN_DIR/libnccl-net.so"
verdict_line "EFA pod: efa-provider skips under --root" efa-provider SKIP "asks this host's libfabric, not a --root tree"
verdict_line "EFA devices are RDMA devices too" rdma-devices OK "4 devices"
expect_grep "EFA pod: the fabric is detected as RDMA" "fabric rdma \(detected: 4 RDMA devices\)" "$T_OUT"
check "EFA pod: document valid against doctor.schema.json" json_valid "$SCHEMA" "$T_DIR/efa.json"
jq_is "EFA pod: document has efa ok, no fix" "$T_DIR/efa.json" \
  '[.checks[] | select(.name == "efa") | .verdict, .fix]' '["ok",null]'

# ---- each setting broken ----
efa_case "FI_PROVIDER=tcp: FAIL naming FI_PROVIDER (exit 31)" 31 FAIL "FI_PROVIDER=tcp keeps libfabric off EFA" \
  FI_PROVIDER=tcp
expect_grep "FI_PROVIDER=tcp: the fix sets FI_PROVIDER=efa" "fix: unset FI_PROVIDER, or set FI_PROVIDER=efa" "$T_OUT"
DR_ENV=("${GOOD_ENV[@]}" FI_PROVIDER=tcp)
run doctor node --root "$EFA" --json efa
DR_ENV=()
cp "$T_OUT" "$T_DIR/tcp.json"
culprit "FI_PROVIDER=tcp: culprit FI_PROVIDER" efa FI_PROVIDER "$T_DIR/tcp.json"
check "FI_PROVIDER=tcp: document valid" json_valid "$SCHEMA" "$T_DIR/tcp.json"
jq_is "FI_PROVIDER=tcp: the failure is among the warnings" "$T_DIR/tcp.json" \
  '[.warnings[] | select(test("FI_PROVIDER=tcp"))] | length' 1

efa_case "NCCL_NET=Socket: FAIL (exit 31)" 31 FAIL "NCCL_NET=Socket is not the OFI plugin's network" NCCL_NET=Socket
expect_grep "NCCL_NET=Socket: the fix unsets NCCL_NET" "fix: unset NCCL_NET" "$T_OUT"
efa_case "NCCL_NET='AWS Libfabric' is the plugin's: OK" 0 OK "4 EFA devices" "NCCL_NET=AWS Libfabric"

efa_case "p5 without FI_EFA_USE_DEVICE_RDMA: WARN (exit 30)" 30 WARN \
  "FI_EFA_USE_DEVICE_RDMA unset on p5.48xlarge, whose EFA does RDMA" -FI_EFA_USE_DEVICE_RDMA
expect_grep "FI_EFA_USE_DEVICE_RDMA: the fix sets it to 1" "fix: set FI_EFA_USE_DEVICE_RDMA=1" "$T_OUT"
efa_case "p5 with FI_EFA_USE_DEVICE_RDMA=0: WARN" 30 WARN "FI_EFA_USE_DEVICE_RDMA is 0 on p5.48xlarge" \
  FI_EFA_USE_DEVICE_RDMA=0

efa_case "NCCL_PROTO=LL128 leaves out Simple: WARN" 30 WARN "NCCL_PROTO=LL128 leaves out Simple" NCCL_PROTO=LL128
efa_case "NCCL_PROTO=simple (the legacy advice): OK" 0 OK "4 EFA devices" NCCL_PROTO=simple
efa_case "NCCL_PROTO=^LL128 keeps Simple: OK" 0 OK "4 EFA devices" "NCCL_PROTO=^LL128"

efa_case "NCCL_NET_PLUGIN=none: FAIL" 31 FAIL "NCCL_NET_PLUGIN=none: NCCL loads no network plugin" NCCL_NET_PLUGIN=none
efa_case "NCCL_NET_PLUGIN=ofi finds libnccl-net-ofi.so: OK" 0 OK "plugin $PLUGIN_DIR/libnccl-net-ofi.so \(NCCL_NET_PLUGIN\)" \
  NCCL_NET_PLUGIN=ofi

# The plugin missing, then installed but off the loader's path.
NOPLUGIN=$T_DIR/noplugin
efa_tree "$NOPLUGIN" 2
rm "$NOPLUGIN$PLUGIN_DIR"/libnccl-net*.so
DR_ENV=("${GOOD_ENV[@]}")
run doctor node --root "$NOPLUGIN" efa
DR_ENV=()
exit_is "plugin missing: exit 31" 31
verdict_line "plugin missing: FAIL names libnccl-net.so" efa FAIL "no NCCL OFI plugin: libnccl-net.so"
expect_grep "plugin missing: the fix installs aws-ofi-nccl" "fix: install aws-ofi-nccl" "$T_OUT"
efa_case "plugin off LD_LIBRARY_PATH and ld.so.conf: WARN" 30 WARN \
  "$PLUGIN_DIR/libnccl-net.so is in $PLUGIN_DIR, which neither LD_LIBRARY_PATH nor ld.so.conf lists" \
  LD_LIBRARY_PATH=/usr/local/cuda/lib64
mkdir -p "$EFA/etc/ld.so.conf.d"
echo "$PLUGIN_DIR" >"$EFA/etc/ld.so.conf.d/aws-ofi-nccl.conf"
efa_case "plugin listed in ld.so.conf.d: OK" 0 OK "plugin $PLUGIN_DIR/libnccl-net.so" LD_LIBRARY_PATH=/usr/local/cuda/lib64
rm -r "${EFA:?}/etc"

# Every finding at once, the failures first.
efa_case "three findings: FAIL" 31 FAIL "NCCL_NET=Socket" FI_PROVIDER=tcp NCCL_NET=Socket NCCL_PROTO=LL
expect_grep "three findings: the failures first, the warning after" \
  '^FAIL +efa +FI_PROVIDER=tcp .*; NCCL_NET=Socket .*; NCCL_PROTO=LL leaves out Simple' "$T_OUT"

# The workload's environment through --pid.
mkdir -p "$EFA/proc/4242"
printf '%s\0' "LD_LIBRARY_PATH=$PLUGIN_DIR" FI_PROVIDER=sockets FI_EFA_USE_DEVICE_RDMA=1 >"$EFA/proc/4242/environ"
DR_ENV=("${GOOD_ENV[@]}")
run doctor node --root "$EFA" --pid 4242 efa
DR_ENV=()
verdict_line "--pid: the workload's FI_PROVIDER is judged, not ours" efa FAIL "FI_PROVIDER=sockets"
rm -r "$EFA/proc/4242"

# ---- not an EFA node ----
NOEFA=$T_DIR/noefa
mkdir -p "$NOEFA/sys/class/infiniband/mlx5_0/ports/1" "$NOEFA/sys/class/infiniband/mlx5_0/device"
echo "4: ACTIVE" >"$NOEFA/sys/class/infiniband/mlx5_0/ports/1/state"
echo "1: CA" >"$NOEFA/sys/class/infiniband/mlx5_0/node_type"
ln -s ../../../../bus/pci/drivers/mlx5_core "$NOEFA/sys/class/infiniband/mlx5_0/device/driver"
DR_ENV=(FI_PROVIDER=tcp)
run doctor node --root "$NOEFA" -J "$T_DIR/noefa.json" efa
DR_ENV=()
exit_is "InfiniBand node: efa skips, exit 0 even with FI_PROVIDER=tcp" 0
verdict_line "InfiniBand node: no EFA devices" efa SKIP "no EFA devices: not an EFA node$"
check "no-EFA document valid" json_valid "$SCHEMA" "$T_DIR/noefa.json"
run doctor node --root "$EFA" --fabric tcpxo
verdict_line "TCPXO node: efa does not apply" efa SKIP "applies to RDMA nodes"

# ---- this machine: no EFA, so efa-provider skips ----
live_efa=0
for l in /sys/class/infiniband/*/device/driver; do
  [ -L "$l" ] && [ "$(basename "$(readlink "$l")")" = efa ] && live_efa=$((live_efa + 1))
done
if [ "$live_efa" -gt 0 ]; then
  skip "live: efa-provider skips without EFA" "this machine has $live_efa EFA devices"
else
  if command -v fi_info >/dev/null; then
    if fi_info -p efa >/dev/null 2>&1; then
      not_ok "live: fi_info finds no efa provider here" "fi_info -p efa succeeded on a machine without EFA devices"
    else
      ok "live: fi_info -p efa exits non-zero here"
    fi
  fi
  run doctor node efa efa-provider
  exit_is "live: both EFA checks skip, exit 0" 0
  if make -C "$FB_ROOT" -s help | grep 'libfabric: yes' >/dev/null; then
    verdict_line "live: efa-provider skips, no EFA devices" efa-provider SKIP "no EFA devices: not an EFA node"
  else
    verdict_line "live: efa-provider skips, built without libfabric" efa-provider SKIP "built without libfabric"
  fi
  verdict_line "live: efa skips, no EFA devices" efa SKIP "no EFA devices"
fi

# ---- this machine's libfabric asked about a device it cannot open ----
# A fake EFA device in a private mount namespace: the live check then asks
# libfabric, which has no usable efa provider here.
if ! is_root || ! command -v unshare >/dev/null; then
  skip "live with a fake EFA device: efa-provider asks libfabric" "needs root and unshare"
elif ! make -C "$FB_ROOT" -s help | grep 'libfabric: yes' >/dev/null; then
  skip "live with a fake EFA device: efa-provider asks libfabric" "built without libfabric"
else
  fake_efa() { # fake_efa ENV...: fabric-doctor node efa-provider --json with one EFA device in /sys
    # shellcheck disable=SC2016 # the inner shell expands "$@", the command given it
    unshare -m sh -c 'mount -t tmpfs none /sys/class &&
      mkdir -p /sys/class/infiniband/rdmap16s27/device &&
      ln -s ../../../../bus/pci/drivers/efa /sys/class/infiniband/rdmap16s27/device/driver &&
      exec env -i PATH="$PATH" "$@"' sh "$@" "$FB_BIN/fabric-doctor" node --json efa-provider
  }
  run fake_efa
  cp "$T_OUT" "$T_DIR/live-efa.json"
  exit_is "live with a fake EFA device: efa-provider fails, exit 31" 31
  jq_is "live with a fake EFA device: no efa provider, the library named" "$T_DIR/live-efa.json" \
    '.checks[0].evidence | test("^libfabric [0-9]+[.][0-9]+ [(]/.*libfabric[.]so.*[)] has no efa provider with FI_EP_RDM endpoints, though this node has 1 EFA device$")' true
  jq_is "live with a fake EFA device: the fix names the EFA installer's libfabric" "$T_DIR/live-efa.json" \
    '.checks[0].fix | test("/opt/amazon/efa/lib first in LD_LIBRARY_PATH")' true
  check "live with a fake EFA device: document valid" json_valid "$SCHEMA" "$T_DIR/live-efa.json"
  run fake_efa FI_PROVIDER=tcp
  jq_is "live with a fake EFA device and FI_PROVIDER=tcp: the filter named" "$T_OUT" \
    '.checks[0].evidence | endswith("(FI_PROVIDER=tcp filters it out)")' true
fi

# ---- a build without libfabric keeps the check and says why it skips ----
if variant_build noofi MODULES=doctor LIBFABRIC_HOME=/nonexistent; then
  ok "fabric-doctor builds without libfabric"
  if [ -e "$tree/obj/bench/doctor/node_efa_ofi.o" ] || readelf -d "$tree/bin/fabric-doctor" | grep -q libfabric; then
    not_ok "node_efa_ofi.c and -lfabric are left out" "$(readelf -d "$tree/bin/fabric-doctor" | grep -m2 NEEDED)"
  else
    ok "node_efa_ofi.c and -lfabric are left out"
  fi
  run env -i PATH="$PATH" "${GOOD_ENV[@]}" "$tree/bin/fabric-doctor" node --root "$EFA" efa efa-provider
  exit_is "without libfabric: efa still judged, exit 0" 0
  verdict_line "without libfabric: efa-provider skips saying so" efa-provider SKIP "built without libfabric: install libfabric-dev"
else
  not_ok "fabric-doctor builds without libfabric" "$(grep -m3 error "$T_DIR/make.log")"
fi
