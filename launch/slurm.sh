#!/usr/bin/env bash
# Runs a fabric-bench sweep on a Slurm cluster, then prints fabric-report's
# verdict: the same environment profiles, results and verdict as
# launch/baremetal.sh, with Slurm placing the ranks.
#
#   launch/slurm.sh [options] [--] COLLECTIVE [fabric-coll options]
#       srun --mpi=pmix, one task per rank, MPI wired up by Slurm's PMIx.
#       Inside an allocation (salloc, a batch job) it is a step of it;
#       elsewhere srun allocates the nodes.
#   launch/slurm.sh --launcher env [options] [--] COLLECTIVE [fabric-coll options]
#       plain srun (--mpi=none), no MPI at all: each task is one process of
#       the job (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), NCCL bootstraps
#       it from the step's first node (launch/srun-env.sh); the watchdog's
#       secret is new for each run.
#   launch/slurm.sh --sbatch [options] [--] COLLECTIVE [fabric-coll options]
#       submits a batch job whose script runs mpirun inside the allocation,
#       waits for it, and judges its result here.
#   launch/slurm.sh --print-sbatch [options] [--] COLLECTIVE ...
#       prints that batch script instead (submit it yourself: each submission
#       writes a new result; its exit code is the verdict).
#
#   -N, --nodes N         nodes (default: the allocation's, else 2)
#   --ranks-per-node N    ranks per node (default: the allocation's
#                         --ntasks-per-node or GPUs, else the partition's GPUs
#                         per node, else 1)
#   -p, --partition NAME  partition (default: the cluster's default)
#   -A, --account NAME    account to charge
#   -t, --time MIN        Slurm time limit of the job, minutes (default 30)
#   --wait S              bound on waiting for the allocation (default 600)
#   --shared              share nodes with other jobs (default: --exclusive)
#   --srun-arg ARG        extra srun argument (repeatable)
#   --sbatch-arg ARG      extra sbatch argument (repeatable)
#   --bind numa|core|none CPU binding of each rank (default numa)
#   --fabric NAME         environment of manifests/components/NAME/fabric.env
#                         (default $FABRIC_NAME, else none)
#   --env KEY=VALUE       more environment (repeatable; wins over the fabric)
#   --cluster NAME        results/<NAME>/ (default $FABRIC_CLUSTER, else
#                         Slurm's ClusterName)
#   --results DIR         results directory, on a file system the nodes share
#                         (default results)
#   --iface NAME          interface or subnet for MPI's own traffic (default:
#                         MPI's choice)
#   --mpirun-arg ARG      extra mpirun argument, batch job only (repeatable)
#   --launcher mpi|env    mpi (default): srun --mpi=pmix or mpirun; env: plain
#                         srun, NCCL alone (srun only, not --sbatch)
#   --master-port N       NCCL's bootstrap port under --launcher env (default
#                         20000 + the job id modulo 10000)
#   --profile NAME        reference profile for the verdict
#   --profiles DIR        more reference profiles (fabric-report check --profiles)
#   --no-wait             (--sbatch) submit, print the job and the result it
#                         will write, and return
#   --dry-run             print every command and generated script, ask Slurm
#                         nothing, run nothing
#
# Option values and the collective's arguments may not hold control
# characters, -p and -A are Slurm names (letters, digits and . _ , + @ -);
# --cluster is a label (letters, digits, '.', '_', '-'; not '.' or '..'),
# as is FABRIC_CLUSTER; Slurm's ClusterName (or the host name) as the
# default label has other characters made '_' (docs/clusters.md).
#
# Exit: fabric-report's verdict (0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL,
# 23 INCOMPLETE; its 2 or 10 for an unknown --profile or a malformed result),
# or a launch error (docs/exit-codes.md): 2 a bad option, value or
# partition, 5 no Slurm commands, 6 the controller does not answer or refuses
# the job, 8 no allocation (or no end) within the bound, 9 the job failed
# (node failure, out of memory, cancelled, no result with exit 0) or a
# temporary file could not be made, 10 a malformed fabric.env, a batch script
# that cannot be written, or a job that completed without its result here. A
# run that wrote no result exits with srun's code when that is not 0, a
# batch job with its exit code when that is 1-125 (a rank's: fabric-coll's
# 1-9, rank.sh's 10); with no fabric-report here, the run's code.
set -uo pipefail
# The FB_* variables configure lib.sh's script generators.
# shellcheck disable=SC2034
FB_PROG=slurm
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

