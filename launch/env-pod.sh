#!/usr/bin/env bash
# The entry point of an env-launched pod under launch/kubectl.sh --launcher
# env: every process of the job is started by Kubernetes (an Indexed Job,
# JobSet or PyTorchJob pod), not by mpirun, so nothing else would keep rank
# 0's result until the launcher has copied it.
#
#   env-pod.sh DIR CMD...
#
# Rank 0 (RANK, else JOB_COMPLETION_INDEX) makes DIR, which must not exist
# yet, runs CMD with its output also in DIR/run.log, leaves CMD's exit code
# in DIR/rc, then waits for the launcher to create DIR/collected (at most
# FB_COLLECT_WAIT seconds, default 600) and exits with that code. Every
# other rank runs CMD as it is. CMD writes its result into DIR (-J
# DIR/result.json).
# Exit 10 (docs/exit-codes.md) when rank 0 cannot make DIR, 2 for a bad
# usage or FB_COLLECT_WAIT.
set -u
[ $# -ge 2 ] || { echo "env-pod.sh: usage: env-pod.sh DIR CMD..." >&2; exit 2; }
dir=$1
shift
rank=${RANK:-${JOB_COMPLETION_INDEX:-}}
[ "$rank" = 0 ] || exec "$@"

wait_s=${FB_COLLECT_WAIT:-600}
[[ $wait_s =~ ^[0-9]{1,6}$ ]] || { echo "env-pod.sh: FB_COLLECT_WAIT='$wait_s' is not a number of seconds" >&2; exit 2; }
# mkdir without -p: a directory someone made first is never written into.
mkdir -m 700 -- "$dir" || { echo "env-pod.sh: cannot make $dir (it exists, or its parent is not writable): check the launcher's --workdir" >&2; exit 10; }
"$@" 2>&1 | tee "$dir/run.log"
rc=${PIPESTATUS[0]}
echo "$rc" >"$dir/rc.part" && mv -- "$dir/rc.part" "$dir/rc"
deadline=$((SECONDS + wait_s))
while [ ! -e "$dir/collected" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 1; done
[ -e "$dir/collected" ] || echo "env-pod.sh: nobody collected $dir within ${wait_s}s; the result stays in the pod's log only" >&2
exit "$rc"
