#!/usr/bin/env bash
# scripts/gpu-check.sh, run where it can be here: on stand-in GPUs
# (tests/standin) with a small sweep, beside a stand-in nccl-tests build;
# its plan (--dry-run) for the one GPU of the device machine; the bundle
# (--bundle) made from .debs repacked from this machine's packages; and the
# device machine itself as near as one gets here: Open MPI, its libraries,
# the -dev headers and ssh hidden, all of them taken from the bundle, NCCL
# found in a python3 package layout that holds libnccl.so.2 alone.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if [ ! -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  skip "gpu-check on the stand-in" "the stand-in is not built (make standin)"
  exit 0
fi
gc=$FB_ROOT/scripts/gpu-check.sh
export FB_STANDIN_GPUS=2 FB_GPU_CHECK_GPUS=2 FB_GPU_CHECK_MAX=64K FB_GPU_CHECK_ITERS=2 FB_GPU_CHECK_WARMUP=1 \
  FB_GPU_CHECK_GRAPH=2 FB_GPU_CHECK_BUILD=$FB_BUILD
export FB_GPU_CHECK_MPIRUN_ARGS="--oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
unset FB_GPU_CHECK_BUNDLE FB_MPI_PREFIX NCCL_HOME NCCL_TESTS_DIR FB_GPU_CHECK_CAP

# stand_in_nccl_tests DIR WRONG: an nccl-tests stand-in, its table with
# time 1.0 and algBW 1.00 at every size from 1K to 64K, WRONG in both
# #wrong columns (nccl-tests prints them with %g: 1e+06).
stand_in_nccl_tests() {
  mkdir -p "$1"
  cat >"$1/all_reduce_perf" <<EOF
#!/bin/sh
echo "# nccl-tests version 2.13.11 nccl-headers=22809 nccl-library=22809"
echo "# Collective test starting: \$(basename "\$0") \$*"
s=1024
while [ \$s -le 65536 ]; do
  printf '%12d %13d %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n' \$s \$((s / 4)) float sum -1 1.0 1.00 2.00 $2 1.0 1.00 2.00 $2
  s=\$((s * 2))
done
echo "# Avg bus bandwidth    : 2.00"
EOF
  chmod +x "$1/all_reduce_perf"
  cp "$1/all_reduce_perf" "$1/all_gather_perf"
}
nt=$T_DIR/nccl-tests
stand_in_nccl_tests "$nt" 0

