// Validates rendered manifests and asserts the fabric wiring on them.
//
//   node check-rendered.mjs RENDER_DIR MANIFESTS_DIR
//
// RENDER_DIR holds `kubectl kustomize` output named <variant>.<fabric>.yaml,
// variant one of workers (manifests/overlays), mpijob (manifests/mpijob/
// overlays), trainer (manifests/trainer/overlays), pytorchjob
// (manifests/pytorchjob/overlays), envjob (the env launch's Indexed Job,
// manifests/envjob/overlays), envpytorch (the env launch's PyTorchJob,
// manifests/pytorchjob/overlays-env), envjobset (the env launch's JobSet,
// manifests/jobset/overlays), volcano and volcano-mpijob (manifests/
// volcano/*), trigger (manifests/overlays/policy-<fabric>), envtrigger
// (manifests/envjob/overlays/policy-<fabric>), scan (manifests/scan), policies
// (manifests/policies/<engine>, schemas only) or cluster (manifests/cluster). Prints one test-protocol line per
// check ("ok - NAME" / "not ok - NAME: why"); exits 1 when any check failed.
//
// Schemas: Kubernetes' own objects through kubernetes-models (generated from
// the Kubernetes OpenAPI); custom resources through ajv against the CRDs'
// openAPIV3Schema vendored in schemas/. Pod templates are checked a second
// time against the PodTemplateSpec schema carried inside the MPIJob CRD with
// unknown fields forbidden, so a misspelt field (restartPolicyy) fails here
// instead of being silently dropped by the API server. The scan's
// ValidatingAdmissionPolicy has its CEL evaluated on node updates the scan
// makes and on updates it must never make.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { ajv, ajvErrors, loadCrdSchemas, strictify } from "./schemas.mjs";
import { tap } from "./tap.mjs";

// The CEL evaluator for the scan's admission policy; a missing one is a
// failed check, not a skipped one (npm ci in tests/ installs it).
const cel = await import("@marcbachmann/cel-js").catch(() => undefined);

// NAMEs (<variant>.<fabric>) limit the checks to those renders; the others
// are still read, for the comparisons between packagings.
const [renderDir, manifestsDir, ...only] = process.argv.slice(2);
const wanted = (name) => only.length === 0 || only.includes(name);
if (!renderDir || !manifestsDir) {
  console.error("usage: node check-rendered.mjs RENDER_DIR MANIFESTS_DIR [NAME...]");
  process.exit(2);
}

const { report, check, exitCode } = tap(4);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// ---- schemas ---------------------------------------------------------------
const crdSchemas = loadCrdSchemas();
const mpijobSchema = crdSchemas["kubeflow.org/v2beta1/MPIJob"].schema;
const podTemplateSchema = strictify(
  mpijobSchema.properties.spec.properties.mpiReplicaSpecs.additionalProperties
    .properties.template);
const validatePodTemplateStrict = ajv.compile(podTemplateSchema);

async function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  try {
    const mod = await import(`kubernetes-models/${group ? group + "/" : ""}${version}`);
    return mod[kind];
  } catch {
    return undefined;
  }
}

