#!/usr/bin/env bash
# The NCCL path's cases that real CUDA and NCCL are strict about, on the
# stand-in (docs/standin.md). Dependent hypercube steps kept apart with several GPUs
# a process, data set up in the calls' stream order,
# NCCL 2.28's alltoall, gather and scatter, graph flags refused up front,
# and the exact #wrong count.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

gs=$FB_ROOT/scripts/gpu-standin.sh
standin_built "the NCCL path on the strict stand-in" || exit 0

# sg NP ARGS...: fabric-coll on NP processes under the stand-in, its NCCL
# log in $T_DIR/log (sg_logged, tests/lib.sh).
sg() { sg_logged "$@"; }
ran_ok() { # NAME: the run exited 0
  [ "$T_RC" -eq 0 ] && return 0
  not_ok "$1" "exit $T_RC: $(grep -v Warning "$T_ERR" | head -c 500)"
  return 1
}

# --- the hypercube with several ranks a process: one group per step over
# the process's ranks (nested in one group, the steps fuse into one launch
# and step k+1 sends blocks step k has not received) -------------------------
for shape in "2 -g 2" "2 -t 2" "1 -g 4"; do
  read -r np flag n <<<"$shape"
  sg "$np" hypercube "$flag" "$n" -b 1K -e 256K -f 16 -n 2 -c 1 -J "$T_DIR/hc.json"
  ranks=$((np * n))
  if ran_ok "hypercube $flag $n on $np process(es)"; then
    checked "hypercube $flag $n on $np process(es): $ranks ranks validated in and out of place" \
      "$T_DIR/hc.json" --ranks "$ranks" --rows 3 --complete
  fi
done
sg 4 hypercube -m 2 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/hcm.json"
if ran_ok "hypercube -m 2 on 4 ranks"; then
  checked "hypercube -m 2 on 4 ranks: validated (the batch leaves its steps apart)" "$T_DIR/hcm.json" --ranks 4 --complete
fi

# --- data set up in stream order: the strict stand-in lands a plain
# cudaMemcpy through the legacy stream only, which the non-blocking
# stream of the calls never waits for -------------------------------------
for c in all_reduce reduce_scatter broadcast; do
  sg 2 "$c" -b 1K -e 1M -f 32 -n 2 -w 1 -c 2 -J "$T_DIR/d.json"
  if ran_ok "$c -c 2 on 2 ranks"; then
    checked "$c -c 2 on 2 ranks: input written on the calls' stream, validated" "$T_DIR/d.json" --ranks 2 --complete
  fi
done

# --- alltoall, gather and scatter: NCCL 2.28's own calls, and the
# send/recv groups before 2.28, both validated --------------------------
for c in alltoall gather scatter; do
  for v in 2.28.9 2.27.7; do
    FB_STANDIN_NCCL_VERSION=$v sg 3 "$c" -b 3K -e 192K -f 8 -n 2 -c 1 -J "$T_DIR/$c.json"
    if ran_ok "$c on NCCL $v"; then
      checked "$c on NCCL $v: validated on 3 ranks" "$T_DIR/$c.json" --ranks 3 --complete
    fi
  done
done

# --- graph flags refused before any GPU work -----------------------------
expect_error "-G 2 -y 1: exit 2, the NULL stream cannot be captured" 2 'cannot capture the NULL stream' fabric-coll \
  "$gs" "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -G 2 -y 1
expect_error "-G 2 -z 1: exit 2, captured calls cannot be waited for" 2 'cannot be waited for one by one' fabric-coll \
  "$gs" "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -G 2 -z 1
# -G's check goes through a graph too: a wrong rank there is caught.
FB_STANDIN_CORRUPT_RANK=1 sg 2 all_reduce -b 1K -e 4K -f 4 -n 2 -G 2 -c 1 -J "$T_DIR/gbad.json"
if [ "$T_RC" -eq 3 ] && grep -q 'fabric-coll: rank 1 on .*wrong element' "$T_ERR"; then
  ok "-G 2 with a corrupting rank: exit 3 naming rank 1"
else
  not_ok "-G 2 with a corrupting rank: exit 3" "exit $T_RC: $(grep -v Warning "$T_ERR" | head -c 400)"
fi

# --- #wrong as an exact count in the table -------------------------------
FB_STANDIN_CORRUPT_RANK=1 sg 2 all_reduce -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/bad.json"
if [ "$T_RC" -eq 3 ] && grep -Eq '^ +1024 +256 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9][0-9]* ' "$T_OUT"; then
  ok "wrong results: exit 3, #wrong an integer count in the row"
else
  not_ok "wrong results: exit 3, #wrong an integer count" "exit $T_RC: $(grep -E '^ +1024' "$T_OUT")"
fi
FB_STANDIN_CORRUPT_RANK=1 FB_STANDIN_CORRUPT_ELEMS=1500000 sg 2 all_reduce -b 8M -e 8M -n 1 -w 0 -c 1 -J "$T_DIR/many.json"
if [ "$T_RC" -eq 3 ] && grep -Eq '^ +8388608 +2097152 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1500000 ' "$T_OUT"; then
  ok "1.5 million wrong elements: #wrong printed 1500000, not 1.5e+06"
else
  not_ok "1.5 million wrong elements: #wrong printed 1500000" "exit $T_RC: $(grep -E '^ +8388608' "$T_OUT")"
fi

