#!/usr/bin/env bash
# fabric-report's commands under valgrind: no memory error and no definite
# leak on the paths users take, good input and bad (the unit tests get the
# same treatment in tests/sanitize/test_valgrind.sh).
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

if ! command -v valgrind >/dev/null; then
  skip "fabric-report under valgrind" "valgrind not installed (scripts/install-deps.sh)"
  exit 0
fi
R=$FB_BIN/fabric-report
F=$FB_ROOT/tests/fixtures/report
export XDG_CONFIG_HOME=$T_DIR/config
vg=(valgrind -q --error-exitcode=99 --leak-check=full "--errors-for-leak-kinds=definite,indirect")

# NAME EXPECTED-EXIT ARGS...: the command's own exit code, never valgrind's 99.
under_valgrind() {
  local name=$1 code=$2; shift 2
  run "${vg[@]}" "$R" "$@"
  if [ "$T_RC" -eq "$code" ]; then
    ok "valgrind: $name"
  else
    not_ok "valgrind: $name" "exit $T_RC (expected $code) $(grep -m6 '==' "$T_ERR" | tr '\n' ' ')"
  fi
}

under_valgrind "check TCP-FALLBACK" 21 check "$F/results/gke-socket-allreduce.json"
under_valgrind "check --json INCOMPLETE" 23 check --json "$F/results/gke-tcpxo-incomplete.json"
under_valgrind "check without a profile" 2 check "$F/results/vm-mpi-allreduce-4.json"
under_valgrind "check --nccl-log" 0 check "$F/results/gke-tcpxo-allreduce.json" --nccl-log "$F/nccl-logs/tcpxo"
under_valgrind "compare a directory" 0 compare "$F/results" --collective all_reduce
under_valgrind "compare --json" 0 compare --json "$F/results/vm-mpi-allreduce-4.json" "$F/results/vm-mpi-allreduce-2.json"
under_valgrind "compare mixed collectives" 10 compare "$F/results"
under_valgrind "import nccl-tests text" 0 import "$F/ncclt/nccl-tests-two-collectives.txt" -o "$T_DIR/out/"
under_valgrind "import nccl-tests JSON" 0 import "$F/ncclt/all_reduce_perf-J.json"
under_valgrind "import perftest" 0 import "$F/perftest/ib_write_bw-all-sizes-roce.txt"
under_valgrind "import interleaved tables" 25 import "$F/ncclt/nccl-tests-interleaved.txt"
under_valgrind "transport" 0 transport "$F/nccl-logs/ib-gdr"
under_valgrind "transport of mixed runs" 10 transport "$F/nccl-logs/mixed-runs"
under_valgrind "baseline" 0 baseline "$F/results/vm-mpi-allreduce-4.json" --name vg
under_valgrind "profiles" 0 profiles --json
under_valgrind "profiles by family" 0 profiles
under_valgrind "profiles --markdown" 0 profiles --markdown
"$R" import "$F/atlas/h200_1gpu_per_node_allreduce.txt" -o "$T_DIR/h200.json" >/dev/null 2>&1
under_valgrind "check by physics, --explain" 20 check "$T_DIR/h200.json" --explain
"$R" import "$F/atlas/h100_2node_summary_only.txt" -o "$T_DIR/summary.json" >/dev/null 2>&1
under_valgrind "check a summary-only block" 0 check "$T_DIR/summary.json"
if command -v gnuplot >/dev/null; then
  under_valgrind "plot" 0 plot "$F/results/gke-tcpxo-allreduce.json" -o "$T_DIR/p.png"
fi
