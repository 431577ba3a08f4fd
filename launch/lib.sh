# Shared by launch/kubectl.sh and launch/baremetal.sh (source it).
#
# Both launchers do the same four things on a "launching host" (the first
# pod, or the machine running baremetal.sh): check that every host name
# resolves and answers ssh (bounded), write the hostfile, run mpirun with the
# fabric's environment and NCCL's INFO log, then have fabric-report judge the
# result. The checks and the run are generated here as bash scripts, so the
# kubectl launcher can ship them into a pod and --dry-run can print them.
#
# Exit codes are those of docs/exit-codes.md: 2 usage, 5 a tool is missing,
# 6 the hosts are not ready for MPI (names, ssh), 8 a bounded wait expired,
# 9 a kubectl or mpirun failure, 10 a missing or malformed input; a finished
# run returns fabric-report's verdict (0, 20-23).
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

# fb_collective ARG: the collective name from COLLECTIVE or NAME_perf.
fb_collective() {
  local c=${1%_perf}
  case $c in
    all_reduce | all_gather | reduce_scatter | broadcast | reduce | alltoall | sendrecv) echo "$c" ;;
    *) return 1 ;;
  esac
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

# fb_preflight_script: checks run on the launching host before mpirun.
fb_preflight_script() {
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench preflight: every host resolves and answers ssh, within ${FB_SSH_WAIT}s.
set -u
hosts=($(fb_quote "${FB_HOSTS[@]}"))
ssh_cmd=($(fb_quote "${FB_SSH[@]}"))
for h in "\${hosts[@]}"; do
  if ! getent hosts "\$h" >/dev/null; then
    echo "host name \$h does not resolve on \$(hostname): give resolvable names (in Kubernetes: the headless Service and the pods' subdomain)" >&2
    exit $FB_EXIT_LAUNCH
  fi
done
deadline=\$((SECONDS + $FB_SSH_WAIT))
for h in "\${hosts[@]}"; do
  until err=\$("\${ssh_cmd[@]}" "\$h" true 2>&1 </dev/null); do
    if [ "\$SECONDS" -ge "\$deadline" ]; then
      echo "ssh from \$(hostname) to \$h failed for ${FB_SSH_WAIT}s (\$(printf '%s' "\$err" | tr '\n' ' ' | cut -c1-160)): check sshd on \$h, the port and that the key is authorized there" >&2
      exit $FB_EXIT_LAUNCH
    fi
    sleep 1
  done
done
echo "preflight: \${#hosts[@]} hosts resolve and answer ssh"
EOF
}

# fb_run_script: writes the hostfile and runs mpirun on the launching host.
fb_run_script() {
  local nranks=$(( ${#FB_HOSTS[@]} * FB_SLOTS )) h
  cat <<EOF
#!/usr/bin/env bash
# fabric-bench run: ${#FB_HOSTS[@]} hosts x $FB_SLOTS ranks.
set -u
mkdir -p $(fb_quote "$FB_WORKDIR" "$(dirname "$FB_RESULT")")
cat >$(fb_quote "$FB_WORKDIR/hostfile") <<'HOSTS'
EOF
  for h in "${FB_HOSTS[@]}"; do echo "$h slots=$FB_SLOTS"; done
  cat <<EOF
HOSTS
# The fabric's environment, then NCCL's INFO log (transport detection).
EOF
  local kv
  for kv in "${FB_ENV[@]}"; do echo "export $(fb_quote "$kv")"; done
  cat <<EOF
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
# Ranks start through ssh, which does not carry this environment: forward it.
fwd=()
for v in \$(compgen -e); do
  case \$v in NCCL_* | FI_* | UCX_* | FABRIC_* | LD_LIBRARY_PATH) fwd+=(-x "\$v") ;; esac
done
mpirun --allow-run-as-root -np $nranks --hostfile $(fb_quote "$FB_WORKDIR/hostfile") \\
  --map-by ppr:$FB_SLOTS:node --bind-to $(fb_quote "$FB_BIND") \\
  --mca plm_rsh_agent $(fb_quote "${FB_SSH[0]}") --mca plm_rsh_args $(fb_quote "$(fb_quote "${FB_SSH[@]:1}")") \\
  --mca btl self,vader,tcp --mca btl_tcp_if_include $(fb_quote "$FB_IFACE") --mca oob_tcp_if_include $(fb_quote "$FB_IFACE") \\
  "\${fwd[@]}" ${FB_MPIRUN_EXTRA[@]+$(fb_quote "${FB_MPIRUN_EXTRA[@]}")} \\
  $(fb_quote "$FB_RANK_SH" "$FB_COLL" "${FB_COLL_ARGS[@]}" -J "$FB_RESULT" --nccl-log) \\
  </dev/null 2>&1 | tee $(fb_quote "$FB_LOG")
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
