// The Kyverno side of tests/manifests/test_kyverno.sh, without Kyverno.
//
//   node kyverno.mjs validate POLICY.yaml...
//   node kyverno.mjs prepare POLICY.yaml TRIGGER_RENDER.yaml OUT_DIR
//   node kyverno.mjs compare MUTATED.json TRIGGER_RENDER.yaml OVERLAY_RENDER.yaml
//
// validate: each ClusterPolicy against Kyverno's CRD schema, unknown fields
// forbidden. prepare: the plain pod (the trigger render's StatefulSet pod, as
// the controller creates it) to OUT_DIR/pod.yaml, the match block checked on
// it and on pods without the trigger, and the rule's patchStrategicMerge with
// its variables resolved to OUT_DIR/patch.json (kubectl then applies it with
// its own strategic-merge machinery). compare: the wiring of the mutated pod
// against the overlay's pod template, field by field. One test-protocol line
// per check; exit 1 when any failed.
//
// Only what the policies use is resolved, the way Kyverno documents it:
// match/exclude resource filters (kinds, operations, annotations, names,
// namespaces with * and ? wildcards), context variables (value, jmesPath,
// default), preconditions (Equals, NotEquals, GreaterThan, LessThan) and
// {{ }} substitution in keys and values, with a small JMESPath subset
// (paths, "quoted" keys, [index], `json` and 'raw' literals, [a, b] lists,
// and the functions to_number, to_string, multiply, max). Anything else is
// reported as unsupported, never silently skipped.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { ajv, ajvErrors, loadCrdSchemas, strictify } from "./schemas.mjs";
import { tap } from "./tap.mjs";

const { report, check, exitCode } = tap(6);
const loadAll = (file) => YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))
  .map((d) => d.toJS()).filter(Boolean);
const find = (objs, kind, name) =>
  objs.find((o) => o.kind === kind && (!name || o.metadata?.name === name));

