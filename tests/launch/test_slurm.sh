#!/usr/bin/env bash
# launch/slurm.sh: argument errors and dry runs, then a real one-node Slurm
# (tests/launch/slurm-testcluster.sh: munged, slurmctld, slurmd) running
# fabric-coll through `srun --mpi=pmix` and through a batch job with mpirun
# inside the allocation; results, verdicts and every launch error checked.
# shellcheck disable=SC2016 # the patterns match a literal $ in generated scripts
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/slurm.sh
CLUSTER=$FB_ROOT/tests/launch/slurm-testcluster.sh
RES=$T_DIR/results

# ---- arguments (no Slurm needed) ------------------------------------------------------
expect_exit "no collective is a usage error" 2 "$L"
expect_one_line "no collective: one line" "$T_ERR"
expect_exit "unknown collective" 2 "$L" all_reduse
expect_exit "bad --nodes" 2 "$L" -N 0 all_reduce
expect_exit "bad --time" 2 "$L" -t soon all_reduce
expect_exit "bad --wait" 2 "$L" --wait -1 all_reduce
expect_exit "bad --bind" 2 "$L" --bind socket all_reduce
expect_exit "--no-wait without --sbatch" 2 "$L" --no-wait all_reduce
expect_exit "--mpirun-arg on the srun path" 2 "$L" --mpirun-arg=-v all_reduce
expect_grep "--mpirun-arg on the srun path names --srun-arg" 'srun takes --srun-arg' "$T_ERR"
expect_exit "unknown fabric" 2 "$L" --dry-run --fabric infiniband all_reduce
expect_grep "unknown fabric lists the fabrics" 'gke-tcpxo.*tcp-baseline' "$T_ERR"

# ---- dry runs: every command printed, Slurm asked nothing ------------------------------
expect_exit "srun dry run succeeds" 0 "$L" --dry-run -N 2 --ranks-per-node 8 --fabric sriov-rdma \
  -p gpu -A proj --cluster dry --results "$RES" -- all_reduce -b 1K -e 16G -f 2
expect_grep "srun dry run: PMIx, 16 tasks, 8 per node, partition, account, whole nodes, bounded queue wait" \
  'srun --mpi=pmix --export=ALL --kill-on-bad-exit=1 --ntasks=16 --cpu-bind=ldoms .*--nodes=2 --ntasks-per-node=8 --time=30 --partition=gpu --account=proj --exclusive --immediate=600' "$T_OUT"
expect_grep "srun dry run exports the fabric environment" '^  \| export NCCL_IB_GID_INDEX=3$' "$T_OUT"
expect_grep "srun dry run turns on NCCL INFO for the transport" 'NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET' "$T_OUT"
expect_grep "srun dry run: results/<cluster>/<stamp>-<collective>.json" 'result=.*/dry/[0-9TZ]+-all_reduce.json log=.*/dry/[0-9TZ]+-all_reduce.log' "$T_OUT"
expect_grep "srun dry run starts ranks through rank.sh" 'launch/rank.sh .*fabric-coll all_reduce -b 1K -e 16G -f 2 --cluster dry -J "\$result" --nccl-log' "$T_OUT"
if [ -e "$RES" ]; then not_ok "dry run writes nothing" "$RES exists"; else ok "dry run writes nothing"; fi

# Inside an allocation: a step of it, its shape by default, no new allocation.
SLURM_JOB_ID=42 SLURM_JOB_NUM_NODES=3 SLURM_NTASKS_PER_NODE=4 run "$L" --dry-run --results "$RES" all_reduce
if [ "$T_RC" -eq 0 ] && grep -q 'srun --mpi=pmix .*--ntasks=12 .*--nodes=3 --ntasks-per-node=4 \\$' "$T_OUT" &&
  ! grep -Eq -- '--immediate|--exclusive|--partition' "$T_OUT" && grep -q 'step of job 42' "$T_OUT"; then
  ok "in an allocation: a step with the allocation's nodes and tasks per node"
else
  not_ok "in an allocation: a step with the allocation's nodes and tasks per node" "exit $T_RC: $(grep srun "$T_OUT" | head -c 300)"
fi

run "$L" --dry-run --shared --srun-arg=--reservation=fabric -N 2 all_reduce
if grep -q 'srun --mpi=pmix .*--reservation=fabric' "$T_OUT" && ! grep -q -- '--exclusive' "$T_OUT"; then
  ok "--shared drops --exclusive, --srun-arg reaches srun"
