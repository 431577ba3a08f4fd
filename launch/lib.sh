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

fb_is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# fb_check_uint NAME VALUE: a usage error unless VALUE is a positive integer.
fb_check_uint() {
  if ! fb_is_uint "$2" || [ "$2" -lt 1 ]; then
    fb_die "$FB_EXIT_USAGE" "$1 wants a positive integer, got '$2'"
  fi
}

# Cluster names become a directory: keep the characters fabric-coll keeps.
fb_sanitize_cluster() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'; }

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
      fb_die "$FB_EXIT_USAGE" "unknown option $1 (launcher options go before the collective; see --help)"
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
    --cluster) fb_need_arg "$@"; FB_OPT_CLUSTER=$2 ;;
    --results) fb_need_arg "$@"; FB_OPT_RESULTS=$2 ;;
    --iface) fb_need_arg "$@"; FB_OPT_IFACE=$2 ;;
    --mpirun-arg) fb_need_arg "$@"; FB_OPT_MPIRUN+=("$2") ;;
    --profile | --profiles) fb_need_arg "$@"; FB_OPT_REPORT+=("$1" "$2") ;;
    --dry-run) FB_DRY_RUN=1 FB_TAKEN=1 ;;
    -h | --help) usage; exit 0 ;;
    *) FB_TAKEN=0 ;;
  esac
}

# fb_check_common EXAMPLE ARGS...: the collective (first of ARGS) and the
# common options are valid; sets FB_COLLECTIVE. EXAMPLE is the launcher's own
# command line, shown when no collective is given.
fb_check_common() {
  local example=$1 kv; shift
  [ $# -ge 1 ] || fb_die "$FB_EXIT_USAGE" "no collective given: e.g. $example all_reduce -b 1K -e 16G -f 2"
  FB_COLLECTIVE=$(fb_collective "$1") ||
    fb_die "$FB_EXIT_USAGE" "unknown collective '$1': use $(fb_collective_choices)"
  case $FB_OPT_BIND in numa | core | none) ;; *) fb_die "$FB_EXIT_USAGE" "--bind wants numa, core or none, got '$FB_OPT_BIND'" ;; esac
  for kv in "${FB_OPT_ENV[@]+"${FB_OPT_ENV[@]}"}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || fb_die "$FB_EXIT_USAGE" "--env wants KEY=VALUE, got '$kv'"
  done
}

# fb_local_run CLUSTER ARGS...: a run whose results land on this host (or a
# file system it shares): FB_DIR (results/<cluster>), FB_STAMP, FB_RESULT,
# FB_LOG, FB_WORKDIR (scratch), and the ranks' command: rank.sh, fabric-coll
# (a placeholder under --dry-run) and ARGS, the collective and its options.
fb_local_run() {
  local cluster=$1; shift
  FB_DIR=$FB_OPT_RESULTS
  case $FB_DIR in /*) ;; *) FB_DIR=$PWD/$FB_DIR ;; esac
  FB_DIR=$FB_DIR/$cluster
  FB_STAMP=$(fb_utc_stamp)
  FB_RESULT=$FB_DIR/$FB_STAMP-$FB_COLLECTIVE.json
  FB_LOG=$FB_DIR/$FB_STAMP-$FB_COLLECTIVE.log
  FB_WORKDIR=${TMPDIR:-/tmp}/fabric-bench-$FB_STAMP-$$
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
      fb_die "$FB_EXIT_INPUT" "$file line $n is not KEY=VALUE: '$line'"
    printf '%s\n' "$line"
  done <"$file"
}

# fb_fabric_env FABRIC: the fabric's KEY=VALUE lines ("none": nothing).
fb_fabric_env() {
  [ "$1" = none ] && return 0
  local p; p=$(fb_profile_path "$1")
  [ -f "$p" ] || fb_die "$FB_EXIT_USAGE" "unknown fabric '$1': use one of $(fb_list_fabrics) or none"
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
# "host slots=N" lines; comments dropped).
fb_read_hostfile() {
  [ -r "$1" ] || fb_die "$FB_EXIT_INPUT" "hostfile $1 is not readable: check the path"
  awk '{ sub(/#.*/, "") } NF { print $1 }' "$1"
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
  echo "$(fb_quote "$FB_RANK_SH" "$FB_COLL" "${FB_COLL_ARGS[@]}") -J \"\$result\" --nccl-log"
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
  local h
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench run: ${#FB_HOSTS[@]} hosts x $FB_SLOTS ranks.
set -u
$(fb_paths_script)
mkdir -p $(fb_quote "$FB_WORKDIR" "$(dirname "$FB_RESULT")")
cat >$(fb_quote "$FB_WORKDIR/hostfile") <<'HOSTS'
EOF
  for h in "${FB_HOSTS[@]}"; do echo "$h slots=$FB_SLOTS"; done
  echo HOSTS
  fb_env_script
  fb_mpirun_script "${#FB_HOSTS[@]}" "--hostfile $(fb_quote "$FB_WORKDIR/hostfile") --mca plm_rsh_agent $(fb_quote "${FB_SSH[0]}") --mca plm_rsh_args $(fb_quote "$(fb_quote "${FB_SSH[@]:1}")")"
  echo "exit \"\$rc\""
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
