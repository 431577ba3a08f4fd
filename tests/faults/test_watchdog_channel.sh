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
start_ns=$(date +%s%N)
run env "FB_WATCHDOG_ADDR=127.0.0.1:$port" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x FB_WATCHDOG_ADDR -np 3 \
  "$coll" "${one_size[@]}" -J "$T_DIR/override.json"
recent_s=$((($(date +%s%N) - start_ns + 999999999) / 1000000000))
if [ "$T_RC" -eq 0 ] && [ -s "$T_DIR/override.json" ]; then ok "FB_WATCHDOG_ADDR=127.0.0.1:PORT: the run completes"; else not_ok "override run" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi

# Unreachable (TEST-NET-1, never routed): exit 9 within the connect bound
# (10 s) plus a healthy start, and one line that names the address. The
# start is the slower of the first healthy job and the one just above:
# the machine's load now, not only at the test's start.
start_s=$((recent_s > healthy_s ? recent_s : healthy_s))
limit=$((10 + 3 * start_s + 5))
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

# A stranger on rank 0's host, during set-up (the only time rank 0 takes
# connections): forged greetings for ranks 1 and 2 (in the record layout of
# builds without authentication and in this one's, one answering rank 0's
# challenge under a guessed secret), a forged heartbeat whose deadline
# passed and whose strings fill their fields with terminal escapes, a
# forged last word, a forged order to end, garbage, half a record, a silent
# connection, and a flood of connections. The job's ranks are held at their
# connect() to the channel's port (gate.so) until the stranger has had its
# go and has seen rank 0 drop what proved nothing; the flood goes on while
# they come in. The run must end as it would have: exit 0, every size, no
# fault, nothing of the stranger's on stderr.
cat >"$T_DIR/gate.c" <<'EOF_C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t) =
        (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    const char *gate = getenv("FB_TEST_GATE"), *port = getenv("FB_TEST_GATE_PORT");
    if (gate != NULL && port != NULL && sa != NULL && sa->sa_family == AF_INET &&
        ntohs(((const struct sockaddr_in *)sa)->sin_port) == atoi(port))
        for (int i = 0; i < 3000 && access(gate, F_OK) != 0; i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    return real(fd, sa, len);
}
EOF_C
cat >"$T_DIR/stranger.py" <<'EOF_PY'
import hashlib, hmac, os, socket, struct, sys, time

port, gate, report = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = open(report, "w")
def note(s):
    out.write(s + "\n")
    out.flush()

WHAT = b"\x1b]0;FORGED\x07\x1b[2J" + b"X" * 81  # 96 bytes, no NUL
PHASE = b"\x1b[31mFORGED" + b"Y" * 5           # 16 bytes, no NUL
FRAME = 224
def body(kind, rank, expired=0):
    return struct.pack("<iiiiqqqd", kind, rank, expired, 0, 9, 9, 9, 1.0) + PHASE + WHAT
def unauthenticated(kind, rank, expired=0):  # a record of builds without a secret
    return struct.pack("<Iiiiqqqd", 0x46425744, kind, rank, expired, 9, 9, 9, 1.0) + PHASE + WHAT
def frame(kind, rank, seq, expired=0, nonce=b"n" * 16, key=None):
    head = struct.pack("<IIQ", 0x32574246, 0x52, seq) + nonce + body(kind, rank, expired)
    mac = hmac.new(key, head, hashlib.sha256).digest() if key else bytes(32)
    return head + mac
def send(s, data):  # rank 0 may have dropped it already
    try:
        s.sendall(data)
    except OSError:
        pass
def dial(timeout=2):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)
def recv_frame(s, timeout):
    s.settimeout(timeout)
    got = b""
    try:
        while len(got) < FRAME:
            d = s.recv(FRAME - len(got))
            if not d:
                break
            got += d
    except OSError:
        pass
    return got
def dropped(s, until):  # rank 0 closed it (after its challenge, if any)
    try:
        while True:
            s.settimeout(max(0.01, until - time.monotonic()))
            if not s.recv(4096):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True

end = time.monotonic() + 60
while True:  # until rank 0 listens
    try:
        first = dial()
        break
    except OSError:
        if time.monotonic() > end:
            note("rank 0 never listened")
            sys.exit(1)
        time.sleep(0.01)
keep = [first]
# Rank 1: its deadline passed, then it is done; rank 2 (the last in rank
# 0's table: a read past its strings leaves the heap block) is at work.
send(first, unauthenticated(1, 1) + unauthenticated(2, 1, expired=1) + unauthenticated(3, 1))
for data in (unauthenticated(1, 2) + unauthenticated(2, 2), unauthenticated(4, 0),
             frame(1, 1, 0) + frame(2, 1, 1, expired=1) + frame(3, 2, 2)):
    c = dial()
    send(c, data)
    keep.append(c)
# The protocol followed, under a guessed secret (zeros). Rank 0 answers
# within a poll (50 ms) when it gets a core: 5 s, not 1, for a busy machine.
c = dial()
challenge = recv_frame(c, 5)
if len(challenge) == FRAME:
    mine = os.urandom(16)
    key = hmac.new(bytes(32), b"fabric-bench watchdog channel v2" + challenge[16:32] + mine +
                   struct.pack("<i", 1), hashlib.sha256).digest()
    send(c, frame(1, 1, 0, nonce=mine, key=key))
    note("guessed secret: " + ("refused" if len(recv_frame(c, 5)) == 0 else "welcomed"))
