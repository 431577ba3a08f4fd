#!/usr/bin/env bash
# Runs a fabric-bench sweep across bare-metal nodes with mpirun over ssh, then
# prints fabric-report's verdict. Also the launcher inside an MPIJob.
#
#   launch/baremetal.sh [options] [--] COLLECTIVE [fabric-coll options]
#
#   --hostfile FILE       one host per line ("host slots=N" accepted)
#   --hosts H1,H2,...     the hosts, instead of a hostfile
#   --ranks-per-node N    ranks per host (default: the hostfile's slots=, else
#                         the GPUs on this host, else 1)
#   --bind numa|core|none CPU binding of each rank (default numa)
#   --fabric NAME         environment of manifests/components/NAME/fabric.env
#                         (default $FABRIC_NAME, else none)
#   --env KEY=VALUE       more environment (repeatable; wins over the fabric)
#   --cluster NAME        results/<NAME>/ (default $FABRIC_CLUSTER, else host name)
#   --results DIR         results directory (default results)
#   --ssh-port N          sshd port on the hosts (default 22)
#   --ssh-key FILE        identity file (default: ssh's own)
#   --rsh CMD             remote shell instead of ssh (called as CMD HOST COMMAND)
#   --ssh-wait S          bound on waiting for ssh on every host (default 60)
#   --iface NAME          interface or subnet for MPI's own traffic (default eth0)
#   --mpirun-arg ARG      extra mpirun argument (repeatable)
#   --profile NAME        reference profile for the verdict (default: the one
#                         fabric-report picks from GPU model, nodes and network)
#   --profiles DIR        more reference profiles (fabric-report check --profiles)
#   --print-result        print the result JSON at the end (for pods whose
#                         files vanish with them: kubectl logs keeps it)
#   --dry-run             print every command and generated script, run nothing
#
# Option values and the collective's arguments may not hold control
# characters; --cluster is a label (letters, digits, '.', '_', '-'; not '.'
# or '..'), as is FABRIC_CLUSTER; the host name as the default label has
# other characters made '_' (docs/clusters.md).
#
# Exit: fabric-report's verdict (0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL,
# 23 INCOMPLETE; its 2 or 10 for an unknown --profile or a malformed result),
# or a launch error (docs/exit-codes.md): 2 a bad option or value, 5 no
# mpirun or fabric-coll here, 6 a host does not resolve or answer ssh, 8 the
# name service did not answer within --ssh-wait, 9 the run wrote no result
# (mpirun exit 0) or a temporary file could not be made, 10 a missing,
# unreadable or malformed hostfile or fabric.env. A run that wrote no result
# exits with mpirun's code when that is not 0 (a rank's: fabric-coll's 1-9,
# 130 or 143, rank.sh's 10; or mpirun's own); with no fabric-report here,
# mpirun's code.
set -uo pipefail
# The FB_* variables configure lib.sh's script generators.
# shellcheck disable=SC2034
FB_PROG=baremetal
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

hostfile="" hosts_csv="" slots="" ssh_port=22 ssh_key="" rsh="" ssh_wait=60 print_result=0
FB_OPT_FABRIC=${FABRIC_NAME:-none}

# shellcheck disable=SC2317 # called by fb_parse_options
baremetal_option() {
  FB_TAKEN=2
  case $1 in
    --hostfile) fb_need_arg "$@"; hostfile=$2 ;;
    --hosts) fb_need_arg "$@"; hosts_csv=$2 ;;
    --ranks-per-node) fb_need_arg "$@"; slots=$2 ;;
    --ssh-port) fb_need_arg "$@"; ssh_port=$2 ;;
    --ssh-key) fb_need_arg "$@"; ssh_key=$2 ;;
    --rsh) fb_need_arg "$@"; rsh=$2 ;;
    --ssh-wait) fb_need_arg "$@"; ssh_wait=$2 ;;
    --print-result) print_result=1 FB_TAKEN=1 ;;
    *) FB_TAKEN=0 ;;
  esac
}
fb_parse_options baremetal_option "$@"
set -- "${FB_REST[@]+"${FB_REST[@]}"}"

fb_check_common "baremetal.sh --hostfile H" "$@"
[ "$FB_OPT_LAUNCHER" = mpi ] ||
  fb_die "$FB_EXIT_USAGE" "--launcher env is for jobs that start every process themselves (launch/kubectl.sh, launch/slurm.sh, torchrun); baremetal.sh starts the ranks with mpirun over ssh"
fb_check_uint --ssh-wait "$ssh_wait"
fb_check_port --ssh-port "$ssh_port"
[ -z "$ssh_key" ] || fb_check_word --ssh-key "$ssh_key"
[ -z "$rsh" ] || fb_check_word --rsh "$rsh"

