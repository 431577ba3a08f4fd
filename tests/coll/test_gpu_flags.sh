#!/usr/bin/env bash
# nccl-tests' NCCL-only flags on the GPU stand-in (docs/standin.md): several
# GPUs per process (-g, -t, -p), buffer registration (-R), the CTA policy
# (-x), the device-implementation checks (-D, -V), the NULL stream (-y) and
# NCCL_TESTS_DEVICE, each seen where it reaches NCCL (the stand-in's
# "standin: rank R: ..." line at destroy) and with nccl-tests' messages
# when the NCCL it runs with is older (FB_STANDIN_NCCL_VERSION).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

gs=$FB_ROOT/scripts/gpu-standin.sh
standin_built "NCCL-only flags on the GPU stand-in" || exit 0

# sg NP ARGS...: fabric-coll on NP processes under the stand-in, its NCCL
# log in $T_DIR/log (sg_logged, tests/lib.sh).
sg() { sg_logged "$@"; }
# standin_lines: what each rank's communicator was asked, rank order.
standin_lines() { cat "$T_DIR"/log/nccl.* | grep -o 'standin: rank [0-9]*: set up.*' | sort -t' ' -k3n; }
# expect_standin NAME N REGEX: N ranks' destroy lines match REGEX.
expect_standin() {
  local n
  n=$(standin_lines | grep -Ec -- "$3")
  if [ "$T_RC" -eq 0 ] && [ "$n" -eq "$2" ]; then ok "$1"; else not_ok "$1" "exit $T_RC, $n of $2 match: $(standin_lines | head -4 | tr '\n' '|') $(head -c 300 "$T_ERR")"; fi
}

# --- several GPUs per process (nccl-tests' run(): gpus[i] = localRank *
# nThreads * nGpus + i, rank = proc * nThreads * nGpus + i, busBW over
# every rank) -----------------------------------------------------------
for np in 1 2; do
  ranks=$((np * 2))
  for c in all_reduce all_gather broadcast sendrecv; do
    out=$T_DIR/$c-$np.json
    sg "$np" "$c" -g 2 -b 1K -e 256K -f 16 -n 2 -c 1 -r $((ranks - 1)) -J "$out"
    if [ "$T_RC" -ne 0 ]; then
      not_ok "$c -g 2 on $np process(es)" "exit $T_RC: $(head -c 400 "$T_ERR")"
      continue
    fi
    checked "$c -g 2 on $np process(es): $ranks ranks, busBW over $ranks, validated in and out of place" \
      "$out" --ranks "$ranks" --rows 3 --complete
  done
done
jq_is "-g 2 on 2 processes: 4 ranks, each process on GPUs 0,1 / 2,3 of its host" "$T_DIR/all_reduce-2.json" \
  '[.topology.ranks, [.devices[] | [.rank, .cuda_device]]]' '[4,[[0,0],[1,1],[2,2],[3,3]]]'
jq_is "-g 2 on 2 processes: two ranks per pid" "$T_DIR/all_reduce-2.json" '[.devices | group_by(.pid)[] | length]' '[2,2]'
# The table's rank lines as nccl-tests prints them, one per rank.
sg 2 all_reduce -g 2 -b 1K -e 1K -n 1 -J "$T_DIR/lines.json"
n=$(grep -cE '^#  Rank  [0-3] Group  0 Pid +[0-9]+ on +[^ ]+ device  [0-3] \[' "$T_OUT")
if [ "$n" -eq 4 ] && grep -q 'nThread 1 nGpus 2' "$T_OUT"; then ok "-g 2: a rank line per GPU, 4 in all"; else not_ok "-g 2 rank lines" "$n: $(grep Rank "$T_OUT")"; fi
expect_standin "-g 2: the process's two communicators are set up in one group" 4 'set up in a group of 2,'
FB_STANDIN_CORRUPT_RANK=3 sg 2 all_reduce -g 2 -b 1K -e 1K -n 1 -J "$T_DIR/bad.json"
if [ "$T_RC" -eq 3 ] && grep -q 'fabric-coll: rank 3 on .*wrong element' "$T_ERR"; then
  ok "-g 2: wrong results on the second GPU of process 1 are rank 3's (exit 3)"
else
  not_ok "-g 2 wrong results named by rank" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
