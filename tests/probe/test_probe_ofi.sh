#!/usr/bin/env bash
# The libfabric transport for real on one host: the tcp provider (tcp;ofi_rxm,
# the same library EFA users run) moves every byte through fi_write/fi_read
# over loopback; every pattern and mode, the results against the schema, and
# each failure with its documented exit code and one line.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

SCHEMA=$FB_ROOT/docs/schema/probe.schema.json
jq_ok() {
  if [ "$(jq -r "$3" "$2" 2>/dev/null)" = true ]; then ok "$1"; else not_ok "$1" "jq '$3' on $(head -c 300 "$2" 2>/dev/null)"; fi
}
schema_ok() {
  if json_valid "$SCHEMA" "$2" 2>"$T_DIR/schema.err"; then ok "$1"; else not_ok "$1" "$(tail -n 3 "$T_DIR/schema.err")"; fi
}
exit_ok() {
  if [ "$T_RC" -eq 0 ]; then ok "$1"; else not_ok "$1" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
}
bad_case() { # bad_case NAME CODE PATTERN NP ARGS...
  local name=$1 code=$2 pattern=$3 np=$4; shift 4
  expect_error "$name" "$code" "$pattern" fabric-rdma mpi_quiet "$np" "$FB_BIN/fabric-rdma" "$@"
}

if ! pkg-config --exists libfabric 2>/dev/null; then
  skip "libfabric transport" "libfabric-dev is missing (scripts/install-deps.sh installs it)"
  exit 0
fi
if ! "$FB_BIN/fabric-rdma" --version | grep -q 'ofi)'; then
  not_ok "fabric-rdma is built with libfabric" "$("$FB_BIN/fabric-rdma" --version)"
  exit 0
fi
ok "fabric-rdma is built with libfabric"

# Loopback is a domain of its own: naming it makes the runs the same on
# every machine, whatever its interfaces.
OFI=(--transport ofi --provider tcp -d lo)
libfabric=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric api: *//p')

# A sweep 2 .. 1M: every size, two endpoints, each of its 200 writes.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" "${OFI[@]}" -a --max-size 1M -n 200 -w 20 -J "$T_DIR/sweep.json"
exit_ok "write sweep 2..1M over tcp;ofi_rxm: exit 0"
schema_ok "the sweep matches the probe schema" "$T_DIR/sweep.json"
jq_ok "20 sizes, each 2 endpoints x 200 writes timed, bandwidth above zero" "$T_DIR/sweep.json" \
  '.complete and .transport == "ofi" and ([.links[].size_bytes] == [range(1;21) | pow(2;.)])
   and all(.links[]; .messages == 400 and .bytes == .size_bytes * 400 and .avg_Gbps > 0)'
jq_ok "endpoints say what libfabric chose" "$T_DIR/sweep.json" \
  'all(.endpoints[]; .device == "lo" and .address == "127.0.0.1" and .ofi.provider == "tcp;ofi_rxm"
       and .ofi.domain == "lo" and .ofi.ep_type == "FI_EP_RDM" and (.ofi.mr_mode | type) == "array"
       and .ofi.hmem == null and .memory.registration == "host")'
if [ "$(jq -r '.endpoints[0].ofi.libfabric' "$T_DIR/sweep.json")" = "$libfabric" ]; then
  ok "the record names the libfabric version fi_info reports ($libfabric)"
else
  not_ok "the record names the libfabric version" "$(jq -c '.endpoints[0].ofi' "$T_DIR/sweep.json") vs $libfabric"
fi
expect_grep "the header names provider and fabric" '^#    0 [^ ]+ +lo +tcp;ofi_rxm [0-9.]+ .*127\.0\.0\.1/32 127\.0\.0\.1' "$T_OUT"
expect_grep "the header says RMA write, window and CQ" 'RMA write, window 128, completions by CQ' "$T_OUT"

# Bidirectional with 4 endpoints per link, counted by a counter.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" "${OFI[@]}" -b -q 4 -t 16 --completion counter -s 256K -n 100 -J "$T_DIR/bi.json"
exit_ok "bidirectional, 4 endpoints, counter completion: exit 0"
jq_ok "two directions, each 4 x 100 writes" "$T_DIR/bi.json" \
  '.complete and ([.links[] | [.src.rank, .dst.rank]] == [[0,1],[1,0]]) and all(.links[]; .messages == 400)
   and .config.completion == "counter" and .config.qps == 4'

# RMA read: the destination reads from the source and times it.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" "${OFI[@]}" --op read -a --min-size 64K --max-size 256K -n 100 -J "$T_DIR/read.json"
exit_ok "read sweep: exit 0"
jq_ok "reads: 3 sizes from rank 0 to rank 1, 2 x 100 each" "$T_DIR/read.json" \
  '.complete and (.links | length) == 3 and all(.links[]; .src.rank == 0 and .dst.rank == 1 and .messages == 200)
   and .config.op == "read"'

