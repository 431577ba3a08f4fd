#!/usr/bin/env bash
# Kubernetes manifests: every kustomization renders, passes yamllint, and its
# objects validate against the Kubernetes and CRD schemas with the fabric
# wiring asserted (check-rendered.mjs); inputs change what they should, a
# missing input fails the render, and the checks catch broken wiring.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

M=$FB_ROOT/manifests
FABRICS=(gke-tcpxo sriov-rdma aws-efa azure-ib oci-roce tcp-baseline)
CLUSTER=(gke-tcpxo sriov-rdma oci-roce)
# Fabrics with a Kyverno policy and a trigger overlay (manifests/overlays/policy-*).
POLICY=(aws-efa azure-ib gke-tcpxo oci-roce)

# shellcheck source=tests/manifests/validators.sh
. "$FB_ROOT/tests/manifests/validators.sh"

R=$T_DIR/render
mkdir -p "$R"
render "$M/base" "$R/base.none.yaml"
for f in "${FABRICS[@]}"; do
  render "$M/overlays/$f" "$R/workers.$f.yaml"
  render "$M/mpijob/overlays/$f" "$R/mpijob.$f.yaml"
  render "$M/trainer/overlays/$f" "$R/trainer.$f.yaml"
  render "$M/pytorchjob/overlays/$f" "$R/pytorchjob.$f.yaml"
  render "$M/envjob/overlays/$f" "$R/envjob.$f.yaml"
  render "$M/pytorchjob/overlays-env/$f" "$R/envpytorch.$f.yaml"
  render "$M/jobset/overlays/$f" "$R/envjobset.$f.yaml"
done
for f in "${CLUSTER[@]}"; do render "$M/cluster/$f" "$R/cluster.$f.yaml"; done
for f in "${POLICY[@]}"; do
  render "$M/overlays/policy-$f" "$R/trigger.$f.yaml"
  render "$M/envjob/overlays/policy-$f" "$R/envtrigger.$f.yaml"
done
render "$M/volcano/workers-gke-tcpxo" "$R/volcano.gke-tcpxo.yaml"
render "$M/volcano/mpijob-aws-efa" "$R/volcano-mpijob.aws-efa.yaml"
render "$M/policies/kyverno" "$R/policies.kyverno.yaml"
render "$M/scan" "$R/scan.none.yaml"

# Every Kustomization under manifests/ is rendered above, itself or as a
# resource of a rendered one (skeletons; components are rendered through
# them): a new one the list misses would go unchecked.
covered=()
for d in "${RENDERED[@]}"; do
  covered+=("$(realpath -m "$d")")
  while read -r entry; do
    covered+=("$(realpath -m "$d/$entry")")
  done < <(sed -n 's/^  - \([^ ]*\)$/\1/p' "$d/kustomization.yaml")
done
unrendered=()
while IFS= read -r k; do
  d=$(realpath -m "$(dirname "$k")")
  grep -q '^kind: Kustomization$' "$k" || continue
  [[ " ${covered[*]} " == *" $d "* ]] || unrendered+=("${d#"$(realpath "$FB_ROOT")"/}")
