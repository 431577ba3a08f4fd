#!/usr/bin/env bash
# The TCP probe for real, on loopback: 2 and 3 ranks, every pattern and
# mode, results files validated against docs/schema/probe.schema.json, and
# a rank that stops answering mid-run.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

SCHEMA=$FB_ROOT/docs/schema/probe.schema.json

# jq_ok NAME FILE FILTER: the jq filter yields true on FILE.
jq_ok() {
  if [ "$(jq -r "$3" "$2" 2>/dev/null)" = true ]; then ok "$1"; else not_ok "$1" "jq '$3' on $(head -c 300 "$2")"; fi
}

schema_ok() {
  if json_valid "$SCHEMA" "$2" 2>"$T_DIR/schema.err"; then ok "$1"; else not_ok "$1" "$(tail -n 3 "$T_DIR/schema.err")"; fi
}

# Pairs on 2 ranks into a results directory: the file lands at
# <dir>/<cluster>/<UTC stamp>-probe-tcp.json and is complete.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp -D 0.5 --results-dir "$T_DIR/res" --cluster lab
files=("$T_DIR"/res/lab/*-probe-tcp.json)
f=${files[0]}
[ -e "$f" ] || f=
if [ "$T_RC" -eq 0 ] && [[ ${f##*/} =~ ^[0-9]{8}T[0-9]{6}Z-probe-tcp\.json$ ]]; then
  ok "pairs on loopback: exit 0, results/<cluster>/<stamp>-probe-tcp.json"
else
  not_ok "pairs on loopback: exit 0, results/<cluster>/<stamp>-probe-tcp.json" "exit $T_RC, file '$f': $(head -c 300 "$T_ERR")"
fi
if [ -n "$f" ]; then
  schema_ok "pairs result matches the probe schema" "$f"
  jq_ok "one complete link with bandwidth, units, samples" "$f" \
    '.complete and .fault == null and (.links | length) == 1 and .links[0].avg_Gbps > 0
     and (.links[0].avg_GBps * 8 - .links[0].avg_Gbps | fabs) < 1e-6 and (.links[0].samples | length) >= 2
     and .links[0].peak_Gbps >= .links[0].avg_Gbps * 0.5 and .links[0].src.rank == 0 and .links[0].dst.rank == 1'
  jq_ok "endpoints record the interface and address" "$f" \
    '.endpoints[0].device == "lo" and .endpoints[0].address == "127.0.0.1" and .endpoints[1].memory.kind == "host"'
  # shellcheck disable=SC2016 # jq variables, not shell ones
  jq_ok "the sum of the samples is the measured bytes" "$f" \
    '([.links[0].samples[].bytes] | add) as $s | (($s - .links[0].bytes) | fabs) < 1'
fi
expect_grep "the table row names both ends" '^ +0 +1048576  [^ ]+:lo\[0\] -> [^ ]+:lo\[1\] ' "$T_OUT"

# Bidirectional pairs with 4 streams and a sweep: two links per size.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp -b -P 4 -a --min-size 4K --max-size 64K -n 200 -J "$T_DIR/bi.json"
if [ "$T_RC" -eq 0 ]; then ok "bidirectional 4-stream sweep: exit 0"; else not_ok "bidirectional 4-stream sweep: exit 0" "exit $T_RC $(head -c 300 "$T_ERR")"; fi
schema_ok "bidirectional sweep matches the schema" "$T_DIR/bi.json"
# The receiver's clock starts at its first read, whose bytes arrived before
# it and are not counted: a little under 4 x 200 messages are timed.
jq_ok "5 sizes x 2 directions, each with 4 x 200 messages" "$T_DIR/bi.json" \
  '(.links | length) == 10 and ([.links[].size_bytes] | unique) == [4096, 8192, 16384, 32768, 65536]
   and ([.links[] | select(.src.rank == 1)] | length) == 5
   and all(.links[]; .messages <= 800 and .messages >= 600 and .bytes <= .size_bytes * 800)
   and .config.streams == 4'