async function validateObject(obj) {
  const key = `${obj.apiVersion}/${obj.kind}`;
  if (crdSchemas[key]) {
    const v = crdSchemas[key].validate;
    return v(obj) ? [] : ajvErrors(v.errors);
  }
  const Model = await modelClass(obj.apiVersion, obj.kind);
  if (!Model) return [`no schema for ${key}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [e.message.split("\n")[0]];
  }
}

// ---- rendered objects --------------------------------------------------------
function load(file) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const d of docs) if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
  return docs.map((d) => d.toJS()).filter(Boolean);
}
function readEnvFile(file) {
  const env = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = line.match(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/);
    if (m) env[m[1]] = m[2];
  }
  return env;
}
const find = (objs, kind, name) =>
  objs.find((o) => o.kind === kind && (!name || o.metadata?.name === name));
const allContainers = (spec) => [...(spec.initContainers || []), ...(spec.containers || [])];

// Pod templates of an object: [label, template] (label ends in the role).
function objectPodTemplates(o) {
  const label = `${o.kind}/${o.metadata.name}`;
  if (o.kind === "StatefulSet" || o.kind === "Job") return [[label, o.spec.template]];
  if (o.kind === "MPIJob") {
    return Object.entries(o.spec.mpiReplicaSpecs).map(([role, rs]) => [`${label}/${role}`, rs.template]);
  }
  if (o.kind === "PyTorchJob") {
    return Object.entries(o.spec.pytorchReplicaSpecs).map(([role, rs]) => [`${label}/${role}`, rs.template]);
  }
  if (o.kind === "JobSet") {
    return o.spec.replicatedJobs.map((rj) => [`${label}/${rj.name}`, rj.template.spec.template]);
  }
  if (o.kind === "ClusterTrainingRuntime") {
    return o.spec.template.spec.replicatedJobs.map((rj) => [`${label}/${rj.name}`, rj.template.spec.template]);
  }
  return [];
}
const podTemplates = (objs) => objs.flatMap(objectPodTemplates);
const isLauncherLabel = (label) => /\/launcher$/i.test(label);
// The benchmark's container: its StatefulSet name, or the name the Trainer
// (node) or the Training Operator (pytorch) requires.
const mainNames = ["fabric-bench", "node", "pytorch"];
const mainContainer = (spec) => spec.containers.find((c) => mainNames.includes(c.name));

// Capabilities each container may add, per fabric: anything else (or
// privileged) fails. The RDMA fabrics pin memory (IPC_LOCK); the TCPXO
// daemon configures NICs and binds low ports.
const rdmaFabrics = ["sriov-rdma", "aws-efa", "azure-ib", "oci-roce"];
function allowedCaps(fabric, container) {
  if (container === "tcpxo-daemon") return ["NET_ADMIN", "NET_BIND_SERVICE"];
  return rdmaFabrics.includes(fabric) ? ["IPC_LOCK"] : [];
}
// Device resources each fabric must request (name -> count).
const fabricResources = {
  none: {},
  "gke-tcpxo": {},
  "tcp-baseline": {},
  "sriov-rdma": { "nvidia.com/rdma_vf": "8" },
  "oci-roce": { "nvidia.com/rdma-vf": "16" },
  "aws-efa": { "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5Gi" },
  "azure-ib": { "rdma/hca_shared_devices_a": "1" },
};
const deviceResourceNames = new Set(Object.values(fabricResources).flatMap(Object.keys));

function checkPodTemplate(label, fabric, tpl, objs) {
  const spec = tpl.spec;
  const isLauncher = isLauncherLabel(label);
  check(`${label} (${fabric}): pod template has only known fields`, () =>
    validatePodTemplateStrict(tpl) ? [] : ajvErrors(validatePodTemplateStrict.errors));
  check(`${label} (${fabric}): no service account token, no host network`, () => {
    const p = [];
    if (spec.automountServiceAccountToken !== false) p.push("automountServiceAccountToken is not false");
    if (spec.hostNetwork === true) p.push("hostNetwork is true");
    return p;
  });
  check(`${label} (${fabric}): no privileged container, capabilities as intended`, () => {
    const p = [];
    for (const c of allContainers(spec)) {
      const sc = c.securityContext || {};
      if (sc.privileged) p.push(`${c.name} is privileged`);
      const allowed = allowedCaps(fabric, c.name);
      for (const cap of sc.capabilities?.add || []) {
        if (!allowed.includes(cap)) p.push(`${c.name} adds ${cap}`);
      }
      if (c.name === "tcpxo-daemon" && !same([...(sc.capabilities?.add || [])].sort(), allowed)) {
        p.push(`tcpxo-daemon adds ${JSON.stringify(sc.capabilities?.add)}, wants exactly ${allowed}`);
      }
    }
    return p;
  });
  check(`${label} (${fabric}): every container's requests equal its limits`, () => {
    const p = [];
    for (const c of allContainers(spec)) {
      const r = c.resources || {};
      if (!r.requests || !r.limits) p.push(`${c.name} lacks requests or limits`);
      else if (!same(sortKeys(r.requests), sortKeys(r.limits))) {
        p.push(`${c.name}: requests ${JSON.stringify(r.requests)} != limits ${JSON.stringify(r.limits)}`);
      } else if (!r.limits.cpu || !r.limits.memory) p.push(`${c.name} has no cpu or memory limit`);
    }
    return p;
  });
  check(`${label} (${fabric}): every volume mount names a volume`, () => {
    const vols = new Set((spec.volumes || []).map((v) => v.name));
    const p = [];
    for (const c of allContainers(spec)) {
      for (const m of c.volumeMounts || []) if (!vols.has(m.name)) p.push(`${c.name} mounts unknown ${m.name}`);
    }
    return p;
  });
  check(`${label} (${fabric}): environment ConfigMap exists and names the fabric`, () => {
    const p = [];
    for (const c of spec.containers) {
      for (const ef of c.envFrom || []) {
        const cm = find(objs, "ConfigMap", ef.configMapRef?.name);
        if (!cm) p.push(`${c.name}: ConfigMap ${ef.configMapRef?.name} not rendered`);
        else if (cm.data.FABRIC_NAME !== fabric) p.push(`FABRIC_NAME is ${cm.data.FABRIC_NAME}`);
      }
    }
    if (!isLauncher && tpl.metadata?.annotations?.["fabric-bench/fabric"] !== fabric) {
      p.push(`annotation fabric-bench/fabric is ${tpl.metadata?.annotations?.["fabric-bench/fabric"]}`);
    }
    return p;
  });
  if (isLauncher) return;
  const main = mainContainer(spec);
  check(`${label} (${fabric}): worker has the ssh Secret, /dev/shm and the fabric's devices`, () => {
    const p = [];
    if (!main) return [`no container named ${mainNames.join(" or ")}`];
    // The Trainer writes the job's key to its own Secret, <TrainJob>-mpi-ssh-auth.
    // The env launch has no sshd: the watchdog's secret takes the key's place.
    const secret = label.includes("ClusterTrainingRuntime/")
      ? `${find(objs, "TrainJob")?.metadata.name}-mpi-ssh-auth` : label.startsWith("env") ? "fabric-bench-job" : "fabric-bench-ssh";
    const ssh = spec.volumes.find((v) => v.secret?.secretName === secret);
    if (!ssh) p.push(`no volume from Secret ${secret}`);
    const shm = mountOf(spec, main, "/dev/shm");
    if (shm?.emptyDir?.medium !== "Memory") p.push("/dev/shm is not a memory emptyDir");
    const want = fabricResources[fabric];
    for (const [k, v] of Object.entries(want)) {
      if (String(main.resources.limits[k]) !== v) p.push(`${k} is ${main.resources.limits[k]}, wants ${v}`);
    }
    for (const k of Object.keys(main.resources.limits)) {
      if (deviceResourceNames.has(k) && !(k in want)) p.push(`requests ${k}, which ${fabric} does not use`);
    }
    if (main.resources.limits["nvidia.com/gpu"] !== "8") p.push("does not request 8 GPUs");
    return p;
  });
}

function sortKeys(o) {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]).sort());
}
// The volume behind the mount at mountPath in container c.
function mountOf(spec, c, mountPath) {
  const m = (c.volumeMounts || []).find((x) => x.mountPath === mountPath);
  return m && (spec.volumes || []).find((v) => v.name === m.name);
}

