#!/usr/bin/env bash
# nccl-tests' own output under the *_perf names: -J writes nccl-tests'
# JSON (file version 3, 2.19.6's keys, types and order) by its creation
# rule, -C/-S/-M change the table as 2.19.6 does, NCCL_TESTS_MIN_BW fails
# the run; on the MPI backend and, when built, the GPU stand-in. The
# expectations are nccl-tests 2.19.6's (src/util.cu: jsonOutputInit,
# writeDeviceReport, writeBenchmarkLine*, writeResultHeader/Footer,
# writeMemInfo, writeErrors, jsonOutputFinalize; src/common.cu: the
# NCCL_TESTS_MIN_BW check), written down here, not read from nccl-tests.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
gs=$FB_ROOT/scripts/gpu-standin.sh
mpi() { run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 "$@"; }

# check_nt NAME NT.json TABLE.txt [cpu] [gpu]: the file has exactly
# nccl-tests' keys and types in its order, and its numbers are the table's.
check_nt() {
  local name=$1 msg
  if msg=$(/usr/bin/python3 - "$2" "$3" "${4:-time}" "${5:-mpi}" 2>&1 <<'PY'
import json, re, sys
path, table, timekey, backend = sys.argv[1:5]
doc = json.load(open(path))
# Keys in the order util.cu writes them (jsonOutputInit, writeDeviceReport,
# writeResultHeader, writeBenchmarkLine*, writeResultFooter, writeErrors,
# jsonOutputFinalize); booleans are the strings "true"/"false" (jsonBool),
# "root" is sprintf("%6i"), doubles are numbers or the string "nan".
TOP = ["version", "start_time", "args", "env", "nccl_version", "config", "results",
       "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"]
CONFIG = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor", "warmup_iters",
          "iterations", "aggregated_iterations", "validation", "graph", "blocking_collectives",
          "per_iter_timing", "per_iter_skip", "parallel_init", "devices"]
DEVICE = ["rank", "group", "pid", "hostname", "device", "device_hex", "device_info"]
RESULT = ["size", "count", "type", "redop", "root", "out_of_place", "in_place", "actual_iterations",
          "experiment_name"]
PLACE = [timekey, "alg_bw", "bus_bw", "nwrong"]
def keys(obj, want, where):
    assert isinstance(obj, dict), where
    assert list(obj) == want, f"{where}: keys {list(obj)} != {want}"
def typed(v, t, where):
    assert isinstance(v, t) and not isinstance(v, bool), f"{where}: {v!r} is not {t}"
def boolstr(v, where):
    assert v in ("true", "false"), f"{where}: {v!r} is not \"true\"/\"false\""
keys(doc, TOP, "top")
assert doc["version"] == 3, doc["version"]
typed(doc["nccl_version"], int, "nccl_version")
assert (doc["nccl_version"] > 0) == (backend == "gpu"), doc["nccl_version"]
for k in ("start_time", "end_time"):
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", doc[k]), doc[k]
assert all(isinstance(a, str) for a in doc["args"]) and doc["args"][0].endswith("all_reduce_perf")
env_names = [e.split("=", 1)[0] for e in doc["env"]]
keep = ("NCCL_", "FI_", "UCX_", "OMPI_", "PMIX_", "SLURM_", "PMI_", "HYDRA_", "I_MPI_", "MV2_")
assert all(n.startswith(keep) or n in ("MPI_LOCALRANKID", "MPI_LOCALNRANKS", "CUDA_VISIBLE_DEVICES")
           for n in env_names), env_names
assert "FB_SECRET_PROBE" not in env_names and "OMPI_COMM_WORLD_SIZE" in env_names, env_names
c = doc["config"]
keys(c, CONFIG, "config")
for k in CONFIG[:10] + ["per_iter_skip"]:
    typed(c[k], int, "config." + k)
for k in ("blocking_collectives", "per_iter_timing", "parallel_init"):
    boolstr(c[k], "config." + k)
assert len(c["devices"]) == 2
for d in c["devices"]:
    keys(d, DEVICE, "device")
    for k in ("rank", "group", "pid", "device"):
        typed(d[k], int, "device." + k)
    for k in ("hostname", "device_hex", "device_info"):
        typed(d[k], str, "device." + k)
rows = [l.split() for l in open(table) if re.match(r"^ +\d+ +\d+ ", l)]
assert len(rows) == len(doc["results"]) > 0, (len(rows), len(doc["results"]))
def cell(v, width):  # getFloatStr
    for f in ("%*.2f", "%*.1f", "%*.0f"):
        s = f % (width, v)
        if len(s) <= width:
            return s.strip()
    return (("%*.1e" if width >= 7 else "%*.0e") % (width, v)).strip()
for r, t in zip(doc["results"], rows):
    keys(r, RESULT, "result")
    for k in ("size", "count", "actual_iterations"):
        typed(r[k], int, "result." + k)
    assert r["root"] == "%6i" % int(t[4]), r["root"]
    assert [str(r["size"]), str(r["count"]), r["type"], r["redop"]] == t[:4], (r, t)
    for p, off in (("out_of_place", 5), ("in_place", 9)):
        pl = r[p]
        keys(pl, PLACE, p)
        for k in PLACE[:3]:
            typed(pl[k], float, p + "." + k)
        typed(pl["nwrong"], float, p + ".nwrong")
        # The JSON has six decimals (%lf): a value on a rounding edge
        # (10.4150001) may print one last digit apart in the table.
        got = [cell(pl[timekey], 7), cell(pl["alg_bw"], 6), cell(pl["bus_bw"], 6), "%g" % pl["nwrong"]]
        want = t[off:off + 4]
        near = all(g == w or abs(float(g) - float(w)) <= 1.01 * 10 ** -(len(w.split(".")[1]) if "." in w else 0)
                   for g, w in zip(got[:3], want[:3]))
        assert near and got[3] == want[3], f"{p}: json {got} != table {want}"
oob, avg = doc["out_of_bounds"], doc["average_bus_bandwidth"]
keys(oob, ["count", "okay"], "out_of_bounds")
keys(avg, ["bandwidth", "okay"], "average_bus_bandwidth")
typed(oob["count"], int, "out_of_bounds.count")
boolstr(oob["okay"], "out_of_bounds.okay")
typed(avg["bandwidth"], float, "bandwidth")
assert avg["okay"] in ("true", "false", "unchecked"), avg["okay"]
footer = [l for l in open(table) if l.startswith("# Avg bus bandwidth")][0]
printed = float(footer.split(":")[1].split()[0])
assert abs(printed - avg["bandwidth"]) <= 1e-5 * max(1, printed), (printed, avg["bandwidth"])
assert doc["errors"] == [""], doc["errors"]
PY
  ); then ok "$name"; else not_ok "$name" "$msg"; fi
}

