#!/usr/bin/env bash
# The atlas and physics: published runs of many systems (../shared/realworld/atlas,
# beside the checkout, never in it) judged as their sources say, with no
# --profile; our own fixtures for each class physics decides (one GPU and
# one NIC per node, Tree inflation, NVLink across trays, AMD single nodes,
# summary-only blocks); check --explain; the atlas listing and its table in
# docs/report.md.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
FIX=$FB_ROOT/tests/fixtures/report/atlas
ATLAS=${FB_REALWORLD:-$FB_ROOT/../shared/realworld}/atlas
# Only the shipped profiles: no user directory, no profile path.
export HOME=$T_DIR/home
unset FABRIC_PROFILE_PATH XDG_CONFIG_HOME
mkdir -p "$HOME"

# verdict FILE: imports a text output and prints check's headline; the
# import's own failure line when it refuses the file.
verdict() {
  local json
  json=$T_DIR/$(basename "$1").json
  rm -f "$json"
  if ! "$R" import "$1" -o "$json" >"$T_DIR/import.out" 2>"$T_DIR/import.err"; then
    echo "import-refused $(cat "$T_DIR/import.err")"
    return
  fi
  "$R" check "$json" "${@:2}" >"$T_DIR/check.out" 2>&1
  echo "rc=$? $(head -1 "$T_DIR/check.out")"
}

# ---- published runs: the verdict each sidecar's context supports ----
if [ -d "$ATLAS" ]; then
  for src in "$ATLAS"/*.source.txt; do
    file=${src%.source.txt}.txt
    name=$(basename "$file")
    want=$(sed -n 's/^expect: *//p' "$src" | head -1)
    got=$(verdict "$file")
    case $want in
      "unclear (leans DEGRADED)"*) want=DEGRADED ;;
      unclear*) want=ANY ;;
      *) want=${want%% *} ;;
    esac
    case $want in
      ANY)
        case $got in
          rc=0\ PASS:* | rc=20\ DEGRADED:*) ok "$name: a verdict where its source is unclear (${got:0:40})" ;;
          *) not_ok "$name: a verdict where its source is unclear" "$got" ;;
        esac ;;
      INVALID)
        # Not a measurement: refused by import with its diagnosis, or
        # judged as one that cannot be used; never PASS.
        case $got in
          import-refused*INVALID* | rc=22\ FAIL:* | rc=25\ INVALID:*) ok "$name: not judged as a measurement (${got:0:60})" ;;
          *) not_ok "$name: not judged as a measurement" "$got" ;;
        esac ;;
      *)
        case $got in
          "rc="*" $want:"*) ok "$name: $want" ;;
          *) not_ok "$name: $want" "$got" ;;
        esac ;;
    esac
  done
else
  skip "published runs of the atlas" "$ATLAS is not there (set FB_REALWORLD)"
fi

# ---- our own fixtures, one class each ----
# scale F < IN > OUT: every row's bandwidths times F and its times what
# they give (a row whose figures disagree with its time is refused as
# damaged).
scale() {
  awk -v f="$1" '/^ +[0-9]+ +[0-9]+ +float/ {
    bus = $8 / $7; $7 = sprintf("%.2f", $7 * f); $8 = sprintf("%.2f", $7 * bus)
    bus = $12 / $11; $11 = sprintf("%.2f", $11 * f); $12 = sprintf("%.2f", $11 * bus)
    $6 = sprintf("%.1f", $1 / $7 / 1e3); $10 = sprintf("%.1f", $1 / $11 / 1e3) } 1'
}
expect_verdict() { # NAME FILE WANT PATTERN [check options]
  local got
  got=$(verdict "$2" "${@:5}")
  if [[ $got == "rc="*" $3:"* ]] && grep -Eq -- "$4" "$T_DIR/check.out"; then
    ok "$1"
  else
    not_ok "$1" "want $3 and /$4/, got: $got; $(sed -n 2p "$T_DIR/check.out" | head -c 400)"
  fi
}

expect_verdict "one H200 and one NIC a node at 31 GB/s: DEGRADED against one 400 Gb/s NIC" \
  "$FIX/h200_1gpu_per_node_allreduce.txt" DEGRADED '1 GPU per node: 400 Gb/s per node = 50.0 GB/s.*roce-400g-nic'
# The same run at 45 GB/s a NIC passes: the rule reads the figure.
scale 1.45 <"$FIX/h200_1gpu_per_node_allreduce.txt" >"$T_DIR/h200_fast.txt"
expect_verdict "one H200 and one NIC a node at 45 GB/s: PASS" "$T_DIR/h200_fast.txt" PASS 'physics judges it'
expect_verdict "2 x 8 B200 above the NICs' bound: PASS, not a fabric figure, NCCL_ALGO=Ring named" \
  "$FIX/b200_2node_tree_allreduce.txt" PASS 'not a figure of the fabric.*NCCL_ALGO=Ring'
expect_verdict "GB200 trays of one rack: the NVL72 profile, no NIC bound" \
  "$FIX/gb200_2tray_allreduce.txt" PASS 'profile gb200-nvl72-rack'