done < <(find "$M" -name kustomization.yaml | sort)
if [ ${#unrendered[@]} -eq 0 ]; then
  ok "every Kustomization under manifests/ is rendered and checked"
else
  not_ok "every Kustomization under manifests/ is rendered and checked" "not rendered: ${unrendered[*]}"
fi

if yamllint -s -c "$M/.yamllint" "$M" >"$T_OUT" 2>&1; then
  ok "yamllint manifests/"
else
  not_ok "yamllint manifests/" "$(head -c 600 "$T_OUT" | tr '\n' ' ')"
fi
# The rendered output is what reaches the API server: lint it too (kubectl's
# own style, so only syntax and duplicates matter).
lint_rendered='{extends: default, rules: {document-start: disable, line-length: disable, indentation: disable, comments: disable}}'
if yamllint -s -d "$lint_rendered" "$R" >"$T_OUT" 2>&1; then
  ok "yamllint rendered output"
else
  not_ok "yamllint rendered output" "$(head -c 600 "$T_OUT" | tr '\n' ' ')"
fi

# Schemas and wiring: one line per check from the node program.
node "$FB_ROOT/tests/manifests/check-rendered.mjs" "$R" "$M"

# ---- inputs ----------------------------------------------------------------
# Edits go to a copy of the tree; kustomize follows relative paths inside it.
W=$T_DIR/work
fresh_copy() { rm -rf "$W" && cp -r "$M" "$W"; }

# The GPU NIC names are an input: a new name lands on its interface.
fresh_copy
sed -i 's/^  eth3: .*/  eth3: prod-a3-gpu-nic-2/' "$W/overlays/gke-tcpxo/gpu-nics.yaml"
if kubectl kustomize "$W/overlays/gke-tcpxo" >"$T_OUT" 2>"$T_ERR" &&
  grep -q '{"interfaceName":"eth3","network":"prod-a3-gpu-nic-2"}' "$T_OUT"; then
  ok "gpu-nics input eth3 lands on eth3"
else
  not_ok "gpu-nics input eth3 lands on eth3" "$(grep -A10 'interfaces:' "$T_OUT" | tr '\n' ' ') $(head -c 300 "$T_ERR")"
fi

# Without the input the render fails, naming it (no placeholder reaches a pod).
fresh_copy
sed -i '/gpu-nics.yaml/d' "$W/overlays/gke-tcpxo/kustomization.yaml"
if kubectl kustomize "$W/overlays/gke-tcpxo" >"$T_OUT" 2>"$T_ERR"; then
  not_ok "render fails without the gpu-nics input" "rendered: $(grep -m1 '@eth' "$T_OUT")"
else
  expect_grep "render fails without the gpu-nics input" 'fabric-bench-gpu-nics' "$T_ERR"
fi

# The plugin/daemon pair lives in one file; the daemon tag and both recorded
# versions follow it.
fresh_copy
sed -i -e 's/^TCPXO_DAEMON_VERSION=.*/TCPXO_DAEMON_VERSION=v9.9.9/' \
  -e 's/^TCPXO_PLUGIN_VERSION=.*/TCPXO_PLUGIN_VERSION=v8.8.8/' "$W/components/gke-tcpxo/tcpxo-versions.env"
if kubectl kustomize "$W/overlays/gke-tcpxo" >"$T_OUT" 2>"$T_ERR" &&
  grep -q 'tcpgpudmarxd-dev:v9.9.9$' "$T_OUT" &&
  grep -A1 FABRIC_TCPXO_PLUGIN_VERSION "$T_OUT" | grep -q v8.8.8 &&
  grep -A1 FABRIC_TCPXO_DAEMON_VERSION "$T_OUT" | grep -q v9.9.9; then
  ok "tcpxo-versions.env sets the daemon tag and both recorded versions"
else
  not_ok "tcpxo-versions.env sets the daemon tag and both recorded versions" "$(grep -E 'tcpgpudmarxd|TCPXO' -A1 "$T_OUT" | tr '\n' ' ') $(head -c 300 "$T_ERR")"
fi

# ---- the checks catch broken wiring -------------------------------------------
# Each mutation breaks one property of a good render; the named check must
# then fail (and the untouched render passed above).
B=$T_DIR/broken
mutate() { # mutate NAME CHECK_REGEX SED_EXPR [FILE]: break a copy, expect a failure
  local name=$1 want=$2 expr=$3 file=${4:-workers.gke-tcpxo.yaml}
  rm -rf "$B" && cp -r "$R" "$B"
  sed -i -e "$expr" "$B/$file"
  if cmp -s "$R/$file" "$B/$file"; then
    not_ok "checks catch: $name" "the mutation changed nothing"
    return
  fi
  node "$FB_ROOT/tests/manifests/check-rendered.mjs" "$B" "$M" "${file%.yaml}" >"$T_OUT" 2>&1
  if grep -Eq "^not ok - .*$want" "$T_OUT"; then
    ok "checks catch: $name"
  else
    not_ok "checks catch: $name" "no failing check matching '$want': $(grep '^not ok' "$T_OUT" | head -c 300)"
  fi
}
mutate "privileged sidecar" "no privileged container" \
  '/initContainers:/,$ s/privileged: false/privileged: true/'
mutate "sidecar gains SYS_ADMIN" "no privileged container" 's/- NET_BIND_SERVICE/- SYS_ADMIN/'
mutate "sidecar not native (no restartPolicy Always)" "native sidecar" '/restartPolicy: Always/d'
mutate "misspelt field" "only known fields" 's/restartPolicy: Always/restartPolicyy: Always/'
mutate "eight interfaces only" "interfaces annotation" '/{"interfaceName":"eth8"/d; s/"gpu-nic-6"},$/"gpu-nic-6"}]/'
mutate "placeholder left in annotation" "interfaces annotation" 's/"network":"gpu-nic-4"/"network":"@eth5"/'
mutate "missing /sys mount" "host mount" 's|mountPath: /hostsysfs|mountPath: /sysfs|'
mutate "request differs from limit" "requests equal" '0,/cpu: "16"/s//cpu: "15"/'
mutate "service account token mounted" "service account token" 's/automountServiceAccountToken: false/automountServiceAccountToken: true/'
mutate "wrong daemon tag" "pair comes from" 's/tcpgpudmarxd-dev:v1.0.21/tcpgpudmarxd-dev:v1.0.20/'
mutate "schema type error" "validates against its schema" 's/replicas: 2/replicas: two/'
mutate "NRI device missing" "NRI device annotation" '/- path: \/dev\/dmabuf_import_helper/d'
mutate "VF count below the attachments" "Multus attachments" 's/nvidia.com\/rdma_vf: "8"/nvidia.com\/rdma_vf: "4"/' workers.sriov-rdma.yaml
mutate "MTU disagrees with FABRIC_MTU" "Multus attachments" 's/"mtu": 9000/"mtu": 1500/' workers.sriov-rdma.yaml
mutate "EFA count wrong" "fabric's devices" 's/vpc.amazonaws.com\/efa: "32"/vpc.amazonaws.com\/efa: "4"/' workers.aws-efa.yaml
mutate "IPC_LOCK on the TCP baseline" "capabilities as intended" 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: false\n          capabilities: {add: [IPC_LOCK]}/' workers.tcp-baseline.yaml
mutate "Trainer node on the StatefulSet's ssh Secret" "as the Trainer names them" \
  's/secretName: fabric-bench-mpi-ssh-auth/secretName: fabric-bench-ssh/' trainer.gke-tcpxo.yaml
mutate "Trainer launcher key readable by others" "0400 volume" 's/defaultMode: 256/defaultMode: 288/' trainer.oci-roce.yaml
mutate "Trainer launcher not waiting for Ready nodes" "launcher after Ready nodes" 's/status: Ready/status: Complete/' trainer.aws-efa.yaml
mutate "PyTorchJob launcher missing a worker" "Master launches over all" \
  's/--hosts=fabric-bench-master-0,fabric-bench-worker-0/--hosts=fabric-bench-master-0/' pytorchjob.sriov-rdma.yaml
mutate "PodGroup smaller than the workers" "one PodGroup of every worker" 's/minMember: 2/minMember: 1/' volcano.gke-tcpxo.yaml
mutate "MPIJob workers left to the default scheduler" "one PodGroup of every worker" '/schedulerName: volcano/d' volcano-mpijob.aws-efa.yaml
mutate "wiring in a trigger overlay" "only the trigger annotation" \
  's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: false\n          capabilities: {add: [IPC_LOCK]}/' trigger.aws-efa.yaml
mutate "scan controller may read Secrets" "RBAC is nodes get/list/patch" '0,/^  - pods$/s//  - pods\n  - secrets/' scan.none.yaml
mutate "scan controller's ClusterRole gains a wildcard" "RBAC is nodes get/list/patch" 's/^  - patch$/  - "*"/' scan.none.yaml
mutate "scan controller bound to cluster-admin" "bindings give the controller" '/^  kind: ClusterRole$/{n;s/name: fabric-bench-scan-nodes/name: cluster-admin/}' scan.none.yaml
mutate "admission policy only warns" "admission policy bound to Deny" '/validationActions:/{n;s/- Deny/- Warn/}' scan.none.yaml
mutate "admission policy lets any label through" "CEL allows the scan's marks and refuses" \
  "0,/k.startsWith(''fabric-bench.io\/'')/s//k.startsWith('''')/" scan.none.yaml
mutate "admission policy lets a cordon through" "CEL allows the scan's marks and refuses" \
  's/has(object.spec.unschedulable) == has(oldObject.spec.unschedulable)/true/; s/object.spec.unschedulable == oldObject.spec.unschedulable/true/' scan.none.yaml
mutate "admission policy on another ServiceAccount" "CEL allows the scan's marks and refuses" \
  "s/endsWith(':fabric-bench-scan')/endsWith(':fabric-bench-scanner')/" scan.none.yaml
mutate "scans may overlap" "CronJob one at a time" 's/concurrencyPolicy: Forbid/concurrencyPolicy: Allow/' scan.none.yaml
mutate "nodes marked by default" "CronJob one at a time" 's/MARK_NODES: "false"/MARK_NODES: "true"/' scan.none.yaml
mutate "env launch (JobSet): MASTER_ADDR not pod 0" "rank 0 named under the JobSet's headless Service" \
  's/value: fabric-bench-workers-0-0.fabric-bench$/value: fabric-bench-workers-0-1.fabric-bench/' envjobset.sriov-rdma.yaml
mutate "env launch (JobSet): WORLD_SIZE not the node count" "one Indexed Job of the StatefulSet's size" \
  '/name: WORLD_SIZE/{n;s/value: "2"/value: "4"/}' envjobset.azure-ib.yaml
mutate "env launch: MASTER_ADDR not pod 0" "rank 0 named by the headless Service" \
  's/value: fabric-bench-0.fabric-bench$/value: fabric-bench-1.fabric-bench/' envjob.gke-tcpxo.yaml
mutate "env launch: WORLD_SIZE not the node count" "Indexed Job of the StatefulSet's size" \
  '/name: WORLD_SIZE/{n;s/value: "2"/value: "3"/}' envjob.aws-efa.yaml
mutate "env launch: the secret readable by all" "with the job's secret" \
  '/secretName: fabric-bench-job/{x;s/.*//;x};s/defaultMode: 256/defaultMode: 292/' envpytorch.oci-roce.yaml
mutate "env launch: the operator's variables overridden" "Training Operator sets rank" \
  's/- name: FB_JOB_SECRET_FILE/- name: RANK\n              value: "0"\n            - name: FB_JOB_SECRET_FILE/' envpytorch.sriov-rdma.yaml
