#!/usr/bin/env bash
# fabric-rdma's verbs transport across namespace hosts (host set "fbw") on
# the RDMA stand-in (docs/standin.md, "The RDMA stand-in"): a host with a
# slow port named in an all-pairs run, a DOWN port and RoCE v1 / absent GID
# indices refused in one line, a peer killed mid-run named within the
# timeout, perftest's ib_write_bw output imported by fabric-report to the
# figure, GPU memory registered through dma-buf (the libcuda stand-in) or
# peermem, and fabric-doctor reading the same ports the probe opens. About
# 60 s on two cores; needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

rs=$FB_ROOT/scripts/rdma-standin.sh
gs=$FB_ROOT/scripts/gpu-standin.sh
SCHEMA=$FB_ROOT/docs/schema/probe.schema.json
if [ ! -e "$FB_BUILD/standin-rdma/libibverbs.so.1" ]; then
  skip "fabric-rdma verbs on the RDMA stand-in" "not built (no <infiniband/verbs.h>; make standin-rdma)"
  exit 0
fi
jq_ok() {
  if [ "$(jq -r "$3" "$2" 2>/dev/null)" = true ]; then ok "$1"; else not_ok "$1" "jq '$3' on $(head -c 400 "$2" 2>/dev/null)"; fi
}
# fr_err NAME CODE REGEX: the last run exited CODE with exactly one
# "fabric-rdma: " line on stderr, matching REGEX.
fr_err() {
  local lines
  lines=$(grep -c '^fabric-rdma: ' "$T_ERR")
  if [ "$T_RC" -eq "$2" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$3" "$T_ERR"; then ok "$1"
  else not_ok "$1" "exit $T_RC (want $2), $lines error lines: $(grep -v setpgid "$T_ERR" | head -c 600)"; fi
}
hosts_up fbw 4 2 "fabric-rdma verbs across namespace hosts" || exit 0
export FB_STANDIN_IB_DIR=$T_DIR/registry
sysfs_of() { echo "$FB_STANDIN_IB_DIR/sysfs/$1"; } # the tree each host's ranks write
# Each namespace host's orted would bind its rank to core 0: --bind-to none.
KNOBS=(-x LD_LIBRARY_PATH -x FB_STANDIN_IB_DIR -x FB_STANDIN_IB_RATE_GBPS -x FB_STANDIN_IB_STATE
  -x FB_STANDIN_IB_LINK -x FB_STANDIN_IB_SPEED -x FB_STANDIN_IB_WIDTH -x FB_STANDIN_IB_DMABUF)
fr() { # fr NP ARGS...: fabric-rdma on NP hosts, one rank each
  local np=$1; shift
  run timeout -k 10 120 "$rs" "$th" mpirun fbw -q --bind-to none -np "$np" --map-by node "${KNOBS[@]}" \
    "$FB_BIN/fabric-rdma" "$@"
}

# 1. All-pairs over 4 hosts, fbw3's port capped at 0.4 Gb/s, the others at
# 1.6 on 1X SDR ports (2 Gb/s line rate): fbw3's 3 links, and only those,
# are slow; fbw3:mlx5_0 is the one suspect. The threshold is 0.5 since the
# healthy links run at the cap, 80 % of the line rate. Rates this low keep
# every link on its cap while other tests share the cores.
FB_STANDIN_IB_RATE_GBPS='1.6,fbw3:*=0.4' FB_STANDIN_IB_SPEED=SDR FB_STANDIN_IB_WIDTH=1 \
  fr 4 --pattern all-pairs -s 256K -n 100 --threshold 0.5 -J "$T_DIR/ap.json"
if [ "$T_RC" -eq 0 ]; then ok "all-pairs, one slow host: exit 0 (flags are findings)"; else not_ok "all-pairs, one slow host: exit 0" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
if json_valid "$SCHEMA" "$T_DIR/ap.json" 2>/dev/null; then ok "all-pairs result matches the schema"; else not_ok "all-pairs result matches the schema" "invalid"; fi
jq_ok "6 links in 3 rounds, the line rate 2 Gb/s (1X SDR)" "$T_DIR/ap.json" \
  '.complete and .topology.rounds == 3 and (.links | length) == 6 and all(.endpoints[]; .line_rate_Gbps == 2)'
jq_ok "the flagged links are fbw3's 3, against the line rate" "$T_DIR/ap.json" \
  '.summary.flagged == 3 and all(.flags[]; (.src.host == "fbw3" or .dst.host == "fbw3") and .reference == "line-rate")'
jq_is "the one suspect is fbw3's HCA" "$T_DIR/ap.json" '[.suspects[] | .host + ":" + .device]' '["fbw3:mlx5_0"]'
# fbw3 (the third of 4 nodes) writes to fbw1 and fbw4 and is written to
# by fbw2: its port is slow both ways, both paths named.
expect_grep "the text names the suspect's send path" '^# SUSPECT fbw3:mlx5_0\[2\] \(host fbw3, device mlx5_0\): send path slow \(2 of 2 links from it at 0\.20x the line rate\)' "$T_OUT"
expect_grep "the text names the suspect's receive path" '^# SUSPECT fbw3:mlx5_0\[2\] \(host fbw3, device mlx5_0\): receive path slow \(1 of 1 link to it at 0\.20x the line rate\)' "$T_OUT"
run "$FB_BIN/fabric-report" check "$T_DIR/ap.json"
if [ "$T_RC" -eq 20 ] && grep -q 'fbw3' "$T_OUT"; then ok "fabric-report check: DEGRADED (exit 20) naming fbw3"
else not_ok "fabric-report check: DEGRADED (exit 20) naming fbw3" "exit $T_RC: $(head -c 400 "$T_OUT")"; fi

# 2. fbw2's port is DOWN: refused at open, one line naming host, device,
# port and state, exit 9 (docs/probe.md); 7. fabric-doctor reads the same
# port from the tree fbw2's rank wrote.
FB_STANDIN_IB_STATE=fbw2:mlx5_0=down fr 2 -s 1M -n 100 -J "$T_DIR/down.json"
fr_err "DOWN port: exit 9, one line naming fbw2, mlx5_0 port 1, PORT_DOWN, ibstat" 9 \
  'mlx5_0 port 1 on fbw2 is PORT_DOWN .*ibstat mlx5_0 on fbw2'
run "$FB_BIN/fabric-doctor" node --root "$(sysfs_of fbw2)" rdma-devices
expect_grep "doctor agrees: fbw2's mlx5_0 port 1 is DOWN" '^WARN +rdma-devices +1 of 1 RDMA devices have no ACTIVE port: mlx5_0 port 1 DOWN$' "$T_OUT"
run "$FB_BIN/fabric-doctor" node --root "$(sysfs_of fbw1)" rdma-devices
expect_grep "doctor agrees: fbw1's mlx5_0 is ACTIVE InfiniBand" '^OK +rdma-devices +1 device \(mlx5_0\), link InfiniBand .*all ports ACTIVE' "$T_OUT"

# 3. RoCE: -x 3 is RoCE v2 IPv4 and runs; the RoCE v1 entries (0, 2) and an
# absent one (200) are refused in one line listing the table (exit 2).
FB_STANDIN_IB_LINK=eth fr 2 -s 1M -n 100 -x 3 -J "$T_DIR/roce.json"
jq_ok "RoCE -x 3: exit 0, GID 3 RoCE v2 ::ffff:10.77.0.I on both ends" "$T_DIR/roce.json" \
  '.complete and (.links | length) == 1 and ([.endpoints[] | .gid.index, .gid.type, .gid.address] ==
   [3, "RoCE v2", "::ffff:10.77.0.1", 3, "RoCE v2", "::ffff:10.77.0.2"])'