sg 1 all_reduce -g 2 -b 4K -e 64K -f 16 -n 2 -G 2 -c 1 -J "$T_DIR/graph.json"
if [ "$T_RC" -eq 0 ]; then checked "-g 2 -G 2: a graph per GPU stream, validated" "$T_DIR/graph.json" --ranks 2 --complete; else not_ok "-g 2 -G 2" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi

# -t 2 -g 1: the same ranks as -g 2 (one thread drives both here).
sg 2 all_reduce -t 2 -g 1 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/t2.json"
if [ "$T_RC" -eq 0 ]; then checked "-t 2 -g 1 on 2 processes: 4 ranks validated" "$T_DIR/t2.json" --ranks 4 --complete; else not_ok "-t 2 -g 1" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
jq_is "-t 2 -g 1: GPUs 0-3, process 1 starting at local rank x 2" "$T_DIR/t2.json" '[.devices[].cuda_device]' '[0,1,2,3]'
# -p 1 (nccl-tests' threadInit): each thread's communicators in a group of their own.
sg 1 all_reduce -t 2 -p 1 -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/p.json"
expect_standin "-t 2 -p 1: each thread sets its communicator up alone" 2 'set up in a group of 1,'
sg 1 all_reduce -p 1 -b 1K -e 1K -n 1 -J "$T_DIR/p1.json"
expect_grep "-p 1 with -t 1: a note that it has no effect" '^# Note: -p 1 has no effect with -t 1' "$T_OUT"

# --- registration (src/common.cu: ncclCommRegister, or
# ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) on ncclMemAlloc memory) --
sg 1 all_reduce -g 2 -R 1 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/r1.json"
expect_standin "-R 1: both buffers of each rank registered (ncclCommRegister), validated" 2 '2 buffers registered, 0 symmetric'
sg 2 all_gather -R 2 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/r2.json"
expect_standin "-R 2: two symmetric windows per rank on ncclMemAlloc memory, validated" 2 '0 buffers registered, 2 symmetric windows'
# nccl-tests main(), -R: NCCL < 2.27 falls back to local registration.
FB_STANDIN_NCCL_VERSION=2.26.0 sg 1 all_reduce -R 2 -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/r26.json"
expect_grep "-R 2 on NCCL 2.26: nccl-tests' fallback message" \
  '^# Note: Option -R 2 \(symmetric\) is not supported before NCCL 2.27. Defaulting to local registration$' "$T_OUT"
expect_standin "-R 2 on NCCL 2.26: local registration instead" 1 '2 buffers registered, 0 symmetric'
FB_STANDIN_NCCL_VERSION=2.18.5 sg 1 all_reduce -R 1 -b 1K -e 1K -n 1 -J "$T_DIR/r18.json"
expect_grep "-R 1 on NCCL 2.18: nccl-tests' message, nothing registered" \
  '^# Note: Option -R \(register\) is not supported before NCCL 2.19. Ignoring$' "$T_OUT"

# --- CTA policy (initComms: ncclConfig_t.CTAPolicy, NCCL >= 2.27; > 1 >= 2.28) --
sg 1 all_reduce -g 2 -x 1 -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/x1.json"
expect_standin "-x 1: CTAPolicy 1 in every communicator's ncclConfig_t" 2 'CTA policy 1,'
FB_STANDIN_NCCL_VERSION=2.27.7 sg 1 all_reduce -x 2 -b 1K -e 1K -n 1 -J "$T_DIR/x27.json"
expect_grep "-x 2 on NCCL 2.27: nccl-tests' message" \
  '^# Note: Option -x \(cta_policy\) 2 is not supported before NCCL 2.28. Ignoring$' "$T_OUT"
expect_standin "-x 2 on NCCL 2.27: no policy set" 1 'CTA policy unset,'

# --- device implementations (main(): -D/-V need NCCL >= 2.28, -D > 0
# needs -R 2, -V outside 1-128 becomes 16) -------------------------------
expect_error "-D 1 without -R 2: nccl-tests' error, exit 2" 2 \
  'device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)' fabric-coll \
  "$gs" "${FB_MPIRUN[@]}" -q -np 1 -x LD_LIBRARY_PATH "$FB_BIN/fabric-coll" all_reduce -D 1 -b 1K -e 1K
