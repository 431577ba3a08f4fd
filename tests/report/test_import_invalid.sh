#!/usr/bin/env bash
# fabric-report import on runs that are not one measurement, and on outputs
# of rccl-tests and of perftest runs that failed: several independent runs
# written into one output (nccl-tests built without MPI under mpirun or
# srun) are INVALID (exit 25) whatever the interleaving, naming the fix; a
# device list and rows of different rank counts are INVALID; a run aborted
# part way keeps its abort as its fault and is never PASS; a perftest
# failure is FAIL naming it; rccl-tests text and JSON keep their tool,
# RCCL's version and the GPUs' vendor.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
FIX=$FB_ROOT/tests/fixtures/report
ATLAS=${FB_REALWORLD:-$FB_ROOT/../shared/realworld}/atlas
SCHEMA=$FB_ROOT/docs/schema
export XDG_CONFIG_HOME=$T_DIR/config
unset FABRIC_PROFILE_PATH FABRIC_REFERENCE_DIR
command -v jq >/dev/null || { skip "invalid runs" "jq is not installed"; exit 0; }

# Two 1-rank processes, however their lines met: INVALID, one line, the
# fix, nothing written.
while read -r file why; do
  [ -n "$file" ] || continue
  expect_error "$file is INVALID (exit 25)" 25 "INVALID: .*independent .*runs written into one output.*make MPI=1.*srun --mpi=pmix" \
    "fabric-report import" "$R" import "$FIX/invalid/$file" -o "$T_DIR/out.json"
  expect_grep "  naming what gave it away ($file)" "$why" "$T_ERR"
  check "  and writing nothing ($file)" test ! -e "$T_DIR/out.json"
done <<'TABLE'
two-1rank-line-by-line.txt a second "# nThread" header at line 6
two-1rank-blockwise.txt 2 one-rank tables of one header in a row
two-1rank-tag-output.txt launcher rank 1 printed the table line
two-1rank-srun-l.txt launcher rank 1 printed the table line
one-header-rows-doubled.txt size 1048576 twice in a row
TABLE
# Each 1-rank table alone is a valid (if not comparable) run: the sign is
# the second process, not the table.
head -24 "$FIX/invalid/two-1rank-blockwise.txt" >"$T_DIR/one.txt"
expect_exit "one process's table alone imports" 0 "$R" import "$T_DIR/one.txt" -o "$T_DIR/one.json"

# The published case: two 2-rank runs of an A100 pair, built without MPI.
if [ -f "$ATLAS/issue182_a100pcie_no_mpi_two_separate_runs_TRANSCRIBED.txt" ]; then
  expect_error "the published no-MPI run is INVALID" 25 'is 2 independent 2-rank runs' "fabric-report import" \
    "$R" import "$ATLAS/issue182_a100pcie_no_mpi_two_separate_runs_TRANSCRIBED.txt"
else
  skip "the published no-MPI run is INVALID" "$ATLAS is not there"
fi

# Rank counts that disagree: named, not called damage.
expect_error "device lines of 4 ranks beside rows of 2 are INVALID" 25 \
  'INVALID: .*the device lines list 4 ranks, but the rows are what 2 ranks give' "fabric-report import" \
  "$R" import "$FIX/invalid/ranks-disagree.txt"
expect_error "a device list that is no whole number of processes is INVALID" 25 \
  'runs 8 GPUs per process .* but the device lines list 3 ranks' "fabric-report import" \
  "$R" import "$FIX/invalid/ranks-not-whole-processes.txt"
# The same rows with NCCL_TESTS_SPLIT groups of two ranks read as they are.
sed -E 's/Group  0 Pid (.*) on      node0 device  1/Group  1 Pid \1 on      node0 device  1/; s/Group  0 Pid (.*) on      node1 device  1/Group  1 Pid \1 on      node1 device  1/' \
  "$FIX/invalid/ranks-disagree.txt" >"$T_DIR/split.txt"
expect_exit "the same rows in groups of two (Group column) import" 0 "$R" import "$T_DIR/split.txt" -o "$T_DIR/split.json"
check "  the devices keep their group" jq -e '[.devices[].group] == [0, 1, 0, 1]' "$T_DIR/split.json"

# Aborted part way: incomplete, the launcher's abort as its fault, not PASS.
expect_exit "a run aborted part way imports" 0 "$R" import "$FIX/invalid/aborted-part-way.txt" -o "$T_DIR/abort.json"
check "  incomplete, the abort its fault" \
  jq -e '.complete == false and (.fault.message | test("exited on signal 9 \\(Killed\\)"))' "$T_DIR/abort.json"