// ---- a JMESPath subset ---------------------------------------------------------
function tokenize(src) {
  const tokens = [];
  const re = /\s*(?:(`(?:[^`\\]|\\.)*`)|('(?:[^'\\]|\\.)*')|("(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|([.,()[\]]))/y;
  let m;
  re.lastIndex = 0;
  while (re.lastIndex < src.length) {
    const at = re.lastIndex;
    if (!(m = re.exec(src))) {
      if (/^\s*$/.test(src.slice(at))) break;
      throw new Error(`unsupported JMESPath at '${src.slice(at)}' in '${src}'`);
    }
    if (m[1]) tokens.push({ t: "lit", v: JSON.parse(m[1].slice(1, -1)) });
    else if (m[2]) tokens.push({ t: "lit", v: m[2].slice(1, -1) });
    else if (m[3]) tokens.push({ t: "id", v: JSON.parse(m[3]) });
    else if (m[4]) tokens.push({ t: "num", v: Number(m[4]) });
    else if (m[5]) tokens.push({ t: "id", v: m[5] });
    else if (m[6]) tokens.push({ t: m[6] });
  }
  return tokens;
}
const functions = {
  to_number: (x) => (typeof x === "number" ? x : x === null || x === "" || isNaN(Number(x)) ? null : Number(x)),
  to_string: (x) => (typeof x === "string" ? x : JSON.stringify(x)),
  multiply: (a, b) => {
    if (typeof a !== "number" || typeof b !== "number") throw new Error(`multiply wants numbers, got ${a}, ${b}`);
    return a * b;
  },
  max: (list) => (list.length ? Math.max(...list) : null),
};
// Evaluates EXPR against SCOPE (an object of variables).
export function jmes(expr, scope) {
  const tokens = tokenize(expr);
  let i = 0;
  const peek = (t) => tokens[i]?.t === t;
  const take = (t) => {
    if (!peek(t)) throw new Error(`expected ${t} at token ${i} of '${expr}'`);
    return tokens[i++];
  };
  function primary(current) {
    const tok = tokens[i];
    if (!tok) throw new Error(`unexpected end of '${expr}'`);
    if (tok.t === "lit") { i++; return tok.v; }
    if (tok.t === "[") {
      i++;
      const items = [];
      while (!peek("]")) { items.push(expression(current)); if (peek(",")) i++; }
      take("]");
      return items;
    }
    if (tok.t === "id") {
      i++;
      if (peek("(")) {
        const fn = functions[tok.v];
        if (!fn) throw new Error(`unsupported function ${tok.v} in '${expr}'`);
        i++;
        const args = [];
        while (!peek(")")) { args.push(expression(current)); if (peek(",")) i++; }
        take(")");
        return fn(...args);
      }
      // A name at the root is a variable: unknown ones fail the rule in Kyverno.
      if (current === scope && !(tok.v in scope)) throw new Error(`variable ${tok.v} not found`);
      return current?.[tok.v] ?? null;
    }
    throw new Error(`unsupported token ${tok.t} in '${expr}'`);
  }
  function expression(current) {
    let value = primary(current);
    for (;;) {
      if (peek(".")) { i++; value = value?.[take("id").v] ?? null; }
      else if (peek("[") && tokens[i + 1]?.t === "num") {
        i++;
        const n = take("num").v;
        take("]");
        value = Array.isArray(value) ? (value[n < 0 ? value.length + n : n] ?? null) : null;
      } else return value;
    }
  }
  const out = expression(scope);
  if (i !== tokens.length) throw new Error(`unsupported JMESPath after token ${i} of '${expr}'`);
  return out;
}

// {{ }} substitution: a string that is one variable takes its value's type;
// otherwise each variable is written into the string.
// A variable that resolves to null fails the rule, as in Kyverno.
function resolved(expr, scope) {
  const v = jmes(expr, scope);
  if (v === null || v === undefined) throw new Error(`variable {{ ${expr} }} did not resolve`);
  return v;
}
function substituteString(s, scope) {
  const whole = s.match(/^\{\{\s*(.*?)\s*\}\}$/s);
  if (whole && !whole[1].includes("{{")) return resolved(whole[1], scope);
  return s.replace(/\{\{\s*(.*?)\s*\}\}/gs, (_, e) => {
    const v = resolved(e, scope);
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}
// Keys and values, as Kyverno's variable traversal does.
export function substitute(node, scope) {
  if (Array.isArray(node)) return node.map((v) => substitute(v, scope));
  if (typeof node === "string") return substituteString(node, scope);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    const key = substituteString(k, scope);
    if (typeof key !== "string") throw new Error(`key ${k} did not resolve to a string`);
    out[key] = substitute(v, scope);
  }
  return out;
}

// ---- match, context, preconditions ----------------------------------------------
const wildcard = (pattern, s) => new RegExp(`^${String(pattern)
  .replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`).test(String(s));

// Does one resource filter ({resources: ...}) select this CREATE of a pod?
function filterMatches(filter, pod) {
  const r = filter.resources || {};
  const supported = ["kinds", "operations", "annotations", "names", "namespaces"];
  for (const k of Object.keys(filter)) if (k !== "resources") throw new Error(`unsupported filter field ${k}`);
  for (const k of Object.keys(r)) if (!supported.includes(k)) throw new Error(`unsupported resources field ${k}`);
  if (r.kinds && !r.kinds.some((k) => ["Pod", "v1/Pod", "*"].includes(k))) return false;
  if (r.operations && !r.operations.includes("CREATE")) return false;
  if (r.names && !r.names.some((n) => wildcard(n, pod.metadata.name))) return false;
  if (r.namespaces && !r.namespaces.some((n) => wildcard(n, pod.metadata.namespace))) return false;
  const ann = pod.metadata.annotations || {};
  for (const [k, v] of Object.entries(r.annotations || {})) {
    const key = Object.keys(ann).find((a) => wildcard(k, a));
    if (key === undefined || !wildcard(v, ann[key])) return false;
  }
  return true;
}
function blockMatches(block, pod) {
  if (!block) return false;
  if (block.resources) throw new Error("unsupported: resources directly under match (use any/all)");
  if (block.any) return block.any.some((f) => filterMatches(f, pod));
  if (block.all) return block.all.every((f) => filterMatches(f, pod));
  return false;
}
export const ruleMatches = (rule, pod) => blockMatches(rule.match, pod) && !blockMatches(rule.exclude, pod);

function contextScope(rule, pod) {
  const scope = { request: { operation: "CREATE", object: pod } };
  for (const c of rule.context || []) {
    if (!c.variable) throw new Error(`unsupported context entry ${c.name}`);
    const v = c.variable;
    let value = v.value === undefined ? undefined : substitute(v.value, scope);
    if (v.jmesPath !== undefined) value = jmes(v.jmesPath, value === undefined ? scope : value);
    if (value === null || value === undefined) value = v.default;
    if (value === undefined) throw new Error(`variable ${c.name} did not resolve and has no default`);
    scope[c.name] = value;
  }
  return scope;
}
const operators = {
  Equals: (a, b) => JSON.stringify(a) === JSON.stringify(b),
  NotEquals: (a, b) => JSON.stringify(a) !== JSON.stringify(b),
  GreaterThan: (a, b) => Number(a) > Number(b),
  LessThan: (a, b) => Number(a) < Number(b),
};
function preconditionsHold(rule, scope) {
  const pre = rule.preconditions;
  if (!pre) return true;
  const one = (c) => {
    const op = operators[c.operator];
    if (!op) throw new Error(`unsupported operator ${c.operator}`);
    return op(substitute(c.key, scope), substitute(c.value, scope));
  };
  return (pre.all || []).every(one) && (!pre.any || pre.any.some(one));
}

// ---- the plain pod and the wiring ---------------------------------------------------
// The pod the StatefulSet controller creates from the template (the fields a
// policy sees on CREATE that matter here).
// The env launch's Indexed Job (manifests/envjob) makes its pods from its
// template the same way.
function podFromRender(objs) {
  const sts = find(objs, "StatefulSet") || find(objs, "Job");
  if (!sts) throw new Error("no StatefulSet or Job in the render");
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${sts.metadata.name}-0`,
      namespace: sts.metadata.namespace,
      labels: { ...sts.spec.template.metadata.labels },
      annotations: { ...sts.spec.template.metadata.annotations },
    },
    spec: structuredClone(sts.spec.template.spec),
  };
}
// A check's name: the fabric, and the workload when it is not the StatefulSet.
const labelOf = (fabric, renderFile) => {
  const variant = path.basename(renderFile).split(".")[0];
  return variant === "trigger" || variant === "workers" ? fabric : `${fabric} (${variant})`;
};

