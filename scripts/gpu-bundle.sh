#!/usr/bin/env bash
# Makes the folder scripts/gpu-check.sh takes on a GPU machine that has
# CUDA and NCCL but no Open MPI, no -dev headers of json-c, hwloc and
# libibverbs, no package registry and no network (docs/gpu-check.md).
# Runs here, on Debian 12 x86-64 with apt; the folder then travels to that
# machine and is given to the check as FB_GPU_CHECK_BUNDLE.
#
#   scripts/gpu-bundle.sh [DIR]          (default: gpu-bundle in the repository)
#   scripts/gpu-check.sh --bundle [DIR]  the same
#   scripts/gpu-bundle.sh --packages     the Debian packages it takes, one a line
#
# DIR afterwards:
#   usr/...        Open MPI 4.1 (mpirun, mpicc, libmpi, PMIx, hwloc, libevent)
#                  and the json-c, hwloc and libibverbs headers with their
#                  libraries, as dpkg -x unpacks them; used as FB_MPI_PREFIX
#   fallback/      libraries every stock image has (zlib, libudev) and make:
#                  used there only where the machine lacks them
#   nccl/include/  nccl.h of this machine, for a NCCL that came without it
#   nccl-tests/    nccl-tests' source, built there for the one GPU family
#   MANIFEST       the packages, their versions, what was pruned, the size
#
# Environment (all optional):
#   FB_BUNDLE_DEBS        a folder holding the .debs (NAME_*.deb): no apt-get download
#   FB_BUNDLE_MAX_MIB     the size bound, 64 (what one device call carries, with
#                         the working tree counted in when DIR is inside it)
#   FB_BUNDLE_NCCL_H      the nccl.h to carry (default: NCCL_HOME's, else CUDA_HOME's)
#   FB_BUNDLE_NCCL_TESTS  nccl-tests' git repository (default: the local mirror);
#                         "none" carries no source
# Exit: 0 done; 2 bad arguments; 4 over the size bound; 5 a tool, a package
# or a file is missing here; 1 anything else. Each failure prints one line.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
max_mib=${FB_BUNDLE_MAX_MIB:-64}
nccl_tests_repo=${FB_BUNDLE_NCCL_TESTS:-/work/.mirror/NVIDIA+nccl-tests/repo}
multiarch=x86_64-linux-gnu

# Open MPI and what it cannot start without. Its transports for fabrics
# (libfabric, UCX, PSM) are left out: one node needs shared memory only, and
# the components that would load them are pruned below.
ompi_pkgs=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2)
# What fabric-bench compiles and links against besides MPI (Makefile LDLIBS).
dev_pkgs=(libjson-c-dev libjson-c5 libhwloc-dev libibverbs-dev libibverbs1 libnl-3-200 libnl-route-3-200)
# On every stock image already: carried apart, so that a newer copy there is
# never shadowed by these.
fallback_pkgs=(zlib1g libudev1 make)
# Libraries any machine with a C compiler has; the rest must be in the bundle.
base_sonames=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libresolv.so.2
  ld-linux-x86-64.so.2 libgcc_s.so.1 libstdc++.so.6 "

die() { # die CODE MESSAGE
  echo "gpu-bundle: $2" >&2
  exit "$1"
}
say() { echo "gpu-bundle: $*" >&2; }

