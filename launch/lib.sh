# Shared by launch/kubectl.sh, launch/baremetal.sh and launch/slurm.sh
# (source it).
#
# The ssh launchers do the same four things on a "launching host" (the first
# pod, or the machine running baremetal.sh): check that every host name
# resolves and answers ssh (bounded), write the hostfile, run mpirun with the
# fabric's environment and NCCL's INFO log, then have fabric-report judge the
# result. The Slurm launcher lets Slurm place the ranks and shares the rest.
# The checks and the run are generated here as bash scripts, so the kubectl
# launcher can ship them into a pod, the Slurm one submit them as a batch
# job, and --dry-run can print them.
#
# Exit codes are those of docs/exit-codes.md: 2 usage, 5 a tool is missing,
# 6 the hosts are not ready for MPI (names, ssh, the Slurm controller), 8 a
# bounded wait expired, 9 a kubectl, mpirun or job failure, 10 a missing or
# malformed input; a finished run returns fabric-report's verdict (0, 20-23).
#
# Values from the command line, the environment or the cluster go into the
# generated scripts only through fb_quote, and into commands only as
# arguments, never inside a string a shell parses; every one is refused when
# it holds a control character (fb_check_text).
# shellcheck shell=bash

# shellcheck disable=SC2034 # used by the scripts that source this file
FB_EXIT_USAGE=2
FB_EXIT_UNAVAILABLE=5
FB_EXIT_LAUNCH=6
# shellcheck disable=SC2034
FB_EXIT_TIMEOUT=8
# shellcheck disable=SC2034
FB_EXIT_RUNTIME=9
FB_EXIT_INPUT=10
# shellcheck disable=SC2034
FB_EXIT_SKIPPED=11
# shellcheck disable=SC2034
FB_EXIT_MISMATCH=12

FB_LAUNCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FB_DRY_RUN=${FB_DRY_RUN:-0}
FB_PROG=${FB_PROG:-fabric-bench}

# fb_die CODE MESSAGE: the one-line error (problem, then the fix) and exit.
fb_die() {
  local code=$1; shift
  echo "$FB_PROG: $*" >&2
  exit "$code"
}
# Progress goes to stdout: stderr carries only the one-line errors.
fb_info() { echo "$FB_PROG: $*"; }

# fb_quote ARGS...: the arguments as one shell-quoted line.
fb_quote() {
  local out="" a
  for a in "$@"; do out+="$(printf '%q' "$a") "; done
  printf '%s\n' "${out% }"
}

# fb_do CMD...: runs CMD, or under --dry-run prints it (with a "+ " prefix).
fb_do() {
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "$@")"
    return 0
  fi
  "$@"
}

# fb_show_script TITLE: under --dry-run, prints the script on stdin indented.
fb_show_script() {
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "  # $1:"
    sed 's/^/  | /'
  else
    cat >/dev/null
  fi
}

fb_need() { # fb_need TOOL HINT: the tool must be on PATH
  command -v "$1" >/dev/null 2>&1 || fb_die "$FB_EXIT_UNAVAILABLE" "$1 not found on PATH: $2"
}

