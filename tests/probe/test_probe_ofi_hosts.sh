#!/usr/bin/env bash
# The libfabric transport across real hosts: network namespaces with their
# own stacks, names and sshd (scripts/testhosts.sh, host set "fbo"), the
# tcp provider between them. Pairs and all-pairs at every size of -a, two
# ranks per host, a host made slow with tc tbf and named, a link cut and a
# rank killed mid-run. Needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

SCHEMA=$FB_ROOT/docs/schema/probe.schema.json
jq_ok() {
  if [ "$(jq -r "$3" "$2" 2>/dev/null)" = true ]; then ok "$1"; else not_ok "$1" "jq '$3' on $(head -c 300 "$2" 2>/dev/null)"; fi
}
if ! pkg-config --exists libfabric 2>/dev/null || ! "$FB_BIN/fabric-rdma" --version | grep -q 'ofi)'; then
  skip "libfabric across namespace hosts" "fabric-rdma is built without libfabric"
  exit 0
fi
hosts_up fbo 5 2 "libfabric across namespace hosts" || exit 0
ok "5 namespace hosts come up"
hosts_mpirun() { timeout -k 10 240 "$th" mpirun fbo -q "$@"; }
OFI=(--transport ofi --provider tcp)

# All-pairs over 4 hosts at every size of -a (2 .. 8M): 6 host pairs in
# 3 rounds, each link each size 2 endpoints x 20 writes.
run hosts_mpirun -np 4 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" --pattern all-pairs -a -n 20 -w 5 \
  -J "$T_DIR/ap.json"
if [ "$T_RC" -eq 0 ]; then ok "all-pairs over 4 hosts, -a: exit 0"; else not_ok "all-pairs over 4 hosts, -a: exit 0" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
if json_valid "$SCHEMA" "$T_DIR/ap.json" 2>/dev/null; then ok "all-pairs result matches the schema"; else not_ok "all-pairs result matches the schema" "invalid"; fi
jq_ok "6 host pairs x 23 sizes, every one 40 writes, no host twice in a round" "$T_DIR/ap.json" \
  '.complete and .topology.rounds == 3 and (.links | length) == 138
   and ([.links[] | [.src.host, .dst.host] | sort | join("-")] | unique | length) == 6
   and all(.links | group_by(.link)[]; ([.[].size_bytes] == [range(1;24) | pow(2;.)]))
   and all(.links[]; .messages == 40 and .avg_Gbps > 0)
   and all(.links | map(select(.size_bytes == 2)) | group_by(.round)[]; ([.[] | .src.host, .dst.host] | length) == ([.[] | .src.host, .dst.host] | unique | length))'
jq_ok "each host measures over its eth0 (loopback left out), tcp;ofi_rxm" "$T_DIR/ap.json" \
  '[.endpoints[] | .host + "=" + .device + "@" + .address + "/" + .ofi.provider] ==
   ["fbo1=eth0@10.77.0.1/tcp;ofi_rxm", "fbo2=eth0@10.77.0.2/tcp;ofi_rxm", "fbo3=eth0@10.77.0.3/tcp;ofi_rxm", "fbo4=eth0@10.77.0.4/tcp;ofi_rxm"]'

# A bidirectional pair, counter completion, 1M writes.
run hosts_mpirun -np 2 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" -b --completion counter -s 1M -n 200 \
  -J "$T_DIR/pair.json"
jq_ok "bidirectional pair fbo1 <-> fbo2: 2 x 200 writes each way" "$T_DIR/pair.json" \
  '.complete and ([.links[] | .src.host + ">" + .dst.host] == ["fbo1>fbo2", "fbo2>fbo1"]) and all(.links[]; .messages == 400)'

# Two ranks per host sharing eth0, 3 hosts: rail l meets rail l.
run hosts_mpirun -np 6 --host fbo1:2,fbo2:2,fbo3:2 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" -d eth0 \
  --pattern all-pairs -s 64K -n 50 -J "$T_DIR/rails.json"
jq_ok "2 rails x 3 host pairs: local rank l meets local rank l" "$T_DIR/rails.json" \
  '.complete and (.links | length) == 6
   and all(.links[]; .src.rank % 3 != .dst.rank % 3 and ((.src.rank / 3 | floor) == (.dst.rank / 3 | floor)))'

# fbo3 sends through a 400 Mbit/s token bucket: its links out are slow,
# and those in too (the provider's acknowledgements queue behind its
# writes). Five hosts, so its 8 links of 20 stay a minority and the
# median is a healthy link's; fbo3 is the one suspect.
"$th" exec fbo 3 tc qdisc replace dev eth0 root tbf rate 400mbit burst 64kbit latency 400ms
run hosts_mpirun -np 5 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" --pattern all-pairs -b -s 1M -n 20 -w 5 \
  -J "$T_DIR/slow.json"