[ "$T_RC" -eq 0 ] || not_ok "RoCE -x 3 exits 0" "exit $T_RC: $(head -c 400 "$T_ERR")"
run "$FB_BIN/fabric-doctor" node --root "$(sysfs_of fbw2)" rdma-devices
if grep -Eq '^OK +rdma-devices +1 device \(mlx5_0\), link Ethernet .*all ports ACTIVE' "$T_OUT" &&
  [ "$(jq -r '.endpoints[1] | .device + " " + .link_layer + " " + .port_state' "$T_DIR/roce.json")" = "mlx5_0 Ethernet PORT_ACTIVE" ]; then
  ok "doctor and probe agree on fbw2: mlx5_0, Ethernet, ACTIVE"
else not_ok "doctor and probe agree on fbw2: mlx5_0, Ethernet, ACTIVE" "$(head -c 300 "$T_OUT") / $(jq -c '.endpoints[1]' "$T_DIR/roce.json")"; fi
table='0 RoCE v1 fe80::[0-9a-f:]+ \(link-local\), 1 RoCE v2 fe80::[0-9a-f:]+ \(link-local\), 2 RoCE v1 ::ffff:10\.77\.0\.1 \(IPv4\), 3 RoCE v2 ::ffff:10\.77\.0\.1 \(IPv4\)'
for x in 0 2; do
  FB_STANDIN_IB_LINK=eth fr 2 -s 1M -n 100 -x "$x" -J "$T_DIR/v1.json"
  fr_err "RoCE -x $x (v1): exit 2, one line with the table and NCCL_IB_GID_INDEX" 2 \
    "GID index $x of mlx5_0 port 1 on fbw1 is RoCE v1.*table: $table; .*NCCL_IB_GID_INDEX.*e\.g\. -x 3$"