fb_need_arg() { [ $# -ge 2 ] || fb_die "$FB_EXIT_USAGE" "$1 needs a value (see --help)"; }

# fb_shown VALUE: VALUE quoted for a message, on one line whatever it holds.
fb_shown() { printf "'%s'" "${1//[$FB_CTL]/?}"; }

# Whole numbers of up to nine digits: test(1) and $(( )) take them all.
fb_is_uint() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }

# fb_check_uint NAME VALUE: a usage error unless VALUE is a positive integer.
fb_check_uint() {
  if ! fb_is_uint "$2" || [ "$2" -lt 1 ]; then
    fb_die "$FB_EXIT_USAGE" "$1 wants a positive integer (at most 999999999), got $(fb_shown "$2")"
  fi
}

# fb_check_port NAME VALUE: a usage error unless VALUE is a TCP port.
fb_check_port() {
  if ! fb_is_uint "$2" || [ "$2" -lt 1 ] || [ "$2" -gt 65535 ]; then
    fb_die "$FB_EXIT_USAGE" "$1 wants a TCP port from 1 to 65535, got $(fb_shown "$2")"
  fi
}

# The control characters: every byte below 0x20, and 0x7f.
FB_CTL=$(printf '\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\177')
fb_has_ctl() { [[ $1 == *["$FB_CTL"]* ]]; }

# fb_check_text NAME VALUE: a usage error when VALUE holds a control
# character. A newline in a value would start a new line of the generated
# script it goes into (a second #SBATCH line, a hostfile line, a command).
fb_check_text() {
  fb_has_ctl "$2" || return 0
  fb_die "$FB_EXIT_USAGE" "$1 has a control character (newline, tab, escape: bytes below 0x20 or 0x7f) in $(fb_shown "$2"): give it on one line, without them"
}

# fb_check_word NAME VALUE: as fb_check_text, and no white space either: the
# value goes into a list mpirun or Slurm splits at spaces.
fb_check_word() {
  fb_check_text "$1" "$2"
  [[ $2 != *[[:space:]]* ]] ||
    fb_die "$FB_EXIT_USAGE" "$1 has white space in $(fb_shown "$2"), which mpirun splits it at: give a value without spaces"
}

# ---- labels -------------------------------------------------------------------------
# A cluster label names a directory under results/ and is recorded in every
# result: letters, digits, '.', '_' and '-', not empty, not '.' or '..' (the
# rule the C tools apply too).
fb_is_label() { [[ $1 =~ ^[A-Za-z0-9._-]+$ ]] && [ "$1" != . ] && [ "$1" != .. ]; }

# fb_check_label NAME VALUE: a usage error unless VALUE is a label.
fb_check_label() {
  fb_is_label "$2" ||
    fb_die "$FB_EXIT_USAGE" "$1 wants a label of letters, digits, '.', '_' and '-' (not empty, '.' or '..'), got $(fb_shown "$2"): choose such a name"
}

# fb_label_from NAME FALLBACK: a label made from a name the user did not give
# as one (this host's name, the kubectl context, Slurm's ClusterName): each
# byte outside the label's characters becomes '_', a name that is then '.'
# or '..' gets a leading '_' ('_.', '_..'), and an empty one is FALLBACK. A
# valid label is kept as it is.
fb_label_from() {
  local l
  l=$(printf '%s' "$1" | LC_ALL=C tr -c 'A-Za-z0-9._-' '_')
  case $l in
    '') l=$2 ;;
    . | ..) l=_$l ;;
  esac
  printf '%s\n' "$l"
}

# fb_cluster DEFAULT FALLBACK: the run's cluster label: --cluster's (or
# FABRIC_CLUSTER's), which fb_check_common checked, else DEFAULT through
# fb_label_from.
fb_cluster() {
  if [ -n "$FB_OPT_CLUSTER_FROM" ]; then
    printf '%s\n' "$FB_OPT_CLUSTER"
  else
    fb_label_from "$1" "$2"
  fi
}

# ---- host names -----------------------------------------------------------------------
# fb_check_host CODE WHERE HOST: HOST is a host name or address ssh and
# mpirun take as one: letters, digits, '.', '_', ':' and '-', not starting
# with '-' (ssh would read it as an option). WHERE names where it came from.
fb_check_host() {
  [ -n "$3" ] || fb_die "$1" "$2 has an empty host name: give every host its name (no doubled or trailing separators)"
  [[ $3 =~ ^[A-Za-z0-9._:][A-Za-z0-9._:-]*$ ]] ||
    fb_die "$1" "$2 has a bad host name $(fb_shown "$3"): host names are letters, digits, '.', '_', ':' and '-', not starting with '-'"
}

# fb_sh_quote ARG: ARG as one word for a POSIX shell (a remote command of
# ssh, which a login shell of any kind parses).
fb_sh_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

fb_utc_stamp() { date -u +%Y%m%dT%H%M%SZ; }

