#!/usr/bin/env bash
# Faults mid-sweep across three namespace hosts (mpirun over ssh): a rank
# killed, a link taken down, a rank stopped, the results directory made
# read-only, the job signalled. Each time the survivors end within the
# bound, the message names the lost host or rank, the exit code is the
# documented one, and the results file parses and keeps every size finished
# before the fault.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/faults/sweep-job.sh
. "$(dirname "$0")/sweep-job.sh"

if ! is_root; then
  skip "fault injection across namespace hosts" "needs root for network namespaces"
  exit 0
fi
th=$FB_ROOT/scripts/testhosts.sh
hosts_lock fbw
on_exit "$th down fbw >/dev/null 2>&1"
"$th" up fbw 3 2 >"$T_DIR/up.log" 2>&1 || { not_ok "test hosts up" "$(cat "$T_DIR/up.log")"; exit 0; }

check_py=$FB_ROOT/tests/tools/check_collective.py

# -T, each step's bound, follows this machine's speed now: 6 s, or three
# times what a one-size job across the hosts takes end to end (ssh, MPI
# start-up, one operation), whichever is longer. On a machine busy with
# other work a healthy step can take seconds; a fixed bound would call
# that a hang.
start_ns=$(date +%s%N)
"$th" mpirun fbw -np 3 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K -n 1 -w 1 -c 0 \
  --backend mpi -J "$T_DIR/calibrate.json" >"$T_DIR/calibrate.log" 2>&1 ||
  { not_ok "a healthy one-size job across the test hosts" "$(tail -5 "$T_DIR/calibrate.log")"; exit 0; }
healthy_s=$((($(date +%s%N) - start_ns + 999999999) / 1000000000))
bound=$((3 * healthy_s > 6 ? 3 * healthy_s : 6))
echo "# a healthy one-size job took ${healthy_s} s: each step's bound is ${bound} s"

# start_sweep NAME EXTRA...: a long sweep on 3 ranks, one per host, in the
# background; sets $pid and $out.
start_sweep() {
  out=$T_DIR/$1.json
  shift
  setsid "$th" mpirun fbw -np 3 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 1K -e 256M -f 2 \
    -n 40 -c 0 --backend mpi -T "$bound" -J "$out" "$@" >"$T_OUT" 2>"$T_ERR" &
  pid=$!
}

rank_pid() { # rank_pid HOST: the fabric-coll process on that namespace host
  ip netns pids "$1" | while read -r p; do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$FB_BIN/fabric-coll" ] && echo "$p"
  done | head -1
}

kept_rows() { # kept_rows: the file is valid, incomplete, with >= 3 rows
  /usr/bin/python3 "$check_py" "$out" --ranks 3 --nodes 3 --incomplete >"$T_DIR/chk" 2>&1 &&
    [ "$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$out")" -ge 3 ]
}

# 1. A rank stops answering (SIGSTOP): the watchdog names it, exit 8.
start_sweep stop
wait_rows 3
victim=$(rank_pid fbw2)
kill -STOP "$victim"
wait_end $((bound + 20))
kill -CONT "$victim" 2>/dev/null
if [ "$T_RC" -eq 8 ]; then ok "SIGSTOP: job ends with exit 8 (timeout) in ${took}s"; else not_ok "SIGSTOP: exit 8" "exit $T_RC after ${took}s: $(head -c 500 "$T_ERR")"; fi
expect_grep "SIGSTOP: the stopped rank and host are named" 'rank 1 on fbw2: no heartbeat for' "$T_ERR"
expect_grep "SIGSTOP: the operation and iteration are named" "timeout: all_reduce [0-9]+[KMG]? (out-of-place|in-place).*did not complete within $bound s" "$T_ERR"
if kept_rows && grep -q '"status": "timeout"' "$out"; then ok "SIGSTOP: results keep the finished sizes and a timeout fault"; else not_ok "SIGSTOP: results kept" "$(cat "$T_DIR/chk")"; fi

# 2. A link goes down: host 3 is cut off; the others name it and end
# within the bound. mpirun itself waits on the cut-off host's daemon (Open
# MPI's own wait, minutes of TCP retries) until the link is back: it comes
# back once the ranks ended, as a flapping link does, and mpirun returns the
# ranks' exit code.
start_sweep link
wait_rows 3
"$th" link fbw 3 down
start=$SECONDS
for _ in $(seq 1 $(((bound + 20) * 5))); do
  [ -z "$(rank_pid fbw1)$(rank_pid fbw2)" ] && break
  sleep 0.2