# ---- on two stand-in GPUs ----
summary=$T_DIR/run1/summary.txt
run env FB_GPU_CHECK_OUT="$T_DIR/run1" NCCL_TESTS_DIR="$nt" timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 0 ] && [ -s "$summary" ]; then ok "gpu-check on 2 stand-in GPUs: exit 0 and a summary"; else not_ok "gpu-check on 2 stand-in GPUs" "exit $T_RC: $(tail -5 "$T_ERR")"; fi
expect_grep "the summary names the versions from the results" '^versions: NCCL [0-9]+\.[0-9]+\.[0-9]+, CUDA runtime [0-9.]+, CUDA driver [0-9.]+, mpirun \(Open MPI\)' "$summary"
expect_grep "the summary names the GPUs" '^GPU: fabric-bench stand-in GPU x 2 on ' "$summary"
expect_grep "the summary ends with the verdict" '^verdict: PASS, 16 runs, every size validated$' "$summary"
# Each block: size, time, algBW, busBW | nt time 1.0, nt algBW 1.00, ratio = algBW / 1.00.
for c in all_reduce all_gather; do
  for v in plain "-G 2" "-R 1" "-R 2"; do
    n=$(awk -v h="$c $v, -c 1, 2 GPUs:" 'index($0, h) == 1 { on = 1; next } /^$/ { on = 0 }
      on && $1 ~ /^[0-9]+$/ && $5 == "|" && $6 == "1.0" && $7 == "1.00" && $8 == ($3 + 0 > 0 ? sprintf("%.2f", $3 / 1.00) : "-") { k++ } END { print k + 0 }' "$summary")
    if [ "$n" -eq 7 ]; then ok "$c $v: 7 sizes 1K-64K, nccl-tests beside with the ratio"; else not_ok "$c $v: 7 rows with nccl-tests and ratios" "$n rows: $(head -40 "$summary")"; fi
  done
done
if [ "$(grep -c '^wrong elements: 0 (every size validated' "$summary")" -eq 2 ] && [ "$(grep -c '^nccl-tests wrong elements: 0$' "$summary")" -eq 2 ]; then
  ok "both collectives validated at every size, by both tools"
else not_ok "validated" "$(grep wrong "$summary")"; fi
# Twice the largest size (send + receive) and the check's 96 KiB table on
# the GPU: 3.50x at 64K, 2.00x at the real check's 1G.
expect_grep "all_reduce: peak GPU memory per rank, twice the largest size (send + receive) and the check's table" \
  '^peak GPU memory per rank against the largest size 64K: rank 0 0\.2 MiB \(3\.50x\), rank 1 0\.2 MiB \(3\.50x\)$' "$summary"
expect_grep "all_reduce at the largest size: the memory goal met" '^memory goal, all_reduce -c 1 at 64K: at most 2 x 64K \+ 1 GiB = 1\.0 GiB per rank: met' "$summary"
if grep -q '"cudagraph": 2' "$T_DIR/run1/all_reduce-graph.json" && grep -q 'graph: 2 unalign: 0$' "$T_DIR/run1/all_reduce-graph.txt"; then ok "the -G runs ran with graphs"; else not_ok "the -G runs ran with graphs" "$(head -3 "$T_DIR/run1/all_reduce-graph.txt")"; fi
if grep -q '"local_register": 1' "$T_DIR/run1/all_gather-reg1.json" && grep -q '"local_register": 2' "$T_DIR/run1/all_gather-reg2.json"; then ok "the -R runs registered their buffers"; else not_ok "the -R runs" "$(grep -h local_register "$T_DIR"/run1/*reg*.json)"; fi
if grep -q -- '-R 2 -g 2$' "$T_ERR" && grep -q "ncclt-all_gather-reg2: env LD_LIBRARY_PATH=.* $nt/all_gather_perf -b 1K -e 64K -f 2 -n 2 -w 1 -c 1 -R 2 -g 2" "$T_ERR"; then
  ok "nccl-tests ran the same variants, one process over the GPUs"
else not_ok "nccl-tests variants" "$(grep ncclt "$T_ERR" | head -3)"; fi
run "$gc" --summary "$T_DIR/run1"
if [ "$T_RC" -eq 0 ] && cmp -s "$T_OUT" "$summary"; then ok "--summary DIR prints the same summary again, exit 0"; else not_ok "--summary DIR" "exit $T_RC: $(diff "$T_OUT" "$summary" | head -5)"; fi

# Wrong results make the check fail with exit 3, and the summary says so.
run env FB_GPU_CHECK_OUT="$T_DIR/run2" FB_STANDIN_CORRUPT_RANK=1 timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 3 ] && grep -q '^wrong elements: [1-9]' "$T_DIR/run2/summary.txt"; then ok "wrong results: exit 3, counted in the summary"; else not_ok "wrong results: exit 3" "exit $T_RC: $(grep wrong "$T_DIR/run2/summary.txt" 2>&1)"; fi
expect_exit "NCCL_TESTS_DIR without the binaries: exit 2" 2 env FB_GPU_CHECK_OUT="$T_DIR/run3" NCCL_TESTS_DIR="$T_DIR" "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
expect_exit "FB_MPI_PREFIX that holds no Open MPI: exit 2" 2 env FB_GPU_CHECK_OUT="$T_DIR/run4" FB_MPI_PREFIX="$T_DIR/nccl-tests" "$gc"

# nccl-tests prints #wrong with %g: 1e+06 wrong elements is no zero (its
# 7 rows, 2 placements, 4 variants: 56000000 for each collective).
stand_in_nccl_tests "$T_DIR/nt-wrong" 1e+06
run env FB_GPU_CHECK_OUT="$T_DIR/run7" NCCL_TESTS_DIR="$T_DIR/nt-wrong" FB_GPU_CHECK_MAX=4K timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 3 ] && [ "$(grep -c '^nccl-tests wrong elements: 56000000$' "$T_DIR/run7/summary.txt")" -eq 2 ] && grep -q '^verdict: FAIL, wrong results' "$T_DIR/run7/summary.txt"; then
  ok "nccl-tests' #wrong of 1e+06: read as 1000000 each, exit 3"