else
  not_ok "--shared drops --exclusive, --srun-arg reaches srun" "$(grep srun "$T_OUT" | head -c 300)"
fi

expect_exit "sbatch dry run succeeds" 0 "$L" --dry-run --sbatch -N 2 --ranks-per-node 8 --fabric sriov-rdma \
  --cluster dry --results "$RES" --profile h100 --mpirun-arg=--mca --mpirun-arg=op --mpirun-arg=^avx \
  -- all_reduce -b 1K -e 16G -f 2
expect_grep "batch script asks for 2 nodes" '^  \| #SBATCH --nodes=2$' "$T_OUT"
expect_grep "batch script asks for 8 tasks per node" '^  \| #SBATCH --ntasks-per-node=8$' "$T_OUT"
expect_grep "batch script runs mpirun with 16 ranks, 8 per node" 'mpirun --allow-run-as-root -np 16 --map-by ppr:8:node --bind-to numa' "$T_OUT"
expect_grep "batch script passes --mpirun-arg" '"\$\{fwd\[@\]\}" --mca op \\\^avx' "$T_OUT"
expect_grep "batch script names each result at run time" 'result=.*/dry/\$stamp-all_reduce.json' "$T_OUT"
expect_grep "batch script ends with the verdict" '"\$report" check "\$result" --profile h100' "$T_OUT"
expect_grep "sbatch dry run shows the submission" 'sbatch --parsable --export=ALL\\?,FABRIC_BENCH_STAMP=[0-9TZ]+ --output=.*/dry/[0-9TZ]+-all_reduce.out .*-all_reduce.sbatch' "$T_OUT"
sed -n 's/^  | //p' "$T_OUT" >"$T_DIR/dry.sbatch"
check "batch script is valid bash" bash -n "$T_DIR/dry.sbatch"

# ---- no Slurm: its commands are not on PATH -------------------------------------------
mkdir -p "$T_DIR/noslurm"
for f in /usr/bin/* /usr/sbin/*; do ln -sf "$f" "$T_DIR/noslurm/" 2>/dev/null; done
rm -f "$T_DIR/noslurm"/{srun,sbatch,sinfo,scontrol,scancel,squeue,salloc}
expect_exit "no Slurm: exit 5" 5 env PATH="$T_DIR/noslurm" "$L" all_reduce
expect_grep "no Slurm: names srun and how to get it" 'srun not found on PATH: install Slurm.s client commands \(Debian: slurm-client\)' "$T_ERR"
expect_one_line "no Slurm: one line" "$T_ERR"

# ---- a real one-node Slurm ------------------------------------------------------------------
if ! is_root; then
  skip "runs on a one-node Slurm" "needs root (slurmd and munged run as root)"
  exit 0
fi
for tool in munged slurmctld slurmd srun sbatch; do
  if ! command -v "$tool" >/dev/null; then
    skip "runs on a one-node Slurm" "$tool not installed: scripts/install-deps.sh installs slurm-wlm and munge"
    exit 0
  fi
done
if [ ! -x "$FB_BIN/fabric-coll" ]; then
  skip "runs on a one-node Slurm" "no $FB_BIN/fabric-coll: build it (make MODULES=\"core coll report\")"
  exit 0
fi
if ! "$CLUSTER" up 4 >"$T_DIR/cluster.env" 2>"$T_ERR"; then
  not_ok "one-node Slurm up (munged, slurmctld, slurmd)" "$(head -c 400 "$T_ERR")"
  exit 1
fi
dir=$(sed -n 's/^dir=//p' "$T_DIR/cluster.env")
on_exit "'$CLUSTER' down '$dir' >/dev/null 2>&1"
export SLURM_CONF=$dir/slurm.conf FB_BIN
ok "one-node Slurm up (munged, slurmctld, slurmd)"

# A controller nobody answers on: the same configuration, another port.
port=$(sed -n 's/^SlurmctldPort=//p' "$SLURM_CONF")
sed "s/^SlurmctldPort=.*/SlurmctldPort=$((port + 2))/" "$SLURM_CONF" >"$dir/dead.conf"
start=$SECONDS
SLURM_CONF=$dir/dead.conf run "$L" all_reduce
if [ "$T_RC" -eq 6 ] && grep -q 'the Slurm controller does not answer (sinfo: .*): check slurmctld' "$T_ERR" &&
  [ $((SECONDS - start)) -le 45 ]; then
  ok "controller down: exit 6 within the bound ($((SECONDS - start))s), with the fix"