mode=srun nodes="" slots="" partition="" account="" time_min=30 wait_s=600 exclusive=1
no_wait=0 srun_extra=() sbatch_extra=() master_port=""
FB_OPT_FABRIC=${FABRIC_NAME:-none}
# Slurm nodes name their interfaces every way: MPI picks unless told.
FB_OPT_IFACE=""
# Every Slurm command is bounded: a controller that accepts and never
# answers, or a missing SLURM_CONF (Slurm retries it for a minute), must not
# hang the launcher.
SLURM_CMD_TIMEOUT=30
POLL_S=2

# shellcheck disable=SC2317 # called by fb_parse_options
slurm_option() {
  FB_TAKEN=2
  case $1 in
    --sbatch) mode=sbatch FB_TAKEN=1 ;;
    --print-sbatch) mode=print FB_TAKEN=1 ;;
    -N | --nodes) fb_need_arg "$@"; nodes=$2 ;;
    --ranks-per-node) fb_need_arg "$@"; slots=$2 ;;
    -p | --partition) fb_need_arg "$@"; partition=$2 ;;
    -A | --account) fb_need_arg "$@"; account=$2 ;;
    -t | --time) fb_need_arg "$@"; time_min=$2 ;;
    --wait) fb_need_arg "$@"; wait_s=$2 ;;
    --shared) exclusive=0 FB_TAKEN=1 ;;
    --srun-arg) fb_need_arg "$@"; srun_extra+=("$2") ;;
    --sbatch-arg) fb_need_arg "$@"; sbatch_extra+=("$2") ;;
    --no-wait) no_wait=1 FB_TAKEN=1 ;;
    --master-port) fb_need_arg "$@"; master_port=$2 ;;
    *) FB_TAKEN=0 ;;
  esac
}
fb_parse_options slurm_option "$@"
set -- "${FB_REST[@]+"${FB_REST[@]}"}"

fb_check_common "slurm.sh -N 2" "$@"
coll=$FB_COLLECTIVE
[ -z "$nodes" ] || fb_check_uint --nodes "$nodes"
[ -z "$slots" ] || fb_check_uint --ranks-per-node "$slots"
fb_check_uint --time "$time_min"
fb_check_uint --wait "$wait_s"
# Both go into #SBATCH lines, which sbatch splits at white space and quotes.
slurm_check_name() {
  [[ $2 =~ ^[A-Za-z0-9._,+@-]+$ ]] ||
    fb_die "$FB_EXIT_USAGE" "$1 wants a Slurm name (letters, digits and . _ , + @ -), got $(fb_shown "$2")"
}
[ -z "$partition" ] || slurm_check_name --partition "$partition"
[ -z "$account" ] || slurm_check_name --account "$account"
[ "$no_wait" = 0 ] || [ "$mode" = sbatch ] || fb_die "$FB_EXIT_USAGE" "--no-wait goes with --sbatch"
if [ "$FB_OPT_LAUNCHER" = env ]; then
  [ "$mode" = srun ] ||
    fb_die "$FB_EXIT_USAGE" "--launcher env runs the tasks with srun (no batch script): leave out --sbatch/--print-sbatch, or run launch/slurm.sh --launcher env inside salloc"
  for a in "$@"; do
    case $a in --launcher | --launcher=*)
      fb_die "$FB_EXIT_USAGE" "$(fb_shown "$a") is the launcher's to set under --launcher env" ;;
    esac
  done
  [ -z "$master_port" ] || fb_check_port --master-port "$master_port"
elif [ -n "$master_port" ]; then
  fb_die "$FB_EXIT_USAGE" "--master-port goes with --launcher env"