# fb_collectives: the collectives fabric-coll offers, one per line. Its table
# is the only list; with no fabric-coll on this machine (a workstation that
# only drives pods) it prints nothing and fabric-coll in the pods judges.
fb_collectives() {
  local coll
  coll=$(fb_coll_bin 2>/dev/null) || return 0
  "$coll" --list 2>/dev/null || true
}

# fb_collective ARG: the collective name from COLLECTIVE or NAME_perf.
fb_collective() {
  local c=${1%_perf} known
  known=$(fb_collectives)
  if [ -z "$known" ]; then
    [[ $c =~ ^[a-z][a-z0-9_]*$ ]] && echo "$c"
    return
  fi
  grep -qxF -- "$c" <<<"$known" && echo "$c"
}

# "a, b or c" of fabric-coll's collectives, for messages.
fb_collective_choices() {
  local known
  known=$(fb_collectives)
  [ -n "$known" ] || { echo "a collective name such as all_reduce"; return; }
  printf '%s\n' "$known" | paste -sd, - | sed 's/,/, /g; s/, \([^,]*\)$/ or \1/'
}

# ---- options every launcher takes ------------------------------------------------
# A launcher sets its own defaults here before parsing, then hands each option
# to fb_common_option first. --help calls the launcher's usage function.
FB_OPT_BIND=numa FB_OPT_FABRIC=none FB_OPT_CLUSTER=${FABRIC_CLUSTER:-} FB_OPT_RESULTS=results
FB_OPT_IFACE=eth0 FB_OPT_ENV=() FB_OPT_MPIRUN=() FB_OPT_REPORT=()
# mpi: mpirun (or srun --mpi) starts the ranks; env: each process takes its
# rank from the launcher's variables and NCCL bootstraps the job.
FB_OPT_LAUNCHER=mpi
# Where the cluster label came from, for its messages ("": the launcher's default).
FB_OPT_CLUSTER_FROM=${FABRIC_CLUSTER:+FABRIC_CLUSTER}

# fb_parse_options HANDLER ARGS...: the launcher options before the
# collective, --opt=value spelled either way: the common ones here, the
# launcher's own through HANDLER, which takes "$@" and sets FB_TAKEN as
# fb_common_option does. The collective and its options are left in FB_REST.
fb_parse_options() {
  local handler=$1; shift
  while [ $# -gt 0 ]; do
    case $1 in
      --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
      --) shift; break ;;
      -*) ;;
      *) break ;;
    esac
    fb_common_option "$@"
    [ "$FB_TAKEN" -gt 0 ] || "$handler" "$@"
    [ "$FB_TAKEN" -gt 0 ] ||
      fb_die "$FB_EXIT_USAGE" "unknown option $(fb_shown "$1") (launcher options go before the collective; see --help)"
    [ "$FB_TAKEN" -lt 2 ] || fb_check_text "$1" "$2"
    shift "$FB_TAKEN"
  done
  FB_REST=("$@")
}

# fb_common_option ARGS...: takes the option in $1 when it is a common one;
# FB_TAKEN says how many words it used (0: not a common option).
fb_common_option() {
  FB_TAKEN=2
  case $1 in
    --bind) fb_need_arg "$@"; FB_OPT_BIND=$2 ;;
    --fabric) fb_need_arg "$@"; FB_OPT_FABRIC=$2 ;;
    --env) fb_need_arg "$@"; FB_OPT_ENV+=("$2") ;;
    --cluster) fb_need_arg "$@"; FB_OPT_CLUSTER=$2 FB_OPT_CLUSTER_FROM=--cluster ;;
    --results) fb_need_arg "$@"; FB_OPT_RESULTS=$2 ;;
    --iface) fb_need_arg "$@"; FB_OPT_IFACE=$2 ;;
    --mpirun-arg) fb_need_arg "$@"; FB_OPT_MPIRUN+=("$2") ;;
    --profile | --profiles) fb_need_arg "$@"; FB_OPT_REPORT+=("$1" "$2") ;;
    --launcher) fb_need_arg "$@"; FB_OPT_LAUNCHER=$2 ;;
    --dry-run) FB_DRY_RUN=1 FB_TAKEN=1 ;;
    -h | --help) usage; exit 0 ;;
    *) FB_TAKEN=0 ;;
  esac
}

