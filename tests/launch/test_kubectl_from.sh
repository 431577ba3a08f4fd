#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs in single quotes
# launch/kubectl.sh --from / --from-file / derive: workers derived from a
# training job's pod template (tests/fixtures/launch/from/), against the
# stand-in kubectl. The derived StatefulSet keeps the template but for the
# worker's image, command, args, probes and resources; the wiring checks
# (exit 12), the fields that grant privilege (listed; applied only with
# --yes), the free GPU node gate (exit 11) and, across namespace hosts, a
# run whose result records runtime_source.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
FX=$FB_ROOT/tests/fixtures/launch/from
CTR=$FX/clustertrainingruntime-tcpxo.yaml
export FBL_STATE=$T_DIR/state FBL_ARTIFACTS=$FX
mkdir -p "$FBL_STATE"
reset_state() { rm -f "$FBL_STATE"/*; }
K=(--kubectl "$STANDIN")

# derive_json NAME FILE ARGS...: derive -o json into FILE, exit 0.
derive_json() {
  local name=$1 out=$2; shift 2
  run "$L" "${K[@]}" derive -o json "$@"
  if [ "$T_RC" -eq 0 ] && jq -e '.kind == "List"' "$T_OUT" >/dev/null 2>&1; then
    cp "$T_OUT" "$out"
    ok "$name"
  else
    not_ok "$name" "exit $T_RC: $(head -c 400 "$T_ERR")"
    echo '{"items":[]}' >"$out"
  fi
}
yaml_json() { kubectl patch --local -f "$1" --type merge -p '{}' -o json; }

# ---- a Trainer v2 runtime with GKE TCPXO wiring -------------------------------------
D=$T_DIR/ctr.json
derive_json "derive a ClusterTrainingRuntime from a YAML file" "$D" --from-file "$CTR"
yaml_json "$CTR" | jq '.spec.template.spec.replicatedJobs[] | select(.name == "node") | .template.spec.template' >"$T_DIR/ctr-template.json"
jq '.items[] | select(.kind == "StatefulSet") | .spec.template' "$D" >"$T_DIR/ctr-derived.json"
# The YAML derive prints is the same objects as its JSON, with multi-line
# annotations as block scalars (readable, as kubectl prints them).
run "$L" "${K[@]}" derive --from-file "$CTR"
if [ "$T_RC" -eq 0 ] && grep -q 'networking.gke.io/interfaces: |' "$T_OUT" &&
  /usr/bin/python3 -c 'import json, sys, yaml
sys.exit(0 if list(yaml.safe_load_all(open(sys.argv[1]))) == json.load(open(sys.argv[2]))["items"] else 1)' "$T_OUT" "$D"; then
  ok "derive YAML: the JSON's objects, multi-line values as block scalars"
else
  not_ok "derive YAML: the JSON's objects, multi-line values as block scalars" "exit $T_RC: $(grep -m1 'interfaces:' "$T_OUT") $(head -c 300 "$T_ERR")"
fi

# The template minus what is replaced equals the derived template minus the
# same and minus what fabric-bench adds beside the artifact's own.
# shellcheck disable=SC2016 # a jq program
same_but_worker='
  def replaced($w): .spec.containers[$w] |= del(.image, .command, .args, .resources, .readinessProbe, .livenessProbe, .startupProbe)
                    | del(.spec.restartPolicy);
  def ours: ["app.kubernetes.io/name", "app.kubernetes.io/component", "app.kubernetes.io/instance"];
  def unadded($w):
    .metadata.labels |= with_entries(select(.key as $k | ours | index([$k]) | not))
    | .metadata.annotations |= del(.["fabric-bench/runtime-source"])
    | [.spec.volumes[] | select(.secret.secretName == "fabric-bench-ssh" or .emptyDir == {medium: "Memory", sizeLimit: "16Gi"}) | .name] as $ours
    | .spec.volumes |= map(select(.name as $n | $ours | index([$n]) | not))
    | .spec.containers[$w].volumeMounts |= map(select(.name as $n | $ours | index([$n]) | not))
    | if .spec.volumes == [] then .spec |= del(.volumes) else . end
    | if .spec.containers[$w].volumeMounts == [] then .spec.containers[$w] |= del(.volumeMounts) else . end
    | .spec.containers[$w].env |= map(select(.name | startswith("FB_SSH_") | not))
    | .spec.containers[$w].ports |= map(select(.name != "fb-ssh"))
    | .spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution |= map(select(.labelSelector.matchLabels["app.kubernetes.io/instance"] == null))
    | if .spec.containers[$w].ports == [] then .spec.containers[$w] |= del(.ports) else . end
    | if .spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution == [] then .spec.affinity |= del(.podAntiAffinity) else . end
    | if .spec.affinity == {} then .spec |= del(.affinity) else . end
    | if .metadata.labels == {} then .metadata |= del(.labels) else . end
    | if .metadata.annotations == {} then .metadata |= del(.annotations) else . end;
  ($t[0] | replaced($w)) == (unadded($w) | replaced($w))'
template_kept() { # template_kept NAME TEMPLATE DERIVED WORKER-INDEX
  if jq -e --slurpfile t "$2" --argjson w "$4" "$same_but_worker" "$3" >/dev/null; then ok "$1"
  else not_ok "$1" "the derived template differs beyond the worker's image/command/args/resources and fabric-bench's additions"; fi
}
template_kept "runtime: every annotation, sidecar, volume, env and scheduling field of the template kept" \
  "$T_DIR/ctr-template.json" "$T_DIR/ctr-derived.json" 0
jq 'del(.metadata.annotations["networking.gke.io/default-interface"]) | .spec.initContainers[0].image = "other"' "$T_DIR/ctr-derived.json" >"$T_DIR/ctr-altered.json"
if jq -e --slurpfile t "$T_DIR/ctr-template.json" --argjson w 0 "$same_but_worker" "$T_DIR/ctr-altered.json" >/dev/null; then
  not_ok "the comparison catches a dropped annotation and a changed sidecar" "an altered template passed"
else
  ok "the comparison catches a dropped annotation and a changed sidecar"
fi
jq_is "runtime: the replicated job named node is the one copied (not model-initializer)" "$T_DIR/ctr-derived.json" \
  '[.spec.containers[].name, .metadata.labels.team]' '["node","llm"]'
jq_is "runtime: the worker runs fabric-bench's image and entry point, no args" "$T_DIR/ctr-derived.json" \
  '.spec.containers[0] | [.image, .command, .args]' '["registry.example.com/fabric-bench:0.1.0",["/opt/fabric-bench/launch/pod-sshd.sh"],null]'
jq_is "runtime: resources as fabric-bench asks (cpu, memory, the artifact's 8 GPUs); ephemeral-storage gone" "$T_DIR/ctr-derived.json" \
  '.spec.containers[0].resources' '{"requests":{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"8"},"limits":{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"8"}}'
jq_is "runtime: the training program's probe replaced by sshd's" "$T_DIR/ctr-derived.json" \
  '.spec.containers[0].readinessProbe' '{"tcpSocket":{"port":222},"periodSeconds":5}'
check "runtime: the tcpxo-daemon native sidecar and the TCPXO annotations unchanged" \
  jq -e --slurpfile t "$T_DIR/ctr-template.json" '.spec.initContainers == $t[0].spec.initContainers
    and .metadata.annotations["networking.gke.io/interfaces"] == $t[0].metadata.annotations["networking.gke.io/interfaces"]
    and .metadata.annotations["devices.gke.io/container.tcpxo-daemon"] == $t[0].metadata.annotations["devices.gke.io/container.tcpxo-daemon"]
    and .spec.initContainers[0].restartPolicy == "Always"' "$T_DIR/ctr-derived.json"
check "runtime: NCCL env and IPC_LOCK of the worker kept" \
  jq -e '.spec.containers[0] | (.env | map(.name) | index("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY")) != null
    and .securityContext.capabilities.add == ["IPC_LOCK"]' "$T_DIR/ctr-derived.json"
jq_is "runtime: volume name collision: the artifact's ssh-key kept, fabric-bench's renamed fb-ssh-key" "$T_DIR/ctr-derived.json" \
  '[(.spec.volumes[] | select(.name | test("ssh-key")) | [.name, .secret.secretName]), (.spec.containers[0].volumeMounts[] | select(.name | test("ssh-key")) | [.name, .mountPath])]' \
  '[["ssh-key","repo-deploy-key"],["fb-ssh-key","fabric-bench-ssh"],["ssh-key","/root/.ssh"],["fb-ssh-key","/etc/fabric-bench/ssh"]]'
jq_is "runtime: /dev/shm already mounted: the artifact's dshm stays, none added" "$T_DIR/ctr-derived.json" \
  '[.spec.volumes[] | select(.emptyDir) | [.name, .emptyDir.sizeLimit]]' '[["dshm","250Gi"]]'
jq_is "runtime: StatefulSet fabric-bench-from-<name>, 2 pods, labels, runtime-source annotation" "$D" \
  '.items[] | select(.kind == "StatefulSet") | [.metadata.name, .spec.replicas, .spec.serviceName, .spec.selector.matchLabels["app.kubernetes.io/instance"], .metadata.annotations["fabric-bench/runtime-source"], .spec.template.spec.restartPolicy]' \
  '["fabric-bench-from-torch-distributed-tcpxo",2,"fabric-bench-from-torch-distributed-tcpxo","from-torch-distributed-tcpxo","delivered:ClusterTrainingRuntime//torch-distributed-tcpxo@3","Always"]'
jq_is "runtime: headless Service over the instance's pods" "$D" \
  '.items[] | select(.kind == "Service") | [.spec.clusterIP, .spec.publishNotReadyAddresses, .spec.selector["app.kubernetes.io/instance"]]' \
  '["None",true,"from-torch-distributed-tcpxo"]'
jq_is "runtime: one pod per node (anti-affinity added beside the node affinity)" "$T_DIR/ctr-derived.json" \
  '[.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey, (.spec.affinity.nodeAffinity != null)]' '["kubernetes.io/hostname",true]'

# The same object read from the cluster: the same manifest.
reset_state
derive_json "derive --from clustertrainingruntime/NAME (kubectl get, cluster-scoped)" "$T_DIR/ctr-get.json" \
  --from ClusterTrainingRuntimes.trainer.kubeflow.org/torch-distributed-tcpxo --pods 3 --image reg.example/fb:2
expect_grep "the runtime is read cluster-scoped" '^kubectl get clustertrainingruntimes.trainer.kubeflow.org torch-distributed-tcpxo -o json$' "$FBL_STATE/calls"
check "--pods and --image reach the derived StatefulSet; otherwise the file's manifest" \
  jq -e --slurpfile f "$D" '(.items[1].spec.replicas == 3) and (.items[1].spec.template.spec.containers[0].image == "reg.example/fb:2")
    and ((.items[1] | .spec.replicas = 2 | .spec.template.spec.containers[0].image = "registry.example.com/fabric-bench:0.1.0") == $f[0].items[1])' "$T_DIR/ctr-get.json"
run "$L" "${K[@]}" derive --from-file "$CTR"
if [ "$T_RC" -eq 0 ] && python3 -c 'import sys, yaml; d = list(yaml.safe_load_all(sys.stdin)); assert [o["kind"] for o in d] == ["Service", "StatefulSet"]' <"$T_OUT"; then
  ok "derive prints YAML by default (Service, StatefulSet)"
else
  not_ok "derive prints YAML by default (Service, StatefulSet)" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi

# ---- PyTorchJob with EFA, Deployment with SR-IOV, a running Pod ------------------------
P=$T_DIR/ptj.json
derive_json "derive --from pytorchjob/NAME -n NS" "$P" -n train --from pytorchjob/llama-efa
jq '.spec.pytorchReplicaSpecs.Worker.template' "$FX/pytorchjob-efa.json" >"$T_DIR/ptj-template.json"
jq '.items[1].spec.template' "$P" >"$T_DIR/ptj-derived.json"
template_kept "PyTorchJob: the Worker template kept but for the worker's four fields" "$T_DIR/ptj-template.json" "$T_DIR/ptj-derived.json" 0
jq_is "PyTorchJob: EFA devices and hugepages kept, cpu and memory replaced" "$T_DIR/ptj-derived.json" \
  '.spec.containers[0].resources' '{"requests":{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"8","hugepages-2Mi":"5120Mi","vpc.amazonaws.com/efa":"32"},"limits":{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"8","hugepages-2Mi":"5120Mi","vpc.amazonaws.com/efa":"32"}}'
jq_is "PyTorchJob: restartPolicy OnFailure becomes Always; fabric-bench's ssh volume added as ssh-key" "$T_DIR/ptj-derived.json" \
  '[.spec.restartPolicy, [.spec.volumes[].name]]' '["Always",["shm","ssh-key"]]'
jq_is "PyTorchJob: runtime source names the namespace and generation" "$P" \
  '.items[1].metadata.annotations["fabric-bench/runtime-source"]' '"delivered:PyTorchJob/train/llama-efa@2"'

S=$T_DIR/deploy.json
derive_json "derive a Deployment (JSON file)" "$S" --from-file "$FX/deployment-sriov.json" --ranks-per-node 2
jq '.spec.template' "$FX/deployment-sriov.json" >"$T_DIR/deploy-template.json"
jq '.items[1].spec.template' "$S" >"$T_DIR/deploy-derived.json"
template_kept "Deployment: the template kept but for the GPU container's four fields" "$T_DIR/deploy-template.json" "$T_DIR/deploy-derived.json" 1
jq_is "Deployment: the container asking for GPUs is the worker, the sidecar untouched" "$T_DIR/deploy-derived.json" \
  '[.spec.containers[] | [.name, .image]]' '[["metrics","example/exporter:1"],["main","registry.example.com/fabric-bench:0.1.0"]]'
jq_is "Deployment: --ranks-per-node sets the GPUs; nvidia.com/rdma_vf kept; dshm and ssh volumes added" "$T_DIR/deploy-derived.json" \
  '[.spec.containers[1].resources.limits, [.spec.volumes[].name]]' '[{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"2","nvidia.com/rdma_vf":"2"},["ssh-key","dshm"]]'

O=$T_DIR/pod.json
derive_json "derive --from pod/NAME (a running pod)" "$O" --from po/bert-worker-0
jq_is "Pod: server fields dropped (nodeName, hostname, priority, the token volume, controller labels, network-status)" "$O" \
  '.items[1].spec.template | [(.spec | has("nodeName") or has("hostname") or has("subdomain") or has("priority") or has("serviceAccount")), [.spec.volumes[].name], [.spec.containers[0].volumeMounts[].name], .metadata.labels.app, (.metadata.labels | has("job-name") or has("controller-uid") or has("batch.kubernetes.io/job-name")), (.metadata.annotations | keys)]' \
  '[false,["data","ssh-key","dshm"],["data","ssh-key","dshm"],"bert",false,["fabric-bench/runtime-source","k8s.v1.cni.cncf.io/networks"]]'
jq_is "Pod: rdma/ device kept, GPU count from the pod; no generation" "$O" \
  '.items[1] | [.spec.template.spec.containers[0].resources.limits, .metadata.annotations["fabric-bench/runtime-source"]]' \
  '[{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"1","rdma/rdma_shared_device_a":"1"},"delivered:Pod/fabric-bench/bert-worker-0@-"]'

# ---- Kubernetes' schema ------------------------------------------------------------------
node_ready=0
if command -v node >/dev/null && node_modules_ready; then
  node_ready=1
else
  not_ok "validators installed (tests/node_modules)" "node or npm ci failed: $(tail -n 3 "$T_DIR/npm.log" 2>/dev/null | tr '\n' ' ')"
fi
if [ "$node_ready" = 1 ]; then
  for f in ctr ptj deploy pod; do node "$FB_ROOT/tests/launch/check-derived.mjs" "derived from $f" "$T_DIR/$f.json"; done
  jq '.items[1].spec.template.spec.restartPolicyy = "Always"' "$D" >"$T_DIR/bad.json"
  if node "$FB_ROOT/tests/launch/check-derived.mjs" bad "$T_DIR/bad.json" >/dev/null 2>&1; then
    not_ok "the schema check refuses a misspelt template field" "restartPolicyy passed"
  else
    ok "the schema check refuses a misspelt template field"
  fi
fi

# ---- bad input -----------------------------------------------------------------------------
expect_error "--from without a slash: exit 2" 2 "wants KIND/NAME" kubectl.sh "$L" "${K[@]}" derive --from clustertrainingruntime
expect_error "--from with an unknown kind: exit 2" 2 "unknown kind 'widget'" kubectl.sh "$L" "${K[@]}" derive --from widget/x
expect_error "--from with a bad name: exit 2" 2 "is not a Kubernetes object name" kubectl.sh "$L" "${K[@]}" --from pod/Bad_Name all_reduce
expect_error "--yes without an artifact: exit 2" 2 "and --yes go with --from or --from-file" kubectl.sh "$L" "${K[@]}" --dry-run --yes all_reduce
expect_error "--from and --from-file together: exit 2" 2 "give one of them" kubectl.sh "$L" "${K[@]}" derive --from pod/a --from-file "$CTR"
expect_error "--from-job naming no replicated job: exit 10" 10 "no replicated job of that name, only model-initializer, node" kubectl.sh \
  "$L" "${K[@]}" derive --from-file "$CTR" --from-job trainer
expect_error "an artifact that does not exist: exit 10, named" 10 "ClusterTrainingRuntime nope not found (cluster-scoped)" kubectl.sh \
  "$L" "${K[@]}" derive --from ctr/nope
expect_error "a file that does not exist: exit 10" 10 "is not a readable file" kubectl.sh "$L" "${K[@]}" derive --from-file "$T_DIR/none.yaml"
printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}\n' >"$T_DIR/cm.json"
expect_error "an artifact with no pod template: exit 10" 10 "kind ConfigMap has no pod template" kubectl.sh "$L" "${K[@]}" derive --from-file "$T_DIR/cm.json"

# ---- privilege: listed before anything is applied, applied only with --yes --------------------
# A Deployment that asks for the host: every such field is named, the
# fabric's own IPC_LOCK and the runtime's default capabilities are not.
jq '.spec.template.spec |= (.hostPID = true | .hostNetwork = true | .hostIPC = true | .serviceAccountName = "builder"
      | .volumes += [{name: "root", hostPath: {path: "/"}}]
      | .initContainers = [{name: "setup", image: "busybox", securityContext: {privileged: true}}]
      | .containers[1].securityContext = {capabilities: {add: ["IPC_LOCK", "CHOWN", "SYS_ADMIN"]},
          allowPrivilegeEscalation: true, runAsUser: 0}
      | .containers[1].volumeMounts += [{name: "root", mountPath: "/host"}])' \
  "$FX/deployment-sriov.json" >"$T_DIR/privileged.json"
want_listed=('pod: hostNetwork: true' 'pod: hostPID: true' 'pod: hostIPC: true'
  'pod: serviceAccountName: builder' 'pod: volume root: hostPath /, mounted by main at /host'
  'init container setup: securityContext.privileged: true' 'container main: securityContext.capabilities.add: SYS_ADMIN$'
  'container main: securityContext.allowPrivilegeEscalation: true' 'container main: securityContext.runAsUser: 0')
listed() { # listed NAME FILE: FILE names each of want_listed, once, after the header
  local w missing=()
  for w in "${want_listed[@]}"; do [ "$(grep -c "^kubectl.sh:   $w" "$2")" -eq 1 ] || missing+=("$w"); done
  if [ ${#missing[@]} -eq 0 ] && grep -q '^kubectl.sh: the derived workers grant privilege .*only with --yes:$' "$2" &&
    [ "$(grep -c '^kubectl.sh:   ' "$2")" -eq ${#want_listed[@]} ]; then ok "$1"
  else not_ok "$1" "missing: ${missing[*]:-none}; got: $(grep '^kubectl.sh:' "$2" | head -c 600 | tr '\n' '|')"; fi
}
reset_state
run "$L" "${K[@]}" derive -o json --from-file "$T_DIR/privileged.json"
if [ "$T_RC" -eq 0 ] && jq -e '.items[1].spec.template.spec.hostPID == true' "$T_OUT" >/dev/null; then
  ok "derive of a privileged artifact: exit 0, the manifest on stdout as the artifact has it"
else
  not_ok "derive of a privileged artifact: exit 0, the manifest on stdout" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
listed "derive lists every field that grants privilege on stderr, one line each" "$T_ERR"
reset_state
run "$L" "${K[@]}" --from-file "$T_DIR/privileged.json" --wait 600 all_reduce
if [ "$T_RC" -eq 2 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] &&
  grep -q '^kubectl.sh: the derived workers grant privilege (9 fields, listed above): .*pass --yes to apply them$' "$T_ERR"; then
  ok "a run without --yes: exit 2, one line on stderr"
else
  not_ok "a run without --yes: exit 2, one line on stderr" "exit $T_RC: $(head -c 400 "$T_ERR")"
fi
listed "a run without --yes lists them first" "$T_OUT"
if [ ! -e "$FBL_STATE/applied.yaml" ] && ! grep -q 'get nodes' "$FBL_STATE/calls" 2>/dev/null; then
  ok "a run without --yes applies nothing and asks the cluster nothing"
else
  not_ok "a run without --yes applies nothing and asks the cluster nothing" "$(head -n 3 "$FBL_STATE/calls" | tr '\n' '|')"
fi
reset_state
run "$L" "${K[@]}" --dry-run --from-file "$T_DIR/privileged.json" all_reduce
if [ "$T_RC" -eq 0 ] && grep -q '^hostPID: true' <(sed -n '/apply -f -/,/^EOF/p' "$T_OUT" | sed 's/^ *//'); then
  ok "dry run without --yes: exit 0, prints the manifest it would apply"
else
  not_ok "dry run without --yes: exit 0, prints the manifest it would apply" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
listed "the dry run lists them" "$T_OUT"
reset_state
FBL_SCENARIO=pending run "$L" "${K[@]}" --from-file "$T_DIR/privileged.json" --yes --no-capacity-check --wait 3 all_reduce
if [ "$T_RC" -eq 8 ] && jq -e '.items[1].spec.template.spec | .hostPID and .initContainers[0].securityContext.privileged' \
  "$FBL_STATE/applied.yaml" >/dev/null 2>&1; then
  ok "--yes applies them as listed (then waits: exit 8 on a Pending pod)"
else
  not_ok "--yes applies them as listed" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
# GKE TCPXO's own needs are listed too, and --yes (above) applies them.
run "$L" "${K[@]}" derive -o json --from-file "$CTR"
want_listed=('pod: serviceAccountName: trainer' 'pod: volume nvtcpxo-libraries: hostPath /home/kubernetes/bin/nvidia, mounted by tcpxo-daemon at /usr/local/nvidia, node at /usr/local/nvidia$'
  'pod: volume sys: hostPath /sys, mounted by tcpxo-daemon at /hostsysfs$' 'pod: volume proc-sys: hostPath /proc/sys,'
  'pod: volume aperture-devices: hostPath /dev/aperture_devices,' 'sidecar tcpxo-daemon: securityContext.capabilities.add: NET_ADMIN$')
listed "TCPXO runtime: the daemon's host mounts and NET_ADMIN, the service account; not NET_BIND_SERVICE or IPC_LOCK" "$T_ERR"
run "$L" "${K[@]}" derive -o json --from-file "$FX/deployment-sriov.json"
if [ "$T_RC" -eq 0 ] && [ ! -s "$T_ERR" ]; then ok "an artifact with IPC_LOCK alone: nothing listed"
else not_ok "an artifact with IPC_LOCK alone: nothing listed" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi

# ---- what a template carries that is wiring, and what ties it to its job ---------------------------
# A Job made from the Deployment: device resources under names no list
# knows, the marks its controller, a JobSet and Volcano put on its pods, and
# a deadline a StatefulSet refuses.
jq '.kind = "Job" | .apiVersion = "batch/v1" | .metadata.name = "sriov-job"
    | .spec = {template: .spec.template}
    | .spec.template.metadata.labels += {"controller-uid": "0c1d", "job-name": "sriov-job",
        "batch.kubernetes.io/job-name": "sriov-job", "jobset.sigs.k8s.io/jobset-name": "train"}
    | .spec.template.metadata.annotations += {"scheduling.k8s.io/group-name": "train-pg"}
    | .spec.template.spec.activeDeadlineSeconds = 3600
    | .spec.template.spec.containers[1].resources.limits += {"nvidia.com/sriov_rdma_vf": "4",
        "nvidia.com/hostdev": "2", "networking.gke.io.networks/rdma-0": "1", "ephemeral-storage": "1Ti"}' \
  "$FX/deployment-sriov.json" >"$T_DIR/job.json"
derive_json "derive a Job" "$T_DIR/job-derived.json" --from-file "$T_DIR/job.json"
jq '.items[] | select(.kind == "StatefulSet") | .spec.template' "$T_DIR/job-derived.json" >"$T_DIR/job-tpl.json"
check "every device resource kept, whatever its name" jq -e '.spec.containers[1].resources.limits
  | .["nvidia.com/sriov_rdma_vf"] == "4" and .["nvidia.com/hostdev"] == "2"
    and .["networking.gke.io.networks/rdma-0"] == "1" and .["nvidia.com/rdma_vf"] == "2"
    and (has("ephemeral-storage") | not)' "$T_DIR/job-tpl.json"
check "the Job's, JobSet's and PodGroup's marks are not copied" jq -e '(.metadata.labels | has("controller-uid") or has("job-name")
    or has("batch.kubernetes.io/job-name") or has("jobset.sigs.k8s.io/jobset-name") | not)
  and (.metadata.annotations | has("scheduling.k8s.io/group-name") | not)' "$T_DIR/job-tpl.json"
