#!/usr/bin/env bash
# Rank groups: NCCL_TESTS_SPLIT, NCCL_TESTS_SPLIT_MASK and --split on the MPI
# backend and on the GPU stand-in (the Group column, each group validated,
# each group's bus factor from its own rank count); the values nccl-tests
# would misread, refused; and --split intra-inter on two namespace hosts,
# with the veth link throttled by tc tbf so that inter-node is far below
# intra-node, judged by fabric-report check, plus synthesized pairs for the
# other verdicts.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

check_py=$FB_ROOT/tests/tools/check_collective.py
gs=$FB_ROOT/scripts/gpu-standin.sh
report=$FB_BIN/fabric-report

# groups_are NAME WANT: the rank lines of the last run show these Group
# numbers in rank order ("0 1 0 1").
groups_are() {
  local got
  got=$(sed -nE 's/^#  Rank +[0-9]+ Group +([0-9]+) .*/\1/p' "$T_OUT" | tr '\n' ' ' | sed 's/ $//')
  if [ "$got" = "$2" ]; then ok "$1"; else not_ok "$1" "Group column '$got', want '$2'"; fi
}
# consistent NAME FILE ARGS...: the record's rows, table and groups, agree.
consistent() {
  local name=$1 file=$2 msg
  shift 2
  if msg=$(/usr/bin/python3 "$check_py" "$file" "$@" 2>&1); then ok "$name"; else not_ok "$name" "$msg"; fi
}
# factor_is NAME FILE WANT: busBW / algBW of the table's first row.
factor_is() {
  local got
  got=$(/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["rows"][-1]["out_of_place"]; print(round(p["busbw_GBps"]/p["algbw_GBps"], 6))' "$2")
  if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1" "busBW/algBW $got, want $3"; fi
}

# --- one host, MPI backend, 4 ranks ------------------------------------
# The colors follow nccl-tests' rule (src/common.cu, run()): rank OP value;
# the mask is rank & hex. all_reduce's bus factor is 2(n-1)/n with n the
# group's ranks: 1 for groups of 2, where the whole job's 4 would give 1.5.
split_case() { # split_case NAME VAR VALUE WANT-GROUPS NGROUPS [COLLECTIVE]
  local name=$1 var=$2 value=$3 want=$4 ngroups=$5 coll=${6:-all_reduce} out=$T_DIR/$1.json
  run env "$var=$value" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 4 "$FB_BIN/fabric-coll" "$coll" \
    -b 1K -e 64K -f 8 -n 2 -c 1 --backend mpi -J "$out"
  if [ "$T_RC" -ne 0 ]; then
    not_ok "$var=$value: 4 ranks in groups" "exit $T_RC: $(head -c 400 "$T_ERR")"
    return
  fi
  groups_are "$var=$value: the rank lines show Groups $want" "$want"
  consistent "$var=$value: $ngroups groups validated (-c 1, no wrong), each busBW from its own rank count" \
    "$out" --ranks 4 --rows 3 --complete --groups "$ngroups"
}
split_case mod2 NCCL_TESTS_SPLIT "MOD 2" "0 1 0 1" 2
factor_is "MOD 2: the table's busBW uses the group's 2 ranks (factor 1, not 1.5)" "$T_DIR/mod2.json" 1.0
expect_grep "MOD 2: the preamble names the split" '^# Split NCCL_TESTS_SPLIT=MOD 2: 2 groups of 2 ranks \(colors 0, 1\)' "$T_OUT"
expect_grep "MOD 2: each group's figures are printed" '^# Group  1: 2 ranks on 1 node, busBW peak' "$T_OUT"
split_case div2 NCCL_TESTS_SPLIT "DIV 2" "0 0 1 1" 2 all_gather
# all_gather's count is per rank: 64K over a group of 2 ranks of floats.
if [ "$(jq -c '[.rows[-1].count, .split.groups[1].ranks]' "$T_DIR/div2.json" 2>&1)" = '[8192,[2,3]]' ]; then
  ok "DIV 2 all_gather: count per rank of a 2-rank group (8192), group 1 is ranks 2 and 3"
else
  not_ok "DIV 2 all_gather counts and ranks" "$(jq -c '[.rows[-1].count, .split.groups[1].ranks]' "$T_DIR/div2.json")"
fi
split_case and1 NCCL_TESTS_SPLIT "and 0x1" "0 1 0 1" 2
split_case mask2 NCCL_TESTS_SPLIT_MASK "0x2" "0 0 2 2" 2
# Unequal groups ({0,3}, {1}, {2}): one-rank groups move nothing (busBW 0),
# the table follows rank 0's group of 2.
split_case mod3 NCCL_TESTS_SPLIT "%3" "0 1 2 0" 3
factor_is "%3: the table follows rank 0's group of 2" "$T_DIR/mod3.json" 1.0
if [ "$(jq -c '[.split.groups[] | .summary.peak_busbw_GBps == 0]' "$T_DIR/mod3.json")" = '[false,true,true]' ]; then
  ok "%3: the one-rank groups report busBW 0"
else
  not_ok "%3: one-rank groups" "$(jq -c '[.split.groups[] | .summary.peak_busbw_GBps]' "$T_DIR/mod3.json")"
fi

# What nccl-tests would misread: one line, exit 2, nothing measured.
bad_split() { # bad_split VAR VALUE PATTERN
  expect_error "$1='$2' is refused: $3" 2 "$3" fabric-coll env "$1=$2" \
    timeout -k 5 60 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K --backend mpi
}
bad_split NCCL_TESTS_SPLIT "MOD 0" "divides by zero"
bad_split NCCL_TESTS_SPLIT "MOD 010" "octal (8)"
bad_split NCCL_TESTS_SPLIT "MODULO 2" "is not a number"
bad_split NCCL_TESTS_SPLIT_MASK "0b11" "the mask is hex"
expect_error "--split intra-inter on one node is refused" 2 "needs ranks on 2 nodes or more" fabric-coll \
  timeout -k 5 60 "${FB_MPIRUN[@]}" -q -np 2 "$FB_BIN/fabric-coll" all_reduce -b 1K -e 1K --backend mpi \
  --split intra-inter

# --- the GPU stand-in ----------------------------------------------------
if [ -e "$FB_BUILD/standin/libnccl.so.2" ]; then
  for spec in "NCCL_TESTS_SPLIT=MOD 2:0 1 0 1" "NCCL_TESTS_SPLIT_MASK=0x2:0 0 2 2"; do
    var=${spec%%=*} rest=${spec#*=} value=${spec#*=}
    value=${value%%:*} want=${rest#*:}
    out=$T_DIR/gpu-$var.json
    run env "$var=$value" "$gs" timeout -k 5 120 "${FB_MPIRUN[@]}" -q -np 4 -x LD_LIBRARY_PATH -x "$var" \
      "$FB_BIN/fabric-coll" all_reduce -b 1K -e 64K -f 8 -n 2 -c 1 -J "$out"
    if [ "$T_RC" -ne 0 ]; then
      not_ok "stand-in GPUs, $var=$value" "exit $T_RC: $(head -c 400 "$T_ERR")"
      continue
    fi
    groups_are "stand-in GPUs, $var=$value: Groups $want, one device per rank" "$want"
    expect_grep "stand-in GPUs: the bus in nccl-tests' form" '^#  Rank  3 Group +[0-9]+ Pid +[0-9]+ on +[^ ]+ device  3 \[[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\] ' "$T_OUT"
    consistent "stand-in GPUs, $var=$value: a communicator per group, each validated" "$out" --ranks 4 \
      --rows 3 --complete --groups 2
  done
else
  skip "rank groups on the GPU stand-in" "not built (make standin)"
fi

# --- the verdict on a pair, from synthesized records -------------------
# The MOD 2 record twice, labelled as the two phases of one launch, with
# the inter-node groups' busBW set to intra-node's divided by a factor.
synth() { # synth FACTOR OUT-PREFIX [EDIT]
  /usr/bin/python3 - "$T_DIR/mod2.json" "$1" "$2" "${3:-}" <<'PY'
import json, sys
src, factor, prefix, edit = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
for kind in ("intra-node", "inter-node"):
    d = json.load(open(src))
    d["split"]["kind"] = kind
    for g in d["split"]["groups"]:
        for row in g["rows"]:
            for p in ("out_of_place", "in_place"):
                row[p]["busbw_GBps"] = 40.0 if kind == "intra-node" else 40.0 / factor
                if edit == "wrong" and kind == "inter-node":
                    row[p]["wrong"] = 3
    if edit == "cut" and kind == "inter-node":
        d["complete"] = False
    json.dump(d, open(f"{prefix}-{kind}.json", "w"))
PY
}
pair_verdict() { # pair_verdict NAME CODE PATTERN FACTOR [EDIT]
  synth "$4" "$T_DIR/synth" "${5:-}"
  run "$report" check "$T_DIR/synth-inter-node.json" "$T_DIR/synth-intra-node.json"
  if [ "$T_RC" -ne "$2" ]; then
    not_ok "$1" "exit $T_RC, want $2: $(cat "$T_OUT" "$T_ERR" | head -c 500)"
  elif ! grep -q -- "$3" "$T_OUT"; then
    not_ok "$1" "no '$3' in: $(head -c 500 "$T_OUT")"
  else
    ok "$1"
  fi
}
# Two rails per node: the node's inter-node figure is both rails together.
pair_verdict "inter-node 1.5x below intra-node per GPU rail (0.75x per node): PASS, the fabric is used" 0 \
  "ratio intra/inter 0.8x" 1.5
pair_verdict "rails together 5x below: DEGRADED" 20 "DEGRADED: inter-node busBW is 5.0x below" 10
pair_verdict "rails together 20x below: FAIL, the second interface is not attached as intended" 22 \
  "20x below intra-node, an order of magnitude: the second interface is not attached as intended" 40
pair_verdict "wrong elements in a group: FAIL" 22 "FAIL: [0-9]* wrong elements in the groups" 1.5 wrong
pair_verdict "an unfinished phase: INCOMPLETE" 23 "INCOMPLETE: .*synth-inter-node.json did not finish" 1.5 cut
expect_error "check of two intra-node results: usage" 2 "not such a pair" "fabric-report check" \
  "$report" check "$T_DIR/synth-intra-node.json" "$T_DIR/synth-intra-node.json"
expect_error "check of a pair with --json: usage" 2 "drop --json" "fabric-report check" \
  "$report" check "$T_DIR/synth-intra-node.json" "$T_DIR/synth-inter-node.json" --json

# --- two hosts, one launch ------------------------------------------------
hosts_up fbsp 2 2 "--split intra-inter across 2 namespace hosts" || exit 0
# One size, few iterations: 4 ranks share this machine's cores, so the
# intra-node groups see scheduler stalls (~15 ms); the throttled link must
# stay an order of magnitude slower than that (1 MiB per call at 5 Mbit/s:
# ~1.7 s).
loop() { # loop PREFIX ITERS: the intra-inter launch, 2 ranks on each host
  run timeout -k 5 120 "$th" mpirun fbsp -np 4 --map-by ppr:2:node "$FB_BIN/fabric-coll" all_reduce \
    -b 512K -e 512K -n "$2" -w 1 -c 1 --backend mpi --split intra-inter -J "$1.json"
}
loop "$T_DIR/fast" 5
if [ "$T_RC" -ne 0 ]; then
  not_ok "--split intra-inter across 2 hosts" "exit $T_RC: $(head -c 400 "$T_ERR")"
else
  consistent "inter-node phase: 2 rails, each across both hosts, validated" "$T_DIR/fast-inter-node.json" \
    --ranks 4 --nodes 2 --rows 1 --complete --groups 2
  consistent "intra-node phase: 2 nodes' groups, validated" "$T_DIR/fast-intra-node.json" \
    --ranks 4 --nodes 2 --rows 1 --complete --groups 2
  if [ "$(jq -c '[.split.groups[].hosts]' "$T_DIR/fast-inter-node.json")" = '[["fbsp1","fbsp2"],["fbsp1","fbsp2"]]' ] &&
     [ "$(jq -c '[.split.groups[].hosts]' "$T_DIR/fast-intra-node.json")" = '[["fbsp1"],["fbsp2"]]' ] &&
     [ "$(jq -r .split.launch "$T_DIR/fast-inter-node.json")" = "$(jq -r .split.launch "$T_DIR/fast-intra-node.json")" ]; then
    ok "rails span both hosts, node groups one each, one launch id in both files"
  else
    not_ok "the phases' groups" "$(jq -c '[.split.launch, [.split.groups[].hosts]]' "$T_DIR"/fast-*.json | tr '\n' ' ')"
  fi
  expect_grep "the launch names the check to run" "^# Split intra-inter: judge the pair with: fabric-report check .*fast-inter-node.json .*fast-intra-node.json" "$T_OUT"
  run "$report" check "$T_DIR/fast-inter-node.json" "$T_DIR/fast-intra-node.json"
  # TCP over veth on shared cores is no fabric: only that a verdict with
  # its ratio comes out is asserted (the synthesized pairs fix the rules).
  if { [ "$T_RC" -eq 0 ] || [ "$T_RC" -eq 20 ] || [ "$T_RC" -eq 22 ]; } && grep -Eq 'ratio intra/inter [0-9.]+x' "$T_OUT"; then
    ok "unthrottled veth: a verdict with the ratio ($(grep -o 'ratio intra/inter [0-9.]*x' "$T_OUT"), exit $T_RC)"
  else
    not_ok "unthrottled veth verdict" "exit $T_RC: $(cat "$T_OUT" "$T_ERR" | head -c 400)"
  fi
fi

# The link throttled: an order of magnitude below the shared-memory path.
"$th" exec fbsp 1 tc qdisc add dev eth0 root tbf rate 5mbit burst 32kb latency 2s
loop "$T_DIR/slow" 1
if [ "$T_RC" -ne 0 ]; then
  not_ok "--split intra-inter over a throttled link" "exit $T_RC: $(head -c 400 "$T_ERR")"
else
  run "$report" check "$T_DIR/slow-inter-node.json" "$T_DIR/slow-intra-node.json"
  if [ "$T_RC" -eq 22 ] && grep -q 'an order of magnitude: the second interface is not attached as intended' "$T_OUT" &&
     grep -Eq 'ratio intra/inter [0-9.]+x' "$T_OUT" && grep -q 'NCCL_SOCKET_IFNAME and NCCL_IB_HCA' "$T_OUT"; then
    ok "tbf-throttled link: FAIL, the second interface is not attached as intended, $(grep -o 'ratio intra/inter [0-9.]*x' "$T_OUT")"
  else
    not_ok "tbf-throttled link verdict" "exit $T_RC: $(cat "$T_OUT" "$T_ERR" | head -c 600)"
  fi
fi