done
FB_STANDIN_IB_LINK=eth fr 2 -s 1M -n 100 -x 200 -J "$T_DIR/absent.json"
fr_err "RoCE -x 200 (empty): exit 2, one line with the table and NCCL_IB_GID_INDEX" 2 \
  "GID index 200 of mlx5_0 port 1 on fbw1 is empty; populated: $table; .*NCCL_IB_GID_INDEX"

# 4. fbw2's rank is killed 1 s into a 30 s run; the launcher lets the job
# live on (as fabric-scan's launches do), so fabric-rdma's own bounds end
# it: within --timeout (5 s) and the transport's retry time of the kill,
# naming fbw2, the file keeping the fault.
( timeout -k 10 120 "$rs" "$th" mpirun fbw -q --mca orte_abort_on_non_zero_status 0 --bind-to none -np 2 \
    --map-by node "${KNOBS[@]}" "$FB_BIN/fabric-rdma" -s 1M -D 30 --timeout 5 -J "$T_DIR/kill.json" \
    >"$T_DIR/kill.out" 2>"$T_DIR/kill.err"; echo $? >"$T_DIR/kill.rc" ) &
job=$!
for _ in $(seq 1 100); do
  [ -s "$T_DIR/kill.json" ] && break
  sleep 0.2
done
sleep 1
killed=$(date +%s)
for pid in $(ip netns pids fbw2); do
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = fabric-rdma ] && kill -KILL "$pid"
done
wait "$job"
took=$(( $(date +%s) - killed ))
rc=$(cat "$T_DIR/kill.rc" 2>/dev/null)
if [ "${rc:-0}" -ne 0 ] && [ "$took" -le 15 ] && [ "$(grep -c '^fabric-rdma: ' "$T_DIR/kill.err")" -eq 1 ] &&
  grep -q '^fabric-rdma: .*rank 1 (fbw2)' "$T_DIR/kill.err"; then
  ok "killed peer: the job ends ${took}s after the kill (exit $rc), one line naming rank 1 (fbw2)"
else
  not_ok "killed peer: the job ends within --timeout naming rank 1 (fbw2)" "exit $rc after ${took}s: $(grep -v setpgid "$T_DIR/kill.err" | head -c 500)"
fi
jq_ok "killed peer: the file's fault names fbw2, exit 8 or 9 (docs/probe.md)" "$T_DIR/kill.json" \
  '.complete == false and (.fault.exit_code == 8 or .fault.exit_code == 9) and (.fault.message | test("fbw2"))'