# fb_check_common EXAMPLE ARGS...: the collective (first of ARGS) and the
# common options are valid; sets FB_COLLECTIVE. EXAMPLE is the launcher's own
# command line, shown when no collective is given.
fb_check_common() {
  local example=$1 a; shift
  [ $# -ge 1 ] || fb_die "$FB_EXIT_USAGE" "no collective given: e.g. $example all_reduce -b 1K -e 16G -f 2"
  for a in "$@"; do fb_check_text "the collective's argument" "$a"; done
  FB_COLLECTIVE=$(fb_collective "$1") ||
    fb_die "$FB_EXIT_USAGE" "unknown collective $(fb_shown "$1"): use $(fb_collective_choices)"
  fb_check_options
}

# fb_check_options: the common options are valid (fb_check_common without a
# collective: a fleet scan's run).
fb_check_options() {
  local kv
  case $FB_OPT_BIND in numa | core | none) ;; *) fb_die "$FB_EXIT_USAGE" "--bind wants numa, core or none, got $(fb_shown "$FB_OPT_BIND")" ;; esac
  case $FB_OPT_LAUNCHER in mpi | env) ;; *) fb_die "$FB_EXIT_USAGE" "--launcher wants mpi (mpirun, srun --mpi) or env (no MPI: NCCL bootstraps the job), got $(fb_shown "$FB_OPT_LAUNCHER")" ;; esac
  for kv in "${FB_OPT_ENV[@]+"${FB_OPT_ENV[@]}"}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || fb_die "$FB_EXIT_USAGE" "--env wants KEY=VALUE, got $(fb_shown "$kv")"
  done
  # The environment's defaults go into the scripts as the options do.
  [ -z "$FB_OPT_CLUSTER_FROM" ] || fb_check_label "$FB_OPT_CLUSTER_FROM" "$FB_OPT_CLUSTER"
  fb_check_text TMPDIR "${TMPDIR:-}"
}