else not_ok "nccl-tests' 1e+06 wrong" "exit $T_RC: $(grep -E 'wrong|verdict' "$T_DIR/run7/summary.txt" 2>&1)"; fi

# The same read of fabric-coll's own table, from outputs edited after the
# fact: %g, an integer, N/A.
# set_wrong DIR FILE VALUE: the first row's in-place #wrong set to VALUE.
set_wrong() {
  rm -rf "$1" && cp -r "$T_DIR/run1" "$1"
  awk -v w="$3" '!done && $1 ~ /^[0-9]+$/ && NF >= 13 { $13 = w; done = 1 } { print }' "$1/$2" >"$1/x" && mv "$1/x" "$1/$2"
}
for w in 1e+06:1000000 7:7 2.5e+01:25; do
  set_wrong "$T_DIR/run8" all_gather-reg1.txt "${w%%:*}"
  run "$gc" --summary "$T_DIR/run8"
  if [ "$T_RC" -eq 3 ] && grep -q "^wrong elements: ${w#*:}\$" "$T_OUT"; then ok "fabric-coll's #wrong of ${w%%:*}: ${w#*:} wrong, exit 3"; else not_ok "#wrong ${w%%:*}" "exit $T_RC: $(grep wrong "$T_OUT")"; fi
done
set_wrong "$T_DIR/run8" all_gather-reg1.txt N/A
expect_exit "#wrong N/A counts none: exit 0" 0 "$gc" --summary "$T_DIR/run8"
set_wrong "$T_DIR/run8" all_gather-reg1.txt '?'
expect_exit "an unreadable #wrong is no zero: exit 3" 3 "$gc" --summary "$T_DIR/run8"

# The memory goal missed, from results edited after the fact.
rm -rf "$T_DIR/run9" && cp -r "$T_DIR/run1" "$T_DIR/run9"
sed -i 's/"peak_memory_bytes": [0-9]*/"peak_memory_bytes": 2147483648/' "$T_DIR/run9/all_reduce.json"
run "$gc" --summary "$T_DIR/run9"
expect_grep "peak GPU memory over 2 x the size + 1 GiB: the goal MISSED" '^memory goal, all_reduce -c 1 at 64K: .*: MISSED \(largest rank 2\.0 GiB\)$' "$T_OUT"

# A run that would pass the deadline is not started: exit 8, the summary still written.
run env FB_GPU_CHECK_OUT="$T_DIR/run10" NCCL_TESTS_DIR="$nt" FB_GPU_CHECK_DEADLINE=0 timeout -k 5 300 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
if [ "$T_RC" -eq 8 ] && grep -q '^failed: all_reduce exit 8: skipped' "$T_DIR/run10/summary.txt" && [ ! -e "$T_DIR/run10/all_reduce.txt" ]; then
  ok "past the deadline: no run started, exit 8, the summary written"
else not_ok "the deadline" "exit $T_RC: $(tail -4 "$T_DIR/run10/summary.txt" 2>&1)"; fi

# ---- --dry-run: the device machine's plan, here ----
start=$SECONDS
run env -u FB_GPU_CHECK_MAX -u FB_GPU_CHECK_ITERS -u FB_GPU_CHECK_WARMUP -u FB_GPU_CHECK_GRAPH FB_GPU_CHECK_GPUS=1 \
  FB_GPU_CHECK_BUILD="$T_DIR/dry-build" FB_GPU_CHECK_OUT="$T_DIR/dry-out" NCCL_TESTS_DIR="$nt" "$gc" --dry-run
took=$((SECONDS - start))
if [ "$T_RC" -eq 0 ] && [ ! -e "$T_DIR/dry-build" ] && [ ! -e "$T_DIR/dry-out" ] && [ "$took" -le 10 ]; then
  ok "--dry-run: exit 0 in ${took} s, no build tree and no outputs made"
