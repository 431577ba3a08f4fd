#!/usr/bin/env bash
# Installs the Debian packages fabric-bench builds and tests with.
# Idempotent: packages already present are left alone, so `make` can call
# this on every run at the cost of one dpkg query.
#   scripts/install-deps.sh          install what is missing
#   scripts/install-deps.sh --check  exit 1 (and name them) if any are missing
set -euo pipefail

# Build: compilers come with the machine; these are the libraries and tools.
build_pkgs=(make gcc g++ pkg-config openmpi-bin libopenmpi-dev libjson-c-dev
  libhwloc-dev hwloc libibverbs-dev rdma-core ibverbs-utils libfabric-dev
  libfabric1 gnuplot-nox)
# Tests: multi-host namespaces, sshd, linters, schema validation, baselines.
test_pkgs=(iproute2 openssh-server openssh-client procps jq shellcheck
  yamllint python3 python3-jsonschema python3-yaml iperf3 valgrind
  util-linux psmisc slurm-wlm munge libfabric-bin perftest
  prometheus prometheus-node-exporter)
# fabric-report html opened in a headless browser (tests/report/test_html.sh).
test_pkgs+=(chromium)
# make bench builds fabtests' fi_rma_bw (not packaged) from libfabric's
# sources at the installed version (scripts/bench-ofi.sh).
test_pkgs+=(autoconf automake libtool)

missing=()
for p in "${build_pkgs[@]}" "${test_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    missing+=("$p")
done

if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing packages: ${missing[*]}" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: need root to install: ${missing[*]} (run as root or install sudo)" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