# ---- files of the launcher's own ------------------------------------------------
# Removed when the launcher exits, however it exits.
FB_CLEANUP=()
fb_cleanup() { [ ${#FB_CLEANUP[@]} -eq 0 ] || rm -rf -- "${FB_CLEANUP[@]}"; }
trap fb_cleanup EXIT

# fb_mktemp VAR [MKTEMP ARGS]: VAR names a new file (-d: directory) from
# mktemp(1), removed at exit. Never a name someone else could have made
# first: /tmp is everyone's.
fb_mktemp() {
  local var=$1 t; shift
  t=$(mktemp "$@") || fb_die "$FB_EXIT_RUNTIME" "cannot create a temporary file in ${TMPDIR:-/tmp}: check TMPDIR and the free space there"
  FB_CLEANUP+=("$t")
  printf -v "$var" '%s' "$t"
}

# fb_make_workdir: FB_WORKDIR, a fresh private directory for the generated
# scripts (mktemp -d under $TMPDIR, else /tmp), removed at exit; under
# --dry-run its template.
fb_make_workdir() {
  local template=${TMPDIR:-/tmp}/fabric-bench-$FB_STAMP.XXXXXX
  if [ "$FB_DRY_RUN" = 1 ]; then
    FB_WORKDIR=$template
    return 0
  fi
  fb_mktemp FB_WORKDIR -d "$template"
}

# fb_local_run CLUSTER ARGS...: a run whose results land on this host (or a
# file system it shares): FB_DIR (results/<cluster>), FB_STAMP, FB_RESULT,
# FB_LOG, and the ranks' command: rank.sh, fabric-coll (a placeholder under
# --dry-run) and ARGS, the collective and its options. Scratch files go to
# fb_make_workdir's directory.
fb_local_run() {
  local cluster=$1; shift
  FB_DIR=$FB_OPT_RESULTS
  case $FB_DIR in /*) ;; *) FB_DIR=$PWD/$FB_DIR ;; esac
  fb_check_text --results "$FB_DIR"
  FB_DIR=$FB_DIR/$cluster
  FB_STAMP=$(fb_utc_stamp)
  FB_RESULT=$FB_DIR/$FB_STAMP-$FB_COLLECTIVE.json
  FB_LOG=$FB_DIR/$FB_STAMP-$FB_COLLECTIVE.log
  FB_RANK_SH=$FB_LAUNCH_ROOT/launch/rank.sh
  if ! FB_COLL=$(fb_coll_bin); then
    [ "$FB_DRY_RUN" = 1 ] || fb_die "$FB_EXIT_UNAVAILABLE" "fabric-coll not found: build it with make (or put it on PATH)"
    FB_COLL="fabric-coll"
  fi
  FB_COLL_ARGS=("$@" --cluster "$cluster")
  FB_MPIRUN_EXTRA=("${FB_OPT_MPIRUN[@]+"${FB_OPT_MPIRUN[@]}"}")
}

# ---- fabric profiles ----------------------------------------------------------
# A fabric's environment is manifests/components/<fabric>/fabric.env: the same
# file the pods get as a ConfigMap, so pods and bare metal cannot drift.

fb_profile_path() { echo "$FB_LAUNCH_ROOT/manifests/components/$1/fabric.env"; }

fb_list_fabrics() {
  local d out=""
  for d in "$FB_LAUNCH_ROOT"/manifests/components/*/fabric.env; do
    [ -f "$d" ] && out+="$(basename "$(dirname "$d")") "
  done
  echo "${out% }"
}

# fb_read_env FILE: validated KEY=VALUE lines (comments and blanks dropped).
fb_read_env() {
  local file=$1 line n=0
  [ -r "$file" ] || fb_die "$FB_EXIT_INPUT" "environment file $file is not readable: check the path"
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case $line in '' | '#'*) continue ;; esac
    [[ $line =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] ||
      fb_die "$FB_EXIT_INPUT" "$file line $n is not KEY=VALUE: $(fb_shown "$line")"
    ! fb_has_ctl "$line" ||
      fb_die "$FB_EXIT_INPUT" "$file line $n has a control character (a carriage return?): $(fb_shown "$line"); save it with plain newlines"
    printf '%s\n' "$line"
  done <"$file"
}

# fb_fabric_env FABRIC: the fabric's KEY=VALUE lines ("none": nothing).
fb_fabric_env() {
  [ "$1" = none ] && return 0
  local p; p=$(fb_profile_path "$1")
  # A name, not a path: "../x" must not reach another directory's file.
  if ! fb_is_label "$1" || [ ! -f "$p" ]; then
    fb_die "$FB_EXIT_USAGE" "unknown fabric $(fb_shown "$1"): use one of $(fb_list_fabrics) or none"
  fi
  fb_read_env "$p"
}

# fb_set_env FABRIC: FB_ENV, the fabric's environment and then --env's.
fb_set_env() {
  local lines
  lines=$(fb_fabric_env "$1") || exit $?
  FB_ENV=()
  [ -z "$lines" ] || mapfile -t FB_ENV <<<"$lines"
  FB_ENV+=("${FB_OPT_ENV[@]+"${FB_OPT_ENV[@]}"}")
}

# ---- hosts --------------------------------------------------------------------
# fb_read_hostfile FILE: host names, one per line (Open MPI or Slurm-like
# "host slots=N" lines; comments dropped), each checked by fb_check_host.
fb_read_hostfile() {
  local names h
  [ ! -d "$1" ] || fb_die "$FB_EXIT_USAGE" "--hostfile $(fb_shown "$1") is a directory: give a file with one host name per line"
  [ -r "$1" ] || fb_die "$FB_EXIT_INPUT" "hostfile $(fb_shown "$1") is not readable: check the path"
  names=$(awk '{ sub(/#.*/, "") } NF { print $1 }' "$1")
  [ -n "$names" ] || return 0
  while IFS= read -r h; do fb_check_host "$FB_EXIT_INPUT" "hostfile $(fb_shown "$1")" "$h"; done <<<"$names"
  printf '%s\n' "$names"
}

# ---- generated scripts ----------------------------------------------------------
# The variables below configure the scripts; the launchers set them.
#   FB_HOSTS (array)      host names, rank 0's first
#   FB_SLOTS              ranks per host
#   FB_SSH (array)        ssh command line up to the host name
#   FB_SSH_WAIT           seconds to wait for ssh on every host
#   FB_ENV (array)        KEY=VALUE exported before mpirun and forwarded
#   FB_MPIRUN_EXTRA (array), FB_BIND (numa|core|none), FB_IFACE
#   FB_WORKDIR            directory on the launching host (hostfile, logs)
#   FB_RANK_SH, FB_COLL   paths of launch/rank.sh and fabric-coll on the hosts
#   FB_COLL_ARGS (array)  collective and its options
#   FB_NCCL_LOG           1 (default): the rank also keeps NCCL's log
#                         (--nccl-log); 0 for a program without NCCL (fabric-rdma)
#   FB_RESULT, FB_LOG     result and log paths on the launching host

# fb_preflight_script: checks run on the launching host before mpirun. One
# deadline bounds everything, name lookups included: a dead DNS server or an
# sshd that accepts and never answers (stopped, swapping) must not hang it, so
# each attempt runs under timeout(1) with what is left of the bound. Names
# are looked up as ssh does (getaddrinfo: getent ahosts), so a name in
# /etc/hosts does not wait on DNS for an IPv6 address.
fb_preflight_script() {
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench preflight: every host resolves and answers ssh, within ${FB_SSH_WAIT}s.
set -u
hosts=($(fb_quote "${FB_HOSTS[@]}"))
ssh_cmd=($(fb_quote "${FB_SSH[@]}"))
deadline=\$((SECONDS + $FB_SSH_WAIT))
left() { local s=\$((deadline - SECONDS)); echo \$((s > 0 ? s : 1)); }
for h in "\${hosts[@]}"; do
  timeout -k 1 "\$(left)" getent ahosts "\$h" >/dev/null
  case \$? in
    0) ;;
    124 | 137)
      echo "$FB_PROG: host name \$h did not resolve within ${FB_SSH_WAIT}s on \$(hostname): the name service does not answer; check /etc/resolv.conf and the DNS server" >&2
      exit $FB_EXIT_TIMEOUT ;;
    *)
      echo "$FB_PROG: host name \$h does not resolve on \$(hostname): give resolvable names (in Kubernetes: the headless Service and the pods' subdomain)" >&2
      exit $FB_EXIT_LAUNCH ;;
  esac
done
for h in "\${hosts[@]}"; do
  until err=\$(timeout -k 1 "\$(left)" "\${ssh_cmd[@]}" "\$h" true 2>&1 </dev/null); do
    case \$? in 124 | 137) err="no answer within the bound" ;; esac
    if [ "\$SECONDS" -ge "\$deadline" ]; then
      echo "$FB_PROG: ssh from \$(hostname) to \$h failed for ${FB_SSH_WAIT}s (\$(printf '%s' "\$err" | tr '\n' ' ' | cut -c1-160)): check sshd on \$h, the port and that the key is authorized there" >&2
      exit $FB_EXIT_LAUNCH
    fi
    sleep 1
  done
