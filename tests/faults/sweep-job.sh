# shellcheck shell=bash
# The background sweep job of the fault tests, sourced after tests/lib.sh.
# The test's start_sweep sets $pid (the job, its own process group) and
# $out (its results file); $bound is the test's per-step bound in seconds.
# ($pid, $out and $bound are set by the test; T_RC and $took go back to it)
# shellcheck disable=SC2154,SC2034

# wait_rows N: until the results file holds N rows (or 10 bounds pass).
wait_rows() {
  local n
  for _ in $(seq 1 $((bound * 50))); do
    n=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$out" 2>/dev/null || echo 0)
    [ "$n" -ge "$1" ] && return 0
    sleep 0.2
  done
  return 1
}

# wait_end LIMIT: the job ends within LIMIT seconds; sets T_RC and $took.
wait_end() {
  local start=$SECONDS
  for _ in $(seq 1 $(($1 * 5))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 -- "-$pid" 2>/dev/null
    T_RC=999
  else
    wait "$pid"
    T_RC=$?
  fi
  took=$((SECONDS - start))
}