os_name() { sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"'; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# get_debs DEST PKG...: the .debs into DEST, from FB_BUNDLE_DEBS or apt.
get_debs() {
  local dest=$1 pkg found
  shift
  if [ -n "${FB_BUNDLE_DEBS:-}" ]; then
    [ -d "$FB_BUNDLE_DEBS" ] || die 2 "FB_BUNDLE_DEBS=$FB_BUNDLE_DEBS is not a folder"
    for pkg in "$@"; do
      found=$(find "$FB_BUNDLE_DEBS" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -1)
      [ -n "$found" ] || die 5 "FB_BUNDLE_DEBS=$FB_BUNDLE_DEBS has no ${pkg}_*.deb"
      cp "$found" "$dest/"
    done
    return
  fi
  command -v apt-get >/dev/null || die 5 "no apt-get here: give FB_BUNDLE_DEBS, a folder of the .debs"
  # apt-get download writes into the current folder; its log is shown only
  # when it fails (it warns about its sandbox user on every run as root).
  (cd "$dest" && apt-get download "$@") >"$dest/apt.log" 2>&1 ||
    die 5 "apt-get download failed (run apt-get update first?): $(grep -m1 '^E:' "$dest/apt.log" || tail -1 "$dest/apt.log")"
}

# unpack DEBS_DIR TREE PKG...: dpkg -x each package into TREE.
unpack() {
  local debs=$1 tree=$2 pkg deb
  shift 2
  mkdir -p "$tree"
  for pkg in "$@"; do
    deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
    dpkg -x "$deb" "$tree"
    printf '%s %s\n' "$pkg" "$(dpkg-deb -f "$deb" Version)" >>"$debs/versions"
  done
}

# Documentation, static libraries, the Fortran and Java bindings and Open
# MPI's internal headers (for building its components; an MPI program needs
# mpi.h alone): not used by the check, and most of the size.
prune_unused() {
  local tree=$1 inc=$1/usr/lib/$multiarch/openmpi/include/openmpi
  rm -rf "$tree"/usr/share/{doc,man,info,locale,lintian,bug} "$tree/usr/lib/$multiarch/fortran" \
    "$inc/opal" "$inc/orte" "$inc/oshmem"
  if [ -d "$inc/ompi" ]; then find "$inc/ompi" -mindepth 1 -maxdepth 1 ! -name mpi -exec rm -rf {} +; fi
  find "$tree" \( -name '*.a' -o -name '*.la' -o -name 'libmpi_java*' -o -name 'mpi.jar' -o -name 'libmpi_mpifh*' \
    -o -name 'libmpi_usempi*' -o -name '*.mod' \) -exec rm -rf {} +
}

# needed FILE: the sonames an ELF file asks for ("" for other files).
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }

# Sonames the bundle holds: every library file or link name in its trees.
held_sonames() {
  find "$@" \( -type f -o -type l \) -name 'lib*.so*' -printf ' %f' 2>/dev/null
  echo " "
}

# prune_unloadable TREE FALLBACK: removes the shared objects (Open MPI and
# PMIx components above all) that need a library neither the bundle nor a
# stock image has, until none is left: Open MPI then loads every component
# it finds without a warning. Prints what it removed.
prune_unloadable() {
  local tree=$1 fallback=$2 held f n changed=1
  while [ "$changed" -eq 1 ]; do
    changed=0
    held=$(held_sonames "$tree" "$fallback")
    while IFS= read -r -d '' f; do
      for n in $(needed "$f"); do
        case "$held$base_sonames" in *" $n "*) continue ;; esac
        echo "${f#"$tree"/} (needs $n)"
        rm -f "$f"
        changed=1
        break
      done
    done < <(find "$tree" -type f -name '*.so*' -print0)
  done
}

# check_core TREE FALLBACK: what the check runs must have all it needs.
check_core() {
  local tree=$1 fallback=$2 held f n
  held=$(held_sonames "$tree" "$fallback")
  for f in usr/bin/orterun usr/bin/orted usr/bin/opal_wrapper "usr/lib/$multiarch/libmpi.so.40" \
    "usr/lib/$multiarch/libjson-c.so" "usr/lib/$multiarch/libhwloc.so" "usr/lib/$multiarch/libibverbs.so" \
    usr/include/json-c/json.h usr/include/hwloc.h usr/include/infiniband/verbs.h; do
    [ -e "$tree/$f" ] || die 5 "the bundle lacks $f: a package of the list did not unpack it"
    for n in $(needed "$tree/$f"); do
      case "$held$base_sonames" in *" $n "*) ;; *) die 5 "$f needs $n, which the bundle does not hold" ;; esac
    done
  done
}

# The nccl.h of this machine, for a NCCL (the Python packages') without it.
carry_nccl_header() {
  local dir=$1 h=${FB_BUNDLE_NCCL_H:-}
  if [ -z "$h" ]; then
    for h in "${NCCL_HOME:-}/include/nccl.h" "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" /usr/include/nccl.h ""; do
      [ -f "$h" ] && break
    done
  fi
  if [ -z "$h" ] || [ ! -f "$h" ]; then
    say "no nccl.h here to carry: the GPU machine's NCCL must come with its own"
    return 0
  fi
  mkdir -p "$dir/nccl/include"
  cp "$h" "$dir/nccl/include/nccl.h"
  echo "nccl.h $(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$h" | paste -sd.) from $h" >>"$dir/MANIFEST"
}