expect_verdict "MI300X, one node, rccl-tests: its atlas profile" \
  "$FIX/mi300x_1node_rccl_allreduce.txt" PASS 'profile mi300x-8gpu-xgmi'
scale 0.4 <"$FIX/mi300x_1node_rccl_allreduce.txt" >"$T_DIR/mi300x_slow.txt"
expect_verdict "MI300X, one node, at 120 GB/s: FAIL against its profile" "$T_DIR/mi300x_slow.txt" FAIL 'far below the profile'
expect_verdict "MI355X, one node, slow: DEGRADED by its xGMI links" \
  "$FIX/mi355x_1node_slow_rccl_allreduce.txt" DEGRADED 'MI355X links of 538 GB/s'

# NCCL's log lists the NICs: fewer than the GPUs have is named.
mkdir -p "$T_DIR/onenic"
for f in "$FB_ROOT"/tests/fixtures/report/nccl-logs/ib-gdr/*; do
  sed 's/ \[1\]mlx5_1:1\/IB//; s#NET/IB/1/#NET/IB/0/#' "$f" >"$T_DIR/onenic/$(basename "$f")"
done
expect_verdict "2 H200 a node, NCCL's log lists one NIC a node: DEGRADED, the missing NIC named" \
  "$FIX/h200_2x2_allreduce.txt" DEGRADED "NCCL's log lists 1 NIC per node where these GPUs have 2" --nccl-log "$T_DIR/onenic"
expect_verdict "the same with both NICs logged: DEGRADED, the NICs carry less than they allow" \
  "$FIX/h200_2x2_allreduce.txt" DEGRADED "lists 2 NICs per node.*carries less than its NICs allow" --nccl-log "$FB_ROOT/tests/fixtures/report/nccl-logs/ib-gdr"

# Summary-only: judged by the average only against one over the same sweep.
expect_verdict "summary only: the family's average over the same sweep (a3-mega, 1K-16G): PASS" \
  "$FIX/h100_2node_summary_only.txt" PASS "gke-a3-mega-tcpxo.s average over the same sweep: typical 100.0 GB/s, PASS at 90.0"
sed 's/all_reduce_perf/broadcast_perf/' "$FIX/h100_2node_summary_only.txt" >"$T_DIR/summary_bcast.txt"
expect_verdict "summary only, no profile gives an average: INCOMPLETE naming what is missing" \
  "$T_DIR/summary_bcast.txt" INCOMPLETE "Only nccl-tests' average was kept.*keep the table"
sed 's/^# Avg bus bandwidth .*/# Avg bus bandwidth    : 31.5 /' "$FIX/h100_2node_summary_only.txt" >"$T_DIR/summary_slow.txt"
expect_verdict "summary only far below a named profile's average: FAIL" "$T_DIR/summary_slow.txt" FAIL 'far below the profile' --profile gke-a3-mega-tcpxo
expect_verdict "summary only far below the family's average: DEGRADED, not FAIL" "$T_DIR/summary_slow.txt" DEGRADED 'below the floor'
sed 's/minBytes 1024 /minBytes 8 /' "$FIX/h100_2node_summary_only.txt" >"$T_DIR/summary_range.txt"
expect_verdict "summary only over another sweep: INCOMPLETE, the ranges named" "$T_DIR/summary_range.txt" INCOMPLETE \
  'over 1K-16G, not over this run.s 8-16G' --profile gke-a3-mega-tcpxo
# A health check's pass line on the average: cluster-health-scanner's
# a3-ultra all_gather over 2G-8G.
sed 's/all_reduce_perf/all_gather_perf/; s/minBytes 1024 maxBytes 17179869184/minBytes 2147483648 maxBytes 8589934592/; s/NVIDIA H100 80GB HBM3/NVIDIA H200/; s/^# Avg bus bandwidth .*/# Avg bus bandwidth    : 281.2 /' \
  "$FIX/h100_2node_summary_only.txt" >"$T_DIR/summary_a3u.txt"
expect_verdict "summary only, a3-ultra all_gather over 2G-8G at 281: PASS at its health check's line" \
  "$T_DIR/summary_a3u.txt" PASS "profile gke-a3-ultra's average over the same sweep: PASS at 250.0 GB/s \(its source's pass line\)"
sed 's/^# Avg bus bandwidth .*/# Avg bus bandwidth    : 180.4 /' "$T_DIR/summary_a3u.txt" >"$T_DIR/summary_a3u_slow.txt"
expect_verdict "summary only, a3-ultra all_gather at 180: DEGRADED" "$T_DIR/summary_a3u_slow.txt" DEGRADED 'ratio 0.72, below the floor'