// ---- fabric-specific wiring ---------------------------------------------------
function checkTcpxo(label, tpl) {
  const spec = tpl.spec;
  const ann = tpl.metadata.annotations || {};
  const comp = path.join(manifestsDir, "components", "gke-tcpxo");
  const nics = load(path.join(manifestsDir, "overlays", "gke-tcpxo", "gpu-nics.yaml"))[0].data;
  const versions = readEnvFile(path.join(comp, "tcpxo-versions.env"));
  const daemon = (spec.initContainers || []).find((c) => c.name === "tcpxo-daemon");
  const main = mainContainer(spec);

  check(`${label}: tcpxo-daemon is a native sidecar`, () => {
    if (!daemon) return ["no initContainer tcpxo-daemon"];
    if (spec.containers.some((c) => c.name === "tcpxo-daemon")) return ["tcpxo-daemon is also a regular container"];
    return daemon.restartPolicy === "Always" ? [] : [`restartPolicy is ${daemon.restartPolicy}`];
  });
  check(`${label}: hostNetwork is explicitly false`, () =>
    spec.hostNetwork === false ? [] : [`hostNetwork is ${spec.hostNetwork}`]);
  check(`${label}: interfaces annotation maps eth0..eth8 to default and the gpu-nics input`, () => {
    const list = JSON.parse(ann["networking.gke.io/interfaces"]);
    const p = [];
    if (list.length !== 9) p.push(`${list.length} interfaces`);
    const want = [["eth0", "default"], ...[1, 2, 3, 4, 5, 6, 7, 8].map((k) => [`eth${k}`, nics[`eth${k}`]])];
    want.forEach(([ifn, net], i) => {
      if (!list[i] || list[i].interfaceName !== ifn || list[i].network !== net) {
        p.push(`entry ${i} is ${JSON.stringify(list[i])}, wants ${ifn}->${net}`);
      }
    });
    const nets = list.slice(1).map((e) => e.network);
    if (new Set(nets).size !== nets.length) p.push("GPU NIC networks are not unique");
    if (ann["networking.gke.io/default-interface"] !== "eth0") p.push("default-interface is not eth0");
    return p;
  });
  check(`${label}: NRI device annotation lists the GPUs and the dma-buf helper`, () => {
    const devs = YAML.parse(ann["devices.gke.io/container.tcpxo-daemon"]).map((d) => d.path);
    const want = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `/dev/nvidia${i}`)
      .concat(["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"]);
    return same([...devs].sort(), [...want].sort()) ? [] : [`devices ${JSON.stringify(devs)}`];
  });
  check(`${label}: every TCPXO host mount is present`, () => {
    const p = [];
    const want = [
      [daemon, "/usr/local/nvidia", "/home/kubernetes/bin/nvidia"],
      [daemon, "/hostsysfs", "/sys"],
      [daemon, "/hostprocsysfs", "/proc/sys"],
      [main, "/usr/local/nvidia", "/home/kubernetes/bin/nvidia"],
      [main, "/dev/aperture_devices", "/dev/aperture_devices"],
    ];
    for (const [c, mnt, host] of want) {
      const v = c && mountOf(spec, c, mnt);
      if (v?.hostPath?.path !== host) p.push(`${c?.name} ${mnt} is not hostPath ${host}`);
    }
    return p;
  });
  check(`${label}: plugin/daemon pair comes from tcpxo-versions.env`, () => {
    const p = [];
    const tag = daemon.image.split(":").pop();
    if (!daemon.image.includes("/tcpgpudmarxd-dev:")) p.push(`daemon image ${daemon.image}`);
    if (tag !== versions.TCPXO_DAEMON_VERSION) p.push(`daemon tag ${tag} != ${versions.TCPXO_DAEMON_VERSION}`);
    const env = Object.fromEntries((main.env || []).map((e) => [e.name, e.value]));
    if (env.FABRIC_TCPXO_PLUGIN_VERSION !== versions.TCPXO_PLUGIN_VERSION) p.push("plugin version not recorded");
    if (env.FABRIC_TCPXO_DAEMON_VERSION !== versions.TCPXO_DAEMON_VERSION) p.push("daemon version not recorded");
    return p;
  });
}

function checkTcpxoEnv(objs) {
  check("workers (gke-tcpxo): NCCL environment from the installed nccl-env-profile.sh", () => {
    const env = find(objs, "ConfigMap", "fabric-bench-env").data;
    const p = [];
    if (env.FABRIC_ENV_SCRIPT !== `${env.NCCL_LIB_DIR}/nccl-env-profile.sh`) p.push(`FABRIC_ENV_SCRIPT ${env.FABRIC_ENV_SCRIPT}`);
    if (env.NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY !== "/dev/aperture_devices") p.push("LLCM directory not /dev/aperture_devices");
    if (!String(env.LD_LIBRARY_PATH).split(":").includes(env.NCCL_LIB_DIR)) p.push("LD_LIBRARY_PATH lacks NCCL_LIB_DIR");
    return p;
  });
}

// Multus: every attachment names a rendered NAD whose pool exists and whose
// VF resource the pod requests once per attachment; MTU agrees with the env.
function checkMultus(label, fabric, tpl, objs, cluster) {
  check(`${label}: Multus attachments, NetworkAttachmentDefinition, pool and MTU agree`, () => {
    const p = [];
    const list = JSON.parse(tpl.metadata.annotations["k8s.v1.cni.cncf.io/networks"]);
    const main = mainContainer(tpl.spec);
    const env = find(objs, "ConfigMap", "fabric-bench-env").data;
    const byRes = {};
    for (const a of list) {
      const nad = find(objs, "NetworkAttachmentDefinition", a.name);
      if (!nad) { p.push(`no NetworkAttachmentDefinition ${a.name}`); continue; }
      const res = nad.metadata.annotations?.["k8s.v1.cni.cncf.io/resourceName"];
      byRes[res] = (byRes[res] || 0) + 1;
      const conf = JSON.parse(nad.spec.config);
      if (conf.name !== nad.metadata.name) p.push(`CNI name ${conf.name} != ${nad.metadata.name}`);
      const plugins = conf.plugins || [conf];
      const ipam = plugins.find((x) => x.ipam)?.ipam;
      if (ipam?.type !== "nv-ipam" || !find(cluster, "CIDRPool", ipam.poolName)) {
        p.push(`pool ${ipam?.poolName} is not a CIDRPool of manifests/cluster/${fabric}`);
      }
      const mtu = plugins.find((x) => x.type === "tuning")?.mtu;
      if (String(mtu) !== env.FABRIC_MTU) p.push(`tuning mtu ${mtu} != FABRIC_MTU ${env.FABRIC_MTU}`);
    }
    for (const [res, n] of Object.entries(byRes)) {
      if (Number(main.resources.limits[res]) !== n) p.push(`${n} attachments but ${res} = ${main.resources.limits[res]}`);
    }
    if (env.NCCL_IB_GID_INDEX !== "3") p.push("NCCL_IB_GID_INDEX is not 3 (RoCE v2)");
    return p;
  });
}

// ---- other packagings -------------------------------------------------------
// Key order carries no meaning in a manifest: compare sorted.
function sortDeep(x) {
  if (Array.isArray(x)) return x.map(sortDeep);
  if (!x || typeof x !== "object") return x;
  return Object.fromEntries(Object.keys(x).sort().map((k) => [k, sortDeep(x[k])]));
}
const canon = (x) => JSON.stringify(sortDeep(x));
// The StatefulSet's pod template with the main container renamed (and edit
// applied to the copy): what a packaging must carry, field for field.
function workerTemplateAs(sts, containerName, edit = () => {}) {
  const t = structuredClone(sts.spec.template);
  t.spec.containers.find((c) => c.name === "fabric-bench").name = containerName;
  edit(t);
  return t;
}
function leftovers(objs) {
  return find(objs, "StatefulSet") || find(objs, "Service") ? ["StatefulSet or Service left over"] : [];
}
function envNamespace(objs) {
  return find(objs, "ConfigMap", "fabric-bench-env")?.metadata?.namespace;
}

