#!/usr/bin/env bash
# The watchdog's channel: MPI at MPI_THREAD_SINGLE with the watchdog on
# (its heartbeats travel over its own TCP lines), rank 0 stopped or killed
# and the others ending the job, FB_WATCHDOG_ADDR refused when malformed
# and an unreachable one ending the start within the connect bound.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/faults/sweep-job.sh
. "$(dirname "$0")/sweep-job.sh"

coll=$FB_BIN/fabric-coll
one_size=(all_reduce -b 1K -e 1K -n 1 -w 1 -c 0 --backend mpi)

# A stand-in for the MPI library's start: records the level each rank asks
# for and the one MPI grants (MPI_Query_thread), with the constants of this
# MPI, so the check never guesses their values.
cat >"$T_DIR/levels.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void note(const char *fn, int required)
{
    int granted = -1;
    PMPI_Query_thread(&granted);
    FILE *f = fopen(getenv("FB_TEST_LEVELS"), "a");
    if (f == NULL)
        return;
    fprintf(f, "%s required=%d granted=%d single=%d multiple=%d\n", fn, required, granted, MPI_THREAD_SINGLE,
            MPI_THREAD_MULTIPLE);
    fclose(f);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    note("MPI_Init_thread", required);
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    note("MPI_Init", MPI_THREAD_SINGLE);
    return rc;
}
EOF
cat >"$T_DIR/wants_multiple.c" <<'EOF'
#include <mpi.h>
int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Finalize();
    return 0;
}
EOF
if ! mpicc -shared -fPIC -O1 -o "$T_DIR/levels.so" "$T_DIR/levels.c" 2>"$T_DIR/cc.log" ||
  ! mpicc -O1 -o "$T_DIR/wants_multiple" "$T_DIR/wants_multiple.c" 2>>"$T_DIR/cc.log"; then
  not_ok "the thread-level recorder builds" "$(cat "$T_DIR/cc.log")"
  exit 0
fi

# levels_single LOG RANKS: every one of RANKS ranks asked for SINGLE and
# was granted less than MULTIPLE.
levels_single() {
  [ "$(grep -c . "$1")" -eq "$2" ] &&
    awk '{ split($2, r, "="); split($3, g, "="); split($4, s, "="); split($5, m, "=");
           if (r[2] != s[2] || g[2] >= m[2]) bad = 1 } END { exit bad }' "$1"
}

# with_levels LOG CMD...: CMD under mpirun with the recorder preloaded.
with_levels() {
  local log=$1
  shift
  : >"$log"
  run timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x "LD_PRELOAD=$T_DIR/levels.so" -x "FB_TEST_LEVELS=$log" "$@"
}

# The check itself can fail: a program that asks for MULTIPLE is caught.
with_levels "$T_DIR/multiple.log" -np 2 "$T_DIR/wants_multiple"
if [ "$T_RC" -eq 0 ] && [ "$(grep -c . "$T_DIR/multiple.log")" -eq 2 ] && ! levels_single "$T_DIR/multiple.log" 2; then
  ok "the recorder sees a program that asks for MPI_THREAD_MULTIPLE"
else
  not_ok "the recorder sees a program that asks for MPI_THREAD_MULTIPLE" "exit $T_RC: $(cat "$T_DIR/multiple.log" "$T_ERR")"
fi

start_ns=$(date +%s%N)
with_levels "$T_DIR/default.log" -np 2 "$coll" "${one_size[@]}" -J "$T_DIR/default.json"
healthy_s=$((($(date +%s%N) - start_ns + 999999999) / 1000000000))
if [ "$T_RC" -eq 0 ] && levels_single "$T_DIR/default.log" 2; then
  ok "watchdog on: every rank runs MPI at MPI_THREAD_SINGLE"
else
  not_ok "watchdog on: MPI_THREAD_SINGLE" "exit $T_RC: $(cat "$T_DIR/default.log") $(head -c 300 "$T_ERR")"
fi
with_levels "$T_DIR/nowd.log" -np 2 "$coll" "${one_size[@]}" --no-watchdog -J "$T_DIR/nowd.json"
if [ "$T_RC" -eq 0 ] && levels_single "$T_DIR/nowd.log" 2; then
  ok "--no-watchdog: MPI_THREAD_SINGLE too"
else
  not_ok "--no-watchdog: MPI_THREAD_SINGLE" "exit $T_RC: $(cat "$T_DIR/nowd.log")"
fi

# Each step's bound follows this machine's speed now (as in test_coll_faults.sh).
bound=$((3 * healthy_s > 6 ? 3 * healthy_s : 6))
echo "# a healthy one-size job took ${healthy_s} s: each step's bound is ${bound} s"