# A ring of 3 in duration mode: every rank writes and serves at once.
run fb_mpirun 3 "$FB_BIN/fabric-rdma" "${OFI[@]}" --pattern ring -D 0.3 --margin 0.05 -s 64K -J "$T_DIR/ring.json"
jq_ok "ring of 3: 0->1, 1->2, 2->0 measured for their duration" "$T_DIR/ring.json" \
  '.complete and ([.links[] | [.src.rank, .dst.rank]] == [[0,1],[1,2],[2,0]])
   and all(.links[]; .avg_Gbps > 0 and .time_s >= 0.3)'

# Latency: a write ping-pong, and reads timed alone.
run fb_mpirun 2 "$FB_BIN/fabric-rdma" "${OFI[@]}" --latency -a --max-size 4K -n 200 -J "$T_DIR/lat.json"
schema_ok "write latency matches the schema" "$T_DIR/lat.json"
jq_ok "write ping-pong: 12 sizes x 200 round trips, min <= p50 <= p99 <= max" "$T_DIR/lat.json" \
  '.complete and .mode == "latency" and (.links | length) == 12
   and all(.links[]; .messages == 200 and (.latency | .min_us > 0 and .min_us <= .p50_us and .p50_us <= .p99_us and .p99_us <= .max_us))'
run fb_mpirun 2 "$FB_BIN/fabric-rdma" "${OFI[@]}" --latency --op read -D 0.3 -J "$T_DIR/rlat.json"
# For a duration: it ran 0.3 s (and stopped), reads were repeated, and
# their times fit in it. How many depends on the machine's load (about
# 28,000 idle here, fewer than 100 once beside the full suite and a CPU
# hog, each read waiting for its peer to be scheduled): at least 10.
jq_ok "read latency for a duration: one row, reads repeated for 0.3 s and timed within it" "$T_DIR/rlat.json" \
  '.complete and (.links | length) == 1 and (.links[0] | .time_s >= 0.3 and .time_s < 10 and .messages >= 10
   and .latency.p50_us > 0 and .messages * .latency.avg_us / 1e6 <= .time_s)'

# ---- failures ---------------------------------------------------------------
J=(-J "$T_DIR/bad.json")
bad_case "unknown provider: exit 5 naming it and those present" 5 \
  "libfabric [0-9.]* has no provider 'nosuch' on this host (it has: .*tcp" 2 --transport ofi --provider nosuch "${J[@]}"
run env FI_PROVIDER=efa "${FB_MPIRUN[@]}" -q -np 2 -x FI_PROVIDER "$FB_BIN/fabric-rdma" --transport ofi --provider tcp "${J[@]}"
if [ "$T_RC" -eq 2 ] && grep -q '^fabric-rdma: --provider tcp disagrees with FI_PROVIDER=efa' "$T_ERR" &&
   [ "$(grep -c '^fabric-rdma: ' "$T_ERR")" -eq 1 ]; then
  ok "--provider against FI_PROVIDER: exit 2, one line"
else
  not_ok "--provider against FI_PROVIDER: exit 2, one line" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
# FI_PROVIDER alone, naming a provider this libfabric lacks (an EFA
# profile on a host without EFA): libfabric loads nothing; it is named.
run env FI_PROVIDER=efa "${FB_MPIRUN[@]}" -q -np 2 -x FI_PROVIDER "$FB_BIN/fabric-rdma" --transport ofi "${J[@]}"
if [ "$T_RC" -eq 5 ] && grep -q '^fabric-rdma: libfabric [0-9.]* loads no provider FI_PROVIDER=efa allows on this host; install' "$T_ERR" &&
   [ ! -e "$T_DIR/bad.json" ]; then
  ok "FI_PROVIDER=efa without EFA: exit 5 naming FI_PROVIDER, nothing written"
else
  not_ok "FI_PROVIDER=efa without EFA: exit 5 naming FI_PROVIDER" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
# udp alone (its reliability layer filtered out) has datagrams but no RMA.
run env FI_PROVIDER='^ofi_rxd' "${FB_MPIRUN[@]}" -q -np 1 -x FI_PROVIDER "$FB_BIN/fabric-rdma" --transport ofi --provider udp "${J[@]}"
if [ "$T_RC" -eq 5 ] && grep -q '^fabric-rdma: udp offers no FI_EP_RDM endpoint with FI_RMA write here (those that do: .*tcp' "$T_ERR"; then
  ok "a provider without RMA: exit 5 naming those with it"