function checkTrainer(name, objs, sts) {
  const rt = find(objs, "ClusterTrainingRuntime");
  const job = find(objs, "TrainJob");
  check(`${name}: runtime node pods are the fabric's StatefulSet pods, as the Trainer names them`, () => {
    if (!sts) return ["no workers render to compare with"];
    if (!rt || !job) return ["no ClusterTrainingRuntime or TrainJob"];
    const node = rt.spec.template.spec.replicatedJobs.find((r) => r.name === "node");
    const want = workerTemplateAs(sts, "node", (t) => {
      t.spec.volumes.find((v) => v.name === "ssh-key").secret.secretName = `${job.metadata.name}-mpi-ssh-auth`;
      t.spec.restartPolicy = "Never";
    });
    const p = [...leftovers(objs)];
    if (canon(node?.template.spec.template) !== canon(want)) p.push("node template differs from the StatefulSet's");
    return p;
  });
  check(`${name}: MPI policy, launcher after Ready nodes, TrainJob on this runtime`, () => {
    if (!rt || !job || !sts) return ["missing objects"];
    const p = [];
    const mpi = rt.spec.mlPolicy?.mpi;
    const gpus = Number(mainContainer(sts.spec.template.spec).resources.limits["nvidia.com/gpu"]);
    if (!mpi?.sshAuthMountPath) p.push("no mlPolicy.mpi.sshAuthMountPath");
    if (mpi?.numProcPerNode !== gpus) p.push(`numProcPerNode ${mpi?.numProcPerNode} != ${gpus} GPUs`);
    if (mpi?.runLauncherAsNode) p.push("runLauncherAsNode: the launcher would take a node's GPUs");
    const rjs = rt.spec.template.spec.replicatedJobs;
    if (canon(rjs.map((r) => r.name).sort()) !== canon(["launcher", "node"])) p.push("replicatedJobs are not launcher + node");
    const launcher = rjs.find((r) => r.name === "launcher");
    if (canon(launcher?.dependsOn) !== canon([{ name: "node", status: "Ready" }])) p.push("launcher does not wait for Ready nodes");
    if (launcher?.template.metadata?.labels?.["trainer.kubeflow.org/trainjob-ancestor-step"] !== "trainer") {
      p.push("TrainJob.spec.trainer would not reach the launcher");
    }
    const lc = launcher?.template.spec.template.spec.containers[0];
    if (lc?.name !== "node") p.push("launcher container is not named node (no hostfile, no key)");
    if (lc?.image !== sts.spec.template.spec.containers[0].image) p.push("launcher image differs");
    const ref = job.spec.runtimeRef;
    if (ref.kind !== "ClusterTrainingRuntime" || ref.name !== rt.metadata.name) p.push(`runtimeRef ${canon(ref)}`);
    if (job.spec.trainer.numNodes !== sts.spec.replicas) p.push("numNodes differs from the replicas");
    if (job.metadata.namespace !== envNamespace(objs)) p.push("TrainJob is not in the environment's namespace");
    const args = job.spec.trainer.args || [];
    if (!args.includes("--hostfile=/etc/mpi/hostfile")) p.push("launcher not on the Trainer's hostfile");
    // ssh refuses root's key in the Trainer's own 0640 mount: the launcher
    // reads the same Secret through a 0400 volume.
    const key = args.find((a) => a.startsWith("--ssh-key="))?.slice(10) || "";
    const lspec = launcher?.template.spec.template.spec;
    const m = (lc?.volumeMounts || []).find((x) => key.startsWith(`${x.mountPath}/`));
    const v = m && (lspec.volumes || []).find((x) => x.name === m.name);
    if (v?.secret?.secretName !== `${job.metadata.name}-mpi-ssh-auth` || v.secret.defaultMode !== 256) {
      p.push(`--ssh-key ${key} is not in a 0400 volume of the Trainer's Secret`);
    }
    if (!(job.spec.activeDeadlineSeconds > 0)) p.push("no activeDeadlineSeconds");
    return p;
  });
}

function checkPytorchjob(name, objs, sts) {
  const job = find(objs, "PyTorchJob");
  check(`${name}: Master and Workers are the fabric's StatefulSet pods, Master launches over all of them`, () => {
    if (!sts) return ["no workers render to compare with"];
    if (!job) return ["no PyTorchJob"];
    const { Master, Worker } = job.spec.pytorchReplicaSpecs;
    const p = [...leftovers(objs)];
    const want = workerTemplateAs(sts, "pytorch");
    if (canon(Worker.template) !== canon(want)) p.push("Worker template differs from the StatefulSet's");
    const master = structuredClone(Master.template);
    const mc = master.spec.containers.find((c) => c.name === "pytorch");
    const args = mc?.args || [];
    // The launch replaces the command and adds the sweep's arguments.
    if (mc) mc.command = want.spec.containers.find((c) => c.name === "pytorch").command;
    delete mc?.args;
    if (mc) mc.env = mc.env.filter((e) => e.name !== "FABRIC_CLUSTER");
    if (canon(master) !== canon(want)) p.push("Master template differs from the StatefulSet's beyond the launch");
    if (Master.replicas + Worker.replicas !== sts.spec.replicas) p.push("Master + Worker replicas differ from the StatefulSet's");
    const hosts = args.find((a) => a.startsWith("--hosts="))?.slice(8).split(",");
    const names = [`${job.metadata.name}-master-0`,
      ...Array.from({ length: Worker.replicas }, (_, i) => `${job.metadata.name}-worker-${i}`)];
    if (canon(hosts) !== canon(names)) p.push(`--hosts ${hosts} != ${names}`);
    if (Master.restartPolicy !== "Never" || Worker.restartPolicy !== "Never") p.push("restartPolicy is not Never");
    if (!(job.spec.runPolicy?.activeDeadlineSeconds > 0)) p.push("no activeDeadlineSeconds");
    if (job.metadata.namespace !== envNamespace(objs)) p.push("PyTorchJob is not in the environment's namespace");
    return p;
  });
}

