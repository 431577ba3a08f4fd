# Shared by the launcher tests (source it after tests/lib.sh).
# shellcheck shell=bash

# host_profile NAME: a reference profile for host-memory runs here (none ships
# for them), saved from a loopback run so that verdicts come from the real
# fabric-report; sets profile_args to the check options naming it (empty,
# with a failure reported, when it cannot be made).
host_profile() {
  profile_args=()
  [ -x "$FB_BIN/fabric-report" ] || return 0
  fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce --backend mpi -b 1K -e 64K -f 2 -n 3 -w 1 \
    -J "$T_DIR/base.json" >/dev/null 2>&1 &&
    "$FB_BIN/fabric-report" baseline "$T_DIR/base.json" --name "$1" --tolerance 99 \
      -o "$T_DIR/profiles/$1.json" >/dev/null 2>&1 &&
    profile_args=(--profiles "$T_DIR/profiles" --profile "$1")
  if [ ${#profile_args[@]} -gt 0 ]; then ok "reference profile from a loopback run"
  else not_ok "reference profile from a loopback run" "fabric-coll or fabric-report baseline failed"; fi
}

# judged_run NAME RESULT: the launcher's run ($T_RC, $T_OUT) ended with
# fabric-report's verdict, printed and as its exit code, and RESULT matches
# the collective schema.
judged_run() {
  local name=$1 result=$2
  case $T_RC in 0 | 20 | 21 | 22 | 23) ok "$name: exits with a verdict code ($T_RC)" ;;
    *) not_ok "$name: exits with a verdict code" "exit $T_RC: $(head -c 400 "$T_ERR")" ;; esac
  if [ -x "$FB_BIN/fabric-report" ]; then
    expect_grep "$name: prints fabric-report's verdict" '^(PASS|DEGRADED|TCP-FALLBACK|FAIL|INCOMPLETE): ' "$T_OUT"
  fi
  if json_valid "$FB_ROOT/docs/schema/collective.schema.json" "$result" 2>"$T_DIR/schema.err"; then
    ok "$name: result matches the collective schema"
  else
    not_ok "$name: result matches the collective schema" "$(tail -n 2 "$T_DIR/schema.err" | tr '\n' ' ')"
  fi
}

# hosts_up NAME N WHAT: network-namespace hosts NAME1..NAME<N>
# (scripts/testhosts.sh) for the cases WHAT, torn down at exit; sets dir (their
# keys) and rsh (an ssh wrapper) from `testhosts.sh info`. Not root, or no
# fabric-coll built: skips WHAT and ends the test there.
hosts_up() {
  local name=$1 n=$2 what=$3 th=$FB_ROOT/scripts/testhosts.sh
  if ! is_root; then
    skip "$what" "needs root (network namespaces)"
    exit 0
  fi
  if [ ! -x "$FB_BIN/fabric-coll" ]; then
    skip "$what" "no $FB_BIN/fabric-coll: build it (make MODULES=\"core coll report\")"
    exit 0
  fi
  hosts_lock "$name"
  on_exit "'$th' down $name >/dev/null 2>&1"
  if ! "$th" up "$name" "$n" >"$T_OUT" 2>"$T_ERR"; then
    not_ok "$n namespace hosts up" "$(head -c 400 "$T_ERR")"
    exit 1
  fi
  ok "$n namespace hosts up"
  # shellcheck disable=SC2034 # used by the tests
  dir="" rsh=""
  eval "$("$th" info "$name")"
  export FB_BIN
}

# scan_doc OUT NAMES: a real fabric-scan document in OUT from one rank per
# name of the comma-separated NAMES, each its own host and Kubernetes node
# (tests/launch/as-host.sh; "-" a node without a name). The verdicts a
# scan on this busy machine gives are its noise: every node is set to pass,
# and each test sets the verdicts it needs. Returns 1 after saying not ok
# when the scan wrote nothing.
scan_doc() {
  fb_mpirun "$(tr ',' '\n' <<<"$2" | grep -c .)" --mca orte_abort_on_non_zero_status 0 \
    "$FB_ROOT/tests/launch/as-host.sh" "$2" "$FB_BIN/fabric-scan" --backend mpi -b 1M -n 3 -w 1 \
    --cluster fbl-scan -J "$1" >"$T_DIR/scan.log" 2>&1
  if [ -s "$1" ] && jq -e '.kind == "scan"' "$1" >/dev/null 2>&1 &&
    jq '.nodes |= map(.verdict = "pass" | .reason = null) | .suspects = {nodes: [], links: []}
        | .summary.verdict = "pass"' "$1" >"$1.pass" && mv "$1.pass" "$1"; then
    return 0
  fi
  not_ok "fabric-scan writes a scan document for $2" "$(tail -c 400 "$T_DIR/scan.log" | tr '\n' ' ')"
  return 1
}

# scan_ready WHAT: root (for as-host.sh's namespaces) and fabric-scan built;
# else says skip for WHAT and ends the test.
scan_ready() {
  if ! is_root; then skip "$1" "needs root (a UTS namespace per scanned host)"; exit 0; fi
  if [ ! -x "$FB_BIN/fabric-scan" ]; then skip "$1" "no $FB_BIN/fabric-scan: build it (make)"; exit 0; fi
}
