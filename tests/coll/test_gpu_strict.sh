#!/usr/bin/env bash
# The NCCL path against a stand-in as strict as CUDA and NCCL
# (docs/standin.md): each case is one a kinder library lets through and a
# real GPU does not. Dependent hypercube steps kept apart with several GPUs
# a process, data set up in the calls' stream order, nccl-tests' batching
# (-m), buffer shifts, ncclMemAlloc, NCCL 2.28's alltoall, gather and
# scatter, graph flags refused up front, and NCCL's order at the end. What
# each rank's communicator was asked is read from the stand-in's "standin:
# rank R: entry points ..." line at destroy.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

gs=$FB_ROOT/scripts/gpu-standin.sh
standin_built "the NCCL path on the strict stand-in" || exit 0

# sg NP ARGS...: fabric-coll on NP processes under the stand-in, its NCCL
# log in $T_DIR/log (emptied first).
sg() {
  local np=$1
  shift
  rm -rf "$T_DIR/log" && mkdir -p "$T_DIR/log"
  NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$T_DIR/log/nccl.%h.%p run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np "$np" \
    -x LD_LIBRARY_PATH -x NCCL_DEBUG -x NCCL_DEBUG_FILE -x FB_STANDIN_NCCL_VERSION -x FB_STANDIN_CORRUPT_RANK \
    "$FB_BIN/fabric-coll" "$@"
}
# usage: every rank's "entry points ..." line, rank order.
usage() { cat "$T_DIR"/log/nccl.* | grep -o 'standin: rank [0-9]*: entry points.*' | sort -t' ' -k3n; }
# field NAME: NAME's number on each usage line ("launches", "fused groups"
# and so on, or an entry point: ncclSend), 0 where a line lacks it.
field() {
  usage | while read -r line; do
    case $1 in
      nccl*) v=$(grep -o " $1=[0-9]*" <<<"$line" | cut -d= -f2) ;;
      *) v=$(grep -o "$1 [0-9]*" <<<"$line" | awk '{print $NF}') ;;
    esac
    echo "${v:-0}"
  done
}
# all_at_least NAME MIN: every rank's NAME is at least MIN (and there is a rank).
all_at_least() { field "$1" | awk -v m="$2" 'BEGIN{n=0; bad=0} {n++; if ($1 < m) bad=1} END{exit (n == 0 || bad)}'; }
all_equal() { field "$1" | awk -v m="$2" 'BEGIN{n=0; bad=0} {n++; if ($1 != m) bad=1} END{exit (n == 0 || bad)}'; }
ran_ok() { # NAME: the run exited 0 and every rank left a usage line
  if [ "$T_RC" -ne 0 ]; then
    not_ok "$1" "exit $T_RC: $(grep -v Warning "$T_ERR" | head -c 500)"
    return 1
  elif [ "$(usage | wc -l)" -eq 0 ]; then
    not_ok "$1" "no 'standin: rank R: entry points' line in the NCCL log: $(cat "$T_DIR"/log/nccl.* | tail -3)"
    return 1
  fi
}
# uses_not CALL OTHER: every rank used CALL and none used OTHER.
uses_not() { all_at_least "$1" 1 && all_equal "$2" 0; }
# all_on_nccl_mem N: N ranks' calls all on ncclMemAlloc memory ("M of M").
all_on_nccl_mem() { [ "$(usage | grep -c 'calls on ncclMemAlloc memory \([1-9][0-9]*\) of \1;')" -eq "$1" ]; }
judge() { # NAME CONDITION-COMMAND...: ok when the command succeeds, else the usage lines
  local name=$1
  shift
  if "$@"; then ok "$name"; else not_ok "$name" "$(usage | head -4 | tr '\n' '|')"; fi
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

# --- -m: an iteration's calls in one NCCL group, as nccl-tests batches them
sg 2 all_reduce -b 1K -e 64K -f 8 -n 3 -w 1 -m 4 -c 1 -J "$T_DIR/m.json"
if ran_ok "-m 4"; then
  # 3 sizes x 2 placements x 3 timed iterations, each one launch of 4 calls.
  judge "-m 4: each timed iteration's 4 calls are one fused launch (18 on each rank)" all_at_least "fused groups" 18
  checked "-m 4: validated" "$T_DIR/m.json" --ranks 2 --complete
fi
sg 2 all_reduce -b 1K -e 64K -f 8 -n 3 -w 1 -c 1 -J "$T_DIR/m1.json"
if ran_ok "without -m"; then judge "without -m: no call shares a launch" all_equal "fused groups" 0; fi

# --- buffer shifts: every call moves by its span within the buffers
# (nccl-tests' shift = size x (iteration % steps)) --------------------------
# Without shifts the calls use 2 send addresses in all (the send buffer out
# of place, the receive buffer in place).
sg 2 all_reduce -b 1K -e 64K -f 64 -n 6 -w 1 -c 1 -J "$T_DIR/shift.json"
if ran_ok "-n 6: buffer shifts"; then
  judge "-n 6 from 1K to 64K: the calls move through the buffers (more than 8 send addresses)" \
    all_at_least "distinct buffer addresses" 9
  checked "-n 6 with shifts: validated (checks stay at the buffers' start)" "$T_DIR/shift.json" --ranks 2 --complete
fi

# --- ncclMemAlloc whenever NCCL has it (2.19), -R or not ------------------
sg 2 all_reduce -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/mem.json"
if ran_ok "ncclMemAlloc"; then
  judge "NCCL 2.28: every call on ncclMemAlloc memory without -R" all_on_nccl_mem 2
fi
FB_STANDIN_NCCL_VERSION=2.18.3 sg 2 all_reduce -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/mem18.json"
if ran_ok "NCCL 2.18"; then judge "NCCL 2.18 (no ncclMemAlloc): the buffers come from cudaMalloc" all_equal "calls on ncclMemAlloc memory" 0; fi

# --- NCCL 2.28's alltoall, gather and scatter calls, as nccl-tests uses
# them there; the send/recv groups before --------------------------------
for c in alltoall gather scatter; do
  case $c in alltoall) call=ncclAlltoAll ;; gather) call=ncclGather ;; scatter) call=ncclScatter ;; esac
  sg 3 "$c" -b 3K -e 192K -f 8 -n 2 -c 1 -J "$T_DIR/$c.json"
  if ran_ok "$c on NCCL 2.28"; then
    judge "$c on NCCL 2.28: $call on every rank, no ncclSend" uses_not "$call" ncclSend
    checked "$c through $call: validated on 3 ranks" "$T_DIR/$c.json" --ranks 3 --complete
  fi
  FB_STANDIN_NCCL_VERSION=2.27.7 sg 3 "$c" -b 3K -e 192K -f 8 -n 2 -c 1 -J "$T_DIR/$c-27.json"
  if ran_ok "$c on NCCL 2.27"; then
    judge "$c on NCCL 2.27: send/recv groups, no $call" uses_not ncclSend "$call"
    checked "$c through send/recv: validated on 3 ranks" "$T_DIR/$c-27.json" --ranks 3 --complete
  fi
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

# --- NCCL's order at the end: deregister, then finalize and destroy ------
sg 1 all_reduce -g 2 -R 1 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/r1.json"
if ran_ok "-g 2 -R 1"; then
  judge "-g 2 -R 1: every buffer deregistered before ncclCommFinalize" all_equal "deregistered after finalize" 0
fi

# --- #wrong as an exact count in the table -------------------------------
FB_STANDIN_CORRUPT_RANK=1 sg 2 all_reduce -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/bad.json"
if [ "$T_RC" -eq 3 ] && grep -Eq '^ +1024 +256 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9][0-9]* ' "$T_OUT"; then
  ok "wrong results: exit 3, #wrong an integer count in the row"
else
  not_ok "wrong results: exit 3, #wrong an integer count" "exit $T_RC: $(grep -E '^ +1024' "$T_OUT")"
fi
