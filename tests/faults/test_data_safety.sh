#!/usr/bin/env bash
# Data safety on the writers' side: no writer replaces what is not its own
# (devices, FIFOs, the file behind a symbolic link), runs started in the same
# second and imports of same-named inputs never land on each other, cluster
# labels stay inside the results directory, an interrupted set-up leaves a
# complete document that check calls INCOMPLETE and compare passes over, a
# bad -J fails before the sweep, every document is valid UTF-8, and sizes
# that align alike are measured once.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
FIX=$FB_ROOT/tests/fixtures/report
RES=$FIX/results
TOPO=$FB_ROOT/tests/fixtures/doctor/topo/h100-8gpu-8nic.xml
TREE=$FB_ROOT/tests/fixtures/doctor/node/ib-healthy
SIZES=(-b 1K -e 4K -f 2 -n 2 -w 0 -c 0 --backend mpi)

coll() { mpi_quiet 2 "$FB_BIN/fabric-coll" all_reduce "${SIZES[@]}" "$@"; }
rdma() { mpi_quiet 2 "$FB_BIN/fabric-rdma" --transport tcp -D 0.2 "$@"; }
py_json_ok() { /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1"; }
jq_true() { [ "$(jq -r "$2" "$1" 2>/dev/null)" = true ]; }

# ---- 1. a device, a FIFO or a symbolic link is never renamed over ----
# still_device NAME PATH CMD...: CMD (writing to PATH) leaves it a device.
still_device() {
  local name=$1 path=$2; shift 2
  run "$@"
  if [ -c "$path" ] && [ ! -L "$path" ]; then ok "$name: the device stays a device"; else not_ok "$name: the device stays a device" "exit $T_RC, now: $(ls -l "$path" 2>&1)"; fi
}
if is_root && mknod "$T_DIR/null" c 1 3 2>/dev/null; then
  dev=$T_DIR/null
  still_device "fabric-coll -J DEVICE" "$dev" coll -J "$dev"
  still_device "fabric-rdma -J DEVICE" "$dev" rdma -J "$dev"
  still_device "fabric-topo -J DEVICE" "$dev" env -i PATH="$PATH" "$FB_BIN/fabric-topo" --topology "$TOPO" -J "$dev"
  still_device "fabric-doctor node -J DEVICE" "$dev" env -i PATH="$PATH" "$FB_BIN/fabric-doctor" node --root "$TREE" -J "$dev"
  still_device "fabric-report import -o DEVICE" "$dev" "$R" import "$FIX/ncclt/all_reduce_perf-J.json" -o "$dev"
  still_device "fabric-report baseline -o DEVICE --force" "$dev" "$R" baseline "$RES/vm-mpi-allreduce-2.json" --name dev-test -o "$dev" --force
  if [ "$T_RC" -eq 0 ]; then ok "baseline -o DEVICE --force: exit 0"; else not_ok "baseline -o DEVICE --force: exit 0" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
else
  skip "writers and a device node" "mknod needs root"
fi

# A FIFO gets the whole document once, at the end, and stays a FIFO.
fifo=$T_DIR/results.fifo
mkfifo "$fifo"
# (Bounded: a writer that renames over the FIFO never opens it.)
timeout 120 cat "$fifo" >"$T_DIR/from-fifo.json" &
reader=$!
run coll -J "$fifo"
[ -p "$fifo" ] || kill "$reader" 2>/dev/null
wait "$reader"
if [ -p "$fifo" ] && [ "$T_RC" -eq 0 ] && py_json_ok "$T_DIR/from-fifo.json" && jq_true "$T_DIR/from-fifo.json" '.complete and (.rows | length) == 3'; then
  ok "fabric-coll -J FIFO: one complete document through it, the FIFO kept"
else
  not_ok "fabric-coll -J FIFO: one complete document through it, the FIFO kept" "exit $T_RC, $(ls -l "$fifo"): $(head -c 300 "$T_DIR/from-fifo.json")"
fi

# A symbolic link to a regular file: the file is replaced, the link kept.
echo '{"old": true}' >"$T_DIR/real.json"
ln -s real.json "$T_DIR/link.json"
run coll -J "$T_DIR/link.json"
if [ -L "$T_DIR/link.json" ] && jq_true "$T_DIR/real.json" '.complete and .kind == "collective"'; then
  ok "-J SYMLINK: the file it names is replaced, the link stays"
else
  not_ok "-J SYMLINK: the file it names is replaced, the link stays" "exit $T_RC: $(ls -l "$T_DIR/link.json") $(head -c 200 "$T_DIR/real.json")"
fi
ln -s missing.json "$T_DIR/dangling.json"
expect_error "-J to a dangling symlink: exit 7 before the sweep" 7 "symbolic link to a missing" fabric-coll coll -J "$T_DIR/dangling.json"

# ---- 2. runs of the same second, imports of same-named inputs ----
# Every name the next 40 seconds could give is taken by a decoy result.
decoys() {
  local dir=$1 what=$2 now s
  now=$(date -u +%s)
  mkdir -p "$dir"
  for s in $(seq -1 40); do
    echo '{"decoy": true}' >"$dir/$(date -u -d "@$((now + s))" +%Y%m%dT%H%M%SZ)-$what.json"
  done
}
# numbered_result NAME DIR WHAT: one new file, numbered -2, the decoys intact.
numbered_result() {
  local name=$1 dir=$2 what=$3 new intact
  new=$(find "$dir" -name "*-$what-2.json" | wc -l)
  intact=$(grep -l '"decoy": true' "$dir"/*-"$what".json | wc -l)
  if [ "$T_RC" -eq 0 ] && [ "$new" -eq 1 ] && [ "$intact" -eq 42 ]; then
    ok "$name"
  else
    not_ok "$name" "exit $T_RC, $new numbered, $intact of 42 decoys intact: $(head -c 300 "$T_ERR")"
  fi
}
decoys "$T_DIR/same/lab" all_reduce
run coll --results-dir "$T_DIR/same" --cluster lab
numbered_result "fabric-coll: a taken results name gets -2, the result there is untouched" "$T_DIR/same/lab" all_reduce
expect_grep "fabric-coll says the name it took" '^# Results: .*-all_reduce-2\.json$' "$T_OUT"
decoys "$T_DIR/same/lab" probe-tcp
run rdma --results-dir "$T_DIR/same" --cluster lab
numbered_result "fabric-rdma: a taken results name gets -2, the result there is untouched" "$T_DIR/same/lab" probe-tcp

mkdir -p "$T_DIR/imp/a" "$T_DIR/imp/b"
cp "$FIX/ncclt/nccl-tests-killed.txt" "$T_DIR/imp/a/log.txt"
cp "$FIX/ncclt/nccl-tests-collapse.txt" "$T_DIR/imp/b/log.txt"
run "$R" import "$T_DIR/imp/a/log.txt" "$T_DIR/imp/b/log.txt" -o "$T_DIR/imp/out/"
if [ "$T_RC" -eq 0 ] && jq_true "$T_DIR/imp/out/log.json" '.complete == false' && jq_true "$T_DIR/imp/out/log-2.json" '.complete'; then
  ok "import a/log.txt b/log.txt -o DIR/: log.json and log-2.json, one each"
else
  not_ok "import a/log.txt b/log.txt -o DIR/: log.json and log-2.json, one each" "exit $T_RC: $(ls "$T_DIR/imp/out" 2>&1) $(head -c 300 "$T_ERR")"
fi
cp "$T_DIR/imp/out/log.json" "$T_DIR/imp/before.json"
expect_error "import over a file in DIR/ without --force: exit 2" 2 "add --force" "fabric-report import" "$R" import "$T_DIR/imp/b/log.txt" -o "$T_DIR/imp/out/"
check "the refused import left the file as it was" cmp -s "$T_DIR/imp/out/log.json" "$T_DIR/imp/before.json"
expect_exit "import --force replaces it" 0 "$R" import "$T_DIR/imp/b/log.txt" -o "$T_DIR/imp/out/" --force

# ---- 3. cluster labels stay inside the results directory and distinct ----
mkdir -p "$T_DIR/labels/results"
for label in . .. '' 'a b' a/b $'a\nb'; do
  shown=${label//$'\n'/\\n}
  expect_error "fabric-coll --cluster '$shown': exit 2 naming the alphabet" 2 "'.', '_' and '-'" fabric-coll \
    coll --cluster "$label" --results-dir "$T_DIR/labels/results"
done
expect_error "FABRIC_CLUSTER=..: exit 2 naming the variable" 2 "FABRIC_CLUSTER=" fabric-coll \
  env FABRIC_CLUSTER=.. "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce "${SIZES[@]}" --results-dir "$T_DIR/labels/results"
expect_error "fabric-rdma --cluster ..: exit 2" 2 "'.', '_' and '-'" fabric-rdma rdma --cluster .. --results-dir "$T_DIR/labels/results"
left=$(find "$T_DIR/labels" -type f | wc -l)
if [ "$left" -eq 0 ]; then ok "refused labels wrote nothing, inside or outside the results directory"; else not_ok "refused labels wrote nothing" "$(find "$T_DIR/labels" -type f)"; fi
run coll --cluster gke-a3.mega_1 --results-dir "$T_DIR/labels/results"
n=$(find "$T_DIR/labels/results/gke-a3.mega_1" -name '*-all_reduce.json' 2>/dev/null | wc -l)
if [ "$T_RC" -eq 0 ] && [ "$n" -eq 1 ]; then ok "a label of the alphabet names its directory"; else not_ok "a label of the alphabet names its directory" "exit $T_RC, $n files"; fi

# ---- 4. an interrupted set-up leaves a complete document ----
tree=$T_DIR/tree
run coll --cluster tst --results-dir "$tree"
complete_run=$(find "$tree/tst" -name '*.json')
# The rank whose Ctrl-C writes the record: rank 0 of the job started here.
rank0_pid() {
  local p
  for p in $(pgrep -f "^$FB_BIN/fabric-coll all_reduce -b 512M"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then echo "$p"; fi
  done
}
timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 512M -e 512M -n 1 -w 0 -c 0 \
  --backend mpi --cluster tst --results-dir "$tree" >"$T_DIR/int.out" 2>"$T_DIR/int.err" &
job=$!
partial=
for _ in $(seq 1 1000); do
  partial=$(find "$tree/tst" -name '*.json' ! -path "$complete_run" | head -n 1)
  [ -n "$partial" ] && break
  sleep 0.01
done
rank0=$(rank0_pid)
if [ -n "$rank0" ]; then kill -INT "$rank0"; fi
wait "$job"
if [ -n "$partial" ] && jq_true "$partial" '.collective == "all_reduce" and .backend == "mpi" and (.config | type) == "object"
    and .topology.ranks == 2 and .rows == [] and .complete == false and .fault.status == "interrupted"
    and .summary.sizes_planned == 1 and .summary.sizes_done == 0'; then
  ok "Ctrl-C during set-up: the file, there before the buffers, names collective, backend, config, topology, no rows, the fault"
else
  not_ok "Ctrl-C during set-up: the file names collective, backend, config, topology, rows, fault" "$(head -c 600 "$partial" 2>&1) $(cat "$T_DIR/int.err")"
fi
expect_exit "check on the interrupted run: INCOMPLETE (23)" 23 "$R" check "$partial"
expect_grep "check says INCOMPLETE" '^INCOMPLETE' "$T_OUT"
# What an older fabric-coll left: the envelope and empty rows, nothing else.
jq 'del(.collective, .backend, .dtype, .op, .root, .time_reduction, .config, .topology, .devices, .versions, .transport, .time_budget_s, .early_stop, .stability, .summary)' \
  "$partial" >"$tree/tst/legacy-envelope-only.json"
expect_exit "check on an envelope-only file: INCOMPLETE (23)" 23 "$R" check "$tree/tst/legacy-envelope-only.json"
run "$R" compare "$tree" --latest
if [ "$T_RC" -eq 0 ] && grep -q "$complete_run" "$T_OUT" && grep -q 'passed over' "$T_ERR"; then
  ok "compare DIR --latest: the measured run compared, the rowless ones passed over with a note"
else
  not_ok "compare DIR --latest passes over rowless runs" "exit $T_RC: $(head -c 400 "$T_ERR") $(head -c 300 "$T_OUT")"
fi

expect_error "compare of rowless runs alone: exit 10, nothing to compare" 10 "no result with a measured size" "fabric-report compare" \
  "$R" compare "$partial" "$tree/tst/legacy-envelope-only.json"
expect_error "plot of rowless runs alone: exit 10, nothing to plot" 10 "no result with a measured size" "fabric-report plot" \
  "$R" plot "$partial" -o "$T_DIR/rowless.svg"

# ---- 5. an unwritable -J fails before the sweep ----
mkdir -p "$T_DIR/adir"
expect_error "fabric-coll -J DIR: exit 7 before the sweep" 7 "is a directory" fabric-coll coll -J "$T_DIR/adir"
expect_error "fabric-coll -J '': exit 7 before the sweep" 7 "empty" fabric-coll coll -J ""
expect_error "fabric-rdma -J DIR: exit 7 before measuring" 7 "is a directory" fabric-rdma rdma -J "$T_DIR/adir"
expect_error "fabric-rdma -J '': exit 7 before measuring" 7 "empty" fabric-rdma rdma -J ""

# ---- 6. every document is valid UTF-8 ----
raw=$'\xff\xfe'
run env FABRIC_RAW="bytes $raw here" "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce "${SIZES[@]}" -J "$T_DIR/raw.json"
if [ "$T_RC" -eq 0 ] && py_json_ok "$T_DIR/raw.json" && [ "$(jq -r '.env.FABRIC_RAW' "$T_DIR/raw.json")" = "bytes �� here" ]; then
  ok "an environment value with bytes \\xff\\xfe: Python's json.load reads the results, U+FFFD in their place"
else
  not_ok "an environment value with bytes \\xff\\xfe is written as valid UTF-8" "exit $T_RC: $(/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T_DIR/raw.json" 2>&1 | tail -n 1)"
fi
run env -i PATH="$PATH" FABRIC_RAW="$raw" "$FB_BIN/fabric-topo" --topology "$TOPO" -J "$T_DIR/raw-topo.json"
check "fabric-topo: the same environment gives a file json.load reads" py_json_ok "$T_DIR/raw-topo.json"

# ---- 7. sizes that align alike are one size; stability only with -N ----
run mpi_quiet 2 "$FB_BIN/fabric-coll" all_reduce -b 1000 -e 1010 -i 1 -n 1 -w 0 -c 0 --backend mpi -J "$T_DIR/align.json"
if [ "$T_RC" -eq 0 ] && jq_true "$T_DIR/align.json" '[.rows[].bytes] == [1000, 1004, 1008] and .stability == null and .summary.sizes_planned == 3'; then
  ok "-b 1000 -e 1010 -i 1: three rows of distinct sizes, no stability block"
else
  not_ok "-b 1000 -e 1010 -i 1: three rows of distinct sizes, no stability block" "exit $T_RC: $(jq -c '[.rows[].bytes], .stability' "$T_DIR/align.json" 2>&1)"
fi
expect_grep "the merged sizes are noted" '^# Note: 8 sizes round to the bytes of the size before' "$T_OUT"
run mpi_quiet 2 "$FB_BIN/fabric-coll" all_reduce -b 1000 -e 1010 -i 1 -n 1 -w 0 -c 0 -N 2 --backend mpi -J "$T_DIR/align-N.json"
if [ "$T_RC" -eq 0 ] && jq_true "$T_DIR/align-N.json" '(.rows | length) == 6 and .stability.runs == 2 and (.stability.sizes | length) == 3'; then
  ok "-N 2: each size twice, stability over 2 runs"
else
  not_ok "-N 2: each size twice, stability over 2 runs" "exit $T_RC: $(jq -c '.stability' "$T_DIR/align-N.json" 2>&1)"
fi