else:
    note("guessed secret: no challenge")
garbage, half, silent = dial(), dial(), dial()
send(garbage, os.urandom(1000))
send(half, frame(1, 1, 0)[:100])
until = time.monotonic() + 6  # three handshake bounds
for name, s in (("garbage", garbage), ("half a record", half), ("silent", silent)):
    note(name + ": " + ("dropped" if dropped(s, until) else "kept"))
flood = []
for _ in range(300):
    try:
        flood.append(dial())
    except OSError:
        break
note("flood before the ranks: %d connections" % len(flood))
open(gate, "w").close()
closed, made, end = False, 0, time.monotonic() + 30
while time.monotonic() < end:  # while the ranks come in, until rank 0 stops listening
    try:
        c = dial()
        send(c, b"\0" * 7)
        flood.append(c)
        made += 1
        if len(flood) > 400:
            flood.pop(0).close()
    except ConnectionRefusedError:
        closed = True
        break
    except OSError:
        pass
note("flood while the ranks came in: %d connections" % made)
note("set-up ended with the flood on" if closed else "rank 0 still listening after 30 s")
EOF_PY

# stranger_run NAME FABRIC-COLL: the stranger against a 3-rank run of
# FABRIC-COLL; results in $T_DIR/NAME.json, its notes in $T_DIR/NAME.notes.
# (An ASan build takes the preloaded gate after its own runtime.)
stranger_run() {
  local name=$1 bin=$2 sport=$((20000 + RANDOM % 20000))
  rm -f "$T_DIR/$name.gate"
  /usr/bin/python3 "$T_DIR/stranger.py" "$sport" "$T_DIR/$name.gate" "$T_DIR/$name.notes" &
  local spid=$!
  run env "FB_WATCHDOG_ADDR=127.0.0.1:$sport" "LD_PRELOAD=$T_DIR/gate.so" "FB_TEST_GATE=$T_DIR/$name.gate" \
    "FB_TEST_GATE_PORT=$sport" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 timeout -k 5 120 "${FB_MPIRUN[@]}" -q -x FB_WATCHDOG_ADDR -x LD_PRELOAD \
    -x FB_TEST_GATE -x FB_TEST_GATE_PORT -x ASAN_OPTIONS -x UBSAN_OPTIONS -np 3 "$bin" "${one_size[@]}" \
    -J "$T_DIR/$name.json"
  # The stranger learns that set-up ended only at its next connection, which
  # may sit out its 2 s timeout first: give it that (and its 30 s bound)
  # before it is stopped, so its last notes are written.
  local tenths
  for ((tenths = 0; tenths < 400; tenths++)); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# stranger_changed_nothing NAME WHAT: the run ended as an unattacked one does.
stranger_changed_nothing() {
  local file=$T_DIR/$1.json name=$2
  if [ "$T_RC" -eq 0 ] && ! grep -qE 'timeout|FORGED|rank [0-9]+ on' "$T_ERR" && ! grep -q $'\x1b' "$T_ERR" "$T_OUT"; then
    ok "$name: exit 0, no fault, nothing of the stranger's printed"
  else
    not_ok "$name: exit 0, no fault" "exit $T_RC: $(head -c 600 "$T_ERR" | tr -c '[:print:]\n' '?')"
  fi
  checked "$name: the results are complete" "$file" --ranks 3 --complete
  jq_is "$name: the results hold no fault" "$file" '.fault' 'null'
}

if ! LC_ALL=C cc -shared -fPIC -O1 -o "$T_DIR/gate.so" "$T_DIR/gate.c" -ldl 2>"$T_DIR/cc.log"; then
  not_ok "the connect() gate builds" "$(cat "$T_DIR/cc.log")"
  exit 0
fi
stranger_run stranger "$coll"
stranger_changed_nothing stranger "forged records, garbage, silent connections and a flood during set-up"
notes=$T_DIR/stranger.notes
expect_grep "a greeting under a guessed secret is refused" '^guessed secret: refused$' "$notes"
expect_grep "garbage is dropped during set-up" '^garbage: dropped$' "$notes"
expect_grep "half a record is dropped within the handshake bound" '^half a record: dropped$' "$notes"
expect_grep "a silent connection is dropped within the handshake bound" '^silent: dropped$' "$notes"
expect_grep "set-up completes under a flood of connections" '^set-up ended with the flood on$' "$notes"
sed 's/^/# /' "$notes"

# The same under AddressSanitizer and UBSan (the tests' shared ASan build):
# a forged record's unterminated strings must never be read past their end.
if variant_build asan MODULES=coll SAN=1 && [ -x "$tree/bin/fabric-coll" ]; then
  stranger_run stranger-asan "$tree/bin/fabric-coll"
  stranger_changed_nothing stranger-asan "ASan/UBSan: the same stranger"
  if ! grep -qE 'AddressSanitizer|runtime error' "$T_ERR"; then ok "ASan/UBSan: the stranger's records read nothing out of bounds"; else not_ok "ASan/UBSan: the stranger" "$(grep -m3 -E 'ERROR|runtime error|#[0-9] ' "$T_ERR" | tr '\n' ' ')"; fi
else
  not_ok "the ASan build of fabric-coll" "$(grep -m3 -E 'error:' "$T_DIR/make.log")"
fi
