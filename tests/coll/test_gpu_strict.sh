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
