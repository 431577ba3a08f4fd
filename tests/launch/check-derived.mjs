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
import { ajv, loadCrdSchemas, strictify } from "../manifests/schemas.mjs";
import { tap } from "../manifests/tap.mjs";

const [label, file] = process.argv.slice(2);
const list = JSON.parse(fs.readFileSync(file, "utf8"));

const mpijob = loadCrdSchemas()["kubeflow.org/v2beta1/MPIJob"].schema;
const validateTemplate = ajv.compile(strictify(
  mpijob.properties.spec.properties.mpiReplicaSpecs.additionalProperties.properties.template));

const { report, exitCode } = tap(4);
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
  report(name, problems);
}
process.exit(exitCode());