d=$T_DIR
# --- MPI backend, 2 ranks -------------------------------------------------
FB_SECRET_PROBE=x mpi -x FB_SECRET_PROBE "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 64K -f 4 -n 2 -c 1 \
  -J "$d/nt.json" --record "$d/rec.json"
cp "$T_OUT" "$d/table.txt"
if [ "$T_RC" -eq 0 ] && [ "$(head -1 "$T_OUT")" = "# Writing JSON output to $d/nt.json" ]; then
  ok "all_reduce_perf -J: the first line names the file, exit 0"
else
  not_ok "all_reduce_perf -J: the first line names the file, exit 0" "exit $T_RC: $(head -2 "$T_OUT")"
fi
check_nt "mpi: nccl-tests' keys, types and order; numbers as the table's" "$d/nt.json" "$d/table.txt"
check "python3 json.load reads it" /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$d/nt.json"
if grep -q '"schema": "fabric-bench.result"' "$d/rec.json" 2>/dev/null; then
  ok "--record FILE gets the results record"
else
  not_ok "--record FILE gets the results record" "$(head -c 200 "$d/rec.json" 2>&1)"
fi
# Written after every size, as the record: an interrupted run keeps its rows.
if grep -q '"version":3' "$d/nt.json" && ! grep -q '"schema"' "$d/nt.json"; then
  ok "-J is nccl-tests' layout, not the record"
else
  not_ok "-J is nccl-tests' layout, not the record" "$(head -c 200 "$d/nt.json")"
fi

# fabric-report imports it back to the record's rows.
run "$R" import "$d/nt.json" -o "$d/imp.json"
if [ "$T_RC" -eq 0 ] && /usr/bin/python3 - "$d/imp.json" "$d/rec.json" <<'PY'
import json, sys
imp, rec = (json.load(open(p)) for p in sys.argv[1:3])
assert imp["collective"] == "all_reduce" and imp["complete"] is True
assert len(imp["rows"]) == len(rec["rows"]) == 4
for a, b in zip(imp["rows"], rec["rows"]):
    assert (a["bytes"], a["count"], a["iterations"]) == (b["bytes"], b["count"], b["iterations"]), (a, b)
    for p in ("out_of_place", "in_place"):
        assert a[p]["wrong"] == b[p]["wrong"]
        for k in ("time_us", "algbw_GBps", "busbw_GBps"):
            assert abs(a[p][k] - b[p][k]) <= 1e-6 * max(1, b[p][k]), (p, k, a[p][k], b[p][k])