"$th" exec fbo 3 tc qdisc del dev eth0 root
# (A healthy link may be flagged too, and measure below one of fbo3's,
# when its round shares the 2 cores with fbo3's or with mpirun: the
# verdict that matters is the suspect, below.)
jq_ok "slow host: the 4 links out of fbo3 are flagged" "$T_DIR/slow.json" \
  '.complete and (.links | length) == 20 and ([.flags[] | select(.src.host == "fbo3")] | length) == 4'
# fbo3's send path is named, every one of its 4 links out slow, and it is
# the most severe suspect (its receive path may be named too: the
# provider's acknowledgements queue behind its writes).
jq_ok "slow host: fbo3's send path is the first suspect, 4 of 4 links from it slow" "$T_DIR/slow.json" \
  '.suspects[0].host == "fbo3" and (.suspects[0].paths | index("send")) != null
   and .suspects[0].send.links == 4 and .suspects[0].send.slow_links == 4'
expect_grep "the text names the suspect and its path" '^# SUSPECT fbo3:eth0\[2\] \(host fbo3, device eth0\): send path slow \(4 of 4 links from it at 0\.[0-9]+x ' "$T_OUT"

# fbo2's link goes down mid-run: exit 8 naming rank 1 (fbo2), the file
# keeps the fault. The link comes back so mpirun can clean up.
( hosts_mpirun -np 2 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" -a --min-size 1M --max-size 4M -D 5 \
    --margin 0 --timeout 3 -J "$T_DIR/down.json" >"$T_DIR/down.out" 2>"$T_DIR/down.err"; echo $? >"$T_DIR/down.rc" ) &
job=$!
for _ in $(seq 1 150); do
  [ "$(jq '.links | length' "$T_DIR/down.json" 2>/dev/null)" = 1 ] && break
  sleep 0.2
done
"$th" link fbo 2 down
for _ in $(seq 1 60); do
  jq -e '.fault != null' "$T_DIR/down.json" >/dev/null 2>&1 && break
  sleep 0.5
done
"$th" link fbo 2 up
wait "$job"
rc=$(cat "$T_DIR/down.rc" 2>/dev/null)
if [ "$rc" = 8 ] && grep -q '^fabric-rdma: .*rank 1 (fbo2' "$T_ERR" "$T_DIR/down.err" &&
   [ "$(grep -c '^fabric-rdma: ' "$T_DIR/down.err")" -eq 1 ]; then
  ok "link down: exit 8 naming rank 1 (fbo2)"
else
  not_ok "link down: exit 8 naming rank 1 (fbo2)" "exit $rc: $(head -c 500 "$T_DIR/down.err")"
fi
jq_ok "link down: the file says timeout, keeps the first size" "$T_DIR/down.json" \
  '.complete == false and .fault.status == "timeout" and (.fault.message | test("fbo2")) and (.links | length) >= 1'

# The rank on fbo2 is killed mid-run: the job ends well inside --timeout
# plus the launcher's teardown, non-zero, and fbo2 is named. Timed from the
# kill: the start over ssh is no part of the bound (seconds on a busy machine).
( hosts_mpirun -np 2 --map-by node "$FB_BIN/fabric-rdma" "${OFI[@]}" -s 1M -D 30 --timeout 5 \
    -J "$T_DIR/kill.json" >"$T_DIR/kill.out" 2>"$T_DIR/kill.err"; echo $? >"$T_DIR/kill.rc" ) &
job=$!
for _ in $(seq 1 100); do
  [ -s "$T_DIR/kill.json" ] && break
  sleep 0.2
done
sleep 1
for pid in $(ip netns pids fbo2); do
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = fabric-rdma ] && kill -KILL "$pid"
done
killed=$(date +%s)
wait "$job"
took=$(( $(date +%s) - killed ))
rc=$(cat "$T_DIR/kill.rc" 2>/dev/null)
if [ "${rc:-0}" -ne 0 ] && [ "$took" -lt 20 ] && grep -qE 'rank 1|fbo2' "$T_DIR/kill.err"; then
  ok "killed peer: the job ends in ${took}s (exit $rc) naming fbo2"
else
  not_ok "killed peer: the job ends within --timeout naming fbo2" "exit $rc after ${took}s: $(head -c 500 "$T_DIR/kill.err")"
fi