// The wiring of a pod: metadata and spec less the trigger, each container's
// environment resolved (envFrom ConfigMaps of the render, then env), lists
// with a key sorted by it (their order means nothing to the kubelet).
const triggerAnnotation = "fabric-bench/inject";
const fabricLabel = "fabric-bench/fabric";
function wiring(pod, objs) {
  const p = structuredClone(pod);
  const ann = { ...(p.metadata.annotations || {}) };
  const labels = { ...(p.metadata.labels || {}) };
  delete ann[triggerAnnotation];
  delete labels[fabricLabel];
  for (const c of [...(p.spec.initContainers || []), ...(p.spec.containers || [])]) {
    const env = {};
    for (const ef of c.envFrom || []) {
      const cm = find(objs, "ConfigMap", ef.configMapRef?.name);
      if (!cm) throw new Error(`${c.name}: ConfigMap ${ef.configMapRef?.name} not in the render`);
      Object.assign(env, cm.data);
    }
    for (const e of c.env || []) env[e.name] = e.value ?? e.valueFrom;
    delete c.envFrom;
    c.env = env;
    if (c.volumeMounts) c.volumeMounts = sortBy(c.volumeMounts, "mountPath");
  }
  for (const k of ["containers", "initContainers", "volumes"]) if (p.spec[k]) p.spec[k] = sortBy(p.spec[k], "name");
  return { annotations: ann, labels, spec: p.spec };
}
const sortBy = (list, key) => [...list].sort((a, b) => String(a[key]).localeCompare(String(b[key])));

// Field-by-field differences: "path: got X, want Y".
function diff(got, want, at = "") {
  if (JSON.stringify(got) === JSON.stringify(want)) return [];
  const isObj = (x) => x && typeof x === "object";
  if (Array.isArray(got) && Array.isArray(want)) {
    const out = [];
    for (let i = 0; i < Math.max(got.length, want.length); i++) out.push(...diff(got[i], want[i], `${at}[${i}]`));
    return out;
  }
  if (isObj(got) && isObj(want) && !Array.isArray(got) && !Array.isArray(want)) {
    const out = [];
    for (const k of new Set([...Object.keys(got), ...Object.keys(want)])) {
      const label = Array.isArray(got) ? `${at}[${k}]` : `${at}.${k}`;
      out.push(...diff(got[k], want[k], label));
    }
    return out;
  }
  const show = (x) => (x === undefined ? "(absent)" : JSON.stringify(x).slice(0, 120));
  return [`${at || "."}: policy gives ${show(got)}, component gives ${show(want)}`];
}