else
  not_ok "controller down: exit 6 within the bound, with the fix" "exit $T_RC after $((SECONDS - start))s: $(head -c 300 "$T_ERR")"
fi
expect_one_line "controller down: one line" "$T_ERR"

# A controller that accepts and never answers (stopped).
ctld=$(cat "$dir/slurmctld.pid.launch")
kill -STOP "$ctld"
start=$SECONDS
run "$L" all_reduce
kill -CONT "$ctld"
if [ "$T_RC" -eq 6 ] && grep -q 'the Slurm controller did not answer sinfo within 30s\|the Slurm controller does not answer (sinfo: .*timed out' "$T_ERR" &&
  [ $((SECONDS - start)) -le 45 ]; then
  ok "controller stopped: exit 6 within the bound ($((SECONDS - start))s)"
else
  not_ok "controller stopped: exit 6 within the bound" "exit $T_RC after $((SECONDS - start))s: $(head -c 300 "$T_ERR")"
fi
expect_one_line "controller stopped: one line" "$T_ERR"
for _ in $(seq 1 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done

expect_exit "partition missing: exit 2" 2 "$L" -p nosuch all_reduce
expect_grep "partition missing: names it and the partitions there are" "partition 'nosuch' does not exist on this cluster: use one of fbtest" "$T_ERR"
expect_one_line "partition missing: one line" "$T_ERR"
expect_exit "more nodes than the partition has: exit 2" 2 "$L" -N 3 all_reduce
expect_grep "more nodes than the partition has: says how many" 'partition fbtest has 1 nodes, --nodes asks for 3' "$T_ERR"
scontrol update PartitionName=fbtest State=DOWN
expect_exit "partition down: exit 6" 6 "$L" -N 1 all_reduce
scontrol update PartitionName=fbtest State=UP
expect_grep "partition down: names its state and how to resume it" 'partition fbtest is down, not up .*State=UP' "$T_ERR"
# More tasks per node than the node has CPUs: Slurm would queue it forever.
for path in srun sbatch; do
  flag=()
  [ "$path" = sbatch ] && flag=(--sbatch)
  start=$SECONDS
  run "$L" "${flag[@]+"${flag[@]}"}" -N 1 --ranks-per-node 8 --results "$RES" all_reduce
  if [ "$T_RC" -eq 6 ] && grep -q 'Slurm cannot place 1 nodes x 8 tasks in partition fbtest (.*Requested node configuration is not available.*): ask for fewer ranks per node' "$T_ERR" &&
    [ $((SECONDS - start)) -le 10 ]; then
    ok "$path: a job the partition cannot hold fails at once (exit 6, Slurm's reason)"
  else
    not_ok "$path: a job the partition cannot hold fails at once (exit 6, Slurm's reason)" "exit $T_RC after $((SECONDS - start))s: $(head -c 300 "$T_ERR")"
  fi
done
if squeue -h | grep -q .; then not_ok "nothing left queued by refused jobs" "$(squeue)"; else ok "nothing left queued by refused jobs"; fi

host_profile fbs-host
sweep=(--backend mpi -b 1K -e 64K -f 2 -n 3 -w 1)
shape=(-N 1 --ranks-per-node 2 --bind none -t 5 --wait 120)
first() { [ -e "$1" ] && echo "$1"; }

# judged NAME RESULT: what both paths must produce, as the bare-metal launcher does.
judged() {
  local name=$1 result=$2
  judged_run "$name" "$result"
  check "$name: 2 ranks on 1 node, complete, 7 sizes, no wrong elements" \
    jq -e '.topology.ranks == 2 and .topology.nodes == 1 and .topology.ranks_per_node == 2 and
      .complete == true and (.rows | length) == 7 and .summary.wrong_total == 0' "$result"
  check "$name: the fabric's environment on the ranks (tcp-baseline, NCCL INFO)" \
    jq -e '.env.FABRIC_NAME == "tcp-baseline" and .env.NCCL_NET == "Socket" and .env.NCCL_DEBUG == "INFO"' "$result"
  expect_grep "$name: the run's output kept beside the result" '# Avg bus bandwidth' "${result%.json}.log"
}

# ---- srun --mpi=pmix ----------------------------------------------------------------------
run timeout 300 "$L" "${shape[@]}" --fabric tcp-baseline --env OMPI_MCA_op=^avx --cluster slurm-srun \
  --results "$RES" "${profile_args[@]+"${profile_args[@]}"}" -- all_reduce "${sweep[@]}"
result=$(first "$RES"/slurm-srun/*-all_reduce.json)
if [ -n "$result" ]; then
  ok "srun: results/<cluster>/<stamp>-all_reduce.json written"
  judged srun "$result"
  check "srun: cluster recorded" jq -e '.cluster == "slurm-srun"' "$result"
else
  not_ok "srun: results/<cluster>/<stamp>-all_reduce.json written" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
fi
# srun returns when slurmctld has its exit, before slurmd reports the
# node's clean-up: the job shows COMPLETING until then (on a busy machine,
# a while). Wait for COMPLETED, bounded.
for _ in $(seq 1 60); do
  jobs_done=$(scontrol show job -o 2>/dev/null | grep 'JobName=fabric-bench-all_reduce ' | grep -c 'JobState=COMPLETED')
  [ "$jobs_done" -ge 1 ] && break
  sleep 0.5
done
if [ "$jobs_done" -ge 1 ]; then ok "srun: Slurm ran it as job fabric-bench-all_reduce"
else not_ok "srun: Slurm ran it as job fabric-bench-all_reduce" "$(scontrol show job -o 2>&1 | head -c 300)"; fi

# ---- sbatch, mpirun inside the allocation ----------------------------------------------------
mpi_extra=(--mpirun-arg=--mca --mpirun-arg=op --mpirun-arg=^avx)
run timeout 300 "$L" --sbatch "${shape[@]}" --fabric tcp-baseline --results "$RES" "${mpi_extra[@]}" \
  "${profile_args[@]+"${profile_args[@]}"}" -- all_reduce "${sweep[@]}"
result=$(first "$RES"/fbtest/*-all_reduce.json)
if [ -n "$result" ]; then
  ok "sbatch: results/<Slurm ClusterName>/<stamp>-all_reduce.json written"
  judged sbatch "$result"
  base=${result%.json}
  expect_grep "sbatch: the batch script is kept beside the result" '^#SBATCH --ntasks-per-node=2$' "$base.sbatch"
  expect_grep "sbatch: the batch script runs mpirun in the allocation" '^mpirun --allow-run-as-root -np 2 ' "$base.sbatch"
  expect_grep "sbatch: the job judged itself (its output holds the verdict)" '^(PASS|DEGRADED|TCP-FALLBACK|FAIL|INCOMPLETE): all_reduce' "$base.out"
  job=$(sed -n 's/.*job \([0-9]*\) submitted.*/\1/p' "$T_OUT")
  if scontrol show job -o "$job" 2>/dev/null | grep -q "ExitCode=$T_RC:0"; then
    ok "sbatch: the job's exit code is the verdict ($T_RC)"
  else
    not_ok "sbatch: the job's exit code is the verdict" "job '$job': $(scontrol show job -o "$job" 2>&1 | grep -o 'JobState=[^ ]*\|ExitCode=[^ ]*' | tr '\n' ' ')"
  fi
else
  not_ok "sbatch: results/<Slurm ClusterName>/<stamp>-all_reduce.json written" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
fi

# The printed batch script, submitted by hand twice: two results, the verdict as exit code.
if "$L" --print-sbatch "${shape[@]}" --fabric tcp-baseline --cluster byhand --results "$RES" "${mpi_extra[@]}" \
  "${profile_args[@]+"${profile_args[@]}"}" -- all_reduce "${sweep[@]}" >"$T_DIR/byhand.sbatch" 2>"$T_ERR"; then
  codes=""
  for _ in 1 2; do
    timeout 120 sbatch --wait --quiet -o /dev/null "$T_DIR/byhand.sbatch"
    codes+="$? "
    sleep 1
  done
  n=$(find "$RES/byhand" -name '*-all_reduce.json' 2>/dev/null | wc -l)
  if [ "$n" -eq 2 ] && [[ $codes =~ ^(0|2[0-3])\ (0|2[0-3])\ $ ]]; then
    ok "printed batch script: each submission a new result, exit codes are verdicts ($codes)"
  else
    not_ok "printed batch script: each submission a new result, exit codes are verdicts" "$n results, exit codes $codes"
  fi
else
  not_ok "--print-sbatch prints the batch script" "$(head -c 300 "$T_ERR")"
fi

# --no-wait: the job id and the result it will write, then the job does write it.
run "$L" --sbatch --no-wait "${shape[@]}" --cluster nowait --results "$RES" "${mpi_extra[@]}" -- all_reduce "${sweep[@]}"
want=$(sed -n 's/.*judge it with: fabric-report check //p' "$T_OUT")
if [ "$T_RC" -eq 0 ] && [ -n "$want" ]; then
  for _ in $(seq 1 60); do [ -s "$want" ] && break; sleep 1; done
  if [ -s "$want" ]; then ok "--no-wait: returns at once, the job writes the result it named"
  else not_ok "--no-wait: returns at once, the job writes the result it named" "no $want after 60s"; fi
else
  not_ok "--no-wait: returns at once, the job writes the result it named" "exit $T_RC: $(head -c 300 "$T_ERR" "$T_OUT")"
fi

# ---- a job that fails, and a queue that does not move ------------------------------------------
bad=(--env FABRIC_ENV_SCRIPT=/nonexistent/nccl-env-profile.sh --results "$RES" --cluster bad)
run timeout 120 "$L" --sbatch "${shape[@]}" "${bad[@]}" -- all_reduce "${sweep[@]}"
if [ "$T_RC" -eq 10 ] && grep -q 'job [0-9]* ended FAILED (exit 10:0) without a result: fabric-bench rank on .*FABRIC_ENV_SCRIPT /nonexistent/nccl-env-profile.sh is not readable.*; see .*\.out$' "$T_ERR"; then
  ok "sbatch job failing: exit 10 naming the job, its state and the rank's error"
else
  not_ok "sbatch job failing: exit 10 naming the job, its state and the rank's error" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
expect_one_line "sbatch job failing: one line" "$T_ERR"
run timeout 120 "$L" "${shape[@]}" "${bad[@]}" -- all_reduce "${sweep[@]}"
if [ "$T_RC" -eq 10 ] && grep -q 'the run wrote no result (srun exit 10: fabric-bench rank on .*is not readable' "$T_ERR"; then
  ok "srun ranks failing: exit 10 naming the rank's error"
else
  not_ok "srun ranks failing: exit 10 naming the rank's error" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi

# The node busy with another job: both paths give up at --wait and say why.
# (The cluster's teardown cancels it if the test stops early.)
hog=$(sbatch --parsable --exclusive -o /dev/null -t 5 --wrap 'sleep 300')
for _ in $(seq 1 50); do
  scontrol show job -o "$hog" 2>/dev/null | grep -q 'JobState=RUNNING' && break
  sleep 0.2
done
start=$SECONDS
run "$L" --sbatch "${shape[@]}" --wait 3 --results "$RES" -- all_reduce "${sweep[@]}"
took=$((SECONDS - start))
pending_job=$(sed -n 's/.*job \([0-9]*\) still PENDING.*/\1/p' "$T_ERR")
if [ "$T_RC" -eq 8 ] && [ -n "$pending_job" ] && grep -q 'after 3s (Reason=[A-Za-z]*); cancelled it: free nodes in partition fbtest' "$T_ERR" && [ "$took" -le 15 ]; then
  ok "sbatch queue wait: exit 8 after ${took}s naming the job and Slurm's reason"
else
  not_ok "sbatch queue wait: exit 8 within the bound naming the job and Slurm's reason" "exit $T_RC after ${took}s: $(head -c 300 "$T_ERR")"
fi
expect_one_line "sbatch queue wait: one line" "$T_ERR"
if [ -n "$pending_job" ] && ! squeue -h -j "$pending_job" -t PENDING,RUNNING 2>/dev/null | grep -q .; then
  ok "sbatch queue wait: the job it gave up on is cancelled"
else
  not_ok "sbatch queue wait: the job it gave up on is cancelled" "$(squeue 2>&1 | head -c 300)"
fi
start=$SECONDS
run "$L" "${shape[@]}" --wait 3 --results "$RES" -- all_reduce "${sweep[@]}"
took=$((SECONDS - start))
if [ "$T_RC" -eq 8 ] && grep -q 'no allocation of 1 nodes within 3s (Slurm: .*): free nodes in partition fbtest' "$T_ERR" && [ "$took" -le 15 ]; then
  ok "srun queue wait: exit 8 after ${took}s with Slurm's reason"
else
  not_ok "srun queue wait: exit 8 within the bound with Slurm's reason" "exit $T_RC after ${took}s: $(head -c 300 "$T_ERR")"
fi
expect_one_line "srun queue wait: one line" "$T_ERR"
scancel "$hog"
