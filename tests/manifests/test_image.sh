#!/usr/bin/env bash
# ok never fails, so "COND && ok ... || not_ok ..." is an if-then-else here.
# shellcheck disable=SC2015
# manifests/image/Dockerfile: no Docker engine here, so it is checked as text:
# pinned bases, minimal apt layers, no key material, sources that exist, the
# paths the manifests run inside the image, and its RUN commands through
# the shell linter. hadolint runs when installed; Debian and npm do not
# package it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

D=$FB_ROOT/manifests/image/Dockerfile
[ -f "$D" ] || { not_ok "Dockerfile present" "no $D"; exit 1; }

if command -v hadolint >/dev/null; then
  if hadolint "$D" >"$T_OUT" 2>&1; then ok "hadolint"; else not_ok "hadolint" "$(head -c 400 "$T_OUT")"; fi
else
  skip "hadolint" "not installed: neither Debian nor npm packages it (PyPI and GitHub releases are out of reach); the checks below cover its main rules"
fi

# Instructions with continuation lines joined, comments dropped.
awk '/^[[:space:]]*#/ { next } { if (sub(/\\$/, "")) { buf = buf $0; next } print buf $0; buf = "" }' "$D" >"$T_DIR/instr"

# Pinned bases: every FROM is a stage, or an image whose tag comes from ARGs
# with exact version defaults; never "latest".
bad=$(awk '$1 == "FROM" { print $2 }' "$T_DIR/instr" | grep -vE '^[a-z0-9./-]+:\$\{[A-Z_]+\}-[a-z]+-ubuntu\$\{[A-Z_]+\}$' || true)
[ -z "$bad" ] && ! grep -q ':latest' "$D" && ok "FROM lines use pinned ARG versions" ||
  not_ok "FROM lines use pinned ARG versions" "$bad"
args=$(grep -E '^ARG [A-Z_]+_VERSION=' "$D")
if [ "$(grep -c . <<<"$args")" -ge 2 ] && ! grep -vqE '^ARG [A-Z_]+_VERSION=[0-9]+\.[0-9]+(\.[0-9]+)?$' <<<"$args"; then
  ok "version ARGs are exact versions"
else
  not_ok "version ARGs are exact versions" "$args"
fi

# Minimal apt layers: no recommends, lists removed in the same layer.
fail=""
while IFS= read -r line; do
  case $line in *"apt-get install"*)
    [[ $line == *--no-install-recommends* ]] || fail+="recommends; "
    [[ $line == *"rm -rf /var/lib/apt/lists/*"* ]] || fail+="lists kept; "
    [[ $line == *"apt-get update"* ]] || fail+="install without update; " ;;
  esac
done < <(grep '^RUN' "$T_DIR/instr")
[ -z "$fail" ] && ok "apt layers: update+install+clean, no recommends" || not_ok "apt layers: update+install+clean, no recommends" "$fail"

# No key material: the host keys openssh-server generates are deleted in the
# layer that installs it, and nothing key-like is copied in.
if grep '^RUN' "$T_DIR/instr" | grep 'openssh-server' | grep -q 'rm -rf .*/etc/ssh/ssh_host_\*'; then
  ok "sshd host keys deleted where openssh-server is installed"
else
  not_ok "sshd host keys deleted where openssh-server is installed" "no rm of /etc/ssh/ssh_host_* in that RUN"
fi
if grep -qE '^(ADD|COPY).*(\.pem|id_[a-z0-9]+|\.key|ssh)' "$T_DIR/instr" || grep -q '^ADD' "$T_DIR/instr"; then
  not_ok "no ADD, no key files copied" "$(grep -E '^(ADD|COPY)' "$T_DIR/instr" | tr '\n' ' ')"
else
  ok "no ADD, no key files copied"
fi

# Every COPY source from the build context exists.
missing=""
while read -r _ src _; do
  [ -e "$FB_ROOT/$src" ] || missing+="$src "
done < <(grep -E '^COPY ' "$T_DIR/instr" | grep -v -- '--from=')
[ -z "$missing" ] && ok "COPY sources exist" || not_ok "COPY sources exist" "$missing"

# The build uses make, and the stamp it touches is the Makefile's.
# shellcheck disable=SC2016 # the Makefile's own text
if grep -q 'make -j' "$T_DIR/instr" && grep -q 'DEPS_STAMP := $(BUILD)/.deps-ok' "$FB_ROOT/Makefile" &&
  grep -q 'touch build/.deps-ok' "$T_DIR/instr"; then
  ok "builds with make, skipping install-deps through the Makefile's stamp"
else
  not_ok "builds with make, skipping install-deps through the Makefile's stamp" "Makefile or Dockerfile changed"
fi

# Every /opt/fabric-bench path the manifests run is a file the image gets
# from the repository (COPY SRC/ /opt/fabric-bench/DEST/), and executable.
map() { # map IMAGE_PATH: the repository file behind it
  local p=$1 src dst
  while read -r _ src dst; do
    case $p in "${dst%/}"/*) echo "$FB_ROOT/${src%/}/${p#"${dst%/}"/}"; return 0 ;; esac
  done < <(grep -E '^COPY ' "$T_DIR/instr" | grep -v -- '--from=')
  return 1
}
used=$(for o in "$FB_ROOT"/manifests/overlays/* "$FB_ROOT"/manifests/mpijob/overlays/* "$FB_ROOT"/manifests/scan; do
  kubectl kustomize "$o" 2>/dev/null; done | grep -oE '/opt/fabric-bench/[A-Za-z0-9_./-]+' | sort -u)
bad=""
for p in $used; do
  f=$(map "$p") && [ -x "$f" ] || bad+="$p "
done
[ -n "$used" ] && [ -z "$bad" ] && ok "paths the manifests run exist in the image ($(echo "$used" | wc -l))" ||
  not_ok "paths the manifests run exist in the image" "missing: $bad (used: $(echo "$used" | tr '\n' ' '))"
grep -q '^CMD \["/opt/fabric-bench/launch/pod-sshd.sh"\]' "$T_DIR/instr" && [ -x "$FB_ROOT/launch/pod-sshd.sh" ] &&
  ok "default command is the pod sshd entry point" || not_ok "default command is the pod sshd entry point" "CMD changed"

# RUN commands are shell: shellcheck them as the SHELL line runs them.
{
  echo '#!/bin/bash'
  echo 'set -o pipefail'
  sed -n 's/^RUN //p' "$T_DIR/instr"
} >"$T_DIR/run.sh"
if shellcheck -s bash "$T_DIR/run.sh" >"$T_OUT" 2>&1; then ok "RUN commands pass shellcheck"
else not_ok "RUN commands pass shellcheck" "$(head -c 500 "$T_OUT" | tr '\n' ' ')"; fi

# The probe's ofi transport (EFA, Slingshot) is in the image: the build
# refuses to leave it out, and the runtime stage has the library.
if grep '^RUN' "$T_DIR/instr" | grep 'make -j' | grep -q "fabric-rdma --version | grep -q 'ofi\$'" &&
  grep -E '^RUN .*apt-get install' "$T_DIR/instr" | head -n 1 | grep -q 'libfabric-dev' &&
  grep -E '^RUN .*apt-get install' "$T_DIR/instr" | tail -n 1 | grep -q 'libfabric1'; then
  ok "fabric-rdma is built with libfabric, and the image has it"
else
  not_ok "fabric-rdma is built with libfabric, and the image has it" "no libfabric-dev in the build stage, no libfabric1 at run time, or no ofi check"
fi
