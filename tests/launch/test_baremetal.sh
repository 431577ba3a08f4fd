#!/usr/bin/env bash
# launch/baremetal.sh: argument errors, dry-run, then real sweeps across
# network-namespace hosts (scripts/testhosts.sh, host set "fbl") with sshd,
# mpirun and fabric-coll; results land in results/<cluster>/ with the
# fabric's environment applied on every rank.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/baremetal.sh
RES=$T_DIR/results

# ---- arguments (no hosts needed) -----------------------------------------------
expect_exit "no collective is a usage error" 2 "$L" --hosts a,b
expect_one_line "no collective: one line" "$T_ERR"
expect_exit "unknown collective" 2 "$L" --hosts a,b all_reduse
expect_grep "unknown collective names the choices" 'use all_reduce, all_gather' "$T_ERR"
expect_exit "no hosts" 2 "$L" all_reduce
expect_exit "unknown fabric" 2 "$L" --hosts a,b --fabric infiniband all_reduce
expect_grep "unknown fabric lists the fabrics" 'gke-tcpxo.*tcp-baseline' "$T_ERR"
expect_one_line "unknown fabric: one line" "$T_ERR"
expect_exit "missing hostfile" 10 "$L" --hostfile "$T_DIR/nope" all_reduce
expect_exit "bad --bind" 2 "$L" --hosts a,b --bind socket all_reduce
expect_exit "bad --env" 2 "$L" --hosts a,b --env NOEQUALS all_reduce
expect_exit "bad --ranks-per-node" 2 "$L" --hosts a,b --ranks-per-node 0 all_reduce
expect_exit "unknown option" 2 "$L" --hosts a,b --frobnicate all_reduce

# ---- dry run: every command printed, nothing run ----------------------------------
expect_exit "dry run succeeds" 0 "$L" --dry-run --hosts n1,n2 --ranks-per-node 8 --fabric sriov-rdma \
  --cluster dry --results "$RES" -- all_reduce -b 1K -e 16G -f 2
expect_grep "dry run prints mpirun with 16 ranks" 'mpirun --allow-run-as-root -np 16 ' "$T_OUT"
expect_grep "dry run maps 8 ranks per node" 'ppr:8:node --bind-to numa' "$T_OUT"
expect_grep "dry run exports the fabric environment" 'export NCCL_IB_GID_INDEX=3' "$T_OUT"
expect_grep "dry run turns on NCCL INFO for the transport" 'NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET' "$T_OUT"
expect_grep "dry run starts ranks through rank.sh" 'launch/rank.sh .*fabric-coll all_reduce -b 1K -e 16G -f 2 --cluster dry -J "[$]result" --nccl-log' "$T_OUT"
expect_grep "dry run writes results/<cluster>/<stamp>-<collective>.json" 'result=.*/dry/[0-9TZ]+-all_reduce.json log=' "$T_OUT"
expect_grep "dry run checks ssh first" 'ssh_cmd=\(ssh -p 22 ' "$T_OUT"
if [ -e "$RES" ]; then not_ok "dry run writes nothing" "$RES exists"; else ok "dry run writes nothing"; fi

# ---- real hosts ------------------------------------------------------------------
hosts_up fbl 3 "sweeps across namespace hosts"
TH=$FB_ROOT/scripts/testhosts.sh

host_profile fbl-host

# A fabric environment script, as GKE's nccl-env-profile.sh: rank.sh sources
# it on each rank's own host.
cat >"$T_DIR/profile.sh" <<'EOF'
export NCCL_FBL_PROFILE="sourced on $(hostname)"
export NCCL_DEBUG=WARN
EOF

sweep=(--backend mpi -b 1K -e 64K -f 2 -n 3 -w 1)
mpi_extra=(--mpirun-arg=--mca --mpirun-arg=op --mpirun-arg=^avx "${profile_args[@]+"${profile_args[@]}"}")
# Three hosts, one rank each, through ssh with the port and key.
run "$TH" exec fbl 1 timeout 300 "$L" --hosts fbl1,fbl2,fbl3 --ranks-per-node 1 --bind none \
  --ssh-port 2222 --ssh-key "$dir/id_ed25519" --fabric tcp-baseline \
  --env FABRIC_ENV_SCRIPT="$T_DIR/profile.sh" --cluster fbl-bm --results "$RES" "${mpi_extra[@]}" \
  -- all_reduce "${sweep[@]}"
