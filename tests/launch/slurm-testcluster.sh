#!/usr/bin/env bash
# A one-node Slurm for the launcher tests: munged, slurmctld and slurmd as
# root, with their own key, configuration, state and free ports in a private
# directory, so nothing of the machine's own Slurm (if any) is touched.
#
#   slurm-testcluster.sh up [CPUS]   start (CPUS per node, default 4); prints
#                                    dir=DIR and SLURM_CONF=DIR/slurm.conf
#   slurm-testcluster.sh down DIR    cancel its jobs, stop its daemons, remove DIR
#
# The node is this machine under its own host name; CPUS may exceed the real
# cores (SlurmdParameters=config_overrides), so a 2-core machine runs 4 tasks.
# Every wait is bounded; a daemon that does not come up names its log.
set -uo pipefail

die() { echo "slurm-testcluster: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (slurmd and munged run as root)"

START_WAIT=30

# free_port: a TCP port that no socket uses, nor the next one, below the
# kernel's ephemeral range: a port in it can be taken by any outgoing
# connection (another test's) between this check and slurmd's bind.
free_port() {
  local p low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  [ "$low" -gt 20100 ] || low=61000
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % (low - 20002)))
    if [ -z "$(ss -Htan "( sport = :$p or sport = :$((p + 1)) or sport = :$((p + 2)) )")" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# wait_for SECONDS WHAT LOG PID CMD...: until CMD succeeds, at most SECONDS,
# and only while the daemon PID lives.
wait_for() {
  local s=$1 what=$2 log=$3 pid=$4; shift 4
  for _ in $(seq 1 $((s * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null ||
      die "$what exited (log: $log: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' '))"
    sleep 0.2
  done
  die "$what did not come up within ${s}s (log: $log: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' '))"
}

write_conf() {
  local dir=$1 cpus=$2 port=$3 host
  host=$(hostname)
  cat >"$dir/slurm.conf" <<EOF
# One-node test cluster (tests/launch/slurm-testcluster.sh).
ClusterName=fbtest
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=5
SlurmdParameters=config_overrides
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=fbtest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

node_idle() { [ "$(sinfo -h -N -o %T)" = idle ]; }

cmd_up() {
  local cpus=${1:-4} dir port
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || die "CPUS must be a positive integer, got '$cpus'"
  local tool
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || die "$tool not found: install slurm-wlm and munge (scripts/install-deps.sh)"
  done
  # munged wants every directory above its socket searchable by all.
  dir=$(mktemp -d /tmp/fb-slurm.XXXXXX) || die "cannot create a directory in /tmp"
  chmod 755 "$dir"
  mkdir -p "$dir/key" "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
  chmod 700 "$dir/key"
  chmod 755 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/key/munge.key"
  chmod 400 "$dir/key/munge.key"
  # A daemon that does not come up takes the others down with it.
  starting=$dir
  trap '[ -z "$starting" ] || cmd_down "$starting" >/dev/null 2>&1' EXIT
  port=$(free_port) || die "no free TCP port pair found"
  write_conf "$dir" "$cpus" "$port"
  export SLURM_CONF=$dir/slurm.conf

  munged --foreground --key-file="$dir/key/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" >>"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/munged.pid"
  wait_for "$START_WAIT" munged "$dir/log/munged.out" $! test -S "$dir/munge/munge.socket"
  slurmctld -D >>"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/slurmctld.pid.launch"
  wait_for "$START_WAIT" slurmctld "$dir/log/slurmctld.out" $! scontrol ping
  slurmd -D >>"$dir/log/slurmd.out" 2>&1 &
  echo $! >"$dir/slurmd.pid.launch"
  # The node is usable once it registered and is idle.
  wait_for "$START_WAIT" "slurmd (node idle)" "$dir/log/slurmd.out" $! node_idle
  starting=""
  echo "dir=$dir"
  echo "SLURM_CONF=$dir/slurm.conf"
}

cmd_down() {
  local dir=$1 f pid
  [ -f "$dir/slurm.conf" ] || die "$dir is not a test cluster"
  export SLURM_CONF=$dir/slurm.conf
  timeout -k 2 10 scancel --full --user=root >/dev/null 2>&1
  for f in slurmd.pid.launch slurmctld.pid.launch munged.pid; do
    pid=$(cat "$dir/$f" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$dir"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) [ $# -eq 2 ] || die "usage: slurm-testcluster.sh down DIR"; cmd_down "$2" ;;
  *) die "usage: slurm-testcluster.sh up [CPUS] | down DIR" ;;
esac
