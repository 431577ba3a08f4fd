#!/usr/bin/env bash
# A run killed mid-sweep keeps every finished size in a valid results file
# marked incomplete: the file is rewritten atomically after each size.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

out=$T_DIR/partial.json
setsid "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1G -f 2 -n 300 -c 0 \
  --backend mpi -J "$out" >"$T_OUT" 2>"$T_ERR" &
pid=$!
rows=0
for _ in $(seq 1 300); do
  sleep 0.2
  if [ -f "$out" ]; then
    rows=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$out" 2>/dev/null || echo bad)
    [ "$rows" = bad ] && break
    [ "$rows" -ge 4 ] && break
  fi
done
kill -9 -- "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [ "$rows" = bad ]; then
  not_ok "results file is valid JSON at every moment" "a read saw an invalid file"
elif [ "$rows" -lt 4 ]; then
  not_ok "results file grows size by size" "only $rows rows after 60 s"
else
  ok "results file is valid JSON while the sweep runs ($rows rows seen)"
fi
if msg=$(/usr/bin/python3 "$FB_ROOT/tests/tools/check_collective.py" "$out" --ranks 2 --incomplete 2>&1); then
  ok "after kill -9: valid against the schema, complete=false, numbers consistent"
else
  not_ok "after kill -9: valid against the schema, complete=false" "$msg"
fi
left=$(find "$T_DIR" -name '.partial.json@*.tmp' | wc -l)
if [ "$left" -le 1 ]; then ok "at most one temporary file left behind"; else not_ok "at most one temporary file left behind" "$left"; fi