# nccl-tests' source as its repository holds it (git archive), never a
# copy in this repository's history.
carry_nccl_tests() {
  local dir=$1
  [ "$nccl_tests_repo" != none ] || return 0
  if ! git -C "$nccl_tests_repo" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    say "no nccl-tests repository at $nccl_tests_repo (FB_BUNDLE_NCCL_TESTS): the check will not compare with nccl-tests"
    return 0
  fi
  mkdir -p "$dir/nccl-tests"
  git -C "$nccl_tests_repo" archive HEAD | tar -x -C "$dir/nccl-tests"
  echo "nccl-tests $(git -C "$nccl_tests_repo" log -1 --format='%h %s') from $nccl_tests_repo" >>"$dir/MANIFEST"
}

# The tree that travels with DIR when DIR lies inside the repository: its
# tracked and untracked, not ignored files.
tree_bytes() {
  git -C "$root" ls-files -z -co --exclude-standard 2>/dev/null |
    (cd "$root" && xargs -0 -r stat -c %s -- 2>/dev/null) | awk '{ s += $1 } END { print s + 0 }'
}

# check_size BUILT DIR: BUILT (to become DIR) within the bound, with the
# working tree counted in when DIR lies inside the repository.
check_size() {
  local built=$1 dir=$2 bytes limit=$((max_mib * 1048576)) tree=0
  bytes=$(du -sb "$built" | awk '{ print $1 }')
  [ "$bytes" -le "$limit" ] || die 4 "the bundle is $(mib "$bytes"), over the $max_mib MiB bound (FB_BUNDLE_MAX_MIB)"
  case $dir in
    "$root"/*)
      tree=$(tree_bytes)
      [ $((bytes + tree)) -le "$limit" ] ||
        die 4 "the bundle ($(mib "$bytes")) and the working tree ($(mib "$tree")) together are over the $max_mib MiB one device call carries"
      git -C "$root" check-ignore -q --no-index "$dir/" 2>/dev/null ||
        say "warning: $dir is not ignored by git; the device tool carries only ignored paths (add it to .gitignore)" ;;
  esac
  echo "size $bytes bytes ($(mib "$bytes")); working tree $tree bytes" >>"$built/MANIFEST"
  say "$dir: $(mib "$bytes")$([ "$tree" -eq 0 ] || echo " (+ $(mib "$tree") working tree) of the $max_mib MiB a device call carries")"
}

main() {
  local dir=${1:-$root/gpu-bundle}
  if [ "$dir" = --packages ]; then printf '%s\n' "${ompi_pkgs[@]}" "${dev_pkgs[@]}" "${fallback_pkgs[@]}"; return; fi
  [ $# -le 1 ] || die 2 "usage: scripts/gpu-bundle.sh [DIR]"
  case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
  dir=${dir%/}
  for t in dpkg dpkg-deb readelf git tar; do command -v "$t" >/dev/null || die 5 "no $t here (needed to make the bundle)"; done
  [ "$(dpkg --print-architecture)" = amd64 ] || die 5 "this machine is $(dpkg --print-architecture); the GPU machine is amd64 (x86-64)"
  mkdir -p "$(dirname "$dir")"
  # Built aside and moved into place: a failure leaves no half bundle.
  work=$(mktemp -d "$(dirname "$dir")/.gpu-bundle.XXXXXX")
  trap 'rm -rf "${work:-}"' EXIT
  mkdir -p "$work/debs" "$work/out"
  get_debs "$work/debs" "${ompi_pkgs[@]}" "${dev_pkgs[@]}" "${fallback_pkgs[@]}"
  unpack "$work/debs" "$work/out" "${ompi_pkgs[@]}" "${dev_pkgs[@]}"
  unpack "$work/debs" "$work/out/fallback" "${fallback_pkgs[@]}"
  {
    echo "# fabric-bench GPU-check bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(os_name)"
    sed 's/^/package /' "$work/debs/versions"
  } >"$work/out/MANIFEST"
  prune_unused "$work/out"
  prune_unused "$work/out/fallback"
  prune_unloadable "$work/out" "$work/out/fallback" | sed 's/^/pruned /' >>"$work/out/MANIFEST"
  check_core "$work/out" "$work/out/fallback"
  carry_nccl_header "$work/out"
  carry_nccl_tests "$work/out"
  check_size "$work/out" "$dir"
  rm -rf "$dir"
  mv "$work/out" "$dir"
  echo "$dir"
}

main "$@"
