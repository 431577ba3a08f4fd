#!/usr/bin/env bash
# Every collective on the MPI backend at 1, 2 and 4 ranks, up to 64M with
# validation on, in-place and out-of-place; the results file must be valid
# and its numbers consistent (busBW = algBW x factor, time x algBW = size).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

colls=(all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv)
for np in 1 2 4; do
  for c in "${colls[@]}"; do
    out=$T_DIR/$c-$np.json
    name="$c on $np rank(s), 1K..64M, -c 1"
    run fb_mpirun "$np" "$FB_BIN/fabric-coll" "$c" -b 1K -e 64M -f 4 -n 2 -w 1 -c 1 \
      --backend mpi -J "$out"
    if [ "$T_RC" -ne 0 ]; then
      not_ok "$name" "exit $T_RC: $(head -c 300 "$T_ERR")"
      continue
    fi
    if msg=$(/usr/bin/python3 "$FB_ROOT/tests/tools/check_collective.py" "$out" \
        --ranks "$np" --rows 9 --complete 2>&1); then
      ok "$name"
    else
      not_ok "$name" "$msg"
    fi
  done
done

# The text table is nccl-tests': 13 columns per data row, both placements.
run fb_mpirun 2 "$FB_BIN/all_reduce_perf" --backend mpi -b 8 -e 2M -f 4 -n 2 -J "$T_DIR/t.json" --record "$T_DIR/t-rec.json"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1( +[0-9.e+]+){3} +0( +[0-9.e+]+){3} +0$' "$T_OUT")
if [ "$rows" -eq 10 ]; then ok "all_reduce_perf prints 10 nccl-tests rows"; else not_ok "all_reduce_perf prints 10 nccl-tests rows" "$rows rows: $(cat "$T_OUT")"; fi
expect_grep "footer: out of bounds" '^# Out of bounds values : 0 OK$' "$T_OUT"
expect_grep "footer: average bus bandwidth" '^# Avg bus bandwidth    : [0-9.e+-]+ $' "$T_OUT"
expect_grep "summary beside the nccl-tests average" '^# busBW peak .* average over sizes >= 1M' "$T_OUT"

# all_gather: the size column is the gathered total, count is per rank.
run fb_mpirun 4 "$FB_BIN/all_gather_perf" --backend mpi -b 4K -e 4K -n 1 -J "$T_DIR/ag.json" --record "$T_DIR/ag-rec.json"
expect_grep "all_gather 4K on 4 ranks: size 4096, count 256" '^ +4096 +256 +float +none +-1 ' "$T_OUT"

# Data types and operators, exact at every rank count.
for spec in "int8 sum" "uint8 min" "int32 max" "uint32 sum" "int64 prod" "uint64 max" "double sum" "float prod"; do
  read -r dtype op <<<"$spec"
  set -- "$dtype" "$op"
  run fb_mpirun 3 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 256K -f 4 -n 1 -d "$1" -o "$2" \
    --backend mpi -J "$T_DIR/dt.json"
  if [ "$T_RC" -eq 0 ] && /usr/bin/python3 "$FB_ROOT/tests/tools/check_collective.py" "$T_DIR/dt.json" --ranks 3 --complete >/dev/null; then
    ok "all_reduce -d $1 -o $2 on 3 ranks validates"
  else
    not_ok "all_reduce -d $1 -o $2 on 3 ranks validates" "exit $T_RC $(head -c 300 "$T_ERR")"
  fi
done

# Time reduction across ranks (-a) and repeats (-N).
run fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 4K -f 2 -n 2 -N 3 -a 2 -J "$T_DIR/n.json"
if /usr/bin/python3 - "$T_DIR/n.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["time_reduction"] == "min", d["time_reduction"]
assert [r["run"] for r in d["rows"]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
for r in d["rows"]:
    assert r["out_of_place"]["time_us"] == r["out_of_place"]["time_us_min"]
assert d["summary"]["sizes_planned"] == 9
PY
then ok "-N 3 repeats rows, -a 2 reports the minimum"; else not_ok "-N 3 repeats rows, -a 2 reports the minimum" "see $T_DIR/n.json"; fi

# Default results path: results/<cluster>/<stamp>-<collective>.json.
dir=$T_DIR/res
# (Labels outside [A-Za-z0-9._-] are refused: tests/faults/test_data_safety.sh.)
run fb_mpirun 2 "$FB_BIN/fabric-coll" broadcast -b 1K -e 1K -n 1 --results-dir "$dir" --cluster "lab-a.b_1"
f=$(find "$dir/lab-a.b_1" -name '*-broadcast.json' 2>/dev/null | head -1)
if [ -n "$f" ] && grep -q '"cluster": "lab-a.b_1"' "$f"; then ok "default path results/<cluster>/<stamp>-<collective>.json"; else not_ok "default path results/<cluster>/<stamp>-<collective>.json" "$(ls -R "$dir")"; fi
FABRIC_CLUSTER=envname run fb_mpirun 1 -x FABRIC_CLUSTER "$FB_BIN/fabric-coll" reduce -b 1K -e 1K -n 1 --results-dir "$dir"
if ls "$dir"/envname/*-reduce.json >/dev/null 2>&1; then ok "cluster label from FABRIC_CLUSTER"; else not_ok "cluster label from FABRIC_CLUSTER" "$(ls "$dir")"; fi
