#!/usr/bin/env bash
# launch/kubectl.sh against a stand-in kubectl (kubectl-standin.sh) whose pods
# are network-namespace hosts: the waits, the checks in the first pod, ssh
# between pods, mpirun, fabric-coll and the copy back are all real. Also the
# per-job key (keygen) and the pod entry point's sshd (pod-sshd.sh).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state
mkdir -p "$FBL_STATE"
reset_state() { rm -f "$FBL_STATE"/*; }

# ---- arguments and dry run (no hosts needed) ---------------------------------------
expect_exit "no collective is a usage error" 2 "$L" --kubectl "$STANDIN"
expect_exit "unknown collective" 2 "$L" --kubectl "$STANDIN" allreduce
expect_exit "bad --wait" 2 "$L" --kubectl "$STANDIN" --wait soon all_reduce
expect_exit "bad --pods" 2 "$L" --kubectl "$STANDIN" --pods 0 all_reduce

reset_state
expect_exit "dry run succeeds" 0 "$L" --kubectl "$STANDIN" --dry-run --pods 2 --fabric gke-tcpxo \
  --ranks-per-node 8 --cluster a3 --results "$RES" all_reduce -b 1K -e 16G -f 2
expect_grep "dry run shows the pod query" 'get pods -l app.kubernetes.io/name=fabric-bench\\?,app.kubernetes.io/component=worker -o json' "$T_OUT"
expect_grep "dry run makes the job's directory with mktemp -d in the first pod" "exec fabric-bench-0 -c fabric-bench -- sh -c .*mktemp\\\\ -d.* sh '' fabric-bench-[0-9TZ]+-all_reduce\\.XXXXXX\$" "$T_OUT"
expect_grep "dry run execs the checks in the first pod" "exec fabric-bench-0 -c fabric-bench -- bash /tmp/fabric-bench-[0-9TZ]+-all_reduce.XXXXXX/preflight.sh" "$T_OUT"
# shellcheck disable=SC2016 # a literal $1 in the printed command
expect_grep "dry run ships the scripts as an argument, not in the command" '-- sh -c cat\\ \\>\\"\\\$1\\" sh /tmp/fabric-bench-[0-9TZ]+-all_reduce\.XXXXXX/run\.sh < run\.sh' "$T_OUT"
expect_grep "dry run runs 16 ranks over the headless names" 'fabric-bench-1.fabric-bench\\ slots=8' "$T_OUT"
expect_grep "dry run mpirun line" "mpirun --allow-run-as-root -np 16 " "$T_OUT"
expect_grep "dry run sources the TCPXO profile per rank" "export FABRIC_ENV_SCRIPT=/usr/local/nvidia/lib64/nccl-env-profile.sh" "$T_OUT"
expect_grep "dry run copies the result back" "cp -c fabric-bench fabric-bench-0:/tmp/fabric-bench-[0-9TZ]+-all_reduce.XXXXXX/.*json .*/a3/[0-9TZ]+-all_reduce.json" "$T_OUT"
expect_grep "dry run removes the job's directory in the pod" "exec fabric-bench-0 -c fabric-bench -- rm -rf -- /tmp/fabric-bench-[0-9TZ]+-all_reduce.XXXXXX$" "$T_OUT"
if [ -s "$FBL_STATE/calls" ]; then not_ok "dry run calls no kubectl" "$(head -n 2 "$FBL_STATE/calls")"; else ok "dry run calls no kubectl"; fi

# ---- keygen: a fresh key per job, only in the Secret --------------------------------
reset_state
expect_exit "keygen stores a key" 0 "$L" --kubectl "$STANDIN" -n bench keygen
A=$FBL_STATE/applied.yaml
if [ -s "$A" ]; then
  jqy() { /usr/bin/python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$A" | jq -r "$1"; }
  check "keygen Secret: fabric-bench-ssh, type ssh-auth, in the namespace" \
    test "$(jqy '[.kind, .metadata.name, .metadata.namespace, .type] | join(" ")')" = "Secret fabric-bench-ssh bench kubernetes.io/ssh-auth"
  jqy '.data["ssh-privatekey"]' | base64 -d >"$T_DIR/k" && chmod 600 "$T_DIR/k"
  if [ "$(ssh-keygen -y -f "$T_DIR/k" | cut -d' ' -f1,2)" = "$(jqy '.data["ssh-publickey"]' | base64 -d | cut -d' ' -f1,2)" ]; then
    ok "keygen Secret: the public key is the private key's"
  else
    not_ok "keygen Secret: the public key is the private key's" "keys differ"
  fi
  cp "$A" "$T_DIR/first.yaml"
  "$L" --kubectl "$STANDIN" -n bench keygen >/dev/null 2>&1
  if cmp -s "$A" "$T_DIR/first.yaml"; then not_ok "keygen makes a new key each time" "same Secret twice"; else ok "keygen makes a new key each time"; fi
else
  not_ok "keygen stores a key" "nothing applied: $(head -c 300 "$T_ERR")"
fi
if grep -rlE 'PRIVATE KEY' "$FB_ROOT/manifests" "$FB_ROOT/launch" >/dev/null 2>&1; then
  not_ok "no private key in manifests/ or launch/" "$(grep -rlE 'PRIVATE KEY' "$FB_ROOT/manifests" "$FB_ROOT/launch")"
else
  ok "no private key in manifests/ or launch/"
fi

# ---- pods not ready: bounded waits, one line with the fix --------------------------------
waits() { # waits NAME SCENARIO REGEX: exit 8 within the bound, one line matching
  local name=$1 start=$SECONDS
  reset_state
  FBL_SCENARIO=$2 run "$L" --kubectl "$STANDIN" --wait 3 all_reduce
  if [ "$T_RC" -eq 8 ] && grep -Eq -- "$3" "$T_ERR" && [ $((SECONDS - start)) -lt 20 ]; then
    ok "$name"
  else
    not_ok "$name" "exit $T_RC after $((SECONDS - start))s: $(head -c 400 "$T_ERR")"
  fi
  expect_one_line "$name: one line" "$T_ERR"
}
waits "pod Pending (unschedulable)" pending 'pod fabric-bench-1 not Ready after 3s \(Pending, unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\): free the resources'
waits "sidecar not Ready (1/2)" sidecar 'pod fabric-bench-0 not Ready after 3s \(1/2 containers ready: tcpxo-daemon .*\): kubectl -n fabric-bench logs fabric-bench-0 -c tcpxo-daemon: RxDM'
waits "no pods" none 'no pods match -l app.kubernetes.io/name=fabric-bench,app.kubernetes.io/component=worker in namespace fabric-bench after 3s: apply the manifests'

# ---- real pods: namespace hosts ----------------------------------------------------------
hosts_up fbl 2 "runs across namespace hosts"
TH=$FB_ROOT/scripts/testhosts.sh
export FBL_COUNT=2

host_profile fbl-host

common=(--kubectl "$STANDIN" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" --ssh-port 2222
  --ssh-key "$dir/id_ed25519" --bind none --results "$RES" --workdir "$T_DIR/pod-work")
sweep=(--backend mpi -b 1K -e 64K -f 2 -n 3 -w 1)

# Pods that become Ready on the third poll: the wait goes on, then the run.
reset_state
FBL_SCENARIO=slow run timeout 300 "$L" "${common[@]}" --wait 30 --mpirun-arg=--mca --mpirun-arg=op \
  --mpirun-arg=^avx "${profile_args[@]+"${profile_args[@]}"}" all_reduce "${sweep[@]}"
first() { [ -e "$1" ] && echo "$1"; }
result=$(first "$RES"/fbl-test/*-all_reduce.json)
if [ -n "$result" ]; then
  ok "run copies the result to results/<context>/<stamp>-all_reduce.json"
else
  not_ok "run copies the result to results/<context>/<stamp>-all_reduce.json" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
  exit 1
fi
judged_run run "$result"
polls=$(cat "$FBL_STATE/polls")
if [ "$polls" -ge 3 ]; then ok "waited for Ready ($polls polls)"; else not_ok "waited for Ready" "$polls polls"; fi
check "result across both pods' hosts" jq -e '.hosts == ["fbl1","fbl2"] and .topology.nodes == 2 and .topology.ranks == 2' "$result"
check "ranks per pod from the pod's GPU limit (1)" jq -e '.topology.ranks_per_node == 1' "$result"
check "fabric from the pods' annotation (tcp-baseline)" jq -e '.env.FABRIC_NAME == "tcp-baseline" and .env.NCCL_NET == "Socket"' "$result"
check "complete sweep, validated" jq -e '.complete == true and .summary.wrong_total == 0 and (.rows | length) == 7' "$result"
check "cluster named after the kubectl context" jq -e '.cluster == "fbl-test"' "$result"
expect_grep "mpirun log copied back" '# Avg bus bandwidth' "${result%.json}.log"
expect_grep "mpirun ran inside the first pod" 'exec fabric-bench-0 -c fabric-bench -- bash .*/run.sh' "$FBL_STATE/calls"

# Launch problems inside the pods: one line, exit 6.
reset_state
FBL_SCENARIO=badname run "$L" "${common[@]}" --wait 10 all_reduce "${sweep[@]}"
if [ "$T_RC" -eq 6 ] && grep -q 'host name nohost-fbl does not resolve on fbl1' "$T_ERR"; then
  ok "pod host name that does not resolve: exit 6, named"
else
  not_ok "pod host name that does not resolve: exit 6, named" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
expect_one_line "pod host name that does not resolve: one line" "$T_ERR"
reset_state
run "$L" "${common[@]}" --ssh-port 2299 --ssh-wait 3 --wait 10 all_reduce "${sweep[@]}"
if [ "$T_RC" -eq 6 ] && grep -q 'ssh from fbl1 to fbl1 failed for 3s' "$T_ERR"; then
  ok "ssh between pods failing: exit 6 within the bound"
else
  not_ok "ssh between pods failing: exit 6 within the bound" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
expect_one_line "ssh between pods failing: one line" "$T_ERR"

# ---- the worker entry point: sshd from the Secret's files -----------------------------------
sec=$T_DIR/secret
mkdir -p "$sec"
ssh-keygen -q -t ed25519 -N '' -f "$sec/k" >/dev/null
mv "$sec/k" "$sec/ssh-privatekey" && mv "$sec/k.pub" "$sec/ssh-publickey"
"$TH" exec fbl 2 env FB_SSH_PORT=2322 FB_SSH_SECRET_DIR="$sec" FB_SSH_RUN_DIR="$T_DIR/podrun" \
  "$FB_ROOT/launch/pod-sshd.sh" >"$T_DIR/podsshd.log" 2>&1 &
on_exit "kill \$(cat '$T_DIR/podrun/sshd.pid' 2>/dev/null) 2>/dev/null"
got=""
# pod-sshd.sh makes a host key and starts sshd first: on busy cores that
# can outlast 50 quick refusals (about 10 s), so up to 150.
for _ in $(seq 1 150); do
  got=$("$TH" exec fbl 1 ssh -p 2322 -i "$T_DIR/podrun/id" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=2 fbl2 hostname 2>/dev/null </dev/null) && break
  sleep 0.2
done
if [ "$got" = fbl2 ]; then ok "pod-sshd.sh: sshd on the port, the Secret's key is authorized"
else not_ok "pod-sshd.sh: sshd on the port, the Secret's key is authorized" "got '$got': $(tail -c 300 "$T_DIR/podsshd.log")"; fi
expect_exit "pod-sshd.sh without the Secret: exit 10" 10 env FB_SSH_SECRET_DIR="$T_DIR/none" FB_SSH_RUN_DIR="$T_DIR/podrun2" "$FB_ROOT/launch/pod-sshd.sh"
expect_grep "pod-sshd.sh without the Secret names the fix" 'launch/kubectl.sh keygen' "$T_ERR"
