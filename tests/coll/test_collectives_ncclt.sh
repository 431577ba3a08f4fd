#!/usr/bin/env bash
# alltoallv, gather, scatter and hypercube, the collectives of nccl-tests
# 2.19 beyond the first seven: run by their *_perf names on the MPI backend
# at 1, 2, 3 (hypercube: not 3) and 4 ranks and under the GPU stand-in at 2
# and 4, validated in and out of place; the size and count columns are what
# nccl-tests' rules give for that size, type and rank count (computed here),
# busBW / algBW is the bus factor; a corrupted stand-in rank gives wrong
# elements; hypercube on 3 ranks is refused.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

command -v jq >/dev/null || { skip "nccl-tests' other collectives" "jq is not installed"; exit 0; }
gs=$FB_ROOT/scripts/gpu-standin.sh
sizes=(1000 10000 100000) # -b 1000 -e 100000 -f 10

esize() { case $1 in int8) echo 1 ;; double) echo 8 ;; *) echo 4 ;; esac; }

# block SIZE ESZ NP: the per-rank block, count / nranks rounded down to
# 16 bytes (GatherGetCollByteCount, ScatterGetCollByteCount,
# HyperCubeGetCollByteCount, AlltoAllvGetCollByteCount's paramcount).
block() { echo $(( ($1 / $2 / $3) & ~(16 / $2 - 1) )); }

# alltoallv_bytes PARAM ESZ NP: one rank's sum of its shares, the size
# column (alltoallv.cu: AlltoAllvGetPeerBytesDistanceWeighted at the
# default spread 1, summed in AlltoAllvComputeMaxCounts): of total = param
# x nranks elements, distance d gets floor(d x total / (n(n-1)/2)) bytes
# rounded down to 16; one rank keeps total rounded down to 16.
alltoallv_bytes() {
  local total=$(( $1 * $3 * $2 )) n=$3 sum=0 d
  if [ "$n" -eq 1 ]; then echo $(( total & ~15 )); return; fi
  for ((d = 1; d < n; d++)); do sum=$(( sum + ((d * total / (n * (n - 1) / 2)) & ~15) )); done
  echo $(( sum / $2 * $2 ))
}

# expected_columns COLL SIZE ESZ NP: "size count" as nccl-tests prints them.
expected_columns() {
  local c=$1 size=$2 esz=$3 n=$4 b
  b=$(block "$size" "$esz" "$n")
  case $c in
    alltoallv) echo "$(alltoallv_bytes "$b" "$esz" "$n") $b" ;;
    *) echo "$(( b * n * esz )) $b" ;; # gather, scatter, hypercube: the gathered / scattered whole
  esac
}

# factors COLL NP: "bus alg": busBW = algBW x bus (GetBw of each .cu:
# (n-1)/n for gather, scatter, alltoallv; 1 for hypercube), and algBW =
# size / time x alg (hypercube: count x type size x (n-1) / time).
factors() {
  case $1 in
    hypercube) awk -v n="$2" 'BEGIN { printf "1 %.12g\n", (n - 1) / n }' ;;
    *) awk -v n="$2" 'BEGIN { printf "%.12g 1\n", (n - 1) / n }' ;;
  esac
}