check "a Job's activeDeadlineSeconds does not reach the StatefulSet" jq -e '.spec | has("activeDeadlineSeconds") | not' "$T_DIR/job-tpl.json"
# A Trainer v2 runtime leaves the GPUs to each TrainJob.
yaml_json "$CTR" | jq 'del(.spec.template.spec.replicatedJobs[].template.spec.template.spec.containers[].resources)' >"$T_DIR/ctr-nogpu.json"
expect_error "a worker without GPUs and no --ranks-per-node: exit 2" 2 "asks no nvidia.com/gpu .*pass --ranks-per-node N" \
  kubectl.sh "$L" "${K[@]}" derive --from-file "$T_DIR/ctr-nogpu.json"
expect_exit "the same with --ranks-per-node 8" 0 "$L" "${K[@]}" derive --from-file "$T_DIR/ctr-nogpu.json" --ranks-per-node 8

# ---- the delivered wiring is compared, never repaired --------------------------------------------
expect_exit "--gpu-nics that agrees with the runtime's interfaces" 0 "$L" "${K[@]}" derive --from-file "$CTR" --gpu-nics "$FX/gpu-nics-match.yaml"
expect_error "--gpu-nics mapping eth3 elsewhere: exit 12, the interface and both networks named" 12 \
  "mismatch: interface eth3 is on network gpu-nic-2 in the delivered wiring (ClusterTrainingRuntime/torch-distributed-tcpxo), on gpu-nic-9 in --gpu-nics .*gpu-nics-other.yaml: the delivered wiring is not repaired" \
  kubectl.sh "$L" "${K[@]}" --from-file "$CTR" --gpu-nics "$FX/gpu-nics-other.yaml" all_reduce
