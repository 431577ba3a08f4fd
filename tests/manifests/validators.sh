# shellcheck shell=bash
# Sourced by the manifests tests after tests/lib.sh: kubectl (with kustomize)
# and node must be here, and the validators from the npm registry (pinned by
# tests/package-lock.json) installed into tests/node_modules. Exits the test
# with a failure naming the fix when one is missing.
if ! command -v kubectl >/dev/null; then
  not_ok "kubectl present" "kubectl (with kustomize) is needed to render the manifests; install kubectl"
  exit 1
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  not_ok "node present" "node and npm are needed for schema validation; apt-get install nodejs npm"
  exit 1
fi

if ! node_modules_ready; then
  not_ok "npm ci in tests/" "$(tail -n 3 "$T_DIR/npm.log" | tr '\n' ' ')"
  exit 1
fi
ok "validators installed (tests/node_modules)"

RENDERED=() # the directories render was given
render() { # render DIR OUT: kubectl kustomize, reporting failures
  RENDERED+=("$1")
  if kubectl kustomize "$1" >"$2" 2>"$T_ERR"; then
    ok "renders ${1#"$FB_ROOT"/}"
  else
    not_ok "renders ${1#"$FB_ROOT"/}" "$(head -c 400 "$T_ERR")"
  fi
}
