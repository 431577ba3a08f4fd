#!/usr/bin/env bash
# launch/slurm.sh --launcher env: plain srun (--mpi=none), each task one
# process of the job from Slurm's task variables, MASTER_ADDR the step's
# first node (launch/srun-env.sh), NCCL (the GPU stand-in) bootstrapping
# the job; on the one-node Slurm of tests/launch/slurm-testcluster.sh.
# shellcheck disable=SC2016 # the patterns match a literal $ in generated scripts
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

L=$FB_ROOT/launch/slurm.sh
CLUSTER=$FB_ROOT/tests/launch/slurm-testcluster.sh
RES=$T_DIR/results

# ---- arguments and the dry run -------------------------------------------------------
expect_exit "--launcher env with --sbatch: exit 2" 2 "$L" --launcher env --sbatch --dry-run all_reduce
expect_grep "--launcher env with --sbatch says it runs through srun" 'runs the tasks with srun' "$T_ERR"
expect_exit "--master-port without --launcher env: exit 2" 2 "$L" --master-port 29500 --dry-run all_reduce
expect_exit "--master-port out of range: exit 2" 2 "$L" --launcher env --master-port 70000 --dry-run all_reduce
expect_exit "env dry run succeeds" 0 "$L" --launcher env --dry-run -N 2 --ranks-per-node 8 --fabric sriov-rdma \
  --cluster dry --results "$RES" -- all_reduce -b 1K -e 16G -f 2
expect_grep "env dry run: plain srun, 16 tasks, 8 per node" 'srun --mpi=none --export=ALL --kill-on-bad-exit=1 --ntasks=16 .*--nodes=2 --ntasks-per-node=8' "$T_OUT"
expect_grep "env dry run: each task through srun-env.sh, fabric-coll --launcher env" 'launch/srun-env.sh .*launch/rank.sh .*fabric-coll all_reduce -b 1K -e 16G -f 2 --cluster dry --launcher env -J "\$result"' "$T_OUT"
if grep -q 'pmix\|mpirun' "$T_OUT"; then not_ok "env dry run: no PMIx, no mpirun" "$(grep -m1 'pmix\|mpirun' "$T_OUT")"; else ok "env dry run: no PMIx, no mpirun"; fi
if grep -Eq 'FB_JOB_SECRET=[0-9a-f]' "$T_OUT"; then not_ok "env dry run: no secret in the script" "printed"; else ok "env dry run: no secret in the script"; fi

# srun-env.sh: MASTER_ADDR is the step's first node, the port from the job.
mkdir -p "$T_DIR/bin"
printf '#!/bin/sh\n[ "$1 $2" = "show hostnames" ] && printf "%%s\\n" gpu-a07 gpu-a08\n' >"$T_DIR/bin/scontrol"
chmod +x "$T_DIR/bin/scontrol"
run env PATH="$T_DIR/bin:$PATH" SLURM_STEP_NODELIST='gpu-a[07-08]' SLURM_JOB_ID=123456 \
  "$FB_ROOT/launch/srun-env.sh" sh -c 'echo "$MASTER_ADDR:$MASTER_PORT"'
if [ "$T_RC" -eq 0 ] && [ "$(cat "$T_OUT")" = "gpu-a07:23456" ]; then ok "srun-env.sh: the first node, 20000 + job id mod 10000"
else not_ok "srun-env.sh: the first node and the job's port" "exit $T_RC: $(cat "$T_OUT" "$T_ERR")"; fi
run env -u SLURM_STEP_NODELIST -u SLURM_JOB_NODELIST "$FB_ROOT/launch/srun-env.sh" true
if [ "$T_RC" -eq 10 ] && grep -q 'run it as a task of srun' "$T_ERR"; then ok "srun-env.sh outside srun: exit 10, named"
else not_ok "srun-env.sh outside srun: exit 10" "exit $T_RC: $(cat "$T_ERR")"; fi

# ---- a real one-node Slurm, the GPU stand-in ---------------------------------------------
if ! is_root; then skip "the env launch on a one-node Slurm" "needs root (slurmd and munged run as root)"; exit 0; fi
for tool in munged slurmctld slurmd srun; do
  command -v "$tool" >/dev/null || { skip "the env launch on a one-node Slurm" "$tool not installed"; exit 0; }
done
standin_built "the env launch on a one-node Slurm" || exit 0
if ! "$CLUSTER" up 4 >"$T_DIR/cluster.env" 2>"$T_ERR"; then
  not_ok "one-node Slurm up" "$(head -c 400 "$T_ERR")"
  exit 1
fi
dir=$(sed -n 's/^dir=//p' "$T_DIR/cluster.env")
on_exit "'$CLUSTER' down '$dir' >/dev/null 2>&1"
export SLURM_CONF=$dir/slurm.conf FB_BIN
ok "one-node Slurm up"

run timeout 300 "$FB_ROOT/scripts/gpu-standin.sh" "$L" --launcher env -N 1 --ranks-per-node 2 --bind none \
  --time 5 --wait 60 --results "$RES" --cluster fbslurm all_reduce -b 1K -e 64K -f 4 -n 3 -c 1 -T 30
result=""
for f in "$RES"/fbslurm/*-all_reduce.json; do [ -e "$f" ] && result=$f; done
if [ -n "$result" ]; then ok "env launch through srun: a result"; else
  not_ok "env launch through srun: a result" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
  exit 1
fi
case $T_RC in 0 | 2 | 20 | 21 | 22 | 23) ok "env launch through srun: ends with fabric-report's code ($T_RC)" ;;
  *) not_ok "env launch through srun: fabric-report's code" "exit $T_RC: $(head -c 300 "$T_ERR")" ;; esac
jq_is "env launch through srun: complete, 2 ranks, NCCL (the stand-in), no wrong element" "$result" \
  '[.complete, .topology.ranks, .backend, ([.rows[] | .out_of_place.wrong, .in_place.wrong] | add)]' '[true,2,"nccl",0]'
expect_grep "env launch through srun: the log has the table" '# Avg bus bandwidth' "${result%.json}.log"
if grep -q 'PMIX\|pmix' "${result%.json}.log"; then not_ok "env launch through srun: no PMIx" "$(grep -m1 -i pmix "${result%.json}.log")"; else ok "env launch through srun: no PMIx"; fi
