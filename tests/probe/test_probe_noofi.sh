#!/usr/bin/env bash
# Without libfabric the probe still builds (ofi_none.c stands for the
# transport) and --transport ofi says what is missing, as "unavailable";
# LIBFABRIC_HOME finds an install by its headers and library.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if make -C "$FB_ROOT" -s help LIBFABRIC_HOME=/nonexistent | grep -q 'libfabric: no'; then
  ok "LIBFABRIC_HOME pointing nowhere: make help says libfabric: no"
else
  not_ok "LIBFABRIC_HOME pointing nowhere: libfabric: no" "$(make -C "$FB_ROOT" -s help LIBFABRIC_HOME=/nonexistent | head -1)"
fi
if [ -e /usr/include/rdma/fabric.h ]; then
  if make -C "$FB_ROOT" -s help LIBFABRIC_HOME=/usr | grep -q 'libfabric: yes'; then
    ok "LIBFABRIC_HOME=/usr finds Debian's multiarch libfabric.so"
  else
    not_ok "LIBFABRIC_HOME=/usr finds libfabric" "$(make -C "$FB_ROOT" -s help LIBFABRIC_HOME=/usr | head -1)"
  fi
fi
if variant_build noofi MODULES="core probe" LIBFABRIC_HOME=/nonexistent; then
  ok "fabric-rdma builds without libfabric"
else
  not_ok "fabric-rdma builds without libfabric" "$(grep -m3 'error' "$T_DIR/make.log")"
  exit 0
fi
ofi_objs=$(find "$tree/obj/bench/probe" -name '*_ofi.o' | head -2)
if [ -n "$ofi_objs" ] || readelf -d "$tree/bin/fabric-rdma" | grep -q libfabric; then
  not_ok "the libfabric files and library are left out" "objects: $ofi_objs; $(readelf -d "$tree/bin/fabric-rdma" | grep -m1 libfabric)"
else
  ok "the libfabric files and library are left out"
fi
expect_grep "--version says ofi is not in this build" 'transports: rdma, tcp, ofi \(not in this build\)' \
  <("$tree/bin/fabric-rdma" --version)
run timeout 60 "$tree/bin/fabric-rdma" --transport ofi --provider efa -J "$T_DIR/r.json"
if [ "$T_RC" -eq 5 ] && grep -q '^fabric-rdma: --transport ofi: fabric-rdma was built without libfabric; install libfabric-dev' "$T_ERR" &&
   [ "$(grep -c . "$T_ERR")" -eq 1 ]; then
  ok "--transport ofi on a build without libfabric: exit 5, one line"
else
  not_ok "--transport ofi on a build without libfabric: exit 5, one line" "exit $T_RC $(cat "$T_ERR")"
fi
run fb_mpirun 2 "$tree/bin/fabric-rdma" --transport tcp -D 0.2 -J "$T_DIR/t.json"
if [ "$T_RC" -eq 0 ]; then ok "the build without libfabric measures TCP"; else not_ok "the build without libfabric measures TCP" "exit $T_RC"; fi