// The env launch: fabric-coll is the command, under --launcher env, with
// the job's secret mounted 0400 where FB_JOB_SECRET_FILE says; nothing of
// sshd is left. The Indexed Job gives rank 0's name and the node count
// itself; the Training Operator does for a PyTorchJob.
function checkEnvLaunch(name, variant, objs, sts) {
  const env = (c, k) => (c.env || []).find((e) => e.name === k)?.value;
  check(`${name}: every pod runs fabric-coll --launcher env with the job's secret, no sshd`, () => {
    const p = [];
    const tpls = podTemplates(objs);
    if (tpls.length === 0) return ["no pod template"];
    for (const [label, tpl] of tpls) {
      const c = mainContainer(tpl.spec);
      if (!c) { p.push(`${label}: no main container`); continue; }
      const args = c.args || [];
      if (c.command?.[0] !== "/opt/fabric-bench/bin/fabric-coll") p.push(`${label}: command ${c.command}`);
      if (args[args.indexOf("--launcher") + 1] !== "env" || !args.includes("--launcher")) p.push(`${label}: no --launcher env`);
      const file = env(c, "FB_JOB_SECRET_FILE");
      const m = (c.volumeMounts || []).find((v) => file?.startsWith(`${v.mountPath}/`));
      const vol = (tpl.spec.volumes || []).find((v) => v.name === m?.name);
      if (vol?.secret?.secretName !== "fabric-bench-job" || vol.secret.defaultMode !== 256) {
        p.push(`${label}: FB_JOB_SECRET_FILE ${file} is not in a 0400 volume of Secret fabric-bench-job`);
      }
      if (JSON.stringify(tpl).includes("ssh")) p.push(`${label}: something of sshd is left`);
      if (c.readinessProbe) p.push(`${label}: a readiness probe (sshd's) is left`);
      if (tpl.spec.restartPolicy !== "Never" && variant !== "envpytorch") p.push(`${label}: restartPolicy is not Never`);
    }
    return p;
  });
  if (variant === "envjob") check(`${name}: an Indexed Job of the StatefulSet's size, rank 0 named by the headless Service`, () => {
    const job = find(objs, "Job");
    const svc = find(objs, "Service");
    if (!job || !svc) return ["no Job or no Service"];
    const p = [];
    const c = mainContainer(job.spec.template.spec);
    if (job.spec.completionMode !== "Indexed") p.push("not Indexed");
    if (!sts) p.push("no workers render to compare with");
    else if (job.spec.completions !== sts.spec.replicas || job.spec.parallelism !== sts.spec.replicas) p.push("completions or parallelism differ from the StatefulSet's replicas");
    if (env(c, "WORLD_SIZE") !== String(job.spec.completions)) p.push(`WORLD_SIZE ${env(c, "WORLD_SIZE")} != completions ${job.spec.completions}`);
    if (svc.spec.clusterIP !== "None") p.push("the Service is not headless");
    if (job.spec.template.spec.subdomain !== svc.metadata.name) p.push("the pods' subdomain is not the Service");
    if (env(c, "MASTER_ADDR") !== `${job.metadata.name}-0.${svc.metadata.name}`) p.push(`MASTER_ADDR ${env(c, "MASTER_ADDR")} is not pod 0`);
    const port = (c.ports || []).find((x) => String(x.containerPort) === env(c, "MASTER_PORT"));
    if (!port || !svc.spec.ports.some((x) => x.targetPort === port.name)) p.push("MASTER_PORT is not the Service's port");
    const labels = job.spec.template.metadata.labels;
    if (!Object.entries(svc.spec.selector).every(([k, v]) => labels[k] === v)) p.push("the Service does not select the pods");
    if (job.spec.backoffLimit !== 0 || !(job.spec.activeDeadlineSeconds > 0)) p.push("backoffLimit not 0 or no activeDeadlineSeconds");
    if (find(objs, "StatefulSet")) p.push("StatefulSet left over");
    return p;
  });
  if (variant === "envjobset") check(`${name}: one Indexed Job of the StatefulSet's size, rank 0 named under the JobSet's headless Service`, () => {
    const js = find(objs, "JobSet");
    if (!js) return ["no JobSet"];
    const p = [];
    if (js.spec.replicatedJobs.length !== 1) return [`${js.spec.replicatedJobs.length} replicated jobs`];
    const rj = js.spec.replicatedJobs[0];
    const job = rj.template.spec;
    const c = mainContainer(job.template.spec);
    if (rj.replicas !== 1) p.push(`replicas ${rj.replicas}`);
    if (job.completionMode !== "Indexed") p.push("not Indexed");
    if (!sts) p.push("no workers render to compare with");
    else if (job.completions !== sts.spec.replicas || job.parallelism !== sts.spec.replicas) p.push("completions or parallelism differ from the StatefulSet's replicas");
    if (env(c, "WORLD_SIZE") !== String(job.completions)) p.push(`WORLD_SIZE ${env(c, "WORLD_SIZE")} != completions ${job.completions}`);
    if (!js.spec.network?.enableDNSHostnames) p.push("no DNS host names (network.enableDNSHostnames)");
    const sub = js.spec.network?.subdomain || js.metadata.name;
    if (env(c, "MASTER_ADDR") !== `${js.metadata.name}-${rj.name}-0-0.${sub}`) p.push(`MASTER_ADDR ${env(c, "MASTER_ADDR")} is not pod 0`);
    if (!(c.ports || []).some((x) => String(x.containerPort) === env(c, "MASTER_PORT"))) p.push("MASTER_PORT is not a port of the container");
    if (job.backoffLimit !== 0 || !(job.activeDeadlineSeconds > 0)) p.push("backoffLimit not 0 or no activeDeadlineSeconds");
    if (js.spec.failurePolicy?.maxRestarts !== 0) p.push("failurePolicy.maxRestarts is not 0");
    if (find(objs, "StatefulSet") || find(objs, "Service")) p.push("StatefulSet or Service left over (the JobSet makes its own)");
    if (js.metadata.namespace !== envNamespace(objs)) p.push("JobSet is not in the environment's namespace");
    return p;
  });
  if (variant === "envpytorch") check(`${name}: the Training Operator sets rank, size and rank 0's address`, () => {
    const job = find(objs, "PyTorchJob");
    if (!job) return ["no PyTorchJob"];
    const p = [];
    for (const [role, rs] of Object.entries(job.spec.pytorchReplicaSpecs)) {
      const c = rs.template.spec.containers.find((x) => x.name === "pytorch");
      if (!c) { p.push(`${role}: no pytorch container`); continue; }
      for (const k of ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]) if (env(c, k) !== undefined) p.push(`${role} sets ${k}`);
      if (!(c.ports || []).some((x) => x.name === "pytorchjob-port")) p.push(`${role}: no pytorchjob-port`);
      if (rs.restartPolicy !== "Never") p.push(`${role}: restartPolicy is not Never`);
    }
    if (sts && job.spec.pytorchReplicaSpecs.Master.replicas + job.spec.pytorchReplicaSpecs.Worker.replicas !== sts.spec.replicas) p.push("Master + Worker replicas differ from the StatefulSet's");
    if (find(objs, "StatefulSet") || find(objs, "Service")) p.push("StatefulSet or Service left over");
    return p;
  });
}

function checkVolcano(name, objs, sts) {
  check(`${name}: workers gang-scheduled by Volcano as one PodGroup of every worker`, () => {
    const pg = find(objs, "PodGroup");
    if (!pg) return ["no PodGroup"];
    if (!sts) return ["no workers render to compare with"];
    const own = find(objs, "StatefulSet");
    const mpijob = find(objs, "MPIJob");
    const [tpl, count] = own ? [own.spec.template, own.spec.replicas]
      : [mpijob?.spec.mpiReplicaSpecs.Worker.template, mpijob?.spec.mpiReplicaSpecs.Worker.replicas];
    if (!tpl) return ["no worker template"];
    const p = [];
    if (tpl.spec.schedulerName !== "volcano") p.push(`schedulerName ${tpl.spec.schedulerName}`);
    if (tpl.metadata.annotations?.["scheduling.k8s.io/group-name"] !== pg.metadata.name) p.push("group-name annotation does not name the PodGroup");
    if (pg.spec.minMember !== count) p.push(`minMember ${pg.spec.minMember} != ${count} workers`);
    if (pg.metadata.namespace !== envNamespace(objs)) p.push("PodGroup is not in the workers' namespace");
    const plain = structuredClone(tpl);
    delete plain.spec.schedulerName;
    delete plain.metadata.annotations["scheduling.k8s.io/group-name"];
    if (canon(plain) !== canon(sts.spec.template)) p.push("worker pods differ from the fabric's beyond the scheduler");
    if (mpijob?.spec.mpiReplicaSpecs.Launcher.template.metadata?.annotations?.["scheduling.k8s.io/group-name"]) {
      p.push("the launcher joined the workers' PodGroup");
    }
    return p;
  });
}