# verify NAME COLL NP DTYPE ROOT JSON: the table's rows and the results'.
verify() {
  local name=$1 c=$2 n=$3 dtype=$4 root=$5 json=$6 esz want got fac bad i=0 s
  esz=$(esize "$dtype")
  want="" got=""
  for s in "${sizes[@]}"; do want+="$(expected_columns "$c" "$s" "$esz" "$n") $dtype $root;"; done
  got=$(awk '/^ *[0-9]+ +[0-9]+ / { printf "%s %s %s %s;", $1, $2, $3, $5 }' "$T_OUT")
  if [ "$got" != "$want" ]; then not_ok "$name: size, count, type, root columns" "got '$got', want '$want'"; return; fi
  fac=$(factors "$c" "$n")
  # Every placement: busBW = algBW x bus, time x algBW = size x alg, no
  # wrong element; alltoallv in place is not checked (N/A), as nccl-tests.
  bad=$(jq -r --argjson bus "${fac% *}" --argjson alg "${fac#* }" --arg c "$c" '
    def near(a; b): ((a - b) | fabs) <= 1e-9 * ((a | fabs) + (b | fabs)) + 1e-12;
    .rows[] as $r | ["out_of_place", "in_place"][] as $p | $r[$p] as $m
    | if near($m.busbw_GBps; $m.algbw_GBps * $bus) | not then "\($r.bytes) \($p): busBW \($m.busbw_GBps) != algBW x \($bus)"
      elif near($m.algbw_GBps * $m.time_us * 1e3; $r.bytes * $alg) | not then "\($r.bytes) \($p): algBW x time != size x \($alg)"
      elif $c == "alltoallv" and $p == "in_place" then (if $m.wrong == null then empty else "in-place alltoallv checked: \($m.wrong)" end)
      elif $m.wrong != 0 then "\($r.bytes) \($p): wrong \($m.wrong)"
      else empty end' "$json" 2>&1 | head -3)
  i=$(jq '.rows | length' "$json")
  if [ -n "$bad" ] || [ "$i" -ne 3 ]; then not_ok "$name: busBW/algBW, validation" "$i rows; $bad"; return; fi
  if [ "$c" = alltoallv ] && [ "$(awk '/^ *[0-9]+ +[0-9]+ / && $NF == "N/A"' "$T_OUT" | wc -l)" -ne 3 ]; then
    not_ok "$name: in-place #wrong N/A" "$(grep -E '^ *[0-9]' "$T_OUT")"; return
  fi
  ok "$name: exit 0, no wrong element, size/count as nccl-tests, busBW = algBW x ${fac% *}"
}

# --- the MPI backend ----------------------------------------------------
dtypes=(float float int8 double float) # by rank count: alignment per type
for c in alltoallv gather scatter hypercube; do
  for n in 1 2 3 4; do
    dt=${dtypes[$n]} root=-1
    [ "$c" = gather ] || [ "$c" = scatter ] && root=$((n - 1))
    [ "$c" = hypercube ] && [ "$n" -eq 3 ] && continue
    out=$T_DIR/$c-mpi-$n.json
    run fb_mpirun "$n" "$FB_BIN/${c}_perf" --backend mpi -b 1000 -e 100000 -f 10 -n 1 -w 0 -c 1 -d "$dt" \
      -r $((n - 1)) --record "$out"
    if [ "$T_RC" -ne 0 ]; then not_ok "${c}_perf mpi $n ranks" "exit $T_RC: $(head -c 300 "$T_ERR")"; continue; fi
    verify "${c}_perf on $n MPI rank(s), $dt, -r $((n - 1))" "$c" "$n" "$dt" "$root" "$out"
  done
done

# nccl-tests' HyperCubeRunTest skips a rank count that is no power of two
# ("nRanks 3 is not a power of 2, skipping", exit 0, no rows); fabric-coll
# refuses it before anything runs instead (docs/coll.md).
run fb_mpirun 3 "$FB_BIN/hypercube_perf" --backend mpi -b 1K -e 1K -n 1 --record "$T_DIR/hc3.json"
if [ "$T_RC" -eq 2 ] && grep -q '^fabric-coll: hypercube .*needs a power-of-two rank count, not 3; start 2 or 4 ranks' "$T_ERR" &&
   ! grep -qE '^ *[0-9]+ +[0-9]+ ' "$T_OUT"; then
  ok "hypercube on 3 ranks: exit 2, naming 2 or 4 ranks, before any row"
else
  not_ok "hypercube on 3 ranks is refused" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi

# nccl-tests' alltoallv reads NCCL_TESTS_ALLTOALLV_SPREAD (and a traffic
# matrix); fabric-coll sends the default shares and warns, in the output
# and the results.
NCCL_TESTS_ALLTOALLV_SPREAD=0 run fb_mpirun 2 -x NCCL_TESTS_ALLTOALLV_SPREAD "$FB_BIN/alltoallv_perf" --backend mpi \
  -b 1K -e 1K -n 1 --record "$T_DIR/spread.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Warning: NCCL_TESTS_ALLTOALLV_SPREAD is not read' "$T_OUT" &&
   jq -e '.warnings | map(select(test("NCCL_TESTS_ALLTOALLV_SPREAD is not read"))) | length == 1' "$T_DIR/spread.json" >/dev/null; then
  ok "NCCL_TESTS_ALLTOALLV_SPREAD set: a warning that the default shares are sent"
else
  not_ok "NCCL_TESTS_ALLTOALLV_SPREAD warns" "exit $T_RC: $(grep -i warn "$T_OUT" | head -3)"
fi

# --- the GPU stand-in: the NCCL backend's grouped sends and receives ------
standin_built "the four on the GPU stand-in" || exit 0
sg() {
  local n=$1
  shift
  run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np "$n" -x LD_LIBRARY_PATH -x FB_STANDIN_CORRUPT_RANK \
    "$FB_BIN/fabric-coll" "$@"
}
for c in alltoallv gather scatter hypercube; do
  for n in 2 4; do
    root=-1
    [ "$c" = gather ] || [ "$c" = scatter ] && root=1
    out=$T_DIR/$c-sg-$n.json
    FB_STANDIN_CORRUPT_RANK=-1 sg "$n" "$c" -b 1000 -e 100000 -f 10 -n 1 -w 0 -c 1 -r 1 --record "$out"
    if [ "$T_RC" -ne 0 ]; then not_ok "$c on $n stand-in GPUs" "exit $T_RC: $(head -c 300 "$T_ERR")"; continue; fi
    if [ "$(jq -r .backend "$out")" != nccl ]; then not_ok "$c on $n stand-in GPUs" "backend $(jq -r .backend "$out")"; continue; fi
    verify "$c on $n stand-in GPUs (nccl), -r 1" "$c" "$n" float "$root" "$out"
  done
  # Rank 1 (gather's root) gets every block it receives with one bit flipped.
  FB_STANDIN_CORRUPT_RANK=1 sg 4 "$c" -b 4K -e 4K -n 1 -w 0 -c 1 -r 1 --record "$T_DIR/$c-bad.json"
  wrong=$(jq '.summary.wrong_total' "$T_DIR/$c-bad.json" 2>/dev/null)
  if [ "$T_RC" -eq 3 ] && [ "${wrong:-0}" -gt 0 ] && grep -q "^fabric-coll: rank 1 on .*: $c 4" "$T_ERR"; then
    ok "$c: a corrupted stand-in rank gives $wrong wrong elements, exit 3, rank 1 named"
  else
    not_ok "$c: a corrupted stand-in rank is caught" "exit $T_RC, wrong ${wrong:-?}: $(head -c 300 "$T_ERR")"
  fi
done