run "$R" check "$T_DIR/abort.json"
case $T_RC in 22|23) ok "  and its verdict is FAIL or INCOMPLETE (exit $T_RC)" ;; *) not_ok "  its verdict is FAIL or INCOMPLETE" "exit $T_RC" ;; esac
expect_grep "  naming the abort" 'exited on signal 9' "$T_OUT"
# An abort after the footer is the launcher's, not the run's.
{ cat "$FIX/rccl/rccl-tests-mi300x-8gpu.txt"; echo "mpirun noticed that process rank 3 with PID 1 on node x exited on signal 15 (Terminated)."; } >"$T_DIR/late.txt"
"$R" import "$T_DIR/late.txt" -o "$T_DIR/late.json" >/dev/null 2>&1
check "an abort after the footer leaves a finished run without a fault" jq -e '.complete and .fault == null' "$T_DIR/late.json"

# rccl-tests text: tool, its version, RCCL/HIP/ROCm versions, AMD GPUs.
"$R" import "$FIX/rccl/rccl-tests-mi300x-8gpu.txt" -o "$T_DIR/rccl.json" >/dev/null 2>&1
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi; }
same "rccl-tests text keeps its tool, versions and vendor" \
  "$(jq -r '[.tool.name, .tool.version, .versions.rccl, .versions.hip, .versions.rocm, .versions.nccl, .devices[0].vendor, .devices[0].name, .topology.ranks] | map(tostring) | join(" ")' "$T_DIR/rccl.json")" \
  "rccl-tests develop:448c4c7 2.22.3-develop:f5b15f2 6.3.42131-fa1d09cbd 6.3.0.0-39-ce2be3b null AMD AMD Instinct MI300X 8"
check "  valid against collective.schema.json" json_valid "$SCHEMA/collective.schema.json" "$T_DIR/rccl.json"
"$R" import "$FIX/rccl/rccl-tests-2024-mi300x-vf.txt" -o "$T_DIR/rccl24.json" >/dev/null 2>&1
same "the 2024 layout (no Group, no RCCL line, a VF) is rccl-tests on AMD" \
  "$(jq -r '[.tool.name, .tool.version, .devices[7].vendor, .devices[7].pci_bus_id, (.rows | length)] | map(tostring) | join(" ")' "$T_DIR/rccl24.json")" \
  "rccl-tests develop:ae3e635 AMD 0002:df:00.0 8"
# The gfx942 note printed without a newline does not hide the header.
sed '1s/^/On gfx942 architecture, using FNUZ FP8 types/' "$FIX/rccl/rccl-tests-mi300x-8gpu.txt" >"$T_DIR/fnuz.txt"
"$R" import "$T_DIR/fnuz.txt" -o "$T_DIR/fnuz.json" >/dev/null 2>&1
same "a header glued to the gfx942 note still reads" "$(jq -r '.collective' "$T_DIR/fnuz.json" 2>/dev/null)" all_reduce
# nccl-tests' own stay nccl-tests on NVIDIA.
"$R" import "$FIX/invalid/aborted-part-way.txt" -o "$T_DIR/nv.json" >/dev/null 2>&1
same "nccl-tests text stays nccl-tests on NVIDIA" "$(jq -r '[.tool.name, .devices[0].vendor, (.versions | has("rccl"))] | map(tostring) | join(" ")' "$T_DIR/nv.json")" \
  "nccl-tests NVIDIA false"
if [ -f "$ATLAS/oci_mi355x_1node_rccl_allreduce.txt" ]; then
  "$R" import "$ATLAS/oci_mi355x_1node_rccl_allreduce.txt" -o "$T_DIR/mi355x.json" >/dev/null 2>&1
  same "the published MI355X run is rccl-tests on 8 AMD GPUs" \
    "$(jq -r '[.tool.name, .tool.version, ([.devices[].vendor] | unique | join(",")), .devices[0].name, .rows[-1].out_of_place.busbw_GBps] | map(tostring) | join(" ")' "$T_DIR/mi355x.json")" \
    "rccl-tests HEAD:e1b8a3a AMD AMD Instinct MI355X 406.76"
fi

# rccl-tests' own JSON (-Z json): the 2025 array and the 2024 lines.
"$R" import "$FIX/rccl/rccl-tests-allreduce-16.json" -o "$T_DIR/rj.json" >/dev/null 2>&1
same "rccl-tests -Z json (array) imports with its ranks and nodes" \
  "$(jq -r '[.import.format, .tool.name, .collective, .topology.ranks, .topology.nodes, .topology.ranks_per_node, (.rows | length), .rows[-1].bytes, .rows[-1].in_place.wrong] | map(tostring) | join(" ")' "$T_DIR/rj.json")" \
  "rccl-tests-json rccl-tests all_reduce 16 2 8 8 134217728 0"
