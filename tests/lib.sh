# Shared helpers for test scripts (source it). Reports in the test protocol
# read by tests/run: "ok - NAME", "not ok - NAME: why", "skip - NAME: why".
# shellcheck shell=bash

FB_ROOT=${FB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
FB_BUILD=${FB_BUILD:-$FB_ROOT/build}
FB_BIN=${FB_BIN:-$FB_BUILD/bin}
T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fbtest.XXXXXX")
T_OUT=$T_DIR/stdout
T_ERR=$T_DIR/stderr
T_RC=0
trap 't_cleanup' EXIT
t_cleanup_hooks=()
t_cleanup() {
  local h
  for h in "${t_cleanup_hooks[@]}"; do eval "$h" || true; done
  rm -rf "$T_DIR"
}
on_exit() { t_cleanup_hooks+=("$1"); }

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; }
skip() { echo "skip - $1: $2"; }

# hosts_lock NAME: holds the namespace host set NAME (scripts/testhosts.sh)
# until this test ends, so that two tests or two runs that build the same
# set take turns while tests of other sets run beside them (each set has
# its own namespaces and bridge). sshd closes what it inherits; a process
# left behind holding the lock delays the next taker by its wait at most.
hosts_lock() {
  local fd
  exec {fd}>"${TMPDIR:-/tmp}/fabric-bench-hosts.$1.lock"
  flock -w 900 "$fd"
}

# variant_build NAME MAKE-ARGS...: a build of this tree with other settings
# (SAN=1, CUDA_HOME=/nonexistent, ...) in $FB_BUILD-NAME, shared by the tests
# that need the same variant: made by the first, brought up to date by the
# next, one at a time. Sets `tree`; make's output goes to $T_DIR/make.log.
# Checks of what a variant leaves out look at its tree, not at the log
# (the log of an up-to-date tree is empty).
variant_build() {
  tree=$FB_BUILD-$1
  shift
  mkdir -p "$tree"
  (flock -w 1800 9 && make -C "$FB_ROOT" -j"$(nproc)" BUILD="$tree" "$@") 9>"$tree/.variant.lock" \
    >"$T_DIR/make.log" 2>&1
}