expect_error "--gpu-nics against an artifact without the interfaces annotation: exit 12" 12 \
  "has no networking.gke.io/interfaces annotation" kubectl.sh "$L" "${K[@]}" derive --from-file "$FX/deployment-sriov.json" --gpu-nics "$FX/gpu-nics-match.yaml"
expect_exit "--networks that agrees with the Multus annotation (any order, @iface ignored)" 0 \
  "$L" "${K[@]}" derive --from-file "$FX/deployment-sriov.json" --networks sriov-rdma-b,sriov-rdma-a
expect_error "--networks that differs: exit 12" 12 "attaches the networks fabric-bench/sriov-rdma-a,fabric-bench/sriov-rdma-b (k8s.v1.cni.cncf.io/networks), --networks says fabric-bench/sriov-rdma-a" \
  kubectl.sh "$L" "${K[@]}" derive --from-file "$FX/deployment-sriov.json" --networks sriov-rdma-a
# A name qualified with the pods' namespace is the same network; a repeat is
# one more interface, not the same wiring.
expect_exit "--networks qualified with the namespace: the same wiring" 0 \
  "$L" "${K[@]}" derive --from-file "$FX/deployment-sriov.json" --networks fabric-bench/sriov-rdma-a,sriov-rdma-b
expect_error "--networks naming one network twice: exit 12" 12 "--networks says fabric-bench/sriov-rdma-a,fabric-bench/sriov-rdma-a,fabric-bench/sriov-rdma-b" \
  kubectl.sh "$L" "${K[@]}" derive --from-file "$FX/deployment-sriov.json" --networks sriov-rdma-a,sriov-rdma-a,sriov-rdma-b

