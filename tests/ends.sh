# Helpers of the bounded-end tests (tests/scan/test_scan_ends.sh,
# tests/probe/test_probe_ends.sh): jobs of fabric-scan or fabric-rdma whose
# ranks each run on a host of their own (a UTS namespace: needs root), one
# rank stopped or killed at a chosen point, and the time the others take
# to be gone. Source it after tests/lib.sh.
# shellcheck shell=bash

# own_host MPIRUN-OPTION... -- CMD...: mpirun (bounded) where rank K runs
# CMD on a host named hK.
own_host() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    opts+=("$1")
    shift
  done
  shift
  # shellcheck disable=SC2016 # expands in the rank's shell
  timeout -k 5 300 "${FB_MPIRUN[@]}" -q "${opts[@]}" bash -c 'exec unshare --uts bash -c "hostname h$OMPI_COMM_WORLD_RANK && exec \"\$@\"" own "$@"' \
    own "$@"
}

# ours: the processes of this test's jobs (fabric-scan or fabric-rdma whose
# command line names $T_DIR), one id a line. The name is read by the
# shell itself: the waits below look several times a second, on a machine
# whose two cores the ranks need.
ours() {
  local p comm
  for p in /proc/[0-9]*; do
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    case $comm in fabric-scan | fabric-rdma) ;; *) continue ;; esac
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$T_DIR" && echo "${p#/proc/}"
  done
}

# rank_pid RANK: the process of this test's job that is MPI rank RANK.
rank_pid() {
  local p
  for p in $(ours); do
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p" && return
  done
}

# running: processes of this test's jobs that are not stopped.
running() {
  local p n=0
  for p in $(ours); do
    grep -q '^State:.*(stopped)' "/proc/$p/status" 2>/dev/null || n=$((n + 1))
  done
  echo "$n"
}