# --- what reached NCCL: each communicator's `standin: rank R: entry
# points ...` line (docs/standin.md) --------------------------------------
# stat FIELD: the number after FIELD on every rank's line, one a line.
stat() { grep -h 'standin: rank [0-9]*: entry points' "$T_DIR"/log/nccl.* | sed -nE "s/.*$1 ([0-9]+).*/\\1/p"; }
# ranks_min NAME NP FIELD MIN: NP ranks said it, each at least MIN.
ranks_min() {
  local vals
  vals=$(stat "$3")
  if [ "$(wc -w <<<"$vals")" -eq "$2" ] && awk -v m="$4" '$1 < m { bad = 1 } END { exit bad }' <<<"$vals"; then
    ok "$1"
  else
    not_ok "$1" "$3 per rank: $(tr '\n' ' ' <<<"$vals") (want $2 ranks, each >= $4)"
  fi
}
# ranks_say NAME NP ERE: NP ranks' lines match it.
ranks_say() {
  local n
  n=$(grep -h 'standin: rank [0-9]*: entry points' "$T_DIR"/log/nccl.* | grep -Ec "$3")
  if [ "$n" -eq "$2" ]; then ok "$1"; else
    not_ok "$1" "$n of $2 ranks: $(grep -h 'entry points' "$T_DIR"/log/nccl.* | head -1 | sed 's/.*standin: //')"
  fi
}

# -m 4: the four calls of each iteration in one group, as nccl-tests;
# 4 sizes x 4 iterations x in and out of place = 32 groups at least.
sg 2 all_reduce -b 1K -e 64K -f 4 -n 4 -w 1 -m 4 -c 1 -J "$T_DIR/m.json"
ran_ok "-m 4 on 2 ranks" && ranks_min "-m 4: every rank launched 32 or more fused groups of calls" 2 'fused groups' 32

# Buffers shift on every call, so mid sizes do not stay in a GPU's L2;
# from ncclMemAlloc on NCCL >= 2.19 whatever -R says, as nccl-tests.
sg 2 all_reduce -b 1K -e 64K -f 4 -n 4 -w 1 -c 1 -J "$T_DIR/s.json"
if ran_ok "all_reduce 1K..64K on 2 ranks"; then
  ranks_min "buffers shift per call: 9 or more distinct buffer addresses on every rank" 2 'distinct buffer addresses' 9
  ranks_say "NCCL 2.28: every call on ncclMemAlloc memory" 2 'ncclMemAlloc memory ([0-9]+) of \1;'
fi
FB_STANDIN_NCCL_VERSION=2.18.3 sg 2 all_reduce -b 1K -e 4K -f 4 -n 2 -c 1 -J "$T_DIR/old.json"
ran_ok "NCCL 2.18.3" && ranks_say "NCCL 2.18.3 (no ncclMemAlloc): cudaMalloc memory" 2 'ncclMemAlloc memory 0 of [1-9]'

# 2.28's own calls; send/recv groups before.
for c in alltoall:ncclAlltoAll gather:ncclGather scatter:ncclScatter; do
  sg 3 "${c%%:*}" -b 3K -e 12K -f 4 -n 2 -c 1 -J "$T_DIR/e.json"
  ran_ok "${c%%:*} on 3 ranks" && ranks_say "${c%%:*} on NCCL 2.28: ${c#*:}, no ncclSend" 3 "${c#*:}=[1-9].*; launches" &&
    ranks_say "... and no ncclSend on any rank" 0 'ncclSend='
done
FB_STANDIN_NCCL_VERSION=2.27.7 sg 3 alltoall -b 3K -e 12K -f 4 -n 2 -c 1 -J "$T_DIR/e.json"
ran_ok "alltoall on NCCL 2.27.7" && ranks_say "alltoall on NCCL 2.27.7: send/recv groups, no ncclAlltoAll" 3 \
  'entry points( ncclAllReduce=[0-9]+)? ncclSend=[1-9][0-9]* ncclRecv=[1-9][0-9]*;'

# Teardown in NCCL's order: deregister, then finalize and destroy, with
# several communicators a process.
sg 1 all_reduce -g 2 -R 1 -b 1K -e 4K -n 2 -c 1 -J "$T_DIR/r.json"
if ran_ok "-g 2 -R 1"; then
  ranks_say "-g 2 -R 1: nothing deregistered after ncclCommFinalize" 2 'deregistered after finalize 0$'
  if grep -h 'buffers registered' "$T_DIR"/log/nccl.* | grep -qv ' 0 buffers registered'; then
    ok "... and buffers were registered"
  else not_ok "... and buffers were registered" "$(grep -h 'buffers registered' "$T_DIR"/log/nccl.* | head -1)"; fi
fi

# A failed ncclGetUniqueId on rank 0 is agreed before the id broadcast:
# every rank stops at once, exit 9, one line naming the call.
start=$SECONDS
FB_STANDIN_FAIL=id sg 2 all_reduce -b 1K -e 4K -n 1 -J "$T_DIR/id.json"
if [ "$T_RC" -eq 9 ] && [ $((SECONDS - start)) -lt 30 ] && grep -q 'ncclGetUniqueId failed' "$T_ERR"; then
  ok "ncclGetUniqueId failing on rank 0: exit 9 at once, naming the call"
else
  not_ok "ncclGetUniqueId failing: exit 9 at once" "exit $T_RC after $((SECONDS - start)) s: $(head -c 300 "$T_ERR")"
fi

