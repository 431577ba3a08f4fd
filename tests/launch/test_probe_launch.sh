#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs in single quotes
# launch/kubectl.sh probe against the stand-in kubectl (kubectl-standin.sh):
# the fabric profile's transport (aws-efa: ofi with FI_PROVIDER=efa), the
# options that are the launcher's, and across network-namespace "pods" a
# real fabric-rdma over libfabric's tcp provider whose result is copied back
# and judged; on these hosts (no EFA) the aws-efa profile ends in
# fabric-rdma's exit 5, naming the provider.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

L=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state FBL_SET=fkp
mkdir -p "$FBL_STATE"
reset_state() { rm -f "$FBL_STATE"/*; }
K=(--kubectl "$STANDIN" --results "$RES" --cluster c1)

# ---- the command line the pods get --------------------------------------------------------
run "$L" "${K[@]}" --dry-run --fabric aws-efa probe -- --pattern all-pairs -s 8M
check "dry run: exit 0" test "$T_RC" -eq 0
expect_grep "aws-efa: fabric-rdma over libfabric, the user's options, the cluster, the result path" \
  '/bin/fabric-rdma --transport ofi --pattern all-pairs -s 8M --cluster c1 -J "\$result" \\$' "$T_OUT"
expect_grep "aws-efa: the profile's FI_PROVIDER=efa is exported and forwarded" '^  \| export FI_PROVIDER=efa$' "$T_OUT"
expect_grep "aws-efa: GPUDirect RDMA asked of the device" '^  \| export FI_EFA_USE_DEVICE_RDMA=1$' "$T_OUT"
if grep -q 'fabric-rdma.*--nccl-log' "$T_OUT"; then not_ok "fabric-rdma is not given fabric-coll's --nccl-log" "$(grep -m1 -- --nccl-log "$T_OUT")"
else ok "fabric-rdma is not given fabric-coll's --nccl-log"; fi
expect_grep "the probe's result comes back as <stamp>-probe.json" "cp -c fabric-bench fabric-bench-0:/tmp/fabric-bench-[0-9TZ]+-probe\.XXXXXX/[0-9TZ]+-probe\.json $RES/c1/[0-9TZ]+-probe\.json" "$T_OUT"

run "$L" "${K[@]}" --dry-run --fabric aws-efa probe -- --transport=rdma -d mlx5_0
expect_grep "fabric-rdma's own --transport wins over the profile's" '/bin/fabric-rdma --transport=rdma -d mlx5_0 --cluster c1 -J ' "$T_OUT"
run "$L" "${K[@]}" --dry-run --fabric tcp-baseline probe
expect_grep "tcp-baseline: the TCP probe" '/bin/fabric-rdma --transport tcp --cluster c1 -J ' "$T_OUT"
run "$L" "${K[@]}" --dry-run --fabric sriov-rdma probe -- -a
expect_grep "an RDMA fabric: fabric-rdma's default transport (verbs)" '/bin/fabric-rdma -a --cluster c1 -J ' "$T_OUT"

for opt in -J --json=x --cluster --results-dir; do
  expect_error "fabric-rdma's $opt is the launcher's: usage" 2 "fabric-rdma's '${opt%%=*}' is the launcher's to set" kubectl.sh \
    "$L" "${K[@]}" --dry-run probe -- "$opt" x
done
expect_error "a control character in fabric-rdma's arguments: usage" 2 "fabric-rdma's argument has a control character" kubectl.sh \
  "$L" "${K[@]}" --dry-run probe -- -s $'1M\nx'

# ---- real pods: namespace hosts ----------------------------------------------------------
if ! "$FB_BIN/fabric-rdma" --version 2>/dev/null | grep -q 'ofi)\|ofi$'; then
  skip "probes across namespace pods" "fabric-rdma is built without libfabric"
  exit 0
fi
hosts_up fkp 3 "probes across namespace pods"
export FBL_COUNT=3
common=(--kubectl "$STANDIN" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" --ssh-port 2222 --ssh-key "$dir/id_ed25519"
  --bind none --results "$RES" --workdir "$T_DIR/pod-work" --wait 30 --cluster kprobe)
first() { [ -e "$1" ] && echo "$1"; }

reset_state
run timeout 300 "$L" "${common[@]}" --fabric tcp-baseline --env FI_PROVIDER=tcp probe -- \
  --transport ofi --pattern all-pairs -s 1M -n 100 -w 10
result=$(first "$RES"/kprobe/*-probe.json)
if [ -n "$result" ]; then ok "probe copies the result to results/<cluster>/<stamp>-probe.json"
else
  not_ok "probe copies the result to results/<cluster>/<stamp>-probe.json" "exit $T_RC: $(tail -c 600 "$T_ERR" "$T_OUT" | tr '\n' ' ')"
  exit 1
fi
case $T_RC in 0 | 20 | 23) ok "probe exits with fabric-report's verdict ($T_RC)" ;;
  *) not_ok "probe exits with fabric-report's verdict" "exit $T_RC: $(head -c 400 "$T_ERR")" ;; esac
expect_grep "the verdict is printed" '^(PASS|DEGRADED|INCOMPLETE)' "$T_OUT"
if json_valid "$FB_ROOT/docs/schema/probe.schema.json" "$result" 2>"$T_DIR/schema.err"; then ok "the result matches the probe schema"
else not_ok "the result matches the probe schema" "$(tail -n 2 "$T_DIR/schema.err" | tr '\n' ' ')"; fi
check "all-pairs over the 3 pods' hosts through libfabric's tcp provider (--env's FI_PROVIDER)" jq -e '
  .transport == "ofi" and .complete and (.links | length) == 3
  and ([.endpoints[].host] | sort) == ["fkp1", "fkp2", "fkp3"]
  and all(.endpoints[]; .ofi.provider == "tcp;ofi_rxm" and .device == "eth0")
  and all(.links[]; .messages == 200 and .avg_Gbps > 0)' "$result"
check "the probe's cluster is --cluster's" jq -e '.cluster == "kprobe"' "$result"
expect_grep "mpirun ran inside the first pod" 'exec fabric-bench-0 -c fabric-bench -- bash .*/run.sh' "$FBL_STATE/calls"

# The aws-efa profile on hosts without EFA: FI_PROVIDER=efa finds no
# provider; fabric-rdma's one line and exit 5 reach the user, nothing is
# copied back as a result.
rm -rf "$RES"
reset_state
run timeout 300 "$L" "${common[@]}" --fabric aws-efa probe -- -s 64K -n 10
if [ "$T_RC" -eq 5 ] && grep -q 'the run wrote no result (exit 5)' "$T_ERR"; then ok "aws-efa without EFA: exit 5, no result"
else not_ok "aws-efa without EFA: exit 5, no result" "exit $T_RC: $(head -c 400 "$T_ERR")"; fi
log=$(first "$RES"/kprobe/*-probe.log)
expect_grep "aws-efa without EFA: the log names FI_PROVIDER=efa and the fix" 'loads no provider FI_PROVIDER=efa allows on this host; install that provider' "${log:-/dev/null}"
if [ -z "$(first "$RES"/kprobe/*-probe.json)" ]; then ok "aws-efa without EFA: no result file"
else not_ok "aws-efa without EFA: no result file" "$(ls "$RES"/kprobe)"; fi