seconds_since() { awk -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { print n - s }'; }

# took MPIRUN-OPTION... -- CMD...: seconds an undisturbed run takes here.
took() {
  local start
  start=$(date +%s.%N)
  own_host "$@" >/dev/null 2>&1
  seconds_since "$start"
}

# base_of MPIRUN-OPTION... -- CMD...: the base of a bound: the slowest
# undisturbed run of this test so far, this one included (in `base`). A
# bound lasts as long as the program's own wait, up to half a minute, while
# other jobs on the machine come and go; the slowest run seen tells more
# about the load the end meets than the last one alone.
slowest=0
base_of() {
  local this
  this=$(took "$@")
  slowest=$(awk -v a="$slowest" -v b="$this" 'BEGIN { print (b > a) ? b : a }')
  base=$slowest
}

# gone_within START BOUND: waits until no process of this test's jobs
# runs (stopped ones aside) or BOUND seconds passed since START (epoch
# seconds); sets `left` (processes running when last looked at) and `t`
# (seconds from START to that look). True when none ran within BOUND.
gone_within() {
  while :; do
    t=$(seconds_since "$1")
    left=$(running)
    [ "$left" -eq 0 ] && break
    awk -v t="$t" -v b="$2" 'BEGIN { exit !(t > b) }' && break
    sleep 0.2
  done
  [ "$left" -eq 0 ] && awk -v t="$t" -v b="$2" 'BEGIN { exit !(t <= b) }'
}

# The fault injector (tests/tools/mpi_fault.c), put in front of libmpi on
# every rank.
FAULT_LIB=$FB_BUILD/tools/libmpifault.so

# ends_ready WHAT: root (the hosts are UTS namespaces) and the injector
# built; else says skip or not ok for WHAT and returns 1.
ends_ready() {
  if ! is_root; then
    skip "$1" "needs root for unshare --uts"
    return 1
  fi
  [ -e "$FAULT_LIB" ] && return 0
  not_ok "$1" "the fault injector is not built: no $FAULT_LIB (make)"
  return 1
}

# fault_opts RANK CALL TAG ACTION NTH FILE: the mpirun options that load the
# injector with that fault.
fault_opts() {
  printf '%s\n' -x "LD_PRELOAD=$FAULT_LIB" -x "FB_FAULT_RANK=$1" -x "FB_FAULT_CALL=$2" -x "FB_FAULT_TAG=$3" \
    -x "FB_FAULT_ACTION=$4" -x "FB_FAULT_NTH=$5" -x "FB_FAULT_FILE=$6"
}

# ends_at_fault NAME NP FAULT LIMIT CODE WHO CHECK [MPIRUN-OPTION...] -- CMD...
# A rank faults at one MPI call and the job must end within the program's
# stated bound. FAULT is RANK:CALL:TAG:ACTION:WHICH, the injector's
# settings with WHICH `last` or `last-K`: the call of that rank, kind and
# tag that an undisturbed run of the same job makes last (or K before
# it), counted in that run. CMD writes its results to $T_DIR/r.json (the
# undisturbed run's go to $T_DIR/base.json). Checks, each its own line:
# every other rank is gone within LIMIT (the program's bound for that
# point, in seconds from the fault) plus six times the base (base_of: the
# launcher's start, and its teardown of a job that MPI_Abort ends,
# measured here 2 to 3 s against a base of 0.5 to 1 s); mpirun
# exits CODE; stderr matches the extended regex WHO (the rank and host
# that went silent); and the jq filter CHECK holds on the results, with
# $base[0] the undisturbed run's results.
ends_at_fault() {
  local name=$1 np=$2 fault=$3 limit=$4 code=$5 who=$6 check=$7 rank call tag action which
  shift 7
  IFS=: read -r rank call tag action which <<<"$fault"
  local back=${which#last} base n bound job pid at rc opts left t gone
  back=${back#-}
  rm -f "$T_DIR/count" "$T_DIR/fault" "$T_DIR/r.json" "$T_DIR/base.json"
  mapfile -t opts < <(fault_opts "$rank" "$call" "$tag" count 1 "$T_DIR/count")
  base_of -np "$np" "${opts[@]}" "${@/%r.json/base.json}"
  n=$(cat "$T_DIR/count" 2>/dev/null)
  if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -le "${back:-0}" ]; then
    not_ok "$name" "the undisturbed run made ${n:-no} $call calls with tag $tag on rank $rank"
    return
  fi
  bound=$(awk -v b="$base" -v l="$limit" 'BEGIN { print 6 * b + l }')
  mapfile -t opts < <(fault_opts "$rank" "$call" "$tag" "$action" $((n - ${back:-0})) "$T_DIR/fault")
  own_host -np "$np" "${opts[@]}" "$@" >"$T_DIR/end.out" 2>"$T_DIR/end.err" &
  job=$!
  while [ ! -s "$T_DIR/fault" ] && kill -0 "$job" 2>/dev/null; do sleep 0.05; done
  if ! read -r pid at <"$T_DIR/fault" 2>/dev/null; then
    wait "$job"
    not_ok "$name" "the job ended (exit $?) before the fault; stderr: $(head -c 400 "$T_DIR/end.err")"
    return
  fi
  gone_within "$at" "$bound"
  gone=$?
  [ "$action" = stop ] && kill -CONT "$pid" 2>/dev/null
  wait "$job"
  rc=$?
  if [ "$gone" -eq 0 ]; then
    ok "$name: the other ranks end in $(printf %.1f "$t") s (bound $(printf %.1f "$bound") s: $limit s + 6 x $(printf %.1f "$base") s)"
  else
    not_ok "$name" "$left ranks running when looked at $(printf %.1f "$t") s after the fault (bound $(printf %.1f "$bound") s); stderr: $(head -c 400 "$T_DIR/end.err")"
  fi
  if [ "$rc" -eq "$code" ]; then ok "$name: exit $code"; else not_ok "$name: exit $code" "exit $rc; stderr: $(head -c 400 "$T_DIR/end.err")"; fi
  expect_grep "$name: stderr names who went silent" "$who" "$T_DIR/end.err"
  if jq -e --slurpfile base "$T_DIR/base.json" "$check" "$T_DIR/r.json" >/dev/null 2>&1; then
    ok "$name: the results keep what was measured"
  else
    not_ok "$name: the results keep what was measured" "$check fails on $(jq -c '{complete, fault}' "$T_DIR/r.json" 2>&1 | head -c 400)"
  fi
}

# ends_bounded NAME NP STOP_RANK LIMIT CMD...: runs CMD (whose results go
# to $T_DIR/r.fifo) on NP ranks, stops rank STOP_RANK once rank 0 waits to
# write the results, reads them, and checks that every other rank is gone
# within 2 x LIMIT + 1 s (the end handshake, then MPI_Finalize under its
# watchdog) plus six times the base (base_of). Rank 0 writes the FIFO
# once, at the end, and blocks opening it until the test reads it: so the
# moment is the same in every run, every measurement done and reported
# and the job not yet ended. The stopped process is let go afterwards so
# that mpirun can finish.
ends_bounded() {
  local name=$1 np=$2 rank=$3 limit=$4 base bound start left t p0 victim i
  shift 4
  base_of -np "$np" -- "${@/%r.fifo/base.json}"
  bound=$(awk -v b="$base" -v l="$limit" 'BEGIN { print 6 * b + 2 * l + 1 }')
  rm -f "$T_DIR/r.fifo" "$T_DIR/r.json"
  mkfifo "$T_DIR/r.fifo"
  own_host -np "$np" -- "$@" >"$T_DIR/end.out" 2>"$T_DIR/end.err" &
  local job=$!
  for ((i = 0; i < 1200; i++)); do
    p0=$(rank_pid 0)
    [ -n "$p0" ] && [ "$(cat "/proc/$p0/wchan" 2>/dev/null)" = wait_for_partner ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  victim=$(rank_pid "$rank")
  [ -n "$victim" ] && kill -STOP "$victim"
  start=$(date +%s.%N)
  [ -n "$victim" ] && timeout 60 cat "$T_DIR/r.fifo" >"$T_DIR/r.json"
  gone_within "$start" "$bound"
  local gone=$?
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
  wait "$job"
  if [ -z "$victim" ]; then
    not_ok "$name" "rank $rank was not found to stop; stderr: $(head -c 400 "$T_DIR/end.err")"
  elif [ "$gone" -eq 0 ] && jq -e '.complete == true' "$T_DIR/r.json" >/dev/null 2>&1; then
    ok "$name: the other ranks end in ${t%.*} s (bound ${bound%.*} s), the results complete"
  else
    not_ok "$name" "$left ranks running when looked at after ${t%.*} s (bound ${bound%.*} s); stderr: $(head -c 400 "$T_DIR/end.err")"
  fi
}
