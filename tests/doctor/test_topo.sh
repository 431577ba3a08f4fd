#!/usr/bin/env bash
# fabric-topo end to end: tables and documents for the modelled servers,
# the live machine (no GPU here), and one-line errors for bad input.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

TOPO=$FB_ROOT/tests/fixtures/doctor/topo
SCHEMA=$FB_ROOT/docs/schema/topology.schema.json
topo() { env -i PATH="$PATH" "$FB_BIN/fabric-topo" "$@"; }

one_error() {
  local name=$1 code=$2 regex=$3; shift 3
  expect_stderr_line "$name" "$code" "$regex" topo "$@"
}

run topo --topology "$TOPO/h100-8gpu-8nic.xml" -J "$T_DIR/healthy.json"
expect_grep "healthy: table row per GPU with its PIX NIC" '^GPU5 +0000:aa:00.0 .* mlx5_5 +PIX$' "$T_OUT"
expect_grep "healthy: path matrix shows SYS across sockets" '^GPU0 +NODE +NODE +PIX +NODE +NODE +NODE +SYS' "$T_OUT"
expect_grep "healthy: rank 3's CPUs on socket 0" '^3 +GPU3 +mlx5_3 +PIX +0 +42-55,154-167$' "$T_OUT"
expect_grep "healthy: NCCL_IB_HCA suggestion" '^suggested: NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7$' "$T_OUT"
expect_grep "healthy: no findings" '^findings: none$' "$T_OUT"
if [ "$T_RC" -eq 0 ]; then ok "healthy: exit 0"; else not_ok "healthy: exit 0" "exit $T_RC"; fi
check "healthy: document valid against topology.schema.json" json_valid "$SCHEMA" "$T_DIR/healthy.json"
expect_grep "healthy: host name from the export" '"hosts": \[ "gpu-healthy" \]|"gpu-healthy"' "$T_DIR/healthy.json"

# hwloc's 3.0 format (an extra prog-if byte in pci_type, OS device kinds
# as a bitmask: network 16, OpenFabrics 48, co-processor 12, GPU 4,
# storage 1) reads as 2.0 does.
sed 's/topology version="2.0"/topology version="3.0"/; s/pci_type="\(0[0-9a-f]*\) \(\[[^"]*\)"/pci_type="\1 \2 00"/
     s/osdev_type="2"/osdev_type="16"/; s/osdev_type="3"/osdev_type="48"/; s/osdev_type="5"/osdev_type="12"/
     s/osdev_type="1"/osdev_type="4"/; s/osdev_type="0"/osdev_type="1"/' \
  "$TOPO/h100-8gpu-8nic.xml" >"$T_DIR/v3.xml"
run topo --topology "$T_DIR/v3.xml"
expect_grep "hwloc 3.0 export: the same GPU-to-NIC table" '^GPU5 +0000:aa:00.0 .* mlx5_5 +PIX$' "$T_OUT"
if [ "$T_RC" -eq 0 ]; then ok "hwloc 3.0 export: exit 0"; else not_ok "hwloc 3.0 export: exit 0" "exit $T_RC"; fi

# An annotated export (docs/doctor.md, Annotated exports): a comment above
# the root, one after every object, a multi-line one that comments a NIC
# out, a processing instruction. It reads as the export without them.
run topo --topology "$TOPO/h100-8gpu-8nic.xml"
tail -n +2 "$T_OUT" >"$T_DIR/clean.table"
awk 'NR == 2 { print; print "<!-- gpu-node-7, exported by ops; racked in row 4 -->"; next }
     /<object type="PCIDev"/ && !done { print "  <!--\n  spare NIC, pulled:\n  <object type=\"PCIDev\" pci_busid=\"0000:ee:00.0\" pci_type=\"0207 [15b3:1021] [15b3:0023] 00\"/>\n  -->"; print "<?ops checked?>"; done = 1 }
     { print } /<\/object>/ { print "<!-- checked - ok -->" }' "$TOPO/h100-8gpu-8nic.xml" >"$T_DIR/annotated.xml"
run topo --topology "$T_DIR/annotated.xml"
if [ "$T_RC" -eq 0 ] && tail -n +2 "$T_OUT" | diff -q - "$T_DIR/clean.table" >/dev/null; then
  ok "an annotated export: the same tables as without its comments"