else
  not_ok "a provider without RMA: exit 5" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
bad_case "no such domain: exit 2 listing the present ones" 2 "nosuch.*lo" 2 --transport ofi --provider tcp -d nosuch "${J[@]}"
bad_case "two ranks, one domain: exit 2 naming -d" 2 "runs 2 ranks but has 1 libfabric domain (shm).*-d" 2 --transport ofi --provider shm "${J[@]}"
bad_case "--provider with --transport tcp: exit 2" 2 "add --transport ofi or drop --provider" 2 --transport tcp --provider tcp "${J[@]}"
bad_case "--completion counter with --latency: exit 2" 2 "drop --completion counter" 2 "${OFI[@]}" --latency --completion counter "${J[@]}"
bad_case "--op other than write or read: exit 2" 2 "use write or read" 2 "${OFI[@]}" --op send "${J[@]}"

# Ranks whose FI_PROVIDER differ meet different providers: the ends
# disagree (exit 6), named.
cat >"$T_DIR/split-provider.sh" <<'SH'
#!/bin/bash
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export FI_PROVIDER=sockets; else export FI_PROVIDER=tcp; fi
exec "$@"
SH
chmod +x "$T_DIR/split-provider.sh"
run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 "$T_DIR/split-provider.sh" "$FB_BIN/fabric-rdma" --transport ofi -d lo -n 10 "${J[@]}"
if [ "$T_RC" -eq 6 ] && grep -q '^fabric-rdma: providers differ: .*tcp;ofi_rxm.*sockets' "$T_ERR"; then
  ok "ranks on different providers: exit 6 naming both"
else
  not_ok "ranks on different providers: exit 6" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi

# GPU memory through the CUDA stand-in: tcp has no FI_HMEM (exit 5, named);
# where shm reports FI_HMEM the regions reach fi_mr_regattr as CUDA memory.
if standin_built "--use-cuda over libfabric"; then
  run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x LD_LIBRARY_PATH \
    "$FB_BIN/fabric-rdma" "${OFI[@]}" --use-cuda "${J[@]}"
  if [ "$T_RC" -eq 5 ] && grep -q '^fabric-rdma: provider tcp;ofi_rxm does not report FI_HMEM, which --use-cuda needs' "$T_ERR"; then
    ok "--use-cuda on a provider without FI_HMEM: exit 5 naming it"
  else
    not_ok "--use-cuda on a provider without FI_HMEM: exit 5" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
  if fi_info -p shm -c FI_HMEM >/dev/null 2>&1; then
    run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x LD_LIBRARY_PATH \
      "$FB_BIN/fabric-rdma" --transport ofi --provider shm -d shm --use-cuda -n 10 "${J[@]}"
    if grep -q 'gpu 0 .* fi_hmem_cuda' "$T_OUT" &&
       { [ "$T_RC" -eq 0 ] || { [ "$T_RC" -eq 5 ] && grep -q 'could not register GPU 0 memory (FI_HMEM_CUDA)' "$T_ERR"; }; }; then
      ok "shm with FI_HMEM: GPU regions registered as FI_HMEM_CUDA (exit $T_RC)"
    else
      not_ok "shm with FI_HMEM: GPU regions registered as FI_HMEM_CUDA" "exit $T_RC: $(head -c 300 "$T_ERR")"
    fi
  fi
fi

# A rank that stops answering mid-run (SIGSTOP) once the first size is in
# the file: its writer sees no completion for --timeout, exit 8 naming
# rank 1; the file keeps the sizes.
start=$(date +%s)
STOP_AFTER_FILE=$T_DIR/stop.json run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x STOP_AFTER_FILE "$FB_ROOT/tests/probe/stop-rank1.sh" "$FB_BIN/fabric-rdma" \
  "${OFI[@]}" -a --min-size 64K --max-size 1M -D 1 --margin 0 --timeout 2 -J "$T_DIR/stop.json"
took=$(( $(date +%s) - start ))
if [ "$T_RC" -eq 8 ] && grep -q "^fabric-rdma: .*rank 1 ($(hostname))" "$T_ERR" &&
   [ "$(grep -c '^fabric-rdma: ' "$T_ERR")" -eq 1 ] && [ "$took" -lt 60 ]; then
  ok "silent peer: exit 8 in one line naming rank 1 (${took}s)"
else
  not_ok "silent peer: exit 8 naming rank 1" "exit $T_RC after ${took}s: $(head -c 600 "$T_ERR")"
fi
jq_ok "the interrupted run is incomplete, keeps its sizes and says timeout" "$T_DIR/stop.json" \
  '.complete == false and .fault.status == "timeout" and (.links | length) >= 1'
