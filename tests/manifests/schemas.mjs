// The vendored CRD schemas (schemas/*.json) compiled with ajv, shared by
// check-rendered.mjs and kyverno.mjs.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const here = path.dirname(fileURLToPath(import.meta.url));

export const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of ["int32", "int64", "double", "float", "byte", "binary", "password"]) {
  if (!ajv.formats[f]) ajv.addFormat(f, true);
}

// "apiVersion/kind" -> { validate, schema }
export function loadCrdSchemas() {
  const out = {};
  for (const file of fs.readdirSync(path.join(here, "schemas"))) {
    if (!file.endsWith(".json")) continue;
    const schema = JSON.parse(fs.readFileSync(path.join(here, "schemas", file), "utf8"));
    const key = `${schema.properties.apiVersion.const}/${schema.properties.kind.const}`;
    // Compiled on first use: a run that checks one render compiles only its schemas.
    let compiled;
    out[key] = { schema, get validate() { return (compiled ??= ajv.compile(schema)); } };
  }
  return out;
}

// Forbids unknown fields wherever a schema lists its properties and does not
// allow extra ones itself, as a strict API server would.
export function strictify(node) {
  if (Array.isArray(node)) return node.map(strictify);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) out[k] = strictify(v);
  if (out.properties && out.additionalProperties === undefined &&
      !out["x-kubernetes-preserve-unknown-fields"]) {
    out.additionalProperties = false;
  }
  return out;
}

export const ajvErrors = (errors) =>
  (errors || []).map((e) => `${e.instancePath || "/"} ${e.message}` +
    (e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ""));