else
  not_ok "an annotated export: the same tables" "exit $T_RC: $(head -c 300 "$T_ERR")$(tail -n +2 "$T_OUT" | diff - "$T_DIR/clean.table" | head -5)"
fi
sed '2a<!-- do -- not -->' "$TOPO/2gpu-cross-socket.xml" >"$T_DIR/annotated-bad.xml"
one_error "'--' inside a comment: exit 10 naming the line" 10 "annotated-bad.xml line 3: a comment holds '--'" \
  --topology "$T_DIR/annotated-bad.xml"
# lstopo (hwloc's libxml2 reader) on the same bytes, where it is installed:
# it reads comments around the root and refuses '--' in one, as fabric-topo.
if command -v lstopo >/dev/null; then
  sed -e '2a<!-- a\n  note -->' -e '$a<!-- end -->' "$TOPO/2gpu-cross-socket.xml" >"$T_DIR/around.xml"
  if lstopo --input "$T_DIR/around.xml" --of xml - >/dev/null 2>&1 && topo --topology "$T_DIR/around.xml" >/dev/null &&
     ! lstopo --input "$T_DIR/annotated-bad.xml" --of xml - >/dev/null 2>&1; then
    ok "lstopo and fabric-topo agree: comments around the root read, '--' in one refused"
  else
    not_ok "lstopo and fabric-topo agree on comments" "$(lstopo --input "$T_DIR/around.xml" --of xml - 2>&1 >/dev/null | head -2)"
  fi
else
  skip "lstopo and fabric-topo agree on comments" "no lstopo (the hwloc package)"
fi

# What hwloc 3.0 writes that 2.x does not read (OS device kinds as a
# bitmask, the host name after the root object): the same table as 2.0.
run topo --topology "$TOPO/h100-8gpu-8nic-v3.xml"
tail -n +2 "$T_OUT" | sed 's/-v3\.xml//' >"$T_DIR/v3.table"
run topo --topology "$TOPO/h100-8gpu-8nic.xml"
if tail -n +2 "$T_OUT" | diff -q - "$T_DIR/v3.table" >/dev/null; then
  ok "hwloc 3.0 export (osdev_type bitmask): the same tables as its 2.0 export"
else
  not_ok "hwloc 3.0 export: the same tables as 2.0" "$(tail -n +2 "$T_OUT" | diff - "$T_DIR/v3.table" | head -5)"
fi

# Documents with the findings of unsure inputs stay valid, with their codes.
while read -r file code; do
  run topo --topology "$TOPO/$file" --json
  cp "$T_OUT" "$T_DIR/$file.json"
  check "$file: document valid" json_valid "$SCHEMA" "$T_DIR/$file.json"
  # shellcheck disable=SC2016 # $c is jq's variable
  check "$file: finding $code" jq -e --arg c "$code" '[.findings[].code] | index($c) != null' "$T_DIR/$file.json"
done <<'TABLE'
2gpu-io-at-root-v1.xml locality-unknown
mi50-4gpu-display-class.xml gpu-unconfirmed
ws-1gpu-10g-gige-wifi.xml not-fabric
TABLE
check "I/O at the root: its path is unknown, its NUMA node null" \
  jq -e '.gpus[1].links.mlx5_0 == "unknown" and .gpus[1].numa == null and .ranks[1].level == "unknown"' \
  "$T_DIR/2gpu-io-at-root-v1.xml.json"

run topo --topology "$TOPO/h100-nic-wrong-socket.xml"
expect_grep "wrong socket: the idle NIC is named" '^WARN nic-unused +mlx5_5 ' "$T_OUT"
expect_grep "wrong socket: the imbalance is named" '^WARN socket-imbalance .*idle there: mlx5_5' "$T_OUT"
expect_grep "wrong socket: GPU5 has no NIC on its switch" '^WARN far-nic +GPU5 ' "$T_OUT"
if [ "$T_RC" -eq 0 ]; then ok "warnings do not change the exit code"; else not_ok "warnings do not change the exit code" "exit $T_RC"; fi

# The same machine as hwloc 1.x exported it (I/O beside the socket, under
# its NUMA node): the same sockets, so the same findings.
run topo --topology "$TOPO/h100-nic-wrong-socket-v1.xml"
expect_grep "1.x export: NICs keep their socket" '^mlx5_5 +0000:6b:00.0 .* 0 +0 ' "$T_OUT"
expect_grep "1.x export: the imbalance is named as for 2.x" '^WARN socket-imbalance .*socket 0: 4 GPUs, 5 NICs; socket 1: 4 GPUs, 3 NICs.*idle there: mlx5_5' "$T_OUT"