fi
[ ${#FB_OPT_MPIRUN[@]} -eq 0 ] || [ "$mode" != srun ] ||
  fb_die "$FB_EXIT_USAGE" "--mpirun-arg is for the batch job's mpirun (--sbatch); srun takes --srun-arg"

# In an allocation, srun runs a step of it: its nodes, partition and limits.
in_allocation=0
[ "$mode" = srun ] && [ -n "${SLURM_JOB_ID:-}" ] && in_allocation=1

fb_mktemp FB_LAUNCH_ERR
first_err_line() { tr '\n' ' ' <"$FB_LAUNCH_ERR" | cut -c1-200; }

# slurm_q CMD...: a Slurm query under the bound; its stderr in FB_LAUNCH_ERR.
slurm_q() { timeout -k 5 "$SLURM_CMD_TIMEOUT" "$@" 2>"$FB_LAUNCH_ERR"; }

# ---- what the cluster offers (bounded), checked before anything is queued ----------
part_gpus=0
slurm_preflight() {
  local tool parts rc name avail counts gres total found="" default="" names=""
  for tool in srun sbatch sinfo scontrol scancel; do
    fb_need "$tool" "install Slurm's client commands (Debian: slurm-client) or run this on a login node of the cluster"
  done
  parts=$(slurm_q sinfo -h -s -o '%P|%a|%F|%G')
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fb_die "$FB_EXIT_LAUNCH" "the Slurm controller did not answer sinfo within ${SLURM_CMD_TIMEOUT}s: check slurmctld (scontrol ping) and the network to it"
  elif [ "$rc" -ne 0 ]; then
    fb_die "$FB_EXIT_LAUNCH" "the Slurm controller does not answer (sinfo: $(first_err_line)): check slurmctld (scontrol ping), munged on this host and SLURM_CONF"
  fi
  [ "$in_allocation" = 0 ] || return 0
  while IFS='|' read -r name avail counts gres; do
    [ -n "$name" ] || continue
    case $name in *'*') name=${name%'*'}; default=$name ;; esac
    names+="$name "
    if [ "$name" = "${partition:-$default}" ] && [ -z "$found" ]; then
      found=$name
      total=${counts##*/}
      [ "$avail" = up ] ||
        fb_die "$FB_EXIT_LAUNCH" "partition $name is $avail, not up (sinfo): choose another partition (-p) or have it resumed (scontrol update PartitionName=$name State=UP)"
      [ "${nodes:-2}" -le "$total" ] ||
        fb_die "$FB_EXIT_USAGE" "partition $name has $total nodes, --nodes asks for ${nodes:-2}: ask for fewer or choose another partition"
      # GRES such as gpu:h100:8(S:0-1): GPUs per node, one rank each by default.
      [[ $gres =~ (^|,)gpu(:[A-Za-z0-9_.-]+)?:([0-9]+) ]] && part_gpus=${BASH_REMATCH[3]}
    fi
  done <<<"$parts"
  names=${names% }
  if [ -z "$found" ] && [ -n "$partition" ]; then
    fb_die "$FB_EXIT_USAGE" "partition '$partition' does not exist on this cluster: use one of ${names:-none} (sinfo -s), or leave out -p for the default"
  elif [ -z "$found" ]; then
    fb_die "$FB_EXIT_USAGE" "this cluster has no default partition: give -p, one of ${names:-none} (sinfo -s)"
  fi
  partition=$found
}

if [ "$FB_DRY_RUN" != 1 ]; then
  slurm_preflight
fi

# ---- shape of the job ----------------------------------------------------------------
if [ -z "$nodes" ]; then
  nodes=2
  [ "$in_allocation" = 1 ] && fb_is_uint "${SLURM_JOB_NUM_NODES:-}" && nodes=$SLURM_JOB_NUM_NODES
fi
if [ -z "$slots" ]; then
  slots=1
  if [ "$in_allocation" = 1 ] && fb_is_uint "${SLURM_NTASKS_PER_NODE:-}"; then slots=$SLURM_NTASKS_PER_NODE
  elif [ "$in_allocation" = 1 ] && fb_is_uint "${SLURM_GPUS_ON_NODE:-}" && [ "$SLURM_GPUS_ON_NODE" -gt 0 ]; then slots=$SLURM_GPUS_ON_NODE
  elif [ "$part_gpus" -gt 0 ]; then slots=$part_gpus
  fi
fi
fabric=$FB_OPT_FABRIC bind=$FB_OPT_BIND
FB_SLOTS=$slots FB_BIND=$bind FB_IFACE=$FB_OPT_IFACE
fb_set_env "$fabric"

name=""
if [ -z "$FB_OPT_CLUSTER_FROM" ] && [ "$FB_DRY_RUN" != 1 ]; then
  name=$(slurm_q scontrol show config | awk '$1 == "ClusterName" { print $3; exit }')
fi
cluster=$(fb_cluster "${name:-$(hostname)}" localhost)
fb_local_run "$cluster" "$@"
[ "$FB_OPT_LAUNCHER" = mpi ] || FB_COLL_ARGS+=(--launcher env)
stamp=$FB_STAMP dir=$FB_DIR
# The allocation both paths ask for.
alloc=(--job-name="fabric-bench-$coll" --nodes="$nodes" --ntasks-per-node="$slots" --time="$time_min")
[ -z "$partition" ] || alloc+=(--partition="$partition")
[ -z "$account" ] || alloc+=(--account="$account")
[ "$exclusive" = 0 ] || alloc+=(--exclusive)
# Nodes with GPUs give a job none unless it asks: one per rank.
[ "$part_gpus" -eq 0 ] || alloc+=(--gpus-per-node="$slots")

# A job the partition can never hold (more tasks than CPUs, a time limit above
# its maximum, an unknown account) would otherwise wait in the queue until
# --wait: Slurm's own --test-only says so at once.
slurm_can_place() {
  local check
  if [ "$mode" = srun ]; then
    check=(srun --test-only "${alloc[@]}" "${srun_extra[@]+"${srun_extra[@]}"}" true)
  else
    check=(sbatch --test-only "${alloc[@]}" "${sbatch_extra[@]+"${sbatch_extra[@]}"}" --wrap true)
  fi
  slurm_q "${check[@]}" >/dev/null && return 0
  fb_die "$FB_EXIT_LAUNCH" "Slurm cannot place $nodes nodes x $slots tasks in partition $partition ($(first_err_line)): ask for fewer ranks per node (the nodes' CPUs or GPUs) or nodes, a shorter --time, or another partition"
}
[ "$FB_DRY_RUN" = 1 ] || [ "$in_allocation" = 1 ] || slurm_can_place

# Open MPI's transports for its own traffic, as the launchers' mpirun has them.
ompi_env_script() {
  echo "export OMPI_MCA_btl=self,vader,tcp"
  [ -z "$FB_IFACE" ] || echo "export OMPI_MCA_btl_tcp_if_include=$(fb_quote "$FB_IFACE")"
}

# ---- the batch script: mpirun inside the allocation, the verdict as its exit code ---
batch_script() {
  local a report
  echo "#!/usr/bin/env bash"
  for a in "${alloc[@]}"; do echo "#SBATCH $a"; done
  cat <<EOF
# fabric-bench $coll: $nodes nodes x $slots ranks, mpirun inside the allocation.
# Every submission writes a new result; the exit code is fabric-report's verdict.
set -u
stamp=\${FABRIC_BENCH_STAMP:-\$(date -u +%Y%m%dT%H%M%SZ)}
result=$(fb_quote "$dir")/\$stamp-$coll.json log=$(fb_quote "$dir")/\$stamp-$coll.log
mkdir -p $(fb_quote "$dir")
EOF
  fb_env_script
  fb_mpirun_script "$nodes" ""
  report=$(fb_report_bin) || report=""
  cat <<EOF
if [ ! -s "\$result" ]; then
  echo "fabric-bench: the run wrote no result (mpirun exit \$rc): see \$log" >&2
  exit \$((rc ? rc : $FB_EXIT_RUNTIME))
fi
[ "\$rc" -eq 0 ] || echo "fabric-bench: mpirun exited \$rc; judging what was measured"
report=$(fb_quote "$report")
[ -x "\$report" ] || exit "\$rc"
"\$report" check "\$result"${FB_OPT_REPORT[@]+ $(fb_quote "${FB_OPT_REPORT[@]}")}
EOF
}

if [ "$mode" = print ]; then
  batch_script
  exit 0
fi

# ---- srun --mpi=pmix: the ranks are Slurm's tasks ----------------------------------
srun_script() {
  # --ntasks overrides an allocation's SLURM_NTASKS, which srun would take.
  # Under the env launch no MPI plugin runs: Slurm's task variables are all.
  local mpi=--mpi=pmix task=""
  if [ "$FB_OPT_LAUNCHER" = env ]; then
    mpi=--mpi=none task="$(fb_quote "$FB_LAUNCH_ROOT/launch/srun-env.sh") "
  fi
  local a=("$mpi" --export=ALL --kill-on-bad-exit=1 --ntasks=$((nodes * slots)))
  case $bind in numa) a+=(--cpu-bind=ldoms) ;; core) a+=(--cpu-bind=cores) ;; none) a+=(--cpu-bind=none) ;; esac
  if [ "$in_allocation" = 1 ]; then
    a+=(--nodes="$nodes" --ntasks-per-node="$slots")
  else
    # --immediate bounds the wait in the queue.
    a+=("${alloc[@]}" --immediate="$wait_s")
  fi
  a+=("${srun_extra[@]+"${srun_extra[@]}"}")
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench run: $nodes nodes x $slots ranks through srun $mpi.
set -u
$(fb_paths_script)
mkdir -p $(fb_quote "$dir")
EOF
  ompi_env_script
  fb_env_script
  cat <<EOF
