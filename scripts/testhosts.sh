#!/usr/bin/env bash
# Test hosts made of network namespaces: real multi-host runs on one machine.
#
#   testhosts.sh up NAME N [SLOTS]   hosts NAME1..NAMEN, each with its own
#                                    network stack, host name and sshd, joined
#                                    by veth links through a bridge
#   testhosts.sh mpirun NAME ARGS... mpirun inside NAME1 across all hosts
#   testhosts.sh exec NAME I CMD...  run CMD inside host I (its name, its net)
#   testhosts.sh link NAME I up|down take host I's link down or up
#   testhosts.sh info NAME           print the state directory's paths
#   testhosts.sh down NAME           stop sshd, remove namespaces and state
#
# The bridge lives in its own namespace (NAME-sw), so nothing of this touches
# the machine's own network; addresses are 10.77.0.I/24 inside the set.
# Needs root (ip netns); tests skip when not root.
set -euo pipefail

STATE_ROOT=${FB_TESTHOSTS_DIR:-/tmp/fb-testhosts}
PORT=2222
SUBNET=10.77.0

die() { echo "testhosts: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces); run as root"; }
valid_name() { [[ $1 =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "name '$1' must be 1-8 lowercase letters/digits, starting with a letter"; }
state_dir() { echo "$STATE_ROOT/$1"; }
host_count() { cat "$(state_dir "$1")/count" 2>/dev/null || die "host set '$1' is not up (testhosts.sh up $1 N)"; }

in_host() { # in_host NAME I CMD...: run with the host's namespace and name
  local name=$1 i=$2; shift 2
  # shellcheck disable=SC2016 # $0/$@ expand in the inner shell
  ip netns exec "$name$i" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$name$i" "$@"
}

write_sshd_config() {
  local dir=$1 name=$2 i=$3
  cat >"$dir/sshd_config.$i" <<EOF
Port $PORT
ListenAddress $SUBNET.$i
HostKey $dir/host_key
PidFile $dir/sshd.$i.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 100
EOF
}

write_keys_and_wrapper() {
  local dir=$1
  ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519" -C "fb-testhosts" >/dev/null
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" -C "fb-testhosts-host" >/dev/null
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  # Open MPI's plm_rsh_agent and launchers call this as "rsh HOST CMD...".
  cat >"$dir/rsh" <<EOF
#!/bin/sh
exec ssh -p $PORT -i $dir/id_ed25519 -o StrictHostKeyChecking=no \\
  -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes \\
  -o ConnectTimeout=5 "\$@"
EOF
  chmod +x "$dir/rsh"
}

create_host() {
  local name=$1 i=$2 dir=$3
  ip netns add "$name$i"
  ip link add "$name$i-e" type veth peer name "$name$i-s"
  ip link set "$name$i-e" netns "$name$i"
  ip link set "$name$i-s" netns "$name-sw"
  ip -n "$name-sw" link set "$name$i-s" master br0 up
  ip -n "$name$i" link set lo up
  ip -n "$name$i" link set "$name$i-e" name eth0
  ip -n "$name$i" addr add "$SUBNET.$i/24" dev eth0
  ip -n "$name$i" link set eth0 up
  # ip netns exec bind-mounts /etc/netns/<ns>/hosts over /etc/hosts.
  mkdir -p "/etc/netns/$name$i"
  cp "$dir/hosts" "/etc/netns/$name$i/hosts"
  write_sshd_config "$dir" "$name" "$i"
  in_host "$name" "$i" /usr/sbin/sshd -f "$dir/sshd_config.$i" -E "$dir/sshd.$i.log"
}

wait_for_ssh() {
  local name=$1 n=$2 dir=$3 i t
  for i in $(seq 1 "$n"); do
    # A minute: with four tests beside one another on two busy cores, sshd
    # can take seconds to start; a healthy set answers on the first tries.
    for t in $(seq 1 300); do
      in_host "$name" 1 "$dir/rsh" "$name$i" true 2>/dev/null && continue 2
      sleep 0.2
      [ "$t" -eq 300 ] && die "sshd on $name$i did not answer within 60 s (log: $dir/sshd.$i.log)"
    done
  done
}

cmd_up() {
  local name=$1 n=$2 slots=${3:-4}
  valid_name "$name"
  [[ $n =~ ^[1-9]$ ]] || die "host count must be 1-9"
  local dir; dir=$(state_dir "$name")
  [ -e "$dir" ] && cmd_down "$name"
  mkdir -p "$dir" /run/sshd
  write_keys_and_wrapper "$dir"
  {
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$n"); do echo "$SUBNET.$i $name$i"; done
  } >"$dir/hosts"
  : >"$dir/hostfile"
  for i in $(seq 1 "$n"); do echo "$name$i slots=$slots" >>"$dir/hostfile"; done
  ip netns add "$name-sw"
  ip -n "$name-sw" link add br0 type bridge
  ip -n "$name-sw" link set br0 up
  for i in $(seq 1 "$n"); do create_host "$name" "$i" "$dir"; done
  echo "$n" >"$dir/count"
  wait_for_ssh "$name" "$n" "$dir"
  echo "testhosts: $n hosts up: $(seq -s ' ' -f "$name%g" 1 "$n") (state in $dir)"
}

cmd_down() {
  local name=$1 dir i
  dir=$(state_dir "$name")
  for pidfile in "$dir"/sshd.*.pid; do
    if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$name([0-9]|-sw)\$" || true); do
    # Processes left in the namespace (a hung rank) would keep it alive.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  rm -rf "$dir"
}

cmd_mpirun() {
  local name=$1; shift
  local dir; dir=$(state_dir "$name")
  host_count "$name" >/dev/null
  # --bind-to none: the hosts share this machine's cores, and Open MPI binds a
  # job of 2 ranks or fewer to a core per node, core 0 on every host: both
  # ends of a link on one core (a link then measures half of what it does
  # in a larger job, and half of fi_rma_bw).
  in_host "$name" 1 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --hostfile "$dir/hostfile" --mca plm_rsh_agent "$dir/rsh" \
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$SUBNET.0/24" \
    --mca oob_tcp_if_include "$SUBNET.0/24" --mca op ^avx "$@"
}

cmd_info() {
  local dir; dir=$(state_dir "$1")
  host_count "$1" >/dev/null
  echo "dir=$dir"
  echo "hostfile=$dir/hostfile"
  echo "rsh=$dir/rsh"
  echo "subnet=$SUBNET.0/24"
  echo "count=$(host_count "$1")"
}

main() {
  [ $# -ge 2 ] || die "usage: testhosts.sh up|down|mpirun|exec|link|info NAME ..."
  local cmd=$1 name=$2; shift 2
  need_root
  valid_name "$name"
  case $cmd in
    up) [ $# -ge 1 ] || die "usage: testhosts.sh up NAME N [SLOTS]"; cmd_up "$name" "$@" ;;
    down) cmd_down "$name" ;;
    mpirun) cmd_mpirun "$name" "$@" ;;
    exec)
      [ $# -ge 2 ] || die "usage: testhosts.sh exec NAME I CMD..."
      local i=$1; shift
      if ! [[ $i =~ ^[1-9]$ ]] || [ "$i" -gt "$(host_count "$name")" ]; then die "no host $name$i"; fi
      in_host "$name" "$i" "$@" ;;
    link)
      [ $# -eq 2 ] || die "usage: testhosts.sh link NAME I up|down"
      ip -n "$name-sw" link set "$name$1-s" "$2" ;;
    info) cmd_info "$name" ;;
    *) die "unknown command '$cmd'; use up, down, mpirun, exec, link or info" ;;
  esac
}

main "$@"