expect_error "-D on NCCL 2.26: nccl-tests' error, exit 2" 2 \
  'Option -D (device implementation) requires NCCL >= 2.28.0 (this process runs NCCL 2.26.0)' fabric-coll \
  env FB_STANDIN_NCCL_VERSION=2.26.0 "$gs" "${FB_MPIRUN[@]}" -q -np 1 -x LD_LIBRARY_PATH -x FB_STANDIN_NCCL_VERSION \
  "$FB_BIN/fabric-coll" all_reduce -D 0 -b 1K -e 1K
expect_error "-V on NCCL 2.26: nccl-tests' error, exit 2" 2 'Option -V (device CTA count) requires NCCL >= 2.28.0' \
  fabric-coll env FB_STANDIN_NCCL_VERSION=2.26.0 "$gs" "${FB_MPIRUN[@]}" -q -np 1 -x LD_LIBRARY_PATH \
  -x FB_STANDIN_NCCL_VERSION "$FB_BIN/fabric-coll" all_reduce -V 8 -b 1K -e 1K
expect_error "-D 1 -R 2 where NCCL has the device API: no device kernels built, exit 5" 5 \
  "device implementation is CUDA kernels over NCCL .*'s device API, which fabric-coll does not build" fabric-coll \
  "$gs" "${FB_MPIRUN[@]}" -q -np 1 -x LD_LIBRARY_PATH "$FB_BIN/fabric-coll" all_reduce -D 1 -R 2 -b 1K -e 1K
sg 1 all_reduce -V 0 -b 1K -e 1K -n 1 -J "$T_DIR/v0.json"
expect_grep "-V 0: nccl-tests' default-16 message, and the run goes on" \
  '^# Note: device_cta_count \(-V\) must be positive and less than 128, got 0. Using default value 16.$' "$T_OUT"

# --- the NULL stream and the first device --------------------------------
sg 1 all_reduce -g 2 -y 1 -b 1K -e 64K -f 8 -n 2 -c 1 -J "$T_DIR/y.json"
expect_standin "-y 1: every call on the NULL stream (of each GPU), validated" 2 ' [1-9][0-9]* calls on the NULL stream'
sg 1 all_reduce -g 2 -b 1K -e 1K -n 1 -J "$T_DIR/ns.json"
expect_standin "without -y: no call on the NULL stream" 2 ' 0 calls on the NULL stream'
NCCL_TESTS_DEVICE=1 sg 1 all_reduce -g 2 -b 1K -e 1K -n 1 -c 1 -J "$T_DIR/d1.json"
jq_is "NCCL_TESTS_DEVICE=1 -g 2: GPUs 1 and 2" "$T_DIR/d1.json" '[.devices[].cuda_device]' '[1,2]'
expect_error "NCCL_TESTS_DEVICE past the GPUs: exit 2 naming them" 2 'NCCL_TESTS_DEVICE=7 with 2 GPUs per process needs GPUs 7 to 8' \
  fabric-coll env NCCL_TESTS_DEVICE=7 "$gs" "${FB_MPIRUN[@]}" -q -np 1 -x LD_LIBRARY_PATH -x NCCL_TESTS_DEVICE \
  "$FB_BIN/fabric-coll" all_reduce -g 2 -b 1K -e 1K

# --- the MPI backend: processes are its ranks -----------------------------
expect_error "--backend mpi -g 2: exit 2, launch more processes instead" 2 \
  '-t 1 -g 2: the mpi backend runs one rank per process; drop -t/-g and launch 2 times as many processes' fabric-coll \
  "${FB_MPIRUN[@]}" -q -np 1 "$FB_BIN/fabric-coll" all_reduce --backend mpi -g 2 -b 1K -e 1K
run "${FB_MPIRUN[@]}" -q -np 1 "$FB_BIN/fabric-coll" all_reduce --backend mpi -R 1 -y 1 -b 1K -e 1K -n 1 -J "$T_DIR/mpi.json"
n=$(grep -cE '^# Note: -[Ry] 1 has effect only on the nccl backend$' "$T_OUT")
if [ "$T_RC" -eq 0 ] && [ "$n" -eq 2 ]; then ok "--backend mpi -R 1 -y 1: runs, a note for each"; else not_ok "--backend mpi -R 1 -y 1 notes" "exit $T_RC, $n notes"; fi