srun $(fb_quote "${a[@]}") \\
  $task$(fb_rank_command) \\
  </dev/null 2>&1 | tee "\$log"
exit "\${PIPESTATUS[0]}"
EOF
}

# first_cause FILE: the first one-line error in a run's output (a rank's,
# fabric-coll's or Slurm's), for the launcher's own one line.
first_cause() {
  grep -m 1 -E '^(fabric-[a-z]+( rank on [^:]*)?: |slurmstepd: error: |srun: error: )' "$1" 2>/dev/null | cut -c1-200
}

# judge RC: fabric-report's verdict on FB_RESULT, as the other launchers give it.
judge() {
  [ "$1" -ne 0 ] && fb_info "the run exited $1; judging what was measured"
  fb_info "result: $FB_RESULT"
  fb_verdict "$FB_RESULT" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  local verdict=$?
  [ "$verdict" -eq 127 ] && exit "$1"
  exit "$verdict"
}

if [ "$mode" = srun ]; then
  how="srun --mpi=pmix"
  [ "$FB_OPT_LAUNCHER" = mpi ] || how="srun --mpi=none, the env launch"
  fb_info "$nodes nodes x $slots ranks ($how$([ "$in_allocation" = 1 ] && echo ", step of job $SLURM_JOB_ID")), fabric $fabric, results $FB_RESULT"
  srun_script | fb_show_script "run (here)"
  fb_make_workdir
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ bash $(fb_quote "$FB_WORKDIR/run.sh")"
    exit 0
  fi
  srun_script >"$FB_WORKDIR/run.sh" || fb_die "$FB_EXIT_RUNTIME" "cannot write $FB_WORKDIR/run.sh: check TMPDIR"
  if [ "$FB_OPT_LAUNCHER" = env ]; then
    # The watchdog's secret: new for this run, to every task through srun's
    # --export=ALL, never on a command line or in the script.
    fb_new_secret "$FB_WORKDIR/secret"
    FB_JOB_SECRET=$(cat "$FB_WORKDIR/secret") FB_MASTER_PORT=$master_port bash "$FB_WORKDIR/run.sh"
  else
    bash "$FB_WORKDIR/run.sh"
  fi
  rc=$?
  if [ ! -s "$FB_RESULT" ]; then
    why=$(sed -n 's/.*Unable to allocate resources: //p' "$FB_LOG" 2>/dev/null | head -n 1)
    if [ -n "$why" ] && grep -q 'queued and waiting for resources' "$FB_LOG"; then
      fb_die "$FB_EXIT_TIMEOUT" "no allocation of $nodes nodes within ${wait_s}s (Slurm: $why): free nodes in partition $partition (squeue -p $partition), ask for fewer, or raise --wait"
    elif [ -n "$why" ]; then
      fb_die "$FB_EXIT_LAUNCH" "Slurm refused the allocation ($why): check -N, --ranks-per-node and the partition's limits (scontrol show partition $partition)"
    elif grep -q 'DUE TO TIME LIMIT' "$FB_LOG" 2>/dev/null; then
      fb_die "$FB_EXIT_TIMEOUT" "the run hit its Slurm time limit (--time $time_min min) before writing a result: raise --time or shorten the sweep (-e)"
    fi
    cause=$(first_cause "$FB_LOG")
    fb_die "$(( rc ? rc : FB_EXIT_RUNTIME ))" "the run wrote no result (srun exit $rc${cause:+: $cause}): see $FB_LOG"
  fi
  judge "$rc"