# Ring over 3 ranks: every rank sends and receives at once.
run fb_mpirun 3 "$FB_BIN/fabric-rdma" --transport tcp --pattern ring -D 0.3 -s 256K -J "$T_DIR/ring.json"
jq_ok "ring of 3: links 0->1, 1->2, 2->0 all measured" "$T_DIR/ring.json" \
  '.complete and ([.links[] | [.src.rank, .dst.rank]] == [[0,1],[1,2],[2,0]]) and all(.links[]; .avg_Gbps > 0)'

# Latency: ping-pong percentiles in microseconds.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp --latency -n 300 -J "$T_DIR/lat.json"
schema_ok "latency result matches the schema" "$T_DIR/lat.json"
jq_ok "latency row: 300 round trips, min <= p50 <= p99 <= max" "$T_DIR/lat.json" \
  '.mode == "latency" and .links[0].messages == 300 and .links[0].size_bytes == 2
   and (.links[0].latency | .min_us > 0 and .min_us <= .p50_us and .p50_us <= .p99_us and .p99_us <= .max_us)'
expect_grep "latency table has the percentile columns" 'p50\[us\].*p99\[us\]' "$T_OUT"

# A rank that stops answering (SIGSTOP) mid-run, once the first size is in
# the file (not after a fixed 2 s: start-up and the first 1 s size take
# 1.5 s on a busy machine): exit 8 within seconds, naming the rank and its
# host; what was measured stays on disk.
start=$(date +%s)
STOP_AFTER_FILE=$T_DIR/stop.json run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x STOP_AFTER_FILE "$FB_ROOT/tests/probe/stop-rank1.sh" "$FB_BIN/fabric-rdma" \
  --transport tcp -a --min-size 64K --max-size 1M -D 1 --margin 0 --timeout 2 -J "$T_DIR/stop.json"
took=$(( $(date +%s) - start ))
if [ "$T_RC" -eq 8 ] && grep -q "^fabric-rdma: .*rank 1 ($(hostname)).*measured so far: $T_DIR/stop.json" "$T_ERR" &&
   [ "$(grep -c '^fabric-rdma: ' "$T_ERR")" -eq 1 ] && [ "$took" -lt 60 ]; then
  ok "silent peer: exit 8 in one line naming rank 1, its host and the file (${took}s)"
else
  not_ok "silent peer: exit 8 naming rank 1 and its host" "exit $T_RC after ${took}s: $(head -c 600 "$T_ERR")"
fi
schema_ok "the interrupted run's file matches the schema" "$T_DIR/stop.json"
jq_ok "the interrupted run is incomplete, keeps its sizes and says timeout" "$T_DIR/stop.json" \
  '.complete == false and .fault.status == "timeout" and .fault.exit_code == 8 and (.links | length) >= 1
   and (.fault.message | test("rank 1"))'