# Hosts.
FB_HOSTS=()
if [ -n "$hostfile" ] && [ -n "$hosts_csv" ]; then
  fb_die "$FB_EXIT_USAGE" "give --hostfile or --hosts, not both"
elif [ -n "$hostfile" ]; then
  lines=$(fb_read_hostfile "$hostfile") || exit $?
  # Ranks per node from the hostfile's slots= when not given (MPIJob hostfiles
  # say slotsPerWorker there).
  [ -n "$slots" ] || slots=$(sed -n 's/^[^#]*[[:space:]]slots=\([0-9]*\).*/\1/p' "$hostfile" | head -n 1)
  mapfile -t FB_HOSTS <<<"$lines"
  [ -n "$lines" ] || FB_HOSTS=()
  [ ${#FB_HOSTS[@]} -gt 0 ] || fb_die "$FB_EXIT_INPUT" "hostfile $hostfile lists no hosts: one host name per line"
elif [ -n "$hosts_csv" ]; then
  IFS=, read -r -a FB_HOSTS <<<"$hosts_csv"
  # "a,,b" or "a," would leave a host without a name.
  [[ $hosts_csv != *, ]] || FB_HOSTS+=("")
  for h in "${FB_HOSTS[@]}"; do fb_check_host "$FB_EXIT_USAGE" "--hosts $(fb_shown "$hosts_csv")" "$h"; done
else
  fb_die "$FB_EXIT_USAGE" "no hosts: give --hostfile FILE or --hosts H1,H2"
fi

# Ranks per node: one per GPU unless told.
if [ -z "$slots" ]; then
  slots=1
  if command -v nvidia-smi >/dev/null 2>&1; then
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    [ "$n" -gt 0 ] && slots=$n
  fi
fi
fb_check_uint --ranks-per-node "$slots"
# shellcheck disable=SC2034
FB_SLOTS=$slots FB_BIND=$FB_OPT_BIND FB_IFACE=$FB_OPT_IFACE FB_SSH_WAIT=$ssh_wait

# Environment: the fabric's, then --env.
fb_set_env "$FB_OPT_FABRIC"

if [ -n "$rsh" ]; then
  FB_SSH=("$rsh")
else
  FB_SSH=(ssh -p "$ssh_port" -o BatchMode=yes -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
  [ -n "$ssh_key" ] && FB_SSH+=(-i "$ssh_key")
fi

fb_local_run "$(fb_cluster "$(hostname)" localhost)" "$@"
fb_make_workdir

[ "$FB_DRY_RUN" = 1 ] || fb_need mpirun "install Open MPI (the one fabric-coll was built with)"

fb_info "${#FB_HOSTS[@]} hosts x $FB_SLOTS ranks, fabric $FB_OPT_FABRIC, results $FB_RESULT"
fb_preflight_script | fb_show_script "preflight (run here)"
if [ "$FB_DRY_RUN" != 1 ]; then
  fb_preflight_script | bash -s || exit $?
fi
fb_run_script | fb_show_script "run (here)"
rc=0
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ bash $(fb_quote "$FB_WORKDIR/run.sh")"
else
  fb_run_script >"$FB_WORKDIR/run.sh" ||
    fb_die "$FB_EXIT_RUNTIME" "cannot write $FB_WORKDIR/run.sh: check TMPDIR"
  bash "$FB_WORKDIR/run.sh"
  rc=$?
fi

# Rank 0 writes the result on its own host: fetch it when that is not here
# (ssh hands its command to the remote shell: one POSIX-quoted word).
if [ "$FB_DRY_RUN" != 1 ] && [ ! -s "$FB_RESULT" ]; then
  "${FB_SSH[@]}" "${FB_HOSTS[0]}" cat "$(fb_sh_quote "$FB_RESULT")" >"$FB_RESULT.tmp" 2>/dev/null </dev/null &&
    [ -s "$FB_RESULT.tmp" ] && mv "$FB_RESULT.tmp" "$FB_RESULT"
  rm -f "$FB_RESULT.tmp"
fi
if [ "$FB_DRY_RUN" != 1 ] && [ ! -s "$FB_RESULT" ]; then
  fb_die "$(( rc ? rc : FB_EXIT_RUNTIME ))" "the run wrote no result (mpirun exit $rc): see $FB_LOG"
fi
if [ "$print_result" = 1 ] && [ "$FB_DRY_RUN" != 1 ]; then
  echo "--- fabric-bench result $(basename "$FB_RESULT")"
  cat "$FB_RESULT"
  echo "--- end of result"
fi
[ "$rc" -ne 0 ] && fb_info "mpirun exited $rc; judging what was measured"
fb_verdict "$FB_RESULT" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
verdict=$?
[ "$verdict" -eq 127 ] && exit "$rc"
exit "$verdict"