# expect_listed_error NAME CODE PATTERN CMD...: as expect_error, for a run
# with --yes: its stdout holds the privilege listing and nothing else.
expect_listed_error() {
  local name=$1 code=$2 pattern=$3
  shift 3
  run "$@"
  if [ "$T_RC" -eq "$code" ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] && grep -q -- "^kubectl.sh: .*$pattern" "$T_ERR" &&
    grep -q '^kubectl.sh: the derived workers grant privilege' "$T_OUT" && ! grep -qv '^kubectl.sh: ' "$T_OUT"; then
    ok "$name"
  else
    not_ok "$name" "exit $T_RC, expected $code: $(head -c 400 "$T_ERR") | stdout: $(grep -v '^kubectl.sh: ' "$T_OUT" | head -c 200)"
  fi
}

# ---- two free GPU nodes ----------------------------------------------------------------------------
# capacity.jq counts every pod it is given (the launcher leaves its own out
# first): fabric-bench-0 on gpu-e holds its 8 GPUs here.
if out=$(bash -c '. "$1/launch/lib.sh"; fb_free_gpu_nodes "$2/nodes-busy.json" "$2/pods-busy.json" 8' sh "$FB_ROOT" "$FX"); then
  want=$'gpu-a\t4 of 8 GPUs free, needs 8\ngpu-b\tcordoned\ngpu-c\tnot Ready (False)\ngpu-d\ttainted node.kubernetes.io/unreachable:NoExecute\ngpu-e\t0 of 8 GPUs free, needs 8\n-\t1 node without GPUs'
  if [ "$out" = "$want" ]; then ok "free GPU nodes: cordoned, not Ready, tainted, GPUs in use (finished pods not counted)"
  else not_ok "free GPU nodes: the rule on the fixtures" "got $(printf '%s' "$out" | tr '\t\n' ' |')"; fi