run topo --topology "$TOPO/h100-8gpu-4nic.xml" --json
cp "$T_OUT" "$T_DIR/four.json"
check "GPUs outnumber NICs: document valid" json_valid "$SCHEMA" "$T_DIR/four.json"
expect_grep "GPUs outnumber NICs: nic-shared findings" '"code": "nic-shared"' "$T_DIR/four.json"
expect_grep "GPUs outnumber NICs: PXB through two switches" '"nearest_level": "PXB"' "$T_DIR/four.json"

run topo --topology "$TOPO/2gpu-cross-socket.xml"
expect_grep "cross-socket NIC named" '^WARN cross-socket +GPU1 .*mlx5_1 is on socket 0' "$T_OUT"

# What hwloc exports of other ages hold: GPU0's CUDA and NVML devices
# gone (found by vendor and class), its RDMA device filed as a network
# OS device (hwloc 1.x), and the BMC VGA given an OpenCL device as a
# Radeon would have: still 2 GPUs, mlx5_0 still the RDMA device.
sed -e '/name="cuda0"/,/<\/object>/d' -e '/name="nvml0"/,/<\/object>/d' \
    -e 's/name="mlx5_0" osdev_type="3"/name="mlx5_0" osdev_type="2"/' \
    -e 's/pci_type="0300 \[1a03:2000\] \[1a03:2000\] 52"/pci_type="0300 [1002:6798] [1002:3000] 00"/' \
    -e 's/name="card0" osdev_type="1"/name="opencl0d0" osdev_type="5"/' "$TOPO/2gpu-cross-socket.xml" >"$T_DIR/aged.xml"
run topo --topology "$T_DIR/aged.xml" --json
check "an aged export: GPUs by vendor and class, not the Radeon" \
  jq -e '[.gpus[].pci_bus_id] == ["0000:18:00.0", "0000:9a:00.0"]' "$T_OUT"
check "an aged export: an RDMA device filed as a network device is still the RDMA device" \
  jq -e '[.nics[] | select(.rdma_device == "mlx5_0")] | length == 1' "$T_OUT"

run topo --topology "$TOPO/h100-8gpu-8nic.xml" --nics '^=mlx5_7'
expect_grep "--nics exclusion: GPU7 falls back to a NODE NIC" '^7 +GPU7 +mlx5_4 +NODE ' "$T_OUT"

run topo --topology "$TOPO/synthetic-2pack-noio.xml"
expect_grep "hwloc synthetic machine: no GPU, said plainly" '^no GPU found' "$T_OUT"

# The live machine: loads, says what it found, writes a valid document.
run topo -J "$T_DIR/live.json"
if [ "$T_RC" -eq 0 ] && grep -q '^machine: ' "$T_OUT"; then ok "live machine: exit 0 and a summary"; else not_ok "live machine" "exit $T_RC: $(cat "$T_ERR")"; fi
check "live machine: document valid" json_valid "$SCHEMA" "$T_DIR/live.json"

one_error "missing topology: exit 10" 10 "cannot open $T_DIR/none.xml" --topology "$T_DIR/none.xml"
printf '<?xml version="1.0"?>\n<topology version="2.0"><object type="Machine">' >"$T_DIR/cut.xml"
one_error "truncated XML: exit 10, one line" 10 "not an hwloc XML topology" --topology "$T_DIR/cut.xml"
one_error "bad --nics: exit 2" 2 "--nics='mlx5_0:x'" --nics 'mlx5_0:x'
one_error "--nics of list markers only: exit 2" 2 "'=' is not a device name" --topology "$TOPO/h100-8gpu-8nic.xml" --nics '^=,,=,^'
one_error "unknown option: exit 2" 2 "unknown option '--strict'" --strict
one_error "stray argument: exit 2" 2 "unexpected argument 'gpu0'" gpu0
one_error "--json with -J: exit 2" 2 "exclusive" --json -J "$T_DIR/x.json"
run topo --help
expect_grep "--help explains the levels" 'PIX/PXB/PHB/NODE/SYS' "$T_OUT"