// manifests/scan: the controller's rights are nodes get/list/patch
// cluster-wide and the workers' pods in their namespace, nothing else; the
// CronJob runs one scan at a time and marks nothing unless told.
const rbacKinds = ["ClusterRole", "Role"];
const wantRules = {
  "ClusterRole": [{ apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "patch"] }],
  "Role": [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] },
    { apiGroups: [""], resources: ["pods/exec"], verbs: ["create", "get"] }],
};
// RBAC cannot name the fields of a node a patch may touch: the admission
// policy does. Bound to Deny, failing closed, matching the controller's
// ServiceAccount on node updates, with the labels' prefix of scan.env.
function checkScanAdmission(name, objs, sa) {
  const vap = find(objs, "ValidatingAdmissionPolicy");
  const prefix = `${find(objs, "ConfigMap", "fabric-bench-scan")?.data.MARK_LABEL_PREFIX}/`;
  check(`${name}: an admission policy bound to Deny limits the controller's node updates`, () => {
    if (!vap) return ["no ValidatingAdmissionPolicy"];
    const p = [];
    const bindings = objs.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding");
    if (bindings.length !== 1 || bindings[0].spec.policyName !== vap.metadata.name) p.push(`${bindings.length} bindings of ${vap.metadata.name}`);
    if (!(bindings[0]?.spec.validationActions || []).includes("Deny")) p.push(`validationActions ${JSON.stringify(bindings[0]?.spec.validationActions)}`);
    if (vap.spec.failurePolicy !== "Fail") p.push(`failurePolicy ${vap.spec.failurePolicy}`);
    const rules = vap.spec.matchConstraints?.resourceRules || [];
    if (!rules.some((r) => same(r.apiGroups, [""]) && r.resources?.includes("nodes") && r.operations?.includes("UPDATE"))) {
      p.push(`matches ${JSON.stringify(rules)}, not node updates`);
    }
    for (const o of [vap, ...bindings]) if (o.metadata.namespace) p.push(`${o.kind} is cluster-scoped, given namespace ${o.metadata.namespace}`);
    const text = JSON.stringify(vap.spec.validations || []);
    if (!text.includes(`'${prefix}'`)) p.push(`the validations do not name the prefix ${prefix} (scan.env MARK_LABEL_PREFIX)`);
    return p;
  });
  check(`${name}: the admission policy's CEL allows the scan's marks and refuses any other node change`, () => {
    if (!cel) return ["no CEL evaluator: npm ci in tests/ installs @marcbachmann/cel-js"];
    if (!vap) return ["no ValidatingAdmissionPolicy"];
    const p = [];
    const run = (expr, ctx) => {
      try { return cel.evaluate(expr, ctx); } catch (e) { p.push(`${expr.slice(0, 60)}...: ${e.message}`); return undefined; }
    };
    const matches = (username) => (vap.spec.matchConditions || []).every((m) => run(m.expression, { request: { userInfo: { username } } }) === true);
    const controller = `system:serviceaccount:${sa?.metadata.namespace}:${sa?.metadata.name}`;
    if (!matches(controller)) p.push(`does not apply to the controller ${controller}`);
    for (const other of ["kubernetes-admin", "system:node:gpu-a", `system:serviceaccount:${sa?.metadata.namespace}:default`,
      `${controller}-x`]) if (matches(other)) p.push(`applies to ${other} too`);
    // Which validations refuse the update of `old` into `edit(old)`.
    const refusals = (old, edit) => {
      const obj = structuredClone(old);
      edit(obj);
      return (vap.spec.validations || []).filter((v) => run(v.expression, { object: obj, oldObject: old }) !== true)
        .map((v) => v.message);
    };
    const marked = {
      apiVersion: "v1", kind: "Node",
      metadata: { name: "gpu-a", labels: { "kubernetes.io/hostname": "gpu-a", team: "ml", [`${prefix}scan`]: "failed",
        [`${prefix}scan-time`]: "20260101T000000Z" }, annotations: { "networking.gke.io/nic-info": "[]" } },
      spec: { providerID: "gce://p/z/gpu-a", taints: [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" },
        { key: `${prefix}scan`, value: "failed", effect: "NoSchedule" }] },
    };
    const bare = { apiVersion: "v1", kind: "Node", metadata: { name: "gpu-b" }, spec: {} };
    const ours = (n) => n.spec.taints.find((t) => t.key === `${prefix}scan`);
    const allowed = {
      "no change": [marked, () => {}],
      "marked slow, labels and taint": [marked, (n) => { n.metadata.labels[`${prefix}scan`] = "slow"; ours(n).value = "slow"; }],
      "marks cleared": [marked, (n) => {
        delete n.metadata.labels[`${prefix}scan`]; delete n.metadata.labels[`${prefix}scan-time`];
        n.spec.taints = n.spec.taints.filter((t) => t !== ours(n));
      }],
      "a node without labels or taints marked": [bare, (n) => {
        n.metadata.labels = { [`${prefix}scan`]: "failed" };
        n.spec.taints = [{ key: `${prefix}scan`, value: "failed", effect: "NoSchedule" }];
      }],
    };
    const refused = {
      "another label added": [marked, (n) => { n.metadata.labels.team2 = "x"; }],
      "another label changed": [marked, (n) => { n.metadata.labels.team = "ops"; }],
      "another label removed": [marked, (n) => { delete n.metadata.labels.team; }],
      "every label removed": [marked, (n) => { delete n.metadata.labels; }],
      "a label of a look-alike prefix": [marked, (n) => { n.metadata.labels[`${prefix.slice(0, -1)}.evil.example/x`] = "y"; }],
      "a label added to a node without labels": [bare, (n) => { n.metadata.labels = { team: "x" }; }],
      "another taint added": [marked, (n) => { n.spec.taints.push({ key: "dedicated", value: "x", effect: "NoSchedule" }); }],
      "another taint removed": [marked, (n) => { n.spec.taints = n.spec.taints.filter((t) => t.key !== "nvidia.com/gpu"); }],
      "another taint's effect changed": [marked, (n) => { n.spec.taints[0].effect = "NoExecute"; }],
      "cordoned": [marked, (n) => { n.spec.unschedulable = true; }],
      "an annotation changed": [marked, (n) => { n.metadata.annotations["networking.gke.io/nic-info"] = "[{}]"; }],
      "the annotations removed": [marked, (n) => { delete n.metadata.annotations; }],
      "a finalizer added": [marked, (n) => { n.metadata.finalizers = ["example.com/keep"]; }],
    };
    for (const [what, [old, edit]] of Object.entries(allowed)) {
      const why = refusals(old, edit);
      if (why.length) p.push(`refuses ${what}: ${why.join("; ")}`);
    }
    for (const [what, [old, edit]] of Object.entries(refused)) if (refusals(old, edit).length === 0) p.push(`allows ${what}`);
    return p;
  });
}