# FB_WATCHDOG_ADDR: malformed values are usage errors, one line, exit 2.
for bad in 'host:port' ':7000' 'host:0' 'host:65536' 'a b:80' '::1'; do
  expect_error "FB_WATCHDOG_ADDR='$bad': exit 2, one line" 2 "FB_WATCHDOG_ADDR='$bad'" fabric-coll \
    env "FB_WATCHDOG_ADDR=$bad" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x FB_WATCHDOG_ADDR -np 2 "$coll" \
    "${one_size[@]}" -J "$T_DIR/bad.json"
done
if [ ! -e "$T_DIR/bad.json" ]; then ok "a refused FB_WATCHDOG_ADDR writes no results file"; else not_ok "no results file" "$T_DIR/bad.json exists"; fi

# A good override: rank 0's loopback, a port of its choosing.
port=$((20000 + RANDOM % 20000))
run env "FB_WATCHDOG_ADDR=127.0.0.1:$port" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x FB_WATCHDOG_ADDR -np 3 \
  "$coll" "${one_size[@]}" -J "$T_DIR/override.json"
if [ "$T_RC" -eq 0 ] && [ -s "$T_DIR/override.json" ]; then ok "FB_WATCHDOG_ADDR=127.0.0.1:PORT: the run completes"; else not_ok "override run" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi

# Unreachable (TEST-NET-1, never routed): exit 9 within the connect bound
# (10 s) plus a healthy start, and one line that names the address.
limit=$((10 + 3 * healthy_s + 5))
start=$SECONDS
expect_error "unreachable FB_WATCHDOG_ADDR: exit 9, one line naming it" 9 "cannot reach rank 0's watchdog channel .* at 192.0.2.1:9" \
  fabric-coll env FB_WATCHDOG_ADDR=192.0.2.1:9 timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x FB_WATCHDOG_ADDR -np 2 \
  "$coll" "${one_size[@]}" -J "$T_DIR/unreach.json"
took=$((SECONDS - start))
if [ "$took" -le "$limit" ]; then ok "unreachable FB_WATCHDOG_ADDR: ended in ${took}s (limit ${limit}s)"; else not_ok "unreachable: bounded" "${took}s > ${limit}s"; fi

# start_sweep NAME: a long sweep on 3 local ranks in the background; sets
# $pid and $out.
start_sweep() {
  out=$T_DIR/$1.json
  setsid "${FB_MPIRUN[@]}" -np 3 "$coll" all_reduce -b 1K -e 256M -f 2 -n 40 -c 0 --backend mpi \
    -T "$bound" -J "$out" >"$T_OUT" 2>"$T_ERR" &
  pid=$!
}

rank_pid() { # rank_pid RANK: that rank's fabric-coll process in this job
  local p
  for p in $(pgrep -s "$pid" -f "^$coll"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
  done | head -1
}

# Rank 0 stopped: the others wait out the bound and rank 0's grace (5 s),
# then say rank 0 did not act and end the job with exit 8.
start_sweep stop0
if wait_rows 3; then
  victim=$(rank_pid 0)
  kill -STOP "$victim"
  wait_end $((bound + 20))
  kill -CONT "$victim" 2>/dev/null
  if [ "$T_RC" -eq 8 ]; then ok "rank 0 SIGSTOP: the job ends with exit 8 in ${took}s (bound ${bound}s + grace)"; else not_ok "rank 0 SIGSTOP: exit 8" "exit $T_RC after ${took}s: $(head -c 500 "$T_ERR")"; fi
  expect_grep "rank 0 SIGSTOP: the others name rank 0 and its host" "rank 0 on $(hostname) did not act on it" "$T_ERR"
  expect_grep "rank 0 SIGSTOP: the operation is named" "timeout: all_reduce [0-9]+[KMG]? (out-of-place|in-place).*did not complete within $bound s" "$T_ERR"
else
  not_ok "rank 0 SIGSTOP: the sweep gets going" "$(head -c 300 "$T_ERR")"
  kill -9 -- "-$pid" 2>/dev/null
fi

# Rank 0 killed: its lines close; the job ends and the killed rank is named.
start_sweep kill0
if wait_rows 3; then
  kill -9 "$(rank_pid 0)"
  wait_end $((bound + 20))
  if [ "$T_RC" -ne 0 ] && [ "$T_RC" -ne 999 ]; then ok "rank 0 kill -9: the job ends (exit $T_RC) in ${took}s"; else not_ok "rank 0 kill -9: the job ends" "exit $T_RC after ${took}s"; fi
  expect_grep "rank 0 kill -9: the killed rank is named" 'rank 0 .*exited on signal 9|rank 0 on .* did not act on it' "$T_ERR"
else
  not_ok "rank 0 kill -9: the sweep gets going" "$(head -c 300 "$T_ERR")"
  kill -9 -- "-$pid" 2>/dev/null
fi