done
ended=$((SECONDS - start))
if [ -z "$(rank_pid fbw1)$(rank_pid fbw2)" ]; then ok "link down: surviving ranks end in ${ended}s (bound ${bound}s + backstop)"; else not_ok "link down: surviving ranks end" "still running after ${ended}s"; fi
"$th" link fbw 3 up
wait_end 60
if [ "$T_RC" -eq 8 ]; then
  ok "link down: mpirun returns exit 8 (timeout) once the link is back"
else
  not_ok "link down: exit 8" "exit $T_RC after ${took}s: $(head -c 500 "$T_ERR")"
fi
expect_grep "link down: the cut-off rank and host are named" 'rank 2 on fbw3: no heartbeat for' "$T_ERR"
if kept_rows; then ok "link down: results keep the finished sizes"; else not_ok "link down: results kept" "$(cat "$T_DIR/chk")"; fi
# Only this test's ranks, on its namespace hosts: other tests running beside
# it have fabric-coll processes of their own.
for h in fbw1 fbw2 fbw3; do
  p=$(rank_pid "$h")
  [ -z "$p" ] || kill -9 "$p" 2>/dev/null
done

# 3. A rank is killed: Open MPI ends the job and names it; rank 0 records
# the termination; nothing hangs.
start_sweep kill
wait_rows 3
kill -9 "$(rank_pid fbw2)"
wait_end $((bound * 5))
if [ "$T_RC" -ne 0 ] && [ "$T_RC" -ne 999 ]; then ok "kill -9: job ends (exit $T_RC) in ${took}s"; else not_ok "kill -9: job ends" "exit $T_RC"; fi
expect_grep "kill -9: the killed rank and its host are named" 'rank 1 .*on node fbw2 exited on signal 9' "$T_ERR"
if kept_rows; then ok "kill -9: results keep the finished sizes"; else not_ok "kill -9: results kept" "$(cat "$T_DIR/chk")"; fi

# 4. SIGTERM (kubectl delete pod, Ctrl-C through mpirun): ranks flush and
# exit 143; the file says so.
start_sweep term
wait_rows 3
kill -TERM "$(rank_pid fbw1)" "$(rank_pid fbw2)" "$(rank_pid fbw3)"
wait_end $((bound * 5))
if grep -q '"status": "terminated"' "$out" && grep -q '"exit_code": 143' "$out" && kept_rows; then
  ok "SIGTERM: results flushed with a terminated fault (exit 143 recorded)"
else
  not_ok "SIGTERM: results flushed" "exit $T_RC $(head -c 300 "$T_ERR") $(cat "$T_DIR/chk")"
fi
expect_grep "SIGTERM: says finished sizes are kept" 'stopped by SIGTERM on rank 0 \(fbw1\); finished sizes are kept' "$T_ERR"

# 5. The results directory turns read-only mid-sweep: the table goes on,
# the failure is said once, exit 7 at the end.
mnt=$T_DIR/ro
mkdir -p "$mnt"
mount -t tmpfs -o size=8m tmpfs "$mnt"
on_exit "umount -l '$mnt' 2>/dev/null"
out=$mnt/r.json
setsid "$th" mpirun fbw -np 3 --map-by node "$FB_BIN/fabric-coll" all_reduce -b 1K -e 4M -f 2 \
  -n 20 -c 0 --backend mpi -T "$bound" -J "$out" >"$T_OUT" 2>"$T_ERR" &
pid=$!
wait_rows 3
mount -o remount,ro "$mnt"
wait_end $((bound * 10))
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$T_OUT")
if [ "$T_RC" -eq 7 ] && [ "$rows" -eq 13 ]; then ok "read-only results: all 13 rows on stdout, exit 7"; else not_ok "read-only results: all rows, exit 7" "exit $T_RC, $rows rows: $(head -c 300 "$T_ERR")"; fi
if [ "$(grep -c 'measuring on: the table on stdout is the record' "$T_ERR")" -eq 1 ]; then ok "read-only results: said once"; else not_ok "read-only results: said once" "$(cat "$T_ERR")"; fi
if /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["complete"] and len(d["rows"]) >= 3' "$out"; then
  ok "read-only results: the file still parses with the sizes saved before"
else
  not_ok "read-only results: the file still parses" "$(head -c 200 "$out")"
fi