else not_ok "--dry-run builds nothing" "exit $T_RC in $took s; $(ls -d "$T_DIR"/dry-* 2>&1); $(tail -3 "$T_ERR")"; fi
expect_grep "--dry-run: the build step with its command" "^  1  build  fabric-bench .* make -C $FB_ROOT -j[0-9]+ BUILD=$T_DIR/dry-build CUDA_HOME=[^ ]+ NCCL_HOME=[^ ]+ all\$" "$T_OUT"
expect_grep "--dry-run: validated sweeps capped at 1G" "run +all_gather-graph .* mpirun -np 1 .*/fabric-coll all_gather -b 1K -e 1G -f 2 -n 20 -w 5 -c 1 -G 10 --cap-memory --backend nccl -J $T_DIR/dry-out/all_gather-graph.json\$" "$T_OUT"
expect_grep "--dry-run: all_reduce at 16G once, -c 1, not capped" "run +all_reduce-largest .* all_reduce -b 16G -e 16G -f 2 -n 20 -w 5 -c 1 --backend nccl -J " "$T_OUT"
expect_grep "--dry-run: nccl-tests with -R 2, one process" "run +ncclt-all_reduce-reg2 .* $nt/all_reduce_perf -b 1K -e 1G -f 2 -n 20 -w 5 -c 1 -R 2 -g 1\$" "$T_OUT"
n=$(grep -c '^ *[0-9]*  run ' "$T_OUT")
if [ "$n" -eq 18 ] && [ "$(grep -c -- '-b 16G -e 16G' "$T_OUT")" -eq 2 ]; then ok "--dry-run: 18 runs, 16G only once per tool"; else not_ok "--dry-run: 18 runs" "$n runs: $(grep run "$T_OUT" | head -20)"; fi
est=$(sed -n 's/^estimate: \([0-9]*\) min\( \([0-9]*\) s\)\{0,1\} .*/\1 \3/p' "$T_OUT" | awk '{ print $1 * 60 + $2 }')
if [ -n "$est" ] && [ "$est" -gt 120 ] && [ "$est" -le 480 ]; then ok "--dry-run: an estimate, $est s, within the device's 8 minutes"; else not_ok "--dry-run estimate" "'$est': $(grep -i estimate "$T_OUT")"; fi

# -R 1 and -R 2 only where NCCL has them (2.19, 2.27), here from the header
# of an NCCL_HOME (the stand-in's library says no version).
for v in 2.18.3:0:0 2.20.5:1:0 2.27.0:1:1; do
  ver=${v%%:*} home=$T_DIR/nccl-$ver
  mkdir -p "$home/include" "$home/lib"
  cp "$FB_BUILD/standin/libnccl.so.2" "$home/lib/"
  IFS=. read -r ma mi pa <<<"$ver"
  sed -e "s/^#define NCCL_MAJOR .*/#define NCCL_MAJOR $ma/" -e "s/^#define NCCL_MINOR .*/#define NCCL_MINOR $mi/" \
    -e "s/^#define NCCL_PATCH .*/#define NCCL_PATCH $pa/" "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" >"$home/include/nccl.h"
  run env FB_GPU_CHECK_GPUS=1 NCCL_HOME="$home" FB_GPU_CHECK_OUT="$T_DIR/dry-out" "$gc" --dry-run
  r1=$(grep -cE 'run +all_reduce-reg1 ' "$T_OUT") r2=$(grep -cE 'run +all_reduce-reg2 ' "$T_OUT")
  if [ "$T_RC" -eq 0 ] && [ "$r1:$r2" = "${v#*:}" ] && grep -q "^  NCCL       $ver: $home/lib/libnccl.so.2 (from NCCL_HOME)" "$T_OUT"; then
    ok "NCCL $ver: -R 1 $([ "$r1" -eq 1 ] || echo not) planned, -R 2 $([ "$r2" -eq 1 ] || echo not)"
  else not_ok "NCCL $ver: -R variants" "exit $T_RC, -R 1 x$r1, -R 2 x$r2: $(grep NCCL "$T_OUT") $(tail -2 "$T_ERR")"; fi
done