# node_modules_ready: tests/node_modules as tests/package-lock.json pins it,
# installed by the first test that needs it while the others wait: npm ci
# starts by deleting the folder, so two at once would pull it from under
# each other (and from under a test already reading it). npm's output goes
# to $T_DIR/npm.log. False when it cannot be installed.
node_modules_ready() {
  local dir=$FB_ROOT/tests
  (
    flock -w 600 9 || exit 1
    if [ -f "$dir/node_modules/.package-lock.json" ] &&
      [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
      exit 0
    fi
    cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error
  ) 9>"${TMPDIR:-/tmp}/fabric-bench-npm.$(id -u).lock" >"$T_DIR/npm.log" 2>&1
}

# run CMD...: runs it, stdout to $T_OUT, stderr to $T_ERR, exit code in $T_RC.
run() {
  "$@" >"$T_OUT" 2>"$T_ERR"
  T_RC=$?
}

# expect_exit NAME CODE CMD...: the command exits with CODE.
expect_exit() {
  local name=$1 code=$2; shift 2
  run "$@"
  if [ "$T_RC" -eq "$code" ]; then
    ok "$name"
  else
    not_ok "$name" "exit $T_RC, expected $code; stderr: $(head -c 600 "$T_ERR" | tr '\n' ' ')"
  fi
}

# check NAME CMD...: the command succeeds (its own output is discarded).
check() {
  local name=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

# expect_grep NAME REGEX FILE: FILE has a line matching REGEX.
expect_grep() {
  if grep -Eq -- "$2" "$3"; then ok "$1"; else not_ok "$1" "no line matching '$2' in $(head -c 400 "$3" | tr '\n' ' ')"; fi
}

# expect_one_line NAME FILE: FILE holds exactly one non-empty line (an error).
expect_one_line() {
  local n
  n=$(grep -c . "$2")
  if [ "$n" -eq 1 ]; then ok "$1"; else not_ok "$1" "$n lines: $(head -c 400 "$2" | tr '\n' '|')"; fi
}

# expect_error NAME CODE PATTERN PROG CMD...: CMD (which runs program PROG)
# exits CODE, prints exactly one "PROG: " line on stderr matching PATTERN,
# and nothing on stdout. The project's rule for every bad input.
expect_error() {
  local name=$1 code=$2 pattern=$3 prog=$4 lines; shift 4
  run "$@"
  lines=$(grep -c "^$prog: " "$T_ERR")
  if [ "$T_RC" -ne "$code" ]; then
    not_ok "$name" "exit $T_RC, expected $code: $(head -c 400 "$T_ERR")"
  elif [ "$lines" -ne 1 ]; then
    not_ok "$name" "$lines error lines: $(head -c 600 "$T_ERR")"
  elif ! grep -q -- "$pattern" "$T_ERR"; then
    not_ok "$name" "message lacks '$pattern': $(cat "$T_ERR")"
  elif [ -s "$T_OUT" ]; then
    not_ok "$name" "stdout not empty: $(head -c 300 "$T_OUT")"
  else
    ok "$name"
  fi
}

# expect_stderr_line NAME CODE REGEX CMD...: CMD exits CODE and its stderr
# is exactly one line, matching the extended REGEX.
expect_stderr_line() {
  local name=$1 code=$2 regex=$3 lines; shift 3
  run "$@"
  lines=$(grep -c . "$T_ERR")
  if [ "$T_RC" -ne "$code" ]; then
    not_ok "$name" "exit $T_RC, expected $code: $(head -c 400 "$T_ERR")"
  elif [ "$lines" -ne 1 ]; then
    not_ok "$name" "$lines stderr lines: $(head -c 600 "$T_ERR")"
  elif ! grep -Eq -- "$regex" "$T_ERR"; then
    not_ok "$name" "stderr lacks '$regex': $(cat "$T_ERR")"
  else
    ok "$name"
  fi
}

# jq_is NAME FILE FILTER WANT: the jq filter's compact output is WANT.
jq_is() {
  local got
  got=$(jq -c "$3" "$2" 2>&1)
  if [ "$got" = "$4" ]; then ok "$1"; else not_ok "$1" "got $got, want $4"; fi
}
# checked NAME FILE CHECK-ARGS...: the fabric-coll results file is
# consistent (tests/tools/check_collective.py).
checked() {
  local name=$1 file=$2 msg
  shift 2
  if msg=$(/usr/bin/python3 "$FB_ROOT/tests/tools/check_collective.py" "$file" "$@" 2>&1); then ok "$name"; else not_ok "$name" "$msg"; fi
}

# mpi_quiet NP CMD...: mpirun without its own banners, bounded.
mpi_quiet() { local np=$1; shift; timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np "$np" "$@"; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# hosts_up NAME N SLOTS WHAT: namespace test hosts NAME1..NAMEN
# (scripts/testhosts.sh), taken down at exit; sets $th to the script. Returns
# 1 after saying skip (not root: WHAT names the tests) or not ok.
hosts_up() {
  th=$FB_ROOT/scripts/testhosts.sh
  if ! is_root; then
    skip "$4" "needs root for network namespaces"
    return 1
  fi
  hosts_lock "$1"
  on_exit "$th down $1 >/dev/null 2>&1"
  if ! "$th" up "$1" "$2" "$3" >"$T_DIR/up.log" 2>&1; then
    not_ok "test hosts come up" "$(cat "$T_DIR/up.log")"
    return 1
  fi
}

# perftest_listening SET I PID: waits (30 s at most) until perftest's
# server PID on namespace host SET I listens on perftest's port, 18515: its
# client connects once and never retries ("Couldn't connect to ..."), and
# a busy machine may not start the server within a fixed sleep. False when
# the server ended or never listened (the client then says so).
perftest_listening() {
  local i
  for ((i = 0; i < 300; i++)); do
    "$FB_ROOT/scripts/testhosts.sh" exec "$1" "$2" ss -Htln 'sport = :18515' 2>/dev/null | grep -q . && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# MPI on this machine: root needs the allow flags; more ranks than cores
# need oversubscribe; op/avx saturates int8 sums (docs/known-issues).
FB_MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca op ^avx
  --mca btl "self,vader,tcp" --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
fb_mpirun() { local np=$1; shift; timeout -k 5 300 "${FB_MPIRUN[@]}" -np "$np" "$@"; }

# standin_built WHAT: the GPU stand-in (tests/standin) is built; else says
# skip for WHAT and returns 1.
standin_built() {
  [ -e "$FB_BUILD/standin/libnccl.so.2" ] && return 0
  skip "$1" "not built (the CUDA and NCCL headers are missing; make standin)"
  return 1
}

# sg NP ARGS...: fabric-coll on NP local ranks under the GPU stand-in
# (scripts/gpu-standin.sh, docs/standin.md), as run does.
sg() {
  local np=$1
  shift
  run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np "$np" -x LD_LIBRARY_PATH "$FB_BIN/fabric-coll" "$@"
}

# sg_logged NP ARGS...: as sg, with NCCL's INFO log of every rank in
# $T_DIR/log (emptied first) and the stand-in's knobs a test may set
# (FB_STANDIN_NCCL_VERSION, FB_STANDIN_CORRUPT_RANK, FB_STANDIN_CORRUPT_ELEMS,
# NCCL_TESTS_DEVICE)
# passed to every rank.
sg_logged() {
  local np=$1
  shift
  rm -rf "$T_DIR/log" && mkdir -p "$T_DIR/log"
  NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$T_DIR/log/nccl.%h.%p run "$FB_ROOT/scripts/gpu-standin.sh" timeout -k 5 120 \
    "${FB_MPIRUN[@]}" -q -np "$np" -x LD_LIBRARY_PATH -x NCCL_DEBUG -x NCCL_DEBUG_FILE -x FB_STANDIN_NCCL_VERSION \
    -x NCCL_TESTS_DEVICE -x FB_STANDIN_CORRUPT_RANK -x FB_STANDIN_CORRUPT_ELEMS "$FB_BIN/fabric-coll" "$@"
}

# Validates a JSON file against a schema in docs/ with Debian's python3-jsonschema.
json_valid() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
PY
}