PY
then ok "fabric-report import reads it back to the record's rows"; else not_ok "fabric-report import reads it back to the record's rows" "exit $T_RC $(cat "$T_ERR")"; fi

# The file exists: never replaced, FILE.0 then FILE.1 (jsonOutputInit).
sum=$(md5sum <"$d/nt.json")
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 1K -n 1 -J "$d/nt.json" --record "$d/rec2.json"
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 1K -n 1 -J "$d/nt.json" --record "$d/rec3.json"
if [ "$(md5sum <"$d/nt.json")" = "$sum" ] && [ -s "$d/nt.json.0" ] && [ -s "$d/nt.json.1" ] &&
   grep -q "^# Writing JSON output to $d/nt.json.1$" "$T_OUT"; then
  ok "an existing -J file is kept: FILE.0, then FILE.1"
else
  not_ok "an existing -J file is kept: FILE.0, then FILE.1" "$(ls "$d") $(head -1 "$T_OUT")"
fi
# Not accessible: nccl-tests says so and runs on (exit 0, no file).
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 1K -n 1 -J "$d/none/x.json" --record "$d/rec4.json"
if [ "$T_RC" -eq 0 ] && grep -q "^# skipping json output; $d/none/x.json not accessible$" "$T_OUT" &&
   [ ! -e "$d/none" ] && grep -q '^# Out of bounds values : 0 OK$' "$T_OUT"; then
  ok "an unwritable -J: '# skipping json output', the run goes on, exit 0"
else
  not_ok "an unwritable -J: '# skipping json output', the run goes on, exit 0" "exit $T_RC: $(head -3 "$T_OUT")"
fi
# Only a .json name gets JSON (classifyOutputFile).
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 1K -n 1 -J "$d/out.txt" --record "$d/rec5.json"
if [ "$T_RC" -eq 0 ] && [ ! -e "$d/out.txt" ] && grep -q '^# Note: -J .*out.txt: .*only to a name ending in .json' "$T_OUT"; then
  ok "-J out.txt: nothing written, as nccl-tests, and a note says why"
else
  not_ok "-J out.txt: nothing written, as nccl-tests, and a note says why" "exit $T_RC $(ls "$d")"
fi
# As fabric-coll, -J stays the record and --nccl-tests-json adds the layout.
mpi "$FB_BIN/fabric-coll" all_reduce -b 1K -e 4K -f 4 -n 1 -J "$d/fc.json" --nccl-tests-json "$d/fc-nt"
if [ "$T_RC" -eq 0 ] && grep -q '"schema": "fabric-bench.result"' "$d/fc.json" && grep -q '"version":3' "$d/fc-nt"; then
  ok "fabric-coll: -J is the record, --nccl-tests-json FILE the nccl-tests layout"
else
  not_ok "fabric-coll: -J is the record, --nccl-tests-json FILE the nccl-tests layout" "exit $T_RC $(head -c 300 "$T_ERR")"
fi

# --- -C, -S, -M -----------------------------------------------------------
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 16K -f 4 -n 2 -C 1 -S 1 -M 1 -J "$d/cs.json" --record "$d/cs-rec.json"
cp "$T_OUT" "$d/cs.txt"
check_nt "-C 1: \"cpu_time\" for \"time\", the table's cputime column" "$d/cs.json" "$d/cs.txt" cpu_time
expect_grep "-C 1 -S 1: header titles cputime and timestamp" \
  '^# +size +count +type +redop +root +cputime +algbw +busbw +#wrong +cputime +algbw +busbw +#wrong +timestamp$' "$d/cs.txt"
