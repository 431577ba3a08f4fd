// The test protocol the node checkers print: "ok - NAME" or "not ok - NAME:
// the first problems", one line per check, and an exit status that says
// whether any failed. Shared by check-rendered.mjs, kyverno.mjs and
// tests/launch/check-derived.mjs.
export function tap(shown) {
  let failures = 0;
  // report(NAME, problems): a check's line from its list of problems.
  function report(name, problems) {
    if (problems.length === 0) console.log(`ok - ${name}`);
    else {
      failures++;
      console.log(`not ok - ${name}: ${problems.slice(0, shown).join("; ")}`);
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
  return { report, check, exitCode: () => (failures ? 1 : 0) };
}