fi

# ---- sbatch: submit, wait (bounded), judge ---------------------------------------------
script=$dir/$stamp-$coll.sbatch
out=$dir/$stamp-$coll.out
submit=(sbatch --parsable --export="ALL,FABRIC_BENCH_STAMP=$stamp" --output="$out"
  "${sbatch_extra[@]+"${sbatch_extra[@]}"}" "$script")
fb_info "$nodes nodes x $slots ranks (sbatch, mpirun in the allocation), fabric $fabric, results $FB_RESULT"
batch_script | fb_show_script "batch script ($script)"
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ $(fb_quote "${submit[@]}")"
  exit 0
fi
if ! { mkdir -p "$dir" && batch_script >"$script"; }; then
  fb_die "$FB_EXIT_INPUT" "cannot write $script: choose another --results (shared with the nodes)"
fi
job=$(slurm_q "${submit[@]}")
case $? in
  0) ;;
  124 | 137)
    fb_die "$FB_EXIT_TIMEOUT" "sbatch did not answer within ${SLURM_CMD_TIMEOUT}s: check slurmctld (scontrol ping); the job may be queued all the same (squeue -n fabric-bench-$coll)" ;;
  *)
    fb_die "$FB_EXIT_LAUNCH" "sbatch refused the job ($(first_err_line)): check the options the message names (--sbatch-arg, -p, -A, -t)" ;;