done
echo "preflight: \${#hosts[@]} hosts resolve and answer ssh"
EOF
}

# fb_env_script: the fabric's environment, then NCCL's INFO log (transport
# detection), as export lines.
fb_env_script() {
  local kv
  echo "# The fabric's environment, then NCCL's INFO log (transport detection)."
  for kv in "${FB_ENV[@]}"; do echo "export $(fb_quote "$kv")"; done
  echo "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
}

# fb_paths_script: the result and log paths of a generated run script, as
# the variables the rank command and the log use (a batch script computes its
# own, so that each submission gets a fresh name).
fb_paths_script() {
  echo "result=$(fb_quote "$FB_RESULT") log=$(fb_quote "$FB_LOG")"
}

# fb_rank_command: what every rank runs, quoted, writing to $result.
fb_rank_command() {
  local log=" --nccl-log"
  [ "${FB_NCCL_LOG:-1}" = 1 ] || log=""
  echo "$(fb_quote "$FB_RANK_SH" "$FB_COLL" "${FB_COLL_ARGS[@]}") -J \"\$result\"$log"
}

# fb_new_secret FILE: a fresh per-job secret for fabric-coll's watchdog (32
# random bytes as hex) in FILE, never on a command line.
fb_new_secret() {
  { od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$1" && [ -s "$1" ]; } ||
    fb_die "$FB_EXIT_RUNTIME" "cannot make the job's secret from /dev/urandom in $1: check TMPDIR"
}

# fb_mpirun_script NODES PLACEMENT: mpirun over NODES x FB_SLOTS ranks, its
# output teed to $log and its exit code left in $rc. PLACEMENT is the
# (quoted) mpirun arguments that say where the hosts are and how to reach
# them: a hostfile and ssh, or nothing inside a Slurm allocation.
fb_mpirun_script() {
  local nranks=$(( $1 * FB_SLOTS )) placement="" iface=""
  [ -z "$2" ] || placement="$2 \\"$'\n  '
  [ -z "$FB_IFACE" ] ||
    iface=" --mca btl_tcp_if_include $(fb_quote "$FB_IFACE") --mca oob_tcp_if_include $(fb_quote "$FB_IFACE")"
  cat <<EOF
# Remote daemons do not carry this environment: forward it.
fwd=()
for v in \$(compgen -e); do
  case \$v in NCCL_* | FI_* | UCX_* | FABRIC_* | LD_LIBRARY_PATH) fwd+=(-x "\$v") ;; esac
done
mpirun --allow-run-as-root -np $nranks --map-by ppr:$FB_SLOTS:node --bind-to $(fb_quote "$FB_BIND") \\
  $placement--mca btl self,vader,tcp$iface \\
  "\${fwd[@]}" ${FB_MPIRUN_EXTRA[@]+$(fb_quote "${FB_MPIRUN_EXTRA[@]}")} \\
  $(fb_rank_command) \\
  </dev/null 2>&1 | tee "\$log"
rc=\${PIPESTATUS[0]}
EOF
}