else
  not_ok "free GPU nodes: the rule on the fixtures" "fb_free_gpu_nodes failed"
fi
out=$(bash -c '. "$1/launch/lib.sh"; fb_free_gpu_nodes "$2/nodes-busy.json" "$2/pods-busy.json" 4' sh "$FB_ROOT" "$FX" | grep -c $'\tfree$')
if [ "$out" = 1 ]; then ok "free GPU nodes: 4 GPUs free on gpu-a is enough for a worker of 4"; else not_ok "free GPU nodes: a worker of 4" "$out free"; fi

reset_state
start=$SECONDS
FBL_NODES=$FX/nodes-busy.json FBL_ALL_PODS=$FX/pods-busy.json \
  expect_listed_error "fewer than two free GPU nodes: exit 11 at once, every node's reason" 11 \
  "skipped: needs two free GPU nodes (gpu-a: 4 of 8 GPUs free, needs 8; gpu-b: cordoned; gpu-c: not Ready (False); gpu-d: tainted node.kubernetes.io/unreachable:NoExecute; gpu-e: free; 1 node without GPUs) with 8 GPUs each" \
  "$L" "${K[@]}" --from-file "$CTR" --yes --wait 600 all_reduce
if [ $((SECONDS - start)) -lt 15 ]; then ok "exit 11 within seconds, not --wait"; else not_ok "exit 11 within seconds" "$((SECONDS - start))s"; fi
if [ -e "$FBL_STATE/applied.yaml" ]; then not_ok "skipped: nothing applied" "$(head -c 200 "$FBL_STATE/applied.yaml")"; else ok "skipped: nothing applied"; fi
reset_state
FBL_NODES=$FX/nodes-busy.json FBL_ALL_PODS=$FX/pods-busy.json \
  expect_error "the same cluster, plain workers: exit 11 too" 11 "skipped: needs two free GPU nodes" kubectl.sh "$L" "${K[@]}" --ranks-per-node 8 --wait 600 all_reduce