expect_grep "-S 1: units line shows the time format" '\(GB/s\) +%Y-%m-%d %H:%M:%S$' "$d/cs.txt"
n=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1( +[0-9.e+]+){3} +0( +[0-9.e+]+){3} +0  [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' "$d/cs.txt")
if [ "$n" -eq 3 ]; then ok "-S 1: every row ends with its local time (%21s)"; else not_ok "-S 1: every row ends with its local time (%21s)" "$n rows: $(cat "$d/cs.txt")"; fi
expect_grep "-M 1: one memory line, nccl-tests' layout, host memory honestly named" \
  '^# Host memory usage    : Process [0-9.]+ (B|KB|MB|GB) \| User-Allocated [0-9.]+ (B|KB|MB|GB) \| Collective [0-9.]+ (B|KB|MB|GB) \| Total  [0-9.]+ (B|KB|MB|GB)$' "$d/cs.txt"
if grep -q '"time_column": "cpu_time"' "$d/cs-rec.json" && grep -q '"cpu_time_us"' "$d/cs-rec.json"; then
  ok "the record notes the table's time is CPU time"
else
  not_ok "the record notes the table's time is CPU time" "$(grep -c cpu_time "$d/cs-rec.json")"
fi
run "$R" import "$d/cs.txt" -o "$d/cs-imp.json"
if [ "$T_RC" -eq 0 ] && [ "$(jq '.rows | length' "$d/cs-imp.json")" -eq 3 ]; then
  ok "fabric-report import reads the -C -S -M table (the timestamp column set aside)"
else
  not_ok "fabric-report import reads the -C -S -M table (the timestamp column set aside)" "exit $T_RC: $(cat "$T_ERR")"
fi
mpi "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 1K -n 1 --record "$d/plain.json"
if grep -Eq '^# +size .* #wrong $' "$T_OUT" && ! grep -q 'memory usage' "$T_OUT"; then
  ok "without -S the title lines end as 2.19.6's (' %*s'), no memory line without -M"
else
  not_ok "without -S the title lines end as 2.19.6's (' %*s'), no memory line without -M" "$(grep '#wrong' "$T_OUT" | cat -A)"
fi

# --- NCCL_TESTS_MIN_BW ----------------------------------------------------
NCCL_TESTS_MIN_BW=1e9 mpi -x NCCL_TESTS_MIN_BW "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 4K -f 4 -n 1 \
  -J "$d/min.json" --record "$d/min-rec.json"
if [ "$T_RC" -eq 3 ] && grep -q '^# Avg bus bandwidth    : [0-9.e+-]* FAILED$' "$T_OUT" &&
   [ "$(grep -c "^fabric-coll: " "$T_ERR")" -eq 1 ] && grep -q 'below 90% of NCCL_TESTS_MIN_BW=1e+09' "$T_ERR" &&
   grep -q '"okay":"false"' "$d/min.json" && grep -q '"min_bw_ok": false' "$d/min-rec.json"; then
  ok "NCCL_TESTS_MIN_BW above the average: FAILED, exit 3, one stderr line, files written"
else
  not_ok "NCCL_TESTS_MIN_BW above the average: FAILED, exit 3, one stderr line, files written" "exit $T_RC: $(cat "$T_ERR")"
fi
NCCL_TESTS_MIN_BW=0.000001 mpi -x NCCL_TESTS_MIN_BW "$FB_BIN/all_reduce_perf" --backend mpi -b 1K -e 4K -f 4 -n 1 \
  -J "$d/min2.json" --record "$d/min2-rec.json"
if [ "$T_RC" -eq 0 ] && grep -q '^# Avg bus bandwidth    : [0-9.e+-]* OK$' "$T_OUT" && grep -q '"okay":"true"}' "$d/min2.json"; then
  ok "NCCL_TESTS_MIN_BW below the average: OK, exit 0"
else
  not_ok "NCCL_TESTS_MIN_BW below the average: OK, exit 0" "exit $T_RC: $(cat "$T_ERR")"
fi

# --- the GPU stand-in -----------------------------------------------------
if [ ! -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  skip "nccl-tests JSON on the GPU stand-in" "stand-in not built (make standin)"
  exit 0
fi
run "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 2 -x LD_LIBRARY_PATH "$FB_BIN/all_reduce_perf" \
  -b 1K -e 64K -f 8 -n 2 -c 1 -M 1 -J "$d/g.json" --record "$d/g-rec.json"
cp "$T_OUT" "$d/g.txt"
if [ "$T_RC" -eq 0 ]; then ok "stand-in: all_reduce_perf -J exits 0"; else not_ok "stand-in: all_reduce_perf -J exits 0" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
check_nt "stand-in: nccl-tests' keys, types and order; numbers as the table's" "$d/g.json" "$d/g.txt" time gpu
expect_grep "stand-in -M 1: GPU memory usage with nccl-tests' three figures" \
  '^# GPU memory usage     : Initialization [0-9.]+ (B|KB|MB|GB) \| User-Allocated [0-9.]+ (B|KB|MB|GB) \| Collective [0-9.]+ (B|KB|MB|GB) \| Total  [0-9.]+ (B|KB|MB|GB)$' "$d/g.txt"