# fb_run_script: writes the hostfile and runs mpirun on the launching host.
fb_run_script() {
  local h entries=()
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench run: ${#FB_HOSTS[@]} hosts x $FB_SLOTS ranks.
set -u
$(fb_paths_script)
mkdir -p $(fb_quote "$(dirname "$FB_RESULT")")
EOF
  for h in "${FB_HOSTS[@]}"; do entries+=("$h slots=$FB_SLOTS"); done
  printf '%s %s >%s\n' "printf '%s\\n'" "$(fb_quote "${entries[@]}")" "$(fb_quote "$FB_WORKDIR/hostfile")"
  fb_env_script
  # Open MPI splits plm_rsh_args at spaces and unquotes nothing: the words as
  # they are (fb_check_word kept spaces out of them).
  fb_mpirun_script "${#FB_HOSTS[@]}" "--hostfile $(fb_quote "$FB_WORKDIR/hostfile") --mca plm_rsh_agent $(fb_quote "${FB_SSH[0]}") --mca plm_rsh_args $(fb_quote "${FB_SSH[*]:1}")"
  echo "exit \"\$rc\""
}

# fb_scan_run_script: fabric-scan across FB_HOSTS, FB_SLOTS ranks each, from
# the launching host. Each host's ranks get their Kubernetes node name
# (FB_NODE_NAMES, in FB_HOSTS' order) as FABRIC_NODE_NAME in an app context
# of their own: -x would give every rank the launching pod's. A rank that
# exits non-zero does not end the job (orte_abort_on_non_zero_status 0):
# the scan goes on past a lost node. Also uses FB_SCAN, FB_SCAN_ARGS (array).
fb_scan_run_script() {
  local i iface="" contexts=()
  [ -z "$FB_IFACE" ] ||
    iface=" --mca btl_tcp_if_include $(fb_quote "$FB_IFACE") --mca oob_tcp_if_include $(fb_quote "$FB_IFACE")"
  for i in "${!FB_HOSTS[@]}"; do
    [ "$i" -eq 0 ] || contexts+=(":")
    contexts+=(-np "$FB_SLOTS" --host "${FB_HOSTS[$i]}:$FB_SLOTS" env "FABRIC_NODE_NAME=${FB_NODE_NAMES[$i]}"
      "$FB_RANK_SH" "$FB_SCAN" "${FB_SCAN_ARGS[@]}" -J "$FB_RESULT")
  done
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench scan: ${#FB_HOSTS[@]} hosts x $FB_SLOTS ranks.
set -u
$(fb_paths_script)
mkdir -p $(fb_quote "$(dirname "$FB_RESULT")")
EOF
  fb_env_script
  cat <<EOF
# Remote daemons do not carry this environment: forward it (each rank's
# node name is its own, never the launching pod's).
fwd=()
for v in \$(compgen -e); do
  case \$v in FABRIC_NODE_NAME) ;; NCCL_* | FI_* | UCX_* | FABRIC_* | LD_LIBRARY_PATH) fwd+=(-x "\$v") ;; esac
done
contexts=($(fb_quote "${contexts[@]}"))
mpirun --allow-run-as-root --bind-to $(fb_quote "$FB_BIND") \\
  --mca plm_rsh_agent $(fb_quote "${FB_SSH[0]}") --mca plm_rsh_args $(fb_quote "${FB_SSH[*]:1}") \\
  --mca orte_abort_on_non_zero_status 0 --mca btl self,vader,tcp$iface \\
  "\${fwd[@]}" ${FB_MPIRUN_EXTRA[@]+$(fb_quote "${FB_MPIRUN_EXTRA[@]}")} \\
  "\${contexts[@]}" \\
  </dev/null 2>&1 | tee "\$log"
exit "\${PIPESTATUS[0]}"
EOF
}

