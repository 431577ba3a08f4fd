#!/usr/bin/env bash
# launch/kubectl.sh --launcher env against the stand-in kubectl
# (kubectl-standin.sh): the Indexed Job, PyTorchJob and JobSet of the env
# launch applied, their pods started in network-namespace hosts under the
# GPU stand-in, rank 0's result copied back and judged; no sshd and no
# mpirun anywhere. Also --from under the env launch, and the bounded waits.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state
mkdir -p "$FBL_STATE"
reset_state() {
  # The last workload's pods end first (rank 0 leaves once its result is
  # copied): one that wrote its exit code later would land in the next
  # workload's state. A pod still there after 30 s is ended.
  local f pid
  for f in "$FBL_STATE"/envpod-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill "$pid" 2>/dev/null
  done
  rm -rf "${FBL_STATE:?}"/*
}
on_exit reset_state
applied() { jq -r "$1" "$FBL_STATE/applied.yaml"; }
# newest_result: the result the last run copied back, else nothing.
newest_result() {
  local f last=""
  for f in "$RES"/fbl-test/*-all_reduce.json; do [ -e "$f" ] && last=$f; done
  echo "$last"
}
# expect_no_grep NAME REGEX FILE: FILE has no line matching REGEX.
expect_no_grep() {
  if grep -Eq -- "$2" "$3"; then not_ok "$1" "$(grep -Em 1 -- "$2" "$3" | cut -c1-200)"; else ok "$1"; fi
}

# ---- arguments and dry run (no hosts needed) -------------------------------------------
expect_exit "--launcher with a bad value" 2 "$L" --kubectl "$STANDIN" --launcher pmix all_reduce
expect_grep "--launcher with a bad value names both" 'wants mpi .* or env' "$T_ERR"
expect_exit "--launcher env without --fabric" 2 "$L" --kubectl "$STANDIN" --launcher env --dry-run all_reduce
expect_grep "--launcher env without --fabric lists the fabrics" 'name its fabric with --fabric, one of .*tcp-baseline' "$T_ERR"
expect_exit "--launcher env: -J is the launcher's" 2 "$L" --kubectl "$STANDIN" --launcher env --fabric tcp-baseline --dry-run all_reduce -J x.json
expect_exit "--launcher env: a bad --workload" 2 "$L" --kubectl "$STANDIN" --launcher env --fabric tcp-baseline --workload mpijob --dry-run all_reduce
expect_exit "--launcher env: scan is refused" 2 "$L" --kubectl "$STANDIN" --launcher env scan
expect_one_line "--launcher env: scan is refused in one line" "$T_ERR"
expect_exit "baremetal.sh refuses --launcher env" 2 "$FB_ROOT/launch/baremetal.sh" --launcher env --hosts a,b --dry-run all_reduce

reset_state
run "$L" --kubectl "$STANDIN" --launcher env --fabric gke-tcpxo --dry-run --pods 3 all_reduce -b 1K -e 16G
if [ "$T_RC" -eq 0 ]; then ok "env dry run succeeds"; else not_ok "env dry run succeeds" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
sed -n "/<<'EOF'$/,/^EOF$/p" "$T_OUT" | sed '1d;$d' >"$T_DIR/dry.yaml"
python3 -c 'import json,sys,yaml; print(json.dumps({"items": [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]}))' "$T_DIR/dry.yaml" >"$T_DIR/dry.json" 2>/dev/null
jq_is "env dry run: an Indexed Job of 3 pods, the fabric's TCPXO sidecar kept" "$T_DIR/dry.json" \
  '.items[] | select(.kind == "Job") | .spec | [.completionMode, .completions, .parallelism, ([.template.spec.initContainers[]?.name] | any(test("tcpxo")))]' \
  '["Indexed",3,3,true]'
jq_is "env dry run: WORLD_SIZE 3, MASTER_ADDR pod 0 under the headless Service" "$T_DIR/dry.json" \
  '.items[] | select(.kind == "Job") | .spec.template.spec.containers[] | select(.name == "fabric-bench") | [.env[] | select(.name | IN("WORLD_SIZE","MASTER_ADDR")) | .value]' \
  '["3","fabric-bench-0.fabric-bench"]'
jq_is "env dry run: env-pod.sh runs fabric-coll --launcher env, no sshd" "$T_DIR/dry.json" \
  '.items[] | select(.kind == "Job") | .spec.template.spec.containers[] | select(.name == "fabric-bench") | [(.command[0] | endswith("/launch/env-pod.sh")), (.args | index("--launcher") != null), ((.command + .args) | map(select(test("sshd|mpirun"))) | length)]' \
  '[true,true,0]'
expect_no_grep "env dry run never prints the job's secret" '^  secret: [0-9a-f]{16}' "$T_OUT"

# ---- real pods: namespace hosts, the GPU stand-in ----------------------------------------
standin_built "the env launch through kubectl.sh" || exit 0
hosts_up fbke 2 "the env launch through kubectl.sh"
export FBL_SET=fbke FBL_COUNT=2
common=(--kubectl "$STANDIN" --launcher env --fabric tcp-baseline --pod-root "$FB_ROOT" --pod-bin "$FB_BIN"
  --results "$RES" --workdir "$T_DIR/pod-work" --ranks-per-node 1 --no-capacity-check --wait 60 --deadline 300)
sweep=(-b 1K -e 64K -f 4 -n 3 -c 1 -T 30)
mkdir -p "$T_DIR/pod-work"

# A reference profile for the stand-in's figures (none ships for them), from
# a first run through the launcher, so verdicts come from the real fabric-report.
reset_state
run timeout 400 "$L" "${common[@]}" all_reduce "${sweep[@]}"
first=$(newest_result)
if [ -n "$first" ] && "$FB_BIN/fabric-report" baseline "$first" --name fbke-standin --tolerance 99 \
  -o "$T_DIR/profiles/fbke-standin.json" >/dev/null 2>&1; then
  ok "reference profile from a first env run"
  common+=(--profiles "$T_DIR/profiles" --profile fbke-standin)
else
  not_ok "reference profile from a first env run" "exit $T_RC: $(tail -c 600 "$T_ERR" | tr '\n' ' ')"
fi
rm -f "$first"

# env_case NAME ARGS...: a run through the launcher, its result judged.
env_case() {
  local name=$1
  shift
  reset_state
  run timeout 400 "$L" "${common[@]}" "$@" all_reduce "${sweep[@]}"
  result=$(newest_result)
  if [ -n "$result" ]; then ok "$name: rank 0's result copied back"; else
    not_ok "$name: rank 0's result copied back" "exit $T_RC: $(tail -c 400 "$T_ERR" | tr '\n' ' ') log: $(tail -c 600 "$RES"/fbl-test/*.log 2>/dev/null | tr '\n' ' ')"
    return 1
  fi
  judged_run "$name" "$result"
  jq_is "$name: complete, 2 ranks on the 2 pods' hosts, no wrong element" "$result" \
    '[.complete, .topology.ranks, .topology.nodes, .hosts, ([.rows[] | .out_of_place.wrong, .in_place.wrong] | add)]' \
    '[true,2,2,["fbke1","fbke2"],0]'
  jq_is "$name: the fabric's environment reached the pods" "$result" '.env.FABRIC_NAME' '"tcp-baseline"'
  expect_no_grep "$name: no ssh, no mpirun, no exec but rank 0's checks and copy" 'sshd|mpirun|ssh |exec fabric-bench-1' "$FBL_STATE/calls"
  rm -f "$result"
}

env_case "Indexed Job"
expect_grep "Indexed Job: the job and its Secret deleted at the end" 'delete job/fabric-bench secret/fabric-bench-job' "$FBL_STATE/calls"
jq_is "Indexed Job: the watchdog's secret is the job's own (64 hex digits)" "$FBL_STATE/applied.yaml" \
  '.items[] | select(.kind == "Secret") | .stringData.secret | test("^[0-9a-f]{64}$")' 'true'
cp "$FBL_STATE/applied.yaml" "$T_DIR/first-applied.json"

env_case "PyTorchJob" --workload pytorchjob
if cmp -s <(jq '.items[] | select(.kind == "Secret")' "$T_DIR/first-applied.json") <(applied '.items[] | select(.kind == "Secret")'); then
  not_ok "a new secret per job" "the same Secret twice"; else ok "a new secret per job"; fi
expect_grep "PyTorchJob: the container is pytorch" 'cp -c pytorch fabric-bench-master-0:' "$FBL_STATE/calls"

env_case "JobSet" --workload jobset
expect_grep "JobSet: rank 0 is the replicated job's pod 0" 'cp -c fabric-bench fabric-bench-workers-0-0:' "$FBL_STATE/calls"

# --from under the env launch: the training job's own pod template (a
# PyTorchJob's, EFA devices and all) as an Indexed Job; its sshd never comes.
env_case "--from-file a PyTorchJob" --from-file "$FB_ROOT/tests/fixtures/launch/from/pytorchjob-efa.json" --yes
jq_is "--from: an Indexed Job of the derived template, no sshd, no ssh key, pod 0 as MASTER_ADDR" "$FBL_STATE/applied.yaml" \
  '[.items[] | select(.kind == "Job") | .spec.completionMode, (.spec.template.spec.containers[0] | (.command[0] | endswith("env-pod.sh")), ([.volumeMounts[]?.mountPath] | index("/etc/fabric-bench/ssh")), (.env[] | select(.name == "MASTER_ADDR") | .value))]' \
  "[\"Indexed\",true,null,\"$(applied '.items[] | select(.kind == "Job") | .metadata.name')-0.$(applied '.items[] | select(.kind == "Job") | .metadata.name')\"]"
jq_is "--from: no StatefulSet applied" "$FBL_STATE/applied.yaml" '[.items[] | select(.kind == "StatefulSet")] | length' '0'

# A pod that never starts (3 pods, 2 hosts): rank 0 gives up set-up within
# its -T and the launcher says so, with rank 0's line; bounded, non-zero.
reset_state
start=$SECONDS
run timeout 400 "$L" "${common[@]}" --pods 3 all_reduce -b 1K -e 1K -T 6
took=$((SECONDS - start))
if [ "$T_RC" -eq 6 ] && grep -Eq '2 of 3 ranks joined \(missing: rank 2\); rank 0 of 3 \(.*\) waited at ' "$T_ERR"; then
  ok "a pod that never starts: exit 6, rank 0's line says 2 of 3 joined and names the address"
else
  not_ok "a pod that never starts: exit 6, named" "exit $T_RC after ${took}s: $(head -c 500 "$T_ERR")"
fi
expect_one_line "a pod that never starts: one line" "$T_ERR"