# ---- --bundle, from .debs repacked from this machine's packages ----
# repack PKG DIR: PKG as installed here, as a .deb in DIR (what apt-get
# download would fetch, without the network).
repack() {
  local pkg=$1 dir=$2 stage=$T_DIR/stage/$1 ver arch f
  ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || return 1
  arch=$(dpkg-query -W -f='${Architecture}' "$pkg")
  mkdir -p "$stage/DEBIAN"
  while IFS= read -r f; do
    if { [ -f "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ]; then mkdir -p "$stage$(dirname "$f")" && cp -a "$f" "$stage$f"; fi
  done < <(dpkg -L "$pkg")
  printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: test\nDescription: %s repacked\n' "$pkg" "$ver" "$arch" "$pkg" >"$stage/DEBIAN/control"
  dpkg-deb --root-owner-group -Zgzip -z1 --build "$stage" "$dir/${pkg}_${ver#*:}_$arch.deb" >/dev/null
}
for t in dpkg-deb readelf git; do
  if ! command -v "$t" >/dev/null; then skip "--bundle" "no $t here"; exit 0; fi
done
debs=$T_DIR/debs
mkdir -p "$debs"
missing=""
while read -r pkg; do repack "$pkg" "$debs" || missing="$missing $pkg"; done < <("$FB_ROOT/scripts/gpu-bundle.sh" --packages)
if [ -n "$missing" ]; then skip "--bundle" "not installed here:$missing"; exit 0; fi
# nccl-tests' source: a small repository of its own.
ntrepo=$T_DIR/nt-repo
mkdir -p "$ntrepo/src" && printf 'build:\n\tfalse\n' >"$ntrepo/src/Makefile"
git -C "$ntrepo" init -q && git -C "$ntrepo" add -A && git -C "$ntrepo" -c user.name=t -c user.email=t@t commit -qm source
nccl_h=${CUDA_HOME:-/usr/local/cuda}/include/nccl.h
bundle=$T_DIR/bundle
run env FB_BUNDLE_DEBS="$debs" FB_BUNDLE_NCCL_TESTS="$ntrepo" FB_BUNDLE_NCCL_H="$nccl_h" timeout -k 5 300 "$gc" --bundle "$bundle"
size=$(du -sb "$bundle" 2>/dev/null | awk '{ print $1 }')
said=$(sed -n 's/^size \([0-9]*\) bytes.*/\1/p' "$bundle/MANIFEST" 2>/dev/null)
if [ "$T_RC" -eq 0 ] && [ -n "$size" ] && [ "$size" -le $((64 * 1048576)) ] && [ -n "$said" ] && [ $((size - said)) -ge 0 ] && [ $((size - said)) -lt 200 ]; then
  ok "--bundle from FB_BUNDLE_DEBS: exit 0, $((size / 1048576)) MiB, within 64 MiB, the size in its MANIFEST"
else not_ok "--bundle" "exit $T_RC, size '$size': $(tail -3 "$T_ERR")"; fi
lib=$bundle/usr/lib/x86_64-linux-gnu
if [ -x "$bundle/usr/bin/orterun" ] && [ -e "$bundle/usr/bin/mpicc.openmpi" ] && [ -e "$lib/libmpi.so.40" ] && [ -e "$lib/libjson-c.so" ] &&
  [ -e "$lib/libhwloc.so" ] && [ -e "$lib/libibverbs.so" ] && [ -f "$bundle/usr/include/infiniband/verbs.h" ] && [ -f "$bundle/usr/include/hwloc.h" ] &&
  [ -f "$bundle/usr/include/json-c/json.h" ] && [ -f "$lib/openmpi/include/mpi.h" ] && [ -x "$bundle/fallback/usr/bin/make" ]; then
  ok "the bundle holds mpirun, mpicc, libmpi, the -dev headers and links, make as a fallback"
else not_ok "the bundle's files" "$(find "$bundle" -maxdepth 2 | head -20)"; fi
if cmp -s "$nccl_h" "$bundle/nccl/include/nccl.h" && [ -f "$bundle/nccl-tests/src/Makefile" ] && [ ! -d "$bundle/nccl-tests/.git" ]; then
  ok "the bundle carries nccl.h and nccl-tests' source (no .git)"
else not_ok "nccl.h and nccl-tests in the bundle" "$(find "$bundle/nccl" "$bundle/nccl-tests" 2>&1 | head)"; fi
abs=$(find "$bundle" -type l -lname '/*' | head -3)
docs=$(find "$bundle" -path '*/share/doc/*' -o -path '*/share/man/*' -o -name '*.a' | head -3)
if [ -z "$abs" ] && [ -z "$docs" ]; then ok "no link out of the bundle, no docs, man pages or static libraries"; else not_ok "bundle pruned" "links: $abs; docs: $docs"; fi
# Every shared object left loads with what the bundle and any C machine hold.
unresolved=""
held=" $(find "$bundle" \( -type f -o -type l \) -name 'lib*.so*' -printf '%f ') libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 ld-linux-x86-64.so.2 libgcc_s.so.1 libstdc++.so.6 "
while IFS= read -r -d '' f; do
  for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    case $held in *" $n "*) ;; *) unresolved="$unresolved ${f#"$bundle"/}:$n" ;; esac
  done
