#!/usr/bin/env bash
# Two hosts made of network namespaces joined by a veth link, sshd on each,
# mpirun over ssh: the MPI traffic really crosses a link between hosts.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

# The hosts: scripts/testhosts.sh, through hosts_up (tests/lib.sh).
hosts_up fbc 2 2 "2-host sweep over veth" || exit 0
ok "two namespace hosts with sshd are up"

for c in all_reduce all_gather; do
  out=$T_DIR/$c.json
  run timeout -k 5 300 "$th" mpirun fbc -np 2 --map-by node "$FB_BIN/fabric-coll" "$c" \
    -b 1K -e 16M -f 4 -n 3 -c 1 --backend mpi -J "$out"
  if [ "$T_RC" -ne 0 ]; then
    not_ok "$c across 2 hosts" "exit $T_RC: $(head -c 400 "$T_ERR")"
    continue
  fi
  if msg=$(/usr/bin/python3 "$FB_ROOT/tests/tools/check_collective.py" "$out" --ranks 2 \
      --nodes 2 --rows 8 --complete 2>&1) &&
     /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["hosts"]==["fbc1","fbc2"], d["hosts"]' "$out"; then
    ok "$c across 2 hosts: 2 nodes, hosts fbc1 and fbc2, consistent numbers"
  else
    not_ok "$c across 2 hosts" "$msg"
  fi
done
expect_grep "the table says 2 nodes" '^# fabric-coll .* on 2 ranks, 2 nodes' "$T_OUT"
expect_grep "rank lines name both hosts" '^#  Rank  1 Group  0 Pid +[0-9]+ on +fbc2 ' "$T_OUT"