function checkScan(name, objs) {
  const sa = find(objs, "ServiceAccount");
  check(`${name}: RBAC is nodes get/list/patch and the workers' pods, no wildcard, no secrets`, () => {
    const p = [];
    for (const kind of rbacKinds) {
      const roles = objs.filter((o) => o.kind === kind);
      if (roles.length !== 1) { p.push(`${roles.length} ${kind}s`); continue; }
      const rules = roles[0].rules || [];
      for (const r of rules) {
        const words = [...(r.apiGroups || []), ...(r.resources || []), ...(r.verbs || []), ...(r.resourceNames || [])];
        if (words.some((w) => w.includes("*"))) p.push(`${kind} ${roles[0].metadata.name} has a wildcard`);
        if ((r.resources || []).some((x) => x.startsWith("secrets"))) p.push(`${kind} ${roles[0].metadata.name} reaches secrets`);
        if (r.nonResourceURLs) p.push(`${kind} ${roles[0].metadata.name} has nonResourceURLs`);
      }
      const norm = (rs) => canon(rs.map((r) => ({ apiGroups: r.apiGroups, resources: r.resources, verbs: [...(r.verbs || [])].sort() })));
      if (norm(rules) !== norm(wantRules[kind])) p.push(`${kind} rules ${JSON.stringify(rules)}, want ${JSON.stringify(wantRules[kind])}`);
    }
    const workersNs = find(objs, "ConfigMap", "fabric-bench-scan")?.data.SCAN_NAMESPACE;
    if (objs.some((o) => o.kind === "Role" && o.metadata.namespace !== workersNs)) p.push(`Role not in the workers' namespace ${workersNs}`);
    return p;
  });
  check(`${name}: the bindings give the controller's ServiceAccount only those roles`, () => {
    const p = [];
    const bindings = objs.filter((o) => o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding");
    if (bindings.length !== 2) p.push(`${bindings.length} bindings`);
    for (const b of bindings) {
      const role = b.roleRef.kind === "ClusterRole" ? find(objs, "ClusterRole", b.roleRef.name) : find(objs, "Role", b.roleRef.name);
      if (["cluster-admin", "admin", "edit"].includes(b.roleRef.name) || !role) p.push(`${b.kind} ${b.metadata.name} binds ${b.roleRef.kind} ${b.roleRef.name}`);
      if (b.kind === "RoleBinding" && b.roleRef.kind !== "Role") p.push(`RoleBinding ${b.metadata.name} binds a ClusterRole`);
      for (const s of b.subjects || []) {
        if (s.kind !== "ServiceAccount" || s.name !== sa?.metadata.name || s.namespace !== sa?.metadata.namespace) {
          p.push(`${b.kind} ${b.metadata.name} binds ${s.kind} ${s.namespace}/${s.name}`);
        }
      }
    }
    return p;
  });
  checkScanAdmission(name, objs, sa);
  check(`${name}: CronJob one at a time, a Job a user can create from it, the controller locked down`, () => {
    const cj = find(objs, "CronJob");
    if (!cj) return ["no CronJob"];
    const p = [];
    if (cj.spec.concurrencyPolicy !== "Forbid") p.push(`concurrencyPolicy ${cj.spec.concurrencyPolicy}`);
    if (!/^\S+( \S+){4}$/.test(cj.spec.schedule || "")) p.push(`schedule ${cj.spec.schedule}`);
    const job = cj.spec.jobTemplate.spec;
    if (!(job.activeDeadlineSeconds > 0)) p.push("no activeDeadlineSeconds");
    const spec = job.template.spec;
    if (spec.restartPolicy !== "Never") p.push(`restartPolicy ${spec.restartPolicy}`);
    if (spec.serviceAccountName !== sa?.metadata.name) p.push(`serviceAccountName ${spec.serviceAccountName}`);
    if (spec.hostNetwork === true) p.push("hostNetwork");
    if (spec.securityContext?.runAsNonRoot !== true) p.push("pod may run as root");
    if (spec.securityContext?.seccompProfile?.type !== "RuntimeDefault") p.push("no RuntimeDefault seccomp profile");
    const vols = new Set((spec.volumes || []).map((v) => v.name));
    for (const c of allContainers(spec)) {
      const sc = c.securityContext || {};
      if (sc.privileged || sc.allowPrivilegeEscalation !== false) p.push(`${c.name} may escalate`);
      if (sc.readOnlyRootFilesystem !== true) p.push(`${c.name} root file system writable`);
      if (!same(sc.capabilities?.drop, ["ALL"]) || (sc.capabilities?.add || []).length) p.push(`${c.name} keeps capabilities`);
      const r = c.resources || {};
      if (!r.requests || !r.limits || !same(sortKeys(r.requests), sortKeys(r.limits)) || !r.limits.cpu || !r.limits.memory) {
        p.push(`${c.name}: requests do not equal cpu and memory limits`);
      }
      for (const m of c.volumeMounts || []) if (!vols.has(m.name)) p.push(`${c.name} mounts unknown ${m.name}`);
      const base = find(renders["base.none"]?.objs || [], "StatefulSet")?.spec.template.spec.containers[0].image;
      if (c.image !== base) p.push(`${c.name} image ${c.image} is not the workers' ${base}`);
      for (const ef of c.envFrom || []) {
        const cm = find(objs, "ConfigMap", ef.configMapRef?.name);
        if (!cm) p.push(`${c.name}: ConfigMap ${ef.configMapRef?.name} not rendered`);
        else if (cm.data.MARK_NODES !== "false") p.push(`MARK_NODES is ${cm.data.MARK_NODES}, not false by default`);
      }
      if (!(c.envFrom || []).length) p.push(`${c.name} reads no scan options`);
    }
    const claim = (spec.volumes || []).find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim.claimName;
    if (!find(objs, "PersistentVolumeClaim", claim)) p.push(`results claim ${claim} not rendered`);
    return p;
  });
}

// manifests/overlays/policy-<fabric>: the base workers plus only the trigger.
function checkTrigger(name, fabric, objs) {
  const tpl = find(objs, "StatefulSet")?.spec.template;
  const base = find(renders["base.none"]?.objs || [], "StatefulSet")?.spec.template;
  if (tpl) checkPodTemplate(`${name} StatefulSet/fabric-bench`, "none", tpl, objs);
  check(`${name}: plain workers with only the trigger annotation and fabric label`, () => {
    if (!tpl || !base) return ["no StatefulSet in this or the base render"];
    const p = [];
    if (tpl.metadata.annotations["fabric-bench/inject"] !== fabric) p.push("no trigger annotation");
    if (tpl.metadata.labels["fabric-bench/fabric"] !== fabric) p.push("no fabric label");
    const plain = structuredClone(tpl);
    delete plain.metadata.annotations["fabric-bench/inject"];
    delete plain.metadata.labels["fabric-bench/fabric"];
    if (canon(plain) !== canon(base)) p.push("pod template differs from the base's: wiring does not belong here");
    const policyFile = path.join(manifestsDir, "policies", "kyverno", `${fabric}.yaml`);
    if (!fs.existsSync(policyFile)) p.push(`no policy ${policyFile}`);
    else {
      const rule = load(policyFile)[0].spec.rules[0];
      if (rule.match?.any?.[0]?.resources?.annotations?.["fabric-bench/inject"] !== fabric) {
        p.push("the policy does not match this trigger");
      }
    }
    return p;
  });
}

// ---- main -------------------------------------------------------------------
const files = fs.readdirSync(renderDir).filter((f) => f.endsWith(".yaml")).sort();
const renders = {};
for (const f of files) {
  const [variant, fabric] = f.replace(/\.yaml$/, "").split(".");
  renders[`${variant}.${fabric}`] = { variant, fabric, objs: load(path.join(renderDir, f)) };
}
if (files.length === 0) report("rendered files found", [`none in ${renderDir}`]);

for (const [name, { variant, fabric, objs }] of Object.entries(renders)) {
  if (!wanted(name)) continue;
  const problems = [];
  for (const o of objs) {
    for (const e of await validateObject(o)) problems.push(`${o.kind}/${o.metadata?.name}: ${e}`);
    // Templates inside custom resources, against Kubernetes' own schema too.
    if (o.kind === "StatefulSet") continue;
    const PT = await modelClass("v1", "PodTemplate");
    for (const [label, template] of objectPodTemplates(o)) {
      try {
        new PT({ apiVersion: "v1", kind: "PodTemplate", metadata: { name: "t" }, template }).validate();
      } catch (e) {
        problems.push(`${label} template: ${e.message.split("\n")[0]}`);
      }
    }
  }
  report(`${name}: every object validates against its schema`, problems);
  if (variant === "cluster" || variant === "policies") continue;
  if (variant === "scan") {
    checkScan(name, objs);
    continue;
  }
  if (variant === "trigger") {
    checkTrigger(name, fabric, objs);
    continue;
  }
  if (variant === "envtrigger") {
    // The env launch's Indexed Job of plain pods for the Kyverno policy:
    // no fabric wiring, the trigger, and the env launch itself.
    const job = find(objs, "Job");
    if (job) checkPodTemplate(`${name} Job/fabric-bench`, "none", job.spec.template, objs);
    check(`${name}: plain env pods with the trigger annotation`, () =>
      job?.spec.template.metadata.annotations?.["fabric-bench/inject"] === fabric ? [] : ["no Job or no trigger annotation"]);
    checkEnvLaunch(name, "envjob", objs, find(renders[`trigger.${fabric}`]?.objs || [], "StatefulSet"));
    continue;
  }
  const cluster = renders[`cluster.${fabric}`]?.objs || [];
  for (const [label, tpl] of podTemplates(objs)) {
    checkPodTemplate(`${variant} ${label}`, fabric, tpl, objs);
    if (isLauncherLabel(label)) continue;
    if (fabric === "gke-tcpxo") checkTcpxo(`${variant} ${label}`, tpl);
    if (fabric === "sriov-rdma" || fabric === "oci-roce") checkMultus(`${variant} ${label}`, fabric, tpl, objs, cluster);
  }
  if (variant === "workers" && fabric === "gke-tcpxo") checkTcpxoEnv(objs);
  if (variant === "mpijob") {
    check(`${name}: MPIJob workers are the fabric's StatefulSet pods, launcher bounded`, () => {
      const job = find(objs, "MPIJob");
      const sts = find(renders[`workers.${fabric}`]?.objs || [], "StatefulSet");
      const p = [];
      if (!sts) return [`no workers.${fabric} render to compare with`];
      if (!same(job.spec.mpiReplicaSpecs.Worker.template, sts.spec.template)) p.push("worker template differs");
      if (job.spec.mpiReplicaSpecs.Worker.replicas !== sts.spec.replicas) p.push("replicas differ");
      const l = job.spec.mpiReplicaSpecs.Launcher.template.spec.containers[0];
      if (l.image !== sts.spec.template.spec.containers[0].image) p.push("launcher image differs");
      if (!(job.spec.runPolicy?.activeDeadlineSeconds > 0)) p.push("no activeDeadlineSeconds");
      if (find(objs, "StatefulSet") || find(objs, "Service")) p.push("StatefulSet or Service left over");
      return p;
    });
  }
  const sts = find(renders[`workers.${fabric}`]?.objs || [], "StatefulSet");
  if (variant === "trainer") checkTrainer(name, objs, sts);
  if (variant === "pytorchjob") checkPytorchjob(name, objs, sts);
  if (variant.startsWith("env")) checkEnvLaunch(name, variant, objs, sts);
  if (variant.startsWith("volcano")) checkVolcano(name, objs, sts);
}

if (wanted("cluster.gke-tcpxo")) check("cluster.gke-tcpxo: eight Device Networks bound to param sets, named as the gpu-nics input", () => {
  const objs = renders["cluster.gke-tcpxo"]?.objs;
  if (!objs) return ["not rendered"];
  const nics = load(path.join(manifestsDir, "overlays", "gke-tcpxo", "gpu-nics.yaml"))[0].data;
  const nets = objs.filter((o) => o.kind === "Network");
  const p = [];
  if (!same(nets.map((n) => n.metadata.name).sort(), Object.values(nics).sort())) p.push("names differ from gpu-nics.yaml");
  for (const n of nets) {
    if (n.spec.type !== "Device") p.push(`${n.metadata.name} type ${n.spec.type}`);
    if (!find(objs, "GKENetworkParamSet", n.spec.parametersRef?.name)) p.push(`${n.metadata.name}: no param set`);
  }
  return p;
});

process.exit(exitCode());