first() { [ -e "$1" ] && echo "$1"; }
result=$(first "$RES"/fbl-bm/*-all_reduce.json)
if [ -n "$result" ]; then
  ok "3-host sweep wrote results/<cluster>/<stamp>-all_reduce.json"
else
  not_ok "3-host sweep wrote results/<cluster>/<stamp>-all_reduce.json" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
  exit 1
fi
judged_run "3-host sweep" "$result"
check "3-host result: hosts fbl1..fbl3, 3 ranks on 3 nodes" \
  jq -e '.hosts == ["fbl1","fbl2","fbl3"] and .topology.ranks == 3 and .topology.nodes == 3' "$result"
check "3-host result: complete, rows measured, no wrong elements" \
  jq -e '.complete == true and (.rows | length) == 7 and .summary.wrong_total == 0' "$result"
check "fabric environment applied (tcp-baseline)" \
  jq -e '.env.FABRIC_NAME == "tcp-baseline" and .env.NCCL_NET == "Socket"' "$result"
check "FABRIC_ENV_SCRIPT sourced by rank.sh on rank 0's host" \
  jq -e '.env.NCCL_FBL_PROFILE == "sourced on fbl1"' "$result"
check "NCCL INFO logging survives the fabric script" jq -e '.env.NCCL_DEBUG == "INFO"' "$result"
check "cluster recorded" jq -e '.cluster == "fbl-bm"' "$result"
expect_grep "mpirun output kept beside the result" '# Avg bus bandwidth' "${result%.json}.log"

# A hostfile with slots=2 on two hosts: 4 ranks, 2 per node, through --rsh.
printf 'fbl2 slots=2\nfbl3 slots=2  # comment\n' >"$T_DIR/hostfile"
run "$TH" exec fbl 1 timeout 300 "$L" --hostfile "$T_DIR/hostfile" --bind none --rsh "$rsh" \
  --cluster fbl-hf --results "$RES" "${mpi_extra[@]}" -- all_gather "${sweep[@]}"
result=$(first "$RES"/fbl-hf/*-all_gather.json)
if [ -n "$result" ] && jq -e '.hosts == ["fbl2","fbl3"] and .topology.ranks == 4 and .topology.ranks_per_node == 2' "$result" >/dev/null; then
  ok "hostfile slots=2 gives 4 ranks on 2 nodes (launched from a third host)"
else
  not_ok "hostfile slots=2 gives 4 ranks on 2 nodes (launched from a third host)" "exit $T_RC: $(tail -c 400 "$T_ERR" | tr '\n' ' ')"
fi

# ---- launch errors, each one line with the fix --------------------------------------
run "$TH" exec fbl 1 "$L" --hosts fbl1,nosuchhost --ssh-port 2222 --ssh-key "$dir/id_ed25519" all_reduce
if [ "$T_RC" -eq 6 ] && grep -q 'host name nosuchhost does not resolve on fbl1' "$T_ERR"; then
  ok "unresolvable host: exit 6, named"
else
  not_ok "unresolvable host: exit 6, named" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
expect_one_line "unresolvable host: one line" "$T_ERR"
start=$SECONDS
run "$TH" exec fbl 1 "$L" --hosts fbl1,fbl2 --ssh-port 2299 --ssh-wait 3 all_reduce
if [ "$T_RC" -eq 6 ] && grep -q 'ssh from fbl1 to fbl1 failed for 3s.*check sshd' "$T_ERR" && [ $((SECONDS - start)) -lt 30 ]; then
  ok "ssh refused: exit 6 within the bound, with the fix"
else
  not_ok "ssh refused: exit 6 within the bound, with the fix" "exit $T_RC after $((SECONDS - start))s: $(head -c 300 "$T_ERR")"
fi
expect_one_line "ssh refused: one line" "$T_ERR"
# A rank whose fabric script is missing stops with a named cause, not a hang.
run "$TH" exec fbl 1 timeout 120 "$L" --hosts fbl1,fbl2 --ranks-per-node 1 --bind none \
  --rsh "$rsh" --env FABRIC_ENV_SCRIPT=/nonexistent/nccl-env-profile.sh --cluster fbl-bad \
  --results "$RES" -- all_reduce "${sweep[@]}"
if [ "$T_RC" -ne 0 ] && grep -q 'FABRIC_ENV_SCRIPT /nonexistent/nccl-env-profile.sh is not readable' "$T_ERR" "$T_OUT"; then
  ok "missing fabric script: the run fails naming it (exit $T_RC)"
else
  not_ok "missing fabric script: the run fails naming it" "exit $T_RC: $(tail -c 300 "$T_ERR")"
fi
