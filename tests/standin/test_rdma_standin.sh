#!/usr/bin/env bash
# The libibverbs stand-in (docs/standin.md, "The RDMA stand-in"): its
# libraries export what the unmodified programs import, in the real version
# nodes; ibv_devinfo shows the devices the knobs describe; the selftest
# (tests/standin/rdma_selftest.c) holds two processes to what an HCA does;
# across two namespace hosts (host set "fbv") perftest's ib_write_bw under
# a rate cap and ib_write_lat run unchanged, and fabric-rdma's verbs path
# measures pairs and latency. About 40 s on two cores; needs root for the
# hosts.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

dir=$FB_BUILD/standin-rdma
rs=$FB_ROOT/scripts/rdma-standin.sh
SCHEMA=$FB_ROOT/docs/schema/probe.schema.json
if [ ! -e "$dir/libibverbs.so.1" ]; then
  skip "RDMA stand-in" "not built (no <infiniband/verbs.h>; make standin-rdma)"
  exit 0
fi
export FB_STANDIN_IB_DIR=$T_DIR/registry

# Every symbol a program or library that loads libibverbs, libmlx5, libefa
# or librdmacm imports, in its version node, is exported by the stand-in.
exported=$(objdump -T "$dir"/lib*.so.1 | awk '/DF .text/ {print $(NF-1) $NF}' | tr -d '()' | sort -u)
missing=()
for f in /usr/bin/ib_write_bw /usr/bin/ib_write_lat /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ibv_devinfo \
  "$FB_BIN/fabric-rdma" /lib/x86_64-linux-gnu/libfabric.so.1; do
  [ -e "$f" ] || continue
  while read -r s; do
    grep -qxF "$s" <<<"$exported" || missing+=("$(basename "$f"):$s")
  done < <(objdump -T "$f" | awk '/UND/ && /(IBVERBS|RDMACM|MLX5|EFA)_/ {print $(NF-1) $NF}' | tr -d '()')