esac
job=${job%%;*}
fb_is_uint "$job" || fb_die "$FB_EXIT_RUNTIME" "sbatch gave no job id ('$job'): see $script"
if [ "$no_wait" = 1 ]; then
  fb_info "job $job submitted; it writes $FB_RESULT (output $out); judge it with: fabric-report check $FB_RESULT"
  exit 0
fi
fb_info "job $job submitted; waiting at most ${wait_s}s for it to start"

# job_field RECORD NAME: one KEY=VALUE field of `scontrol show job -o`.
job_field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n 1; }
cancel() { timeout -k 5 "$SLURM_CMD_TIMEOUT" scancel "$job" >/dev/null 2>&1; }

# Queued: at most --wait. Running: at most the time limit and a grace for
# Slurm's own kill. A controller that stops answering counts against both.
deadline=$((SECONDS + wait_s)) started=0 state="" reason="" exitcode="" lost=""
while :; do
  lost=""
  if rec=$(slurm_q scontrol show job -o "$job"); then
    state=$(job_field "$rec" JobState) reason=$(job_field "$rec" Reason) exitcode=$(job_field "$rec" ExitCode)
  elif grep -q 'Invalid job id' "$FB_LAUNCH_ERR"; then
    state=GONE # purged from the controller's memory (MinJobAge): it ended
  else
    lost=$(first_err_line)
    lost=${lost:-no answer within ${SLURM_CMD_TIMEOUT}s}
  fi
  case $state:$reason in
    # Reasons that only an administrator's change can clear.
    PENDING:BadConstraints | PENDING:PartitionConfig | PENDING:PartitionNodeLimit | PENDING:PartitionTimeLimit | \
      PENDING:InvalidAccount | PENDING:InvalidQOS | PENDING:AccountNotAllowed | PENDING:PartitionDown | PENDING:Partition_Down)
      cancel
      fb_die "$FB_EXIT_LAUNCH" "job $job can never start here (Reason=$reason); cancelled it: scontrol show partition $partition shows the limits it exceeds" ;;
  esac
  case $state in
    PENDING | CONFIGURING | REQUEUED | RESIZING | SUSPENDED) ;;
    RUNNING | COMPLETING | STAGE_OUT | SIGNALING)
      if [ "$started" = 0 ]; then
        started=1 deadline=$((SECONDS + time_min * 60 + 120))
        fb_info "job $job running; at most $time_min min (its time limit)"
      fi ;;
    "") ;;
    *) break ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ] && [ -n "$lost" ]; then
    fb_die "$FB_EXIT_TIMEOUT" "the Slurm controller stopped answering about job $job (scontrol: $lost): check slurmctld (scontrol ping); the job may still run (squeue -j $job), its result would be $FB_RESULT"
  elif [ "$SECONDS" -ge "$deadline" ]; then
    cancel
    if [ "$started" = 0 ]; then
      fb_die "$FB_EXIT_TIMEOUT" "job $job still ${state:-unknown to the controller} after ${wait_s}s (Reason=${reason:-?}); cancelled it: free nodes in partition $partition (squeue -p $partition), ask for fewer, or raise --wait"
    fi
    fb_die "$FB_EXIT_TIMEOUT" "job $job did not end within its time limit ($time_min min) and a 120s grace (state ${state:-unknown}); cancelled it: see $out"
  fi
  sleep "$POLL_S"