"$R" import "$FIX/rccl/rccl-tests-2024-lines.json" -o "$T_DIR/rl.json" >/dev/null 2>&1
same "rccl-tests JSON lines (2024, no MPI) import as one node" \
  "$(jq -r '[.collective, .topology.ranks, .topology.nodes, (.rows | length)] | map(tostring) | join(" ")' "$T_DIR/rl.json")" "all_reduce 16 1 8"
"$R" import "$FIX/rccl/rccl-tests-reduce-scatter-16.json" -o "$T_DIR/rs.json" >/dev/null 2>&1
same "a reduce_scatter's per-rank size becomes the table's, its wrong N/A null" \
  "$(jq -r '[.rows[0].bytes, .rows[0].count, .rows[0].out_of_place.wrong] | map(tostring) | join(" ")' "$T_DIR/rs.json")" "1048576 16384 null"
jq '.[3].busBw = 999.5' "$FIX/rccl/rccl-tests-allreduce-16.json" >"$T_DIR/bad-rj.json"
expect_error "an rccl-tests JSON row whose busBW does not follow is refused" 10 'busBW 999.50 is not algBW' \
  "fabric-report import" "$R" import "$T_DIR/bad-rj.json"
expect_exit "nccl-tests -J still imports" 0 "$R" import "$FIX/ncclt/all_reduce_perf-J.json" -o "$T_DIR/j.json"
same "  as nccl-tests" "$(jq -r '.import.format + " " + .tool.name' "$T_DIR/j.json")" "nccl-tests-json nccl-tests"

# perftest failures: FAIL naming the error, whatever the rows said.
if [ -f "$ATLAS/ibwb_gke_a3ultra_hostmem_completion_error.txt" ]; then
  "$R" import "$ATLAS/ibwb_gke_a3ultra_hostmem_completion_error.txt" -o "$T_DIR/ce.json" >/dev/null 2>&1
  check "a completion error keeps the failure, where, complete false" \
    jq -e '.complete == false and .fault.status == "runtime" and .fault.after_bytes == 65536 and (.fault.message | test("Completion with error at client; Failed status 10: wr_id 0 syndrom 0x88; Failed to complete run_iter_bw"))' "$T_DIR/ce.json"
  check "  valid against probe.schema.json" json_valid "$SCHEMA/probe.schema.json" "$T_DIR/ce.json"
  expect_exit "  and check calls it FAIL" 22 "$R" check "$T_DIR/ce.json"
  expect_grep "  naming the error" 'The probe failed: .*Completion with error at client' "$T_OUT"
  # (ibwb_gke_a3ultra_h200_cuda_dmabuf, complete too, is DEGRADED by the
  # atlas's figure for its link: tests/report/test_atlas.sh)
  for f in ibwb_oci_oke_roce_q4_rdmacm ibwb_openshift_a40_cuda_dmabuf_duration; do
    "$R" import "$ATLAS/$f.txt" -o "$T_DIR/$f.json" >/dev/null 2>&1
    expect_exit "$f still imports complete and judges as before" 0 "$R" check "$T_DIR/$f.json"
  done
fi
P=$FIX/perftest/ib_write_bw-all-sizes-roce.txt
awk '/^ 65536 / { print; print " Couldn'"'"'t post send: qp 0 scnt=1"; exit } { print }' "$P" >"$T_DIR/post.txt"
"$R" import "$T_DIR/post.txt" -o "$T_DIR/post.json" >/dev/null 2>&1
check "a table cut by Couldn't post send keeps the rows before it and the failure" \
  jq -e '.complete == false and (.links | length) > 0 and (.fault.message | test("after the 65536-byte size: Couldn.t post send"))' "$T_DIR/post.json"
expect_exit "  FAIL" 22 "$R" check "$T_DIR/post.json"
{ sed -n '1,/Number of qps/p' "$P"; echo " Couldn't connect to 10.0.0.2:18515"; echo "Unable to open file descriptor for socket connection Unable to init the socket connection"; } >"$T_DIR/pre.txt"
"$R" import "$T_DIR/pre.txt" -o "$T_DIR/pre.json" >/dev/null 2>&1
check "a failure before the table imports with no measurement" \
  jq -e '.complete == false and (.links | length) == 0 and (.fault.message | test("before its first size: Couldn.t connect"))' "$T_DIR/pre.json"
check "  valid against probe.schema.json" json_valid "$SCHEMA/probe.schema.json" "$T_DIR/pre.json"
expect_exit "  FAIL" 22 "$R" check "$T_DIR/pre.json"
"$R" import "$P" -o "$T_DIR/intact.json" >/dev/null 2>&1
expect_exit "the intact perftest table stays PASS" 0 "$R" check "$T_DIR/intact.json"