// ---- commands ----------------------------------------------------------------------
function validate(files) {
  const schemas = loadCrdSchemas();
  const strict = ajv.compile(strictify(schemas["kyverno.io/v1/ClusterPolicy"].schema));
  for (const f of files) {
    check(`${path.basename(f)}: ClusterPolicy validates against Kyverno's schema (unknown fields forbidden)`, () => {
      const docs = loadAll(f);
      if (docs.length !== 1 || docs[0].kind !== "ClusterPolicy") return ["want exactly one ClusterPolicy"];
      return strict(docs[0]) ? [] : ajvErrors(strict.errors);
    });
  }
}

function prepare(policyFile, triggerFile, outDir) {
  const policy = loadAll(policyFile)[0];
  const fabric = labelOf(path.basename(policyFile, ".yaml"), triggerFile);
  const pod = podFromRender(loadAll(triggerFile));
  const rules = policy.spec.rules.filter((r) => r.mutate);
  check(`${fabric}: one mutate rule with a patchStrategicMerge`, () =>
    rules.length === 1 && rules[0].mutate.patchStrategicMerge ? [] : [`${rules.length} mutate rules`]);
  const rule = rules[0];
  check(`${fabric}: the match block selects only pods annotated ${triggerAnnotation}: ${fabric}`, () => {
    const p = [];
    const own = path.basename(policyFile, ".yaml");
    const other = own === "aws-efa" ? "gke-tcpxo" : "aws-efa";
    const variant = (annotations) => ({ ...pod, metadata: { ...pod.metadata, annotations } });
    const { [triggerAnnotation]: _t, ...rest } = pod.metadata.annotations;
    if (pod.metadata.annotations[triggerAnnotation] !== own) p.push("the trigger render lacks the annotation");
    if (!ruleMatches(rule, pod)) p.push("does not match the trigger pod");
    if (ruleMatches(rule, variant(rest))) p.push("matches a pod without the annotation");
    if (ruleMatches(rule, variant({ ...rest, [triggerAnnotation]: other }))) p.push(`matches a pod annotated for ${other}`);
    const filters = [...(rule.match.any || []), ...(rule.match.all || [])];
    if (!filters.every((f) => JSON.stringify(f.resources?.kinds) === '["Pod"]')) p.push("kinds is not exactly [Pod]");
    if (policy.metadata.annotations?.["pod-policies.kyverno.io/autogen-controllers"] !== "none") {
      p.push("autogen not off: Kyverno would also rewrite the controllers' templates");
    }
    return p;
  });
  let scope;
  let patch;
  check(`${fabric}: context variables resolve`, () => { scope = contextScope(rule, pod); });
  check(`${fabric}: preconditions hold for the plain worker pod`, () =>
    scope && preconditionsHold(rule, scope) ? [] : ["preconditions false: the rule would not apply"]);
  check(`${fabric}: every variable of the patch resolved`, () => {
    patch = substitute(rule.mutate.patchStrategicMerge, scope || {});
    return JSON.stringify(patch).includes("{{") ? ["{{ left in the patch"] : [];
  });
  fs.writeFileSync(path.join(outDir, "pod.yaml"), YAML.stringify(pod));
  if (!patch) return;
  fs.writeFileSync(path.join(outDir, "patch.json"), JSON.stringify(patch));
}

function compare(mutatedFile, triggerFile, overlayFile) {
  const fabric = labelOf(path.basename(overlayFile).split(".")[1], overlayFile);
  const trigger = loadAll(triggerFile);
  const overlay = loadAll(overlayFile);
  const mutated = JSON.parse(fs.readFileSync(mutatedFile, "utf8"));
  check(`${fabric}: the policy's pod has the component's wiring, field by field`, () =>
    diff(wiring(mutated, trigger), wiring(podFromRender(overlay), overlay)));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "validate" && args.length) validate(args);
else if (cmd === "prepare" && args.length === 3) prepare(...args);
else if (cmd === "compare" && args.length === 3) compare(...args);
else {
  console.error("usage: node kyverno.mjs validate POLICY... | prepare POLICY TRIGGER OUT_DIR | compare MUTATED TRIGGER OVERLAY");
  process.exit(2);
}
process.exit(exitCode());