done

code=${exitcode%%:*}
fb_info "job $job ended $state (exit ${exitcode:-?})"
if [ ! -s "$FB_RESULT" ]; then
  case $state in
    TIMEOUT | DEADLINE)
      fb_die "$FB_EXIT_TIMEOUT" "job $job hit its time limit ($time_min min) before writing a result: raise --time or shorten the sweep (-e); see $out" ;;
    NODE_FAIL | BOOT_FAIL)
      fb_die "$FB_EXIT_RUNTIME" "job $job ended $state: a node failed (scontrol show node; sinfo -R); see $out" ;;
    CANCELLED)
      fb_die "$FB_EXIT_RUNTIME" "job $job was cancelled before writing a result (scancel, or preempted): see $out" ;;
    OUT_OF_MEMORY)
      fb_die "$FB_EXIT_RUNTIME" "job $job ran out of memory: ask for more (--sbatch-arg=--mem=0 for the whole node) or lower -e; see $out" ;;
  esac
  if [ "$state" = COMPLETED ]; then
    fb_die "$FB_EXIT_INPUT" "job $job completed but $FB_RESULT is not here: --results must be on a file system the nodes share; see $out"
  fi
  fb_is_uint "$code" && [ "$code" -gt 0 ] && [ "$code" -lt 126 ] || code=$FB_EXIT_RUNTIME
  cause=$(first_cause "$out")
  fb_die "$code" "job $job ended ${state:-GONE} (exit ${exitcode:-?}) without a result${cause:+: $cause}; see $out"
fi
# The job's exit code is the verdict it gave itself; what mpirun returned is
# in its output. Judge the result here, as the other launchers do.
run_rc=$(sed -n 's/^fabric-bench: mpirun exited \([0-9]*\);.*/\1/p' "$out" 2>/dev/null | head -n 1)
judge "${run_rc:-0}"