done < <(find "$bundle" -type f \( -name '*.so*' -o -path '*/usr/bin/*' \) -print0)
if [ -z "$unresolved" ] && grep -q '^pruned .*mca_pml_ucx.so (needs libucp.so.0)$' "$bundle/MANIFEST"; then
  ok "every library and program in the bundle finds what it needs; the UCX/OFI/PSM components pruned"
else not_ok "the bundle's dependencies" "unresolved:$(echo "$unresolved" | head -c 400); $(grep -c pruned "$bundle/MANIFEST") pruned"; fi
# The 64 MiB bound, and a failure leaves no bundle behind.
run env FB_BUNDLE_DEBS="$debs" FB_BUNDLE_NCCL_TESTS=none FB_BUNDLE_MAX_MIB=2 "$gc" --bundle "$T_DIR/small"
if [ "$T_RC" -eq 4 ] && [ "$(grep -c . "$T_ERR")" -eq 1 ] && grep -q '^gpu-bundle: the bundle is [0-9.]* MiB, over the 2 MiB bound' "$T_ERR" &&
  [ ! -e "$T_DIR/small" ] && [ -z "$(find "$T_DIR" -maxdepth 1 -name '.gpu-bundle.*')" ]; then
  ok "over the size bound: exit 4, one line, no bundle left"
else not_ok "the size bound" "exit $T_RC: $(cat "$T_ERR") $(find "$T_DIR" -maxdepth 1 -name "*bundle*")"; fi
mkdir -p "$T_DIR/few-debs" && cp "$debs"/openmpi-bin_* "$T_DIR/few-debs/"
expect_error "FB_BUNDLE_DEBS without a package: exit 5, one line" 5 "has no openmpi-common_\*\.deb" gpu-bundle \
  env FB_BUNDLE_DEBS="$T_DIR/few-debs" "$gc" --bundle "$T_DIR/few"

# ---- the device machine, as near as one gets here ----
# Hidden: Open MPI, every library the bundle carries, the -dev headers,
# ssh and rsh (Open MPI's launcher will not start without one unless told).
# CUDA without NCCL; NCCL where the Python packages put it: libnccl.so.2
# alone, without its unversioned link or header.
if ! is_root || ! command -v unshare >/dev/null; then
  skip "the device machine's setting" "needs root and unshare"
  exit 0
fi
cat >"$T_DIR/hide-bundle.sh" <<'EOF'
#!/bin/bash
# hide-bundle.sh BUNDLE CMD...: in a private mount namespace, none of what BUNDLE carries.
b=$1
shift
lib=/usr/lib/x86_64-linux-gnu
for d in $lib/openmpi $lib/pmix2 /usr/share/openmpi /etc/openmpi /usr/include/json-c /usr/include/hwloc /usr/include/infiniband; do
  if [ -d "$d" ]; then mount -t tmpfs none "$d"; fi
