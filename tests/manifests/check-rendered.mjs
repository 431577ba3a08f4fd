// Validates rendered manifests and asserts the fabric wiring on them.
//
//   node check-rendered.mjs RENDER_DIR MANIFESTS_DIR
//
// RENDER_DIR holds `kubectl kustomize` output named <variant>.<fabric>.yaml,
// variant one of workers (manifests/overlays), mpijob (manifests/mpijob/
// overlays) or cluster (manifests/cluster). Prints one test-protocol line per
// check ("ok - NAME" / "not ok - NAME: why"); exits 1 when any check failed.
//
// Schemas: Kubernetes' own objects through kubernetes-models (generated from
// the Kubernetes OpenAPI); custom resources through ajv against the CRDs'
// openAPIV3Schema vendored in schemas/. Pod templates are checked a second
// time against the PodTemplateSpec schema carried inside the MPIJob CRD with
// unknown fields forbidden, so a misspelt field (restartPolicyy) fails here
// instead of being silently dropped by the API server.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { ajv, ajvErrors, loadCrdSchemas, strictify } from "./schemas.mjs";

const [renderDir, manifestsDir] = process.argv.slice(2);
if (!renderDir || !manifestsDir) {
  console.error("usage: node check-rendered.mjs RENDER_DIR MANIFESTS_DIR");
  process.exit(2);
}

let failures = 0;
function report(name, problems) {
  if (problems.length === 0) console.log(`ok - ${name}`);
  else {
    failures++;
    console.log(`not ok - ${name}: ${problems.slice(0, 4).join("; ")}`);
  }
}
// check(NAME, fn): fn returns a list of problems (strings), or throws.
function check(name, fn) {
  let problems;
  try {
    problems = fn() || [];
  } catch (e) {
    problems = [`threw ${e.message}`];
  }
  report(name, problems);
}
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

// Pod templates of a render: [label, template].
function podTemplates(objs) {
  const out = [];
  for (const o of objs) {
    if (o.kind === "StatefulSet") out.push([`StatefulSet/${o.metadata.name}`, o.spec.template]);
    if (o.kind === "MPIJob") {
      for (const [role, rs] of Object.entries(o.spec.mpiReplicaSpecs)) {
        out.push([`MPIJob/${o.metadata.name}/${role}`, rs.template]);
      }
    }
  }
  return out;
}

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
  const isLauncher = label.endsWith("/Launcher");
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
  const main = spec.containers.find((c) => c.name === "fabric-bench");
  check(`${label} (${fabric}): worker has the ssh Secret, /dev/shm and the fabric's devices`, () => {
    const p = [];
    if (!main) return ["no container fabric-bench"];
    const ssh = spec.volumes.find((v) => v.secret?.secretName === "fabric-bench-ssh");
    if (!ssh) p.push("no volume from Secret fabric-bench-ssh");
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
  const main = spec.containers.find((c) => c.name === "fabric-bench");

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
    const main = tpl.spec.containers.find((c) => c.name === "fabric-bench");
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

// ---- main -------------------------------------------------------------------
const files = fs.readdirSync(renderDir).filter((f) => f.endsWith(".yaml")).sort();
const renders = {};
for (const f of files) {
  const [variant, fabric] = f.replace(/\.yaml$/, "").split(".");
  renders[`${variant}.${fabric}`] = { variant, fabric, objs: load(path.join(renderDir, f)) };
}
if (files.length === 0) report("rendered files found", [`none in ${renderDir}`]);

for (const [name, { variant, fabric, objs }] of Object.entries(renders)) {
  const problems = [];
  for (const o of objs) {
    for (const e of await validateObject(o)) problems.push(`${o.kind}/${o.metadata?.name}: ${e}`);
    if (o.kind === "MPIJob") {
      const PT = await modelClass("v1", "PodTemplate");
      for (const [role, rs] of Object.entries(o.spec.mpiReplicaSpecs)) {
        try {
          new PT({ apiVersion: "v1", kind: "PodTemplate", metadata: { name: role }, template: rs.template }).validate();
        } catch (e) {
          problems.push(`MPIJob ${role} template: ${e.message.split("\n")[0]}`);
        }
      }
    }
  }
  report(`${name}: every object validates against its schema`, problems);
  if (variant === "cluster") continue;
  const cluster = renders[`cluster.${fabric}`]?.objs || [];
  for (const [label, tpl] of podTemplates(objs)) {
    checkPodTemplate(`${variant} ${label}`, fabric, tpl, objs);
    if (label.endsWith("/Launcher")) continue;
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
}

check("cluster.gke-tcpxo: eight Device Networks bound to param sets, named as the gpu-nics input", () => {
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

process.exit(failures ? 1 : 0);
