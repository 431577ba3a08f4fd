# shellcheck shell=bash
# What the bench scripts that pair two namespace hosts share (bench-ofi.sh,
# bench-verbs.sh): hosts HOSTSET1 and HOSTSET2 up with 2 slots each and a
# scratch directory $work, both removed at exit. Nothing is pinned: users
# do not pin, and a probe must not need it. Source it after setting th
# (scripts/testhosts.sh) and hostset.
# shellcheck disable=SC2154 # th and hostset: set by the script that sources this
work=$(mktemp -d)
# shellcheck disable=SC2154
bench_hosts_cleanup() {
  "$th" down "$hostset" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap bench_hosts_cleanup EXIT
"$th" up "$hostset" 2 2 >/dev/null