# Pods the run selects (-l) hold their GPUs for this run, labelled as they
# may be: two nodes whose GPUs only the selected workers hold are free.
jq -n '{kind: "List", items: [range(2) | {metadata: {name: "fabric-bench-\(.)", namespace: "fabric-bench",
  labels: {app: "nccl-test"}}, spec: {nodeName: "gpu-node-\(.)", containers: [{name: "nccl",
  resources: {limits: {"nvidia.com/gpu": "8"}}}]}, status: {phase: "Running"}}]}' >"$T_DIR/own-pods.json"
reset_state
FBL_ALL_PODS=$T_DIR/own-pods.json FBL_SCENARIO=pending \
  run "$L" "${K[@]}" -l app=nccl-test --ranks-per-node 8 --wait 3 all_reduce
if [ "$T_RC" -eq 8 ]; then ok "the selected workers' own GPUs do not make their nodes busy (waited, exit 8 on a Pending pod)"
else not_ok "the selected workers' own GPUs do not make their nodes busy" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi

# Another run's fabric-bench workers hold their GPUs: only this run's own
# pods are left out.
jq -n '{kind: "List", items: [range(2) | {metadata: {name: "other-\(.)", namespace: "bench",
  labels: {"app.kubernetes.io/name": "fabric-bench", "app.kubernetes.io/component": "worker"}},
  spec: {nodeName: "gpu-node-\(.)", containers: [{name: "fabric-bench",
  resources: {limits: {"nvidia.com/gpu": "8"}}}]}, status: {phase: "Running"}}]}' >"$T_DIR/other-run.json"