# 5. perftest's ib_write_bw -a (server fbw1, client fbw2, 20 Gb/s), its
# client output imported: every size and BW average exactly as printed. A
# size whose clock calibration failed on a busy CPU prints zeros (-F lets
# the run go on): unknown (null). Its stderr is kept apart so that what
# awk reads is the table alone (the reader of 2>&1 captures is unit-tested).
FB_STANDIN_IB_RATE_GBPS=20 "$th" exec fbw 1 "$rs" timeout -k 5 60 ib_write_bw -d mlx5_0 -a -n 100 -F --report_gbits \
  >"$T_DIR/srv.out" 2>&1 &
srv=$!
perftest_listening fbw 1 "$srv"
FB_STANDIN_IB_RATE_GBPS=20 "$th" exec fbw 2 "$rs" timeout -k 5 60 ib_write_bw -d mlx5_0 -a -n 100 -F --report_gbits fbw1 \
  >"$T_DIR/wbw.out" 2>"$T_DIR/wbw.err"
wrc=$?
wait "$srv"
if [ "$wrc" -eq 0 ] && [ "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$T_DIR/wbw.out" | wc -l)" -eq 23 ]; then
  ok "ib_write_bw -a between fbw1 and fbw2: 23 sizes"
else not_ok "ib_write_bw -a between fbw1 and fbw2: 23 sizes" "exit $wrc: $(tail -c 400 "$T_DIR/wbw.out" "$T_DIR/wbw.err")"; fi
run "$FB_BIN/fabric-report" import "$T_DIR/wbw.out" -o "$T_DIR/imported.json"
want=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $1, ($3 + $4 + $5 == 0 ? "null" : $4 + 0)}' "$T_DIR/wbw.out")
got=$(jq -r '.links[] | "\(.size_bytes) \(.avg_Gbps)"' "$T_DIR/imported.json" 2>/dev/null |
  awk '{print $1, ($2 == "null" ? $2 : $2 + 0)}')
if [ "$T_RC" -eq 0 ] && [ -n "$want" ] && [ "$want" = "$got" ]; then ok "fabric-report import: sizes and BW averages as printed"
else not_ok "fabric-report import: sizes and BW averages as printed" "exit $T_RC $(head -c 300 "$T_ERR"); want $(echo "$want" | tr '\n' ' '); got $(echo "$got" | tr '\n' ' ')"; fi

# 6. --use-cuda under both stand-ins: dma-buf through the libcuda
# stand-in, else (either side refusing) the peermem fallback.
frc() { # frc ARGS...: a --use-cuda pair on fbw1 -> fbw2
  run timeout -k 10 120 "$gs" "$rs" "$th" mpirun fbw -q --bind-to none -np 2 --map-by node "${KNOBS[@]}" \
    -x FB_STANDIN_GPUS -x FB_STANDIN_MEM -x FB_STANDIN_CUDA_DMABUF "$FB_BIN/fabric-rdma" --use-cuda "$@"
}
FB_STANDIN_GPUS=1 FB_STANDIN_MEM=1G frc -s 1M -n 100 -J "$T_DIR/gpu.json"
jq_ok "--use-cuda: exit 0, both ends dmabuf, 200 writes measured" "$T_DIR/gpu.json" \
  '.complete and ([.endpoints[].memory | .kind + "/" + .registration] == ["gpu/dmabuf", "gpu/dmabuf"])
   and .links[0].messages == 200 and .links[0].avg_Gbps > 0'
[ "$T_RC" -eq 0 ] || not_ok "--use-cuda dma-buf exits 0" "exit $T_RC: $(head -c 400 "$T_ERR")"
for knob in FB_STANDIN_IB_DMABUF FB_STANDIN_CUDA_DMABUF; do
  rm -f "$T_DIR/peermem.json"
  (export "$knob=0" FB_STANDIN_GPUS=1 FB_STANDIN_MEM=1G && frc -s 1M -n 100 -J "$T_DIR/peermem.json")
  jq_ok "--use-cuda with $knob=0: peermem, measured" "$T_DIR/peermem.json" \
    '.complete and ([.endpoints[].memory.registration] == ["peermem", "peermem"]) and .links[0].messages == 200'
done