# Streams on threads: with -P 4 each stream has a worker thread of its own
# (counted in /proc while the run is on), with --threads 1 one thread drives
# all four; both count exactly the messages sent.
# peak_threads PATTERN: the most threads a process matching PATTERN had
# while it ran (sampled every 50 ms).
peak_threads() {
  local best=0 n pid
  while [ -z "$(jobs -rp)" ] || kill -0 "$(jobs -rp | head -1)" 2>/dev/null; do
    for pid in $(pgrep -f "$1"); do
      n=$(find "/proc/$pid/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
      [ "$n" -gt "$best" ] && best=$n
    done
    [ -z "$(jobs -rp)" ] && break
    sleep 0.05
  done
  echo "$best"
}
for t in 4 1; do
  fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp -P 4 --threads "$t" -D 1.5 --margin 0.2 -s 64K \
    -J "$T_DIR/thr$t.json" >"$T_DIR/thr$t.out" 2>&1 &
  peak_threads "fabric-rdma.*thr$t.json" >"$T_DIR/thr$t.peak"
  wait
done
p4=$(cat "$T_DIR/thr4.peak") p1=$(cat "$T_DIR/thr1.peak")
if [ "$p4" -ge $((p1 + 3)) ]; then
  ok "-P 4: a thread per stream ($p4 threads at most, $p1 with --threads 1)"
else
  not_ok "-P 4: a thread per stream" "$p4 threads at most with -P 4, $p1 with --threads 1"
fi
expect_grep "the header says one thread per stream" '4 streams per link, one thread per stream$' "$T_DIR/thr4.out"
expect_grep "the header says --threads 1" '4 streams per link, 1 thread$' "$T_DIR/thr1.out"
jq_ok "the record keeps streams and threads" "$T_DIR/thr4.json" \
  '.complete and .config.streams == 4 and .config.threads == 4 and .links[0].avg_Gbps > 0'
run fb_mpirun 2 "$FB_BIN/fabric-rdma" --transport tcp -P 6 --threads 4 -n 300 -w 10 -s 32K -J "$T_DIR/thrn.json"
# 6 streams over 4 threads (2, 2, 1, 1): every message arrives, less the
# first read's bytes, which came before the clock started.
jq_ok "-P 6 over 4 threads: 6 x 300 messages counted" "$T_DIR/thrn.json" \
  '.complete and .links[0].messages <= 1800 and .links[0].messages >= 1790 and .config.threads == 4'
run fb_mpirun 3 "$FB_BIN/fabric-rdma" --transport tcp --pattern ring -b -P 3 -n 200 -s 16K -J "$T_DIR/thrring.json"
jq_ok "bidirectional ring on threads: 6 links, each 3 x 200 messages" "$T_DIR/thrring.json" \
  '.complete and (.links | length) == 6 and all(.links[]; .messages <= 600 and .messages >= 590)'

# --nccl-like: NCCL's variables decide, and the header and record say so.
run env NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=3 timeout -k 5 300 "${FB_MPIRUN[@]}" -np 2 \
  -x NCCL_SOCKET_NTHREADS -x NCCL_NSOCKS_PERTHREAD "$FB_BIN/fabric-rdma" --transport tcp --nccl-like \
  -D 0.5 -s 64K -J "$T_DIR/nccl.json"
expect_grep "--nccl-like: 2 x 3 named in the header" \
  '6 streams per link, 2 threads \(NCCL_SOCKET_NTHREADS=2 x NCCL_NSOCKS_PERTHREAD=3, both set\)' "$T_OUT"
jq_ok "--nccl-like: the record has 6 streams, 2 threads and the layout" "$T_DIR/nccl.json" \
  '.complete and .config.streams == 6 and .config.threads == 2 and (.config.nccl_layout | test("both set"))'
schema_ok "--nccl-like result matches the schema" "$T_DIR/nccl.json"
run env -u NCCL_SOCKET_NTHREADS -u NCCL_NSOCKS_PERTHREAD timeout -k 5 300 "${FB_MPIRUN[@]}" -np 2 \
  "$FB_BIN/fabric-rdma" --transport tcp --nccl-like -D 0.3 -J "$T_DIR/nccl1.json"
jq_ok "--nccl-like on loopback: NCCL's default, one socket" "$T_DIR/nccl1.json" \
  '.config.streams == 1 and (.config.nccl_layout | test("no helper threads"))'
expect_error "--nccl-like with a bad NCCL_SOCKET_NTHREADS: exit 2 naming it" 2 'NCCL_SOCKET_NTHREADS=two' \
  fabric-rdma env NCCL_SOCKET_NTHREADS=two "$FB_BIN/fabric-rdma" --transport tcp --nccl-like
expect_error "--nccl-like with -P: exit 2" 2 'drop -P/--threads' fabric-rdma \
  "$FB_BIN/fabric-rdma" --transport tcp --nccl-like -P 2
expect_error "--threads above -P: exit 2" 2 '--threads 5 with -P 4' fabric-rdma \
  "$FB_BIN/fabric-rdma" --transport tcp -P 4 --threads 5
expect_error "--threads with rdma: exit 2" 2 '--threads applies to --transport tcp' fabric-rdma \
  "$FB_BIN/fabric-rdma" --threads 2