reset_state
FBL_ALL_PODS=$T_DIR/other-run.json \
  expect_listed_error "another run's fabric-bench workers hold their nodes: exit 11" 11 "gpu-node-0: 0 of 8 GPUs free" \
  "$L" "${K[@]}" --from-file "$CTR" --yes --wait 600 all_reduce
reset_state
expect_listed_error "--pods 3 on two free nodes: exit 11, three needed" 11 "skipped: needs 3 free GPU nodes (--pods 3)" \
  "$L" "${K[@]}" --from-file "$CTR" --yes --pods 3 --wait 600 all_reduce

# --no-capacity-check: applied, waited for under the instance's selector, deleted at exit.
reset_state
FBL_SCENARIO=pending FBL_NODES=$FX/nodes-busy.json FBL_ALL_PODS=$FX/pods-busy.json \
  run "$L" "${K[@]}" --from-file "$CTR" --yes --no-capacity-check --wait 3 all_reduce
if [ "$T_RC" -eq 8 ] && grep -q 'pod fabric-bench-from-torch-distributed-tcpxo-1 not Ready after 3s' "$T_ERR"; then
  ok "--no-capacity-check: applied and waited for (exit 8 on a Pending pod)"
else
  not_ok "--no-capacity-check: applied and waited for" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
check "the applied objects are the derived manifest" jq -e --slurpfile d "$D" '. == $d[0]' "$FBL_STATE/applied.yaml"
expect_grep "the wait selects the instance's pods" 'get pods -l app.kubernetes.io/name=fabric-bench,app.kubernetes.io/instance=from-torch-distributed-tcpxo -o json' "$FBL_STATE/calls"
if [ "$(tr '\n' ' ' <"$FBL_STATE/deleted" 2>/dev/null)" = "statefulset/fabric-bench-from-torch-distributed-tcpxo service/fabric-bench-from-torch-distributed-tcpxo " ]; then
  ok "the derived StatefulSet and Service are deleted at exit"
