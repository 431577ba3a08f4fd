// Validates the objects launch/kubectl.sh derive prints (-o json: a List)
// against Kubernetes' schemas, as tests/manifests/check-rendered.mjs does
// for the manifests: kubernetes-models for the objects, and each pod
// template once more against the PodTemplateSpec inside the vendored MPIJob
// CRD with unknown fields forbidden (a misspelt field fails here).
//
//   node check-derived.mjs LABEL LIST.json
//
// Prints one test-protocol line per object; exits 1 when any failed.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const here = path.dirname(fileURLToPath(import.meta.url));
const [label, file] = process.argv.slice(2);
const list = JSON.parse(fs.readFileSync(file, "utf8"));

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ["int32", "int64", "double", "float", "byte", "binary", "password"]) {
  if (!ajv.formats[f]) ajv.addFormat(f, true);
}
function strictify(node) {
  if (Array.isArray(node)) return node.map(strictify);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) out[k] = strictify(v);
  if (out.properties && out.additionalProperties === undefined && !out["x-kubernetes-preserve-unknown-fields"]) {
    out.additionalProperties = false;
  }
  return out;
}
const mpijob = JSON.parse(fs.readFileSync(path.join(here, "../manifests/schemas/mpijob-kubeflow.org-v2beta1.json"), "utf8"));
const validateTemplate = ajv.compile(strictify(
  mpijob.properties.spec.properties.mpiReplicaSpecs.additionalProperties.properties.template));

let failures = 0;
for (const obj of list.items) {
  const name = `${label}: ${obj.kind}/${obj.metadata.name} matches Kubernetes' schema`;
  const problems = [];
  const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/") : ["", obj.apiVersion];
  try {
    const mod = await import(`kubernetes-models/${group ? group + "/" : ""}${version}`);
    new mod[obj.kind](obj).validate();
  } catch (e) {
    problems.push(e.message.split("\n")[0]);
  }
  if (obj.kind === "StatefulSet" && !validateTemplate(obj.spec.template)) {
    problems.push(...validateTemplate.errors.map((e) => `template${e.instancePath} ${e.message}` +
      (e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : "")));
  }
  if (problems.length) {
    failures++;
    console.log(`not ok - ${name}: ${problems.slice(0, 4).join("; ")}`);
  } else console.log(`ok - ${name}`);
}
process.exit(failures ? 1 : 0);