# fb_verdict RESULT [CHECK OPTIONS]: fabric-report's verdict on the result;
# returns its code, or 127 when fabric-report is not there.
fb_verdict() {
  local report
  report=$(fb_report_bin) || {
    fb_info "fabric-report not found (build it with make): no verdict for $1"
    return 127
  }
  fb_do "$report" check "$@"
}

fb_report_bin() {
  local c
  for c in "${FB_BIN:-}/fabric-report" "$FB_LAUNCH_ROOT/bin/fabric-report" "$FB_LAUNCH_ROOT/build/bin/fabric-report"; do
    [ -x "$c" ] && { echo "$c"; return 0; }
  done
  command -v fabric-report
}

fb_coll_bin() {
  local c
  for c in "${FB_BIN:-}/fabric-coll" "$FB_LAUNCH_ROOT/bin/fabric-coll" "$FB_LAUNCH_ROOT/build/bin/fabric-coll"; do
    [ -x "$c" ] && { echo "$c"; return 0; }
  done
  command -v fabric-coll
}

# ---- free GPU nodes -------------------------------------------------------------
# fb_free_gpu_nodes NODES PODS N: one line per GPU node, "NAME<TAB>free" or
# "NAME<TAB>why not", from `kubectl get nodes -o json` and `kubectl get pods
# -A -o json` saved in NODES and PODS, N the GPUs a worker asks for. The
# rule is launch/capacity.jq's (fabric-doctor applies the same).
fb_free_gpu_nodes() {
  jq -rn --slurpfile nodes "$1" --slurpfile pods "$2" --argjson need "$3" -f "$FB_LAUNCH_ROOT/launch/capacity.jq"
}