done
for f in "$b"/usr/lib/x86_64-linux-gnu/* "$b"/usr/bin/* "$b"/usr/include/*.h /usr/bin/ssh /usr/bin/rsh /usr/bin/orterun /usr/bin/opal_wrapper; do
  s=/${f#"$b"/}
  if [ -f "$s" ] && [ ! -L "$s" ]; then mount --bind /dev/null "$s"; fi
done
exec "$@"
EOF
chmod +x "$T_DIR/hide-bundle.sh"
cuda=$T_DIR/cuda real=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$cuda/include" "$cuda/lib64"
for f in "$real"/include/*; do case ${f##*/} in nccl*) ;; *) ln -s "$f" "$cuda/include/" ;; esac; done
for f in "$real"/lib64/*; do case ${f##*/} in libnccl*) ;; *) ln -s "$f" "$cuda/lib64/" ;; esac; done
ln -s "$real/bin" "$cuda/bin"
site=$T_DIR/py/lib/python3.12/site-packages
mkdir -p "$site/nvidia/nccl/lib" "$T_DIR/pybin"
cp "$FB_BUILD/standin/libnccl.so.2" "$site/nvidia/nccl/lib/"
printf '#!/bin/sh\necho /nonexistent\necho %s\n' "$site" >"$T_DIR/pybin/python3"
chmod +x "$T_DIR/pybin/python3"
dev=(env PATH="$T_DIR/pybin:$PATH" CUDA_HOME="$cuda" FB_GPU_CHECK_BUNDLE="$bundle" FB_STANDIN_GPUS=1 FB_GPU_CHECK_GPUS=1
  FB_GPU_CHECK_CAP=16K FB_GPU_CHECK_MAX=64K NCCL_TESTS_DIR="$nt" FB_GPU_CHECK_BUILD="$T_DIR/build" BUILD="$T_DIR/build")
run unshare -m "$T_DIR/hide-bundle.sh" "$bundle" "${dev[@]}" "$gc" --dry-run
if [ "$T_RC" -eq 0 ] && grep -q "^  NCCL       [0-9.]*: $site/nvidia/nccl/lib/libnccl.so.2 (from python3's packages); nccl.h [0-9.]*: $bundle/nccl/include/nccl.h\$" "$T_OUT" &&
  grep -q "^  NCCL_HOME  $T_DIR/build/nccl-home (links, made at build time)" "$T_OUT" && grep -q "^  MPI        Open MPI from $bundle, isolated launcher (no ssh here)" "$T_OUT"; then
  ok "--dry-run there: NCCL from python3's packages, nccl.h and Open MPI from the bundle, the isolated launcher"
else not_ok "--dry-run there" "exit $T_RC: $(head -8 "$T_OUT") $(tail -2 "$T_ERR")"; fi
# The build there is a fresh one, with the bundle's mpicc and headers; the
# runs load the stand-in of that build.
mkdir -p "$T_DIR/build" && cp -a "$FB_BUILD/standin" "$T_DIR/build/"
run unshare -m "$T_DIR/hide-bundle.sh" "$bundle" "${dev[@]}" FB_GPU_CHECK_OUT="$T_DIR/run11" timeout -k 5 600 "$FB_ROOT/scripts/gpu-standin.sh" "$gc"
s11=$T_DIR/run11/summary.txt
if [ "$T_RC" -eq 0 ] && grep -q "^versions: .*mpirun (Open MPI) [0-9.]* ($T_DIR/run11/mpi-bin/mpirun)" "$s11" && grep -q '^verdict: PASS, 18 runs' "$s11"; then
  ok "the check there: built and run with Open MPI from the bundle, every run validated"
else not_ok "the check there" "exit $T_RC: $(tail -5 "$T_ERR") $(grep -E 'versions|verdict|failed' "$s11" 2>&1)"; fi
if [ "$(readlink "$T_DIR/build/nccl-home/lib/libnccl.so")" = "$site/nvidia/nccl/lib/libnccl.so.2" ] &&
  readelf -d "$T_DIR/build/bin/fabric-coll" | grep -q "R.*PATH.*$T_DIR/build/nccl-home/lib" &&
  grep -q "^NCCL library: $site/nvidia/nccl/lib/libnccl.so.2 " "$s11"; then
  ok "linked through libnccl.so -> the package's libnccl.so.2, found at run time by its run path"
else not_ok "the NCCL link folder" "$(ls -l "$T_DIR/build/nccl-home/lib" 2>&1) $(readelf -d "$T_DIR/build/bin/fabric-coll" 2>&1 | grep PATH)"; fi
expect_grep "there: all_reduce once at the largest size, the memory goal met" '^memory goal, all_reduce -c 1 at 64K: .*: met' "$s11"
if grep -q '^all_reduce at 64K, -c 1, 1 GPU:' "$s11" && [ "$(awk '/^all_reduce at 64K/ { on = 1; next } /^$/ { on = 0 } on && $1 == 65536 { k++ } END { print k + 0 }' "$s11")" -eq 1 ]; then
  ok "there: the largest size's own table, one row"
else not_ok "the largest size's table" "$(grep -A3 '^all_reduce at' "$s11")"; fi