done
if [ ${#missing[@]} -eq 0 ]; then ok "the stand-in exports every verbs, mlx5, efa and rdmacm symbol the programs import"
else not_ok "the stand-in exports every verbs, mlx5, efa and rdmacm symbol the programs import" "${missing[*]:0:8}"; fi
for want in IBVERBS_1.0ibv_create_comp_channel IBVERBS_1.1ibv_query_port IBVERBS_1.8ibv_reg_mr_iova2 \
  IBVERBS_1.6ibv_qp_to_qp_ex IBVERBS_1.11_ibv_query_gid_ex IBVERBS_1.11_ibv_query_gid_table IBVERBS_1.12ibv_reg_dmabuf_mr; do
  if grep -qxF "$want" <<<"$exported"; then ok "version node: $want"; else not_ok "version node: $want" "not exported so"; fi
done

# Devices from the knobs: two HCAs, one of them RoCE, one port DOWN.
FB_STANDIN_IB_DEVICES=mlx5_0,mlx5_3 FB_STANDIN_IB_LINK=ib,mlx5_3=eth FB_STANDIN_IB_STATE=mlx5_3=down \
  FB_STANDIN_IB_IPV4=10.9.8.7 FB_STANDIN_IB_SYSFS=$T_DIR/root run "$rs" ibv_devinfo -v
expect_grep "ibv_devinfo lists mlx5_0" '^hca_id:[[:space:]]+mlx5_0$' "$T_OUT"
expect_grep "ibv_devinfo lists mlx5_3" '^hca_id:[[:space:]]+mlx5_3$' "$T_OUT"
if [ "$(grep -c 'link_layer:.*InfiniBand' "$T_OUT")" = 1 ] && [ "$(grep -c 'link_layer:.*Ethernet' "$T_OUT")" = 1 ]; then
  ok "one InfiniBand and one Ethernet port"; else not_ok "one InfiniBand and one Ethernet port" "$(grep link_layer "$T_OUT" | tr '\n' ' ')"; fi
expect_grep "mlx5_3's port is DOWN" 'state:[[:space:]]+PORT_DOWN' "$T_OUT"
expect_grep "RoCE GID 3 is the IPv4-mapped address, RoCE v2" 'GID\[  3\]:[[:space:]]+::ffff:10.9.8.7, RoCE v2' "$T_OUT"
expect_grep "NDR 4X by default" 'active_speed:[[:space:]]+100.0 Gbps \(128\)' "$T_OUT"
gidtype=$T_DIR/root/sys/class/infiniband/mlx5_3/ports/1/gid_attrs/types/3
if [ "$(cat "$gidtype" 2>/dev/null)" = "RoCE v2" ]; then ok "the sysfs-style tree under FB_STANDIN_IB_SYSFS types GID 3 RoCE v2"
else not_ok "the sysfs-style tree under FB_STANDIN_IB_SYSFS types GID 3 RoCE v2" "$gidtype: $(cat "$gidtype" 2>&1)"; fi
FB_STANDIN_IB_LINK=infiniband-ish run "$rs" ibv_devinfo
expect_grep "a bad knob is named" "FB_STANDIN_IB_LINK: 'infiniband-ish' for mlx5_0 is not ib or eth" "$T_ERR"

# The selftest, InfiniBand and RoCE, and dma-buf refused.
if cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -O2 -o "$T_DIR/selftest" "$FB_ROOT/tests/standin/rdma_selftest.c" \
  -L"$dir" -l:libibverbs.so.1 2>"$T_DIR/cc.err"; then
  "$rs" timeout -k 5 60 "$T_DIR/selftest" | sed 's/^\(not \)\{0,1\}ok - /&IB: /'
  FB_STANDIN_IB_LINK=eth "$rs" timeout -k 5 60 "$T_DIR/selftest" | sed 's/^\(not \)\{0,1\}ok - /&RoCE: /'
  FB_STANDIN_IB_DMABUF=0 "$rs" timeout -k 5 20 "$T_DIR/selftest" nodmabuf
else
  not_ok "rdma_selftest compiles" "$(head -c 400 "$T_DIR/cc.err")"
fi

hosts_up fbv 2 1 "perftest and fabric-rdma across namespace hosts" || exit 0
hosts_mpirun() { timeout -k 10 120 "$rs" "$th" mpirun fbv -q "$@"; }

# perftest's ib_write_bw, server on fbv1, client on fbv2, ports capped at
# $cap Gb/s: low enough that the stand-in's copies keep to it while other
# tests share the cores, so both tools must land on the cap itself.
cap=4
# perftest calibrates its clock for each size; on a busy CPU that can fail
# ("Correlation coefficient r^2 < 0.9") and, with -F, it prints zeros:
# perftest measured nothing, so the pair is run again (at most 3 times).
perftest_pair() { # perftest_pair OUT TOOL ARGS...: the client's output in OUT
  local out=$1 try rc srv; shift
  for try in 1 2 3; do
    FB_STANDIN_IB_RATE_GBPS=${CAP:-0} "$th" exec fbv 1 "$rs" timeout -k 5 60 "$@" >"$T_DIR/server.out" 2>&1 &
    srv=$!
    perftest_listening fbv 1 "$srv"
    FB_STANDIN_IB_RATE_GBPS=${CAP:-0} "$th" exec fbv 2 "$rs" timeout -k 5 60 "$@" fbv1 >"$out" 2>&1
    rc=$?
    wait "$srv"
    rc=$((rc | $?))
    grep -q 'Correlation coefficient' "$out" || break
    echo "# perftest could not calibrate its clock (try $try): run again"
  done
  return "$rc"
}
within() { awk -v v="$1" -v c="$2" -v p="$3" 'BEGIN { exit !(v >= c * (1 - p) && v <= c * (1 + p)) }'; }
if CAP=$cap perftest_pair "$T_DIR/wbw.out" ib_write_bw -d mlx5_0 -s 1048576 -n 300 -F --report_gbits; then
  ok "ib_write_bw between fbv1 and fbv2 exits 0"; else not_ok "ib_write_bw between fbv1 and fbv2 exits 0" "$(tail -c 400 "$T_DIR/wbw.out")"; fi
bw=$(awk '$1 == 1048576 {print $4}' "$T_DIR/wbw.out")
if [ -n "$bw" ] && within "$bw" "$cap" 0.10; then ok "ib_write_bw's BW average under a $cap Gb/s cap: $bw Gb/s"
else not_ok "ib_write_bw's BW average under a $cap Gb/s cap" "got '${bw}' Gb/s: $(tail -c 300 "$T_DIR/wbw.out")"; fi
if perftest_pair "$T_DIR/lat.out" ib_write_lat -d mlx5_0 -s 2 -n 2000 -F && grep -Eq '^ 2 +2000 ' "$T_DIR/lat.out"; then
  ok "ib_write_lat between fbv1 and fbv2: $(awk '$1 == 2 {print $6}' "$T_DIR/lat.out") us average"
else not_ok "ib_write_lat between fbv1 and fbv2" "$(tail -c 400 "$T_DIR/lat.out")"; fi

# fabric-rdma's verbs path: a pair under the same cap, latency. A run whose
# ranks were kept off the cores by the tests beside it (2.1 of 4 Gb/s seen
# once in a full suite) is run again, twice at most, as ib_write_bw's own
# pair was measured once on a quieter moment.
for _ in 1 2; do
  rm -f "$T_DIR/pair.json"
  run hosts_mpirun -np 2 --map-by node -x LD_LIBRARY_PATH -x FB_STANDIN_IB_DIR -x FB_STANDIN_IB_RATE_GBPS=$cap \
    "$FB_BIN/fabric-rdma" -s 1M -n 300 -J "$T_DIR/pair.json"
  avg=$(jq '.links[0].avg_Gbps' "$T_DIR/pair.json" 2>/dev/null)
  [ "$T_RC" -eq 0 ] && [ -n "$avg" ] && within "$avg" "$cap" 0.10 && break
done
if [ "$T_RC" -eq 0 ]; then ok "fabric-rdma pairs fbv1 -> fbv2: exit 0"; else not_ok "fabric-rdma pairs fbv1 -> fbv2: exit 0" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
if json_valid "$SCHEMA" "$T_DIR/pair.json" 2>/dev/null; then ok "fabric-rdma's result matches the schema"; else not_ok "fabric-rdma's result matches the schema" "invalid"; fi
jq_is "the result shows the stand-in's devices" "$T_DIR/pair.json" \
  '[.endpoints[] | .host + "=" + .device + "/" + .link_layer + "/" + .rate]' \
  '["fbv1=mlx5_0/InfiniBand/4X NDR (400 Gb/s)","fbv2=mlx5_0/InfiniBand/4X NDR (400 Gb/s)"]'
avg=$(jq '.links[0].avg_Gbps' "$T_DIR/pair.json" 2>/dev/null)
if [ -n "$avg" ] && within "$avg" "$cap" 0.10; then ok "fabric-rdma's average under the $cap Gb/s cap: $avg Gb/s"
else not_ok "fabric-rdma's average under the $cap Gb/s cap" "got '$avg'"; fi
# Side by side on the same link and cap, the same run, within the band each
# keeps to the cap (one round of each: other tests may share the CPUs). The
# 5 % goal is a median of paired rounds on a quiet machine: make bench
# (scripts/bench-verbs.sh).
if [ -n "$avg" ] && [ -n "$bw" ] && within "$avg" "$bw" 0.10; then ok "fabric-rdma within 10 % of ib_write_bw at 1M ($avg vs $bw Gb/s)"
else not_ok "fabric-rdma within 10 % of ib_write_bw at 1M" "fabric-rdma '$avg', ib_write_bw '$bw' Gb/s"; fi
run hosts_mpirun -np 2 --map-by node -x LD_LIBRARY_PATH -x FB_STANDIN_IB_DIR "$FB_BIN/fabric-rdma" --latency -s 2 -n 500 \
  -J "$T_DIR/lat.json"
jq_is "fabric-rdma --latency: one link, 500 round trips" "$T_DIR/lat.json" '[.complete, (.links | length), .links[0].messages]' '[true,1,500]'
