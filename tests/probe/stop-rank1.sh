#!/bin/bash
# stop-rank1.sh CMD...: run under mpirun; rank 1 runs CMD and stops it
# (SIGSTOP) once the results file $STOP_AFTER_FILE holds its first size (a
# minute at most), so a probe meets a peer that stops answering mid-run
# with something measured; every other rank runs CMD as it is.
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
  "$@" & pid=$!
  for _ in $(seq 1 600); do
    jq -e '(.links | length) >= 1' "$STOP_AFTER_FILE" >/dev/null 2>&1 && break
    sleep 0.1
  done
  kill -STOP "$pid"; wait "$pid"
else
  exec "$@"
fi