# The atlas's link figure names itself and where the line rate came from.
if [ -f "$ATLAS/ibwb_gke_a3ultra_h200_cuda_dmabuf.txt" ]; then
  verdict "$ATLAS/ibwb_gke_a3ultra_h200_cuda_dmabuf.txt" >/dev/null
  expect_grep "ib_write_bw from an H200's memory is held to a 400 Gb/s RoCE link's GPUDirect figure" \
    'Against profile ib-write-bw-400g-gdr r1 .*passes at 360 Gb/s; this one carries 140.40 Gb/s, 35 % of its line rate \(the line rate from the RoCE NICs of every H200 family' "$T_DIR/check.out"
fi

# plot draws the bound a run was judged by when no profile judged it.
if command -v gnuplot >/dev/null; then
  "$R" import "$FIX/h200_1gpu_per_node_allreduce.txt" -o "$T_DIR/h200.json" >/dev/null 2>&1
  "$R" plot "$T_DIR/h200.json" -o "$T_DIR/h200.svg" >"$T_OUT" 2>&1
  expect_grep "plot draws physics' bound and floor" 'physics: NICs bound 50 GB/s' "$T_DIR/h200.svg"
  expect_grep "  and says so" '2 reference lines' "$T_OUT"
fi

# ---- --explain: the chain that decided ----
verdict "$FIX/h200_1gpu_per_node_allreduce.txt" --explain >/dev/null
for want in '^how this verdict was reached:' '^  run: all_reduce, 2 ranks, 2 nodes \(1 per node\), GPU NVIDIA H200 \(NVIDIA\)' \
  '^  profile: none applies: .*h200-8gpu-nvlink \(more than 1 nodes\)' '^  physics: .*bound 50.0 GB/s, floor 36.0 GB/s' \
  '^  verdict: DEGRADED \(exit 20\)' '^  physics source: .*nccl#1221'; do
  expect_grep "--explain: $want" "$want" "$T_DIR/check.out"
done
verdict "$FIX/mi300x_1node_rccl_allreduce.txt" --explain >/dev/null
expect_grep "--explain names the profile, its sources and the vendor" '^  source: oracle-quickstart/oci-gpu-quickstarts@' "$T_DIR/check.out"
expect_grep "--explain names an AMD GPU's vendor" 'GPU AMD Instinct MI300X \(AMD\)' "$T_DIR/check.out"

# ---- the atlas listing and its table in docs/report.md ----
"$R" profiles >"$T_OUT" 2>"$T_ERR"
expect_grep "profiles lists by family: single node first" '^single node$' "$T_OUT"
expect_grep "profiles lists AMD's" '^  mi355x-pollara ' "$T_OUT"
targets=$("$R" profiles --json | jq '[.[] | select(.role == "target")] | length')
if [ "$targets" -ge 25 ]; then ok "the atlas has $targets target profiles (25 or more)"; else not_ok "the atlas has 25 target profiles" "$targets"; fi
first=$(awk '/^[a-zA-Z]/ { print; exit }' "$T_OUT")
last=$(awk '/^[a-zA-Z]/ { f = $0 } END { print f }' "$T_OUT")
if [ "$first" = "single node" ] && [ "$last" = "symptom" ]; then ok "families in the atlas's order"; else not_ok "families in the atlas's order" "$first ... $last"; fi
if "$FB_ROOT/scripts/atlas-doc.sh" --check 2>"$T_ERR"; then ok "docs/report.md's atlas table is the profiles'"; else not_ok "docs/report.md's atlas table is the profiles'" "$(cat "$T_ERR")"; fi
cp "$FB_ROOT/results/reference/roce-400g-nic.json" "$T_DIR/prof.json"
mkdir -p "$T_DIR/extra"
sed 's/"floor_GBps": 36/"floor_GBps": 30/' "$T_DIR/prof.json" >"$T_DIR/extra/roce-400g-nic.json"
"$R" profiles --markdown --profiles "$T_DIR/extra" >"$T_OUT"
expect_grep "the table follows the profiles it reads" 'roce-400g-nic` r1 \| all_reduce 40 / >= 30 GB/s' "$T_OUT"

# ---- profiles that contradict themselves are refused, naming the file ----
bad() { # NAME SED-EXPRESSION FILE PATTERN
  mkdir -p "$T_DIR/bad"
  rm -f "$T_DIR/bad"/*.json
  sed "$2" "$FB_ROOT/results/reference/$3" >"$T_DIR/bad/$3"
  "$R" profiles --profiles "$T_DIR/bad" >/dev/null 2>"$T_ERR"
  local rc=$?
  if [ $rc -eq 10 ] && grep -Eq -- "$4" "$T_ERR"; then ok "$1"; else not_ok "$1" "rc $rc: $(cat "$T_ERR")"; fi
}
bad "a per-NIC profile of two NICs is refused" 's/"per_node": 1,/"per_node": 2,/' roce-400g-nic.json 'per_nic profile describes one NIC'
bad "a link floor above its line rate is refused" 's/"floor_Gbps": 360/"floor_Gbps": 460/' ib-write-bw-400g-gdr.json 'floor_Gbps is above line_rate_Gbps'
bad "NICs of 0 Gb/s are refused" 's/"Gbps": 400/"Gbps": 0/' oci-h200.json 'nics.Gbps must be a number > 0'
