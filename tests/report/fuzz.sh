#!/usr/bin/env bash
# Builds and runs the fabric-report fuzzers (libFuzzer; needs clang).
#   tests/report/fuzz.sh build                  one binary per target in $FUZZ_OUT
#   tests/report/fuzz.sh run TARGET [SECONDS]   fuzz one target (default 120 s)
#   tests/report/fuzz.sh all [SECONDS]          every target in turn
#   tests/report/fuzz.sh replay                 run every saved input once (no fuzzing)
# Seeds and kept inputs: tests/fixtures/report/fuzz/TARGET/. A crash leaves
# $FUZZ_OUT/crash-* behind: copy it into that directory so that the unit test
# test_report_fuzz replays it on every test run.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$root/build-fuzz}
seeds=$root/tests/fixtures/report/fuzz
targets=(fuzz_results fuzz_ncclt_text fuzz_ncclt_json fuzz_perftest fuzz_import_auto fuzz_nccl_log fuzz_profile)

die() { echo "fuzz.sh: $*" >&2; exit 2; }

build() {
  command -v clang >/dev/null || die "clang not found (Debian: apt-get install clang)"
  mkdir -p "$out"
  local srcs=() f
  # The report and its layers (bench/report/module.mk), without the MPI
  # parts of core the report never calls.
  for f in "$root"/bench/report/*.c "$root"/bench/nccl/*.c "$root"/bench/core/*.c; do
    case $(basename "$f") in report_main.c | world.c | gather.c | watchdog.c | options.c) ;; *) srcs+=("$f") ;; esac
  done
  local t
  for t in "${targets[@]}"; do
    clang -g -O1 -std=c11 -D_GNU_SOURCE -I"$root/bench" -DFUZZ_TARGET="$t" \
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -o "$out/$t" "$root/tests/report/fuzz/fuzz_main.c" "${srcs[@]}" -ljson-c -lm
  done
}

known_target() {
  local t
  for t in "${targets[@]}"; do [ "$t" = "$1" ] && return 0; done
  die "unknown target '$1'; targets: ${targets[*]}"
}

run() {
  local t=$1 secs=${2:-120}
  known_target "$t"
  [ -x "$out/$t" ] || build
  mkdir -p "$out/corpus/$t"
  # Run from the root: fuzz_results reads results/reference for verdicts.
  (cd "$root" && ASAN_OPTIONS=detect_leaks=1 "$out/$t" -max_total_time="$secs" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$out/crash-$t-" -print_final_stats=1 \
    "$out/corpus/$t" "$seeds/$t")
}

replay() {
  [ -x "$out/${targets[0]}" ] || build
  local t
  for t in "${targets[@]}"; do
    (cd "$root" && "$out/$t" -runs=0 "$seeds/$t" >/dev/null 2>&1) || die "$t fails on a saved input; run: $out/$t $seeds/$t"
  done
  echo "replayed every saved input of ${#targets[@]} targets"
}

case ${1:-} in
  build) build ;;
  run) [ $# -ge 2 ] || die "usage: fuzz.sh run TARGET [SECONDS]"; run "$2" "${3:-120}" ;;
  all) for t in "${targets[@]}"; do run "$t" "${2:-120}"; done ;;
  replay) replay ;;
  *) die "usage: fuzz.sh build | run TARGET [SECONDS] | all [SECONDS] | replay" ;;
esac