else
  not_ok "the derived StatefulSet and Service are deleted at exit" "deleted: $(cat "$FBL_STATE/deleted" 2>/dev/null)"
fi
reset_state
FBL_SCENARIO=pending run "$L" "${K[@]}" --from-file "$CTR" --yes --keep --wait 3 all_reduce
if [ -s "$FBL_STATE/applied.yaml" ] && [ ! -e "$FBL_STATE/deleted" ]; then ok "--keep leaves them"; else not_ok "--keep leaves them" "exit $T_RC, deleted: $(cat "$FBL_STATE/deleted" 2>/dev/null)"; fi

# Dry run: the manifest and the apply are printed, nothing is applied.
reset_state
run "$L" "${K[@]}" --dry-run --from-file "$CTR" --pods 2 all_reduce -b 1K -e 1K
if [ "$T_RC" -eq 0 ] && grep -q '^kind: StatefulSet' "$T_OUT" && grep -q 'apply -f -' "$T_OUT" &&
  grep -q 'exec fabric-bench-from-torch-distributed-tcpxo-0 -c node -- ' "$T_OUT" &&
  grep -q 'runtime-source delivered:ClusterTrainingRuntime//torch-distributed-tcpxo@3' "$T_OUT" &&
  ! grep -qE 'kubectl (apply|get|delete)' "$FBL_STATE/calls"; then
  ok "dry run prints the manifest, runs in the worker container and passes --runtime-source; applies nothing"
else
  not_ok "dry run prints the manifest and applies nothing" "exit $T_RC: $(head -c 300 "$T_ERR") $(head -n 3 "$FBL_STATE/calls" 2>/dev/null)"
fi

# ---- a run across namespace hosts: runtime_source in the result ----------------------------------
hosts_up fbr 2 "runs under the derived workers"
export FBL_SET=fbr FBL_COUNT=2
host_profile fbr-host
common=("${K[@]}" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" --ssh-port 2222 --ssh-key "$dir/id_ed25519"
  --bind none --results "$T_DIR/results" --workdir "$T_DIR/pod-work" --cluster fromtest "${profile_args[@]+"${profile_args[@]}"}")
sweep=(--backend mpi -b 1K -e 4K -f 2 -n 2 -w 1)
first() { local f; for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; }

reset_state
run timeout 300 "$L" "${common[@]}" --from-file "$CTR" --yes --ranks-per-node 1 --wait 30 all_reduce "${sweep[@]}"
result=$(first "$T_DIR"/results/fromtest/*-all_reduce.json)
if [ -n "$result" ]; then
  ok "run under the derived workers writes a result"
  jq_is "result: runtime_source names the delivered runtime and its generation" "$result" '.runtime_source' \
    '{"origin":"delivered","kind":"ClusterTrainingRuntime","name":"torch-distributed-tcpxo","generation":3}'
  if json_valid "$FB_ROOT/docs/schema/collective.schema.json" "$result" 2>"$T_DIR/schema.err"; then ok "result matches the collective schema"
  else not_ok "result matches the collective schema" "$(tail -n 2 "$T_DIR/schema.err" | tr '\n' ' ')"; fi
  expect_grep "fabric-report's verdict names the wiring" '^wiring: delivered ClusterTrainingRuntime/torch-distributed-tcpxo \(generation 3\)$' "$T_OUT"
  expect_grep "mpirun ran in the derived worker container" 'exec fabric-bench-from-torch-distributed-tcpxo-0 -c node -- bash .*/run.sh' "$FBL_STATE/calls"
  check "the derived objects are deleted after the run" grep -qx 'statefulset/fabric-bench-from-torch-distributed-tcpxo' "$FBL_STATE/deleted"
  rm -f "$result"
else
  not_ok "run under the derived workers writes a result" "exit $T_RC: $(tail -c 600 "$T_ERR" | tr '\n' ' ')"
fi

reset_state
run timeout 300 "$L" "${common[@]}" --wait 30 all_reduce "${sweep[@]}"
result=$(first "$T_DIR"/results/fromtest/*-all_reduce.json)
if [ -n "$result" ]; then
  jq_is "plain workers: runtime_source is fabric-bench's overlay (the pods' annotation)" "$result" '.runtime_source' \
    '{"origin":"fabric-bench","kind":"overlay","name":"tcp-baseline"}'
else
  not_ok "plain workers: a result" "exit $T_RC: $(tail -c 600 "$T_ERR" | tr '\n' ' ')"
fi

# fabric-coll refuses a SPEC it cannot record.
expect_stderr_line "fabric-coll --runtime-source with a bad SPEC: exit 2, one line" 2 \
  "^fabric-coll: --runtime-source 'delivered:Pod/x' is not delivered:KIND/NAMESPACE/NAME@GENERATION or fabric-bench:FABRIC" \
  "$FB_BIN/fabric-coll" all_reduce --backend mpi -b 1K -e 1K --runtime-source delivered:Pod/x -J "$T_DIR/x.json"
