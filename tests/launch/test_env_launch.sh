#!/usr/bin/env bash
# The env launch: fabric-coll and fabric-scan started as training jobs
# start theirs (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), one
# process per namespace host or per GPU, no mpirun and no ssh anywhere:
# NCCL's bootstrap (the stand-in's, from NCCL_COMM_ID) makes the job.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

standin_built "the env launch" || exit 0
SET=fbenv
hosts_up "$SET" 3 1 "the env launch on namespace hosts" || exit 0
ok "three namespace hosts are up"

C=$FB_BIN/fabric-coll
S=$FB_BIN/fabric-scan
MASTER=10.77.0.1
export FB_JOB_SECRET
FB_JOB_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
# A port of its own per job: the bootstrap root of one job is gone when
# the next starts, but a job left behind must not take the next one's.
port=29400

# launch OUT WORLD_SIZE "HOST:RANK:LOCAL_RANK ..." CMD...: one process per
# triple, in its namespace host, with the launcher's variables; each one's
# stdout, stderr and exit code in OUT.RANK.{out,err,rc}; waits for all.
launch() {
  local out=$1 size=$2 procs=$3 p host rank lrank pids=()
  shift 3
  port=$((port + 1))
  for p in $procs; do
    IFS=: read -r host rank lrank <<<"$p"
    (
      "$FB_ROOT/scripts/gpu-standin.sh" "$th" exec "$SET" "$host" env WORLD_SIZE="$size" RANK="$rank" \
        LOCAL_RANK="$lrank" MASTER_ADDR=$MASTER MASTER_PORT=$port timeout -k 5 180 "$@" \
        >"$out.$rank.out" 2>"$out.$rank.err"
      echo $? >"$out.$rank.rc"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
}
rcs() { local r; for r in $(seq 0 $(($2 - 1))); do printf '%s ' "$(cat "$1.$r.rc")"; done; }

# ---- one process per host, -g 2: 4 ranks on 2 nodes ----
launch "$T_DIR/g2" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1M -f 4 -n 3 -c 1 -g 2 -T 30 -J "$T_DIR/g2.json"
if [ "$(rcs "$T_DIR/g2" 2)" = "0 0 " ]; then ok "-g 2 on 2 hosts: both processes exit 0"; else not_ok "-g 2 on 2 hosts: exit 0" "exits $(rcs "$T_DIR/g2" 2): $(head -c 600 "$T_DIR/g2.0.err" "$T_DIR/g2.1.err")"; fi
checked "-g 2 on 2 hosts: complete, 4 ranks on 2 nodes, 6 rows, consistent numbers" "$T_DIR/g2.json" \
  --ranks 4 --nodes 2 --rows 6 --complete
jq_is "-g 2 on 2 hosts: the hosts, no wrong element" "$T_DIR/g2.json" \
  '[.hosts, ([.rows[] | .out_of_place.wrong, .in_place.wrong] | add)]' '[["fbenv1","fbenv2"],0]'
expect_grep "-g 2 on 2 hosts: the table says 4 ranks, 2 nodes" '^# fabric-coll .* on 4 ranks, 2 nodes' "$T_DIR/g2.0.out"
expect_grep "-g 2 on 2 hosts: rank 3 is on fbenv2" '^#  Rank  3 Group  0 Pid +[0-9]+ on +fbenv2 ' "$T_DIR/g2.0.out"
if [ ! -s "$T_DIR/g2.1.out" ]; then ok "-g 2 on 2 hosts: rank 0 alone prints the table"; else not_ok "-g 2: rank 1 prints nothing" "$(head -c 300 "$T_DIR/g2.1.out")"; fi

# ---- torchrun's shape: a process per GPU, LOCAL_RANK 0..1 on 2 hosts ----
launch "$T_DIR/tr" 4 "1:0:0 1:1:1 2:2:0 2:3:1" "$C" all_gather -b 1K -e 256K -f 4 -n 3 -c 1 -T 30 -J "$T_DIR/tr.json"
if [ "$(rcs "$T_DIR/tr" 4)" = "0 0 0 0 " ]; then ok "torchrun's shape: 4 processes exit 0"; else not_ok "torchrun's shape: exit 0" "exits $(rcs "$T_DIR/tr" 4): $(head -c 600 "$T_DIR/tr.0.err")"; fi
checked "torchrun's shape: complete, 4 ranks on 2 nodes, 5 rows" "$T_DIR/tr.json" --ranks 4 --nodes 2 --rows 5 --complete
jq_is "torchrun's shape: 2 ranks per node, no wrong element" "$T_DIR/tr.json" \
  '[.topology.ranks_per_node, ([.rows[] | .out_of_place.wrong, .in_place.wrong] | add)]' '[2,0]'
expect_grep "torchrun's shape: local ranks 0 and 1 on fbenv1 use devices 0 and 1" \
  '^#  Rank  1 Group  0 Pid +[0-9]+ on +fbenv1 device  1 ' "$T_DIR/tr.0.out"

# ---- --backend mpi needs MPI ----
launch "$T_DIR/mpi" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1K --backend mpi -T 30
if [ "$(rcs "$T_DIR/mpi" 2)" = "2 2 " ]; then ok "--backend mpi under the env launch: exit 2 on both"; else not_ok "--backend mpi: exit 2" "exits $(rcs "$T_DIR/mpi" 2)"; fi
expect_one_line "--backend mpi: one line on stderr" "$T_DIR/mpi.0.err"
expect_grep "--backend mpi: the line says it needs MPI" '^fabric-coll: --backend mpi .* needs an MPI launch' "$T_DIR/mpi.0.err"

# ---- WORLD_SIZE 3, 2 processes started: bounded, named, non-zero on both ----
start=$SECONDS
launch "$T_DIR/short" 3 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1K -T 6
took=$((SECONDS - start))
if [ "$(rcs "$T_DIR/short" 2)" = "6 6 " ]; then ok "WORLD_SIZE 3, 2 started: exit 6 on both"; else not_ok "WORLD_SIZE 3, 2 started: exit 6" "exits $(rcs "$T_DIR/short" 2): $(head -c 400 "$T_DIR/short.0.err")"; fi
# The bound is -T (6 s): both end within it plus start-up, measured
# against the -g 2 run's whole sweep on this machine now.
if [ "$took" -lt 40 ]; then ok "WORLD_SIZE 3, 2 started: both ended in ${took}s (-T 6)"; else not_ok "WORLD_SIZE 3: bounded" "${took}s"; fi
# Rank 0 counts the ranks that prove the job's secret at the bootstrap
# address and tells the others: both say how many joined, and which.
for r in 0 1; do
  expect_grep "WORLD_SIZE 3, 2 started: rank $r says 2 of 3 joined, rank 2 missing, at the address" \
    "^fabric-coll: set-up did not complete within 6 s: 2 of 3 ranks joined \\(missing: rank 2\\)(, rank 0 at $MASTER:$port says)?; rank $r of 3 \\(RANK=$r, WORLD_SIZE=3\\)" \
    "$T_DIR/short.$r.err"
done
expect_grep "WORLD_SIZE 3, 2 started: rank 0 names the address it waited at" "waited at $MASTER:$port;" "$T_DIR/short.0.err"

# ---- a MASTER_ADDR that is not rank 0's: fbenv3's, where nobody serves ----
start=$SECONDS
MASTER=10.77.0.3 launch "$T_DIR/wrong" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1K -T 6
took=$((SECONDS - start))
if [ "$(rcs "$T_DIR/wrong" 2)" = "6 6 " ] && [ "$took" -lt 40 ]; then ok "a wrong MASTER_ADDR: exit 6 on both in ${took}s (-T 6)"; else not_ok "a wrong MASTER_ADDR: exit 6, bounded" "exits $(rcs "$T_DIR/wrong" 2) after ${took}s: $(head -c 400 "$T_DIR/wrong.0.err" "$T_DIR/wrong.1.err")"; fi
expect_grep "a wrong MASTER_ADDR: rank 0 cannot serve it, and says so" \
  "^fabric-coll: set-up failed: 1 of 2 ranks joined \\(this one\\): rank 0 of 2 .* cannot serve the bootstrap at 10\\.77\\.0\\.3:$port \\(Cannot assign" "$T_DIR/wrong.0.err"
expect_grep "a wrong MASTER_ADDR: rank 1 names the address it did not reach" \
  "^fabric-coll: set-up did not complete within 6 s: rank 0 was not reached at 10\\.77\\.0\\.3:$port \\(.*\\), so how many of 2 ranks joined is not known" "$T_DIR/wrong.1.err"

# ---- the bootstrap port taken on rank 0's host: a listener that is not
# fabric-bench holds it, so rank 1 reaches something that never answers ----
taken=$((port + 1))
"$th" exec "$SET" 1 timeout -k 5 300 /usr/bin/python3 -c 'import os, socket, sys, time
s = socket.socket(); s.bind(("10.77.0.1", int(sys.argv[1]))); s.listen(16)
open(sys.argv[2], "w").write(str(os.getpid())); time.sleep(300)' "$taken" "$T_DIR/holder.pid" 2>"$T_DIR/holder.err" &
on_exit "kill \$(cat '$T_DIR/holder.pid' 2>/dev/null) 2>/dev/null"
for _ in $(seq 300); do [ -s "$T_DIR/holder.pid" ] && break; sleep 0.1; done
start=$SECONDS
launch "$T_DIR/taken" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1K -T 6
took=$((SECONDS - start))
kill "$(cat "$T_DIR/holder.pid")" 2>/dev/null
if [ "$port" = "$taken" ] && [ "$(rcs "$T_DIR/taken" 2)" = "6 6 " ] && [ "$took" -lt 40 ]; then ok "a port already taken: exit 6 on both in ${took}s (-T 6)"; else not_ok "a port already taken: exit 6, bounded" "port $port (held $taken), exits $(rcs "$T_DIR/taken" 2) after ${took}s: $(head -c 400 "$T_DIR/taken.0.err" "$T_DIR/taken.1.err")"; fi
expect_grep "a port already taken: rank 0 says its port is taken" \
  "^fabric-coll: set-up failed: 1 of 2 ranks joined \\(this one\\): rank 0 of 2 .* at $MASTER:$port, its port is taken on this host" "$T_DIR/taken.0.err"
expect_grep "a port already taken: rank 1 names the address, where no rank 0 of this job answered" \
  "^fabric-coll: set-up did not complete within 6 s: rank 0 was not reached at $MASTER:$port " "$T_DIR/taken.1.err"

# ---- the watchdog under the env launch: a rank that hangs ----
start=$SECONDS
FB_STANDIN_HANG_RANK=1 FB_STANDIN_AFTER=30 \
  launch "$T_DIR/hang" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 64K -f 4 -n 5 -c 1 -T 6 -J "$T_DIR/hang.json"
took=$((SECONDS - start))
if [ "$(cat "$T_DIR/hang.0.rc")" = 8 ] && [ "$took" -lt 60 ]; then ok "a hanging rank: rank 0 exits 8 (timeout) in ${took}s"; else not_ok "a hanging rank: exit 8" "exits $(rcs "$T_DIR/hang" 2) after ${took}s: $(head -c 600 "$T_DIR/hang.0.err")"; fi
expect_grep "a hanging rank: the timeout names rank 1 on fbenv2" '^fabric-coll: timeout: .* did not complete within 6 s \(rank 1 on fbenv2\)' "$T_DIR/hang.0.err"
jq_is "a hanging rank: the fault record says timeout" "$T_DIR/hang.json" '[.fault.status, .fault.exit_code]' '["timeout",8]'
if [ "$(cat "$T_DIR/hang.1.rc")" != 0 ]; then ok "a hanging rank: it ends too (exit $(cat "$T_DIR/hang.1.rc"))"; else not_ok "a hanging rank ends" "exit 0"; fi
# No secret from the launcher: the watchdog cannot start (never a constant).
FB_JOB_SECRET='' launch "$T_DIR/nosecret" 2 "1:0:0 2:1:0" "$C" all_reduce -b 1K -e 1K -T 20
expect_grep "no job secret: the watchdog says where it comes from" 'secret has 0 bytes|needs the job.s secret' "$T_DIR/nosecret.0.err"

# ---- fabric-scan, a process per host on 3 hosts ----
QUICK=(-b 2M -n 8 -w 2 --threshold 0.12 --test-timeout 20 --seed 5)
launch "$T_DIR/scan" 3 "1:0:0 2:1:0 3:2:0" "$S" "${QUICK[@]}" -J "$T_DIR/scan.json"
if [ "$(rcs "$T_DIR/scan" 3)" = "0 0 0 " ]; then ok "fabric-scan, 3 hosts: exit 0 on every process"; else not_ok "fabric-scan, 3 hosts: exit 0" "exits $(rcs "$T_DIR/scan" 3): $(head -c 600 "$T_DIR/scan.0.err" "$T_DIR/scan.1.err")"; fi
jq_is "fabric-scan, 3 hosts: complete, the nccl engine, every node passes" "$T_DIR/scan.json" \
  '[.complete, .summary.verdict, .hosts, [.nodes[] | .verdict]]' '[true,"pass",["fbenv1","fbenv2","fbenv3"],["pass","pass","pass"]]'
expect_grep "fabric-scan, 3 hosts: the verdict line" '^# verdict: PASS \(3 pass, 0 slow' "$T_DIR/scan.0.out"
median=$(jq '.fleet.median_pair_busbw_GBps' "$T_DIR/scan.json" 2>/dev/null)
rate_kbit=$(awk -v m="${median:-0}" 'BEGIN { r = m * 8e6 / 100; if (r < 8000) r = 8000; printf "%d", r }')
"$th" exec "$SET" 3 tc qdisc replace dev eth0 root tbf rate "${rate_kbit}kbit" burst 32kbit latency 400ms
launch "$T_DIR/slow" 3 "1:0:0 2:1:0 3:2:0" "$S" "${QUICK[@]}" -J "$T_DIR/slow.json"
"$th" exec "$SET" 3 tc qdisc del dev eth0 root 2>/dev/null || true
if [ "$(rcs "$T_DIR/slow" 3)" = "24 24 24 " ]; then ok "fabric-scan, fbenv3 throttled to ${rate_kbit} kbit/s: exit 24 (suspects) on every process"; else not_ok "fabric-scan, throttled: exit 24" "exits $(rcs "$T_DIR/slow" 3): $(head -c 600 "$T_DIR/slow.0.err")"; fi
jq_is "fabric-scan, throttled: fbenv3 is the one suspect" "$T_DIR/slow.json" \
  '[.suspects.nodes, ([.nodes[] | select(.verdict != "pass") | .host])]' '[["fbenv3"],["fbenv3"]]'
launch "$T_DIR/smpi" 3 "1:0:0 2:1:0 3:2:0" "$S" --backend mpi
if [ "$(rcs "$T_DIR/smpi" 3)" = "2 2 2 " ] && grep -q 'needs an MPI launch' "$T_DIR/smpi.0.err"; then ok "fabric-scan --backend mpi under the env launch: exit 2, says it needs MPI"; else not_ok "fabric-scan --backend mpi: exit 2" "exits $(rcs "$T_DIR/smpi" 3): $(head -c 300 "$T_DIR/smpi.0.err")"; fi
