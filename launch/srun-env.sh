#!/usr/bin/env bash
# One task of launch/slurm.sh --launcher env: srun without an MPI plugin
# starts every task, fabric-coll takes its rank, size and local rank from
# SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID, and NCCL bootstraps the job
# from the first node of the step (MASTER_ADDR), where task 0 runs.
#
#   srun-env.sh CMD...
#
# MASTER_PORT is FB_MASTER_PORT, else 20000 + the job id modulo 10000, so
# that two jobs sharing a node do not take each other's port.
# Exit 10 (docs/exit-codes.md) when it is not a task of srun or the step's
# first node cannot be named; CMD's exit code otherwise.
set -u
nodes=${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-}}
if [ -z "$nodes" ] || [ -z "${SLURM_JOB_ID:-}" ]; then
  echo "srun-env.sh: no SLURM_STEP_NODELIST or SLURM_JOB_ID: run it as a task of srun (launch/slurm.sh --launcher env)" >&2
  exit 10
fi
first=$(timeout -k 5 30 scontrol show hostnames "$nodes" 2>/dev/null | head -n 1)
if [ -z "$first" ]; then
  echo "srun-env.sh: scontrol show hostnames $nodes gave no node: check scontrol on $(hostname)" >&2
  exit 10
fi
export MASTER_ADDR=$first
export MASTER_PORT=${FB_MASTER_PORT:-$((20000 + SLURM_JOB_ID % 10000))}
exec "$@"
