#!/usr/bin/env bash
# make demo: an all_reduce sweep on this machine, its verdict and its plot.
# NCCL over every local GPU when there are GPUs, else host memory over local
# MPI ranks. Results in results/demo/, the plot in plots/demo-all_reduce.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/bin
cd "$root"

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
mpi=(mpirun --oversubscribe --mca op ^avx)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
if [ "$gpus" -gt 0 ]; then
  np=$gpus
  args=(--backend nccl -b 1K -e 8G -f 2 -n 20 -c 1)
  echo "demo: all_reduce over $gpus local GPU(s) with NCCL"
else
  cores=$(nproc)
  np=$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))
  args=(--backend mpi -b 1K -e 64M -f 2 -n 10 -c 1)
  echo "demo: no GPU here: all_reduce over $np local MPI ranks in host memory"
fi
mkdir -p results/demo plots
json=results/demo/$(date -u +%Y%m%dT%H%M%SZ)-all_reduce.json
"${mpi[@]}" -np "$np" "$bin/fabric-coll" all_reduce "${args[@]}" --cluster demo -J "$json"

# The verdict needs a limit. A GPU run is checked against the shipped
# profiles. A host-memory run has none, and a baseline written by an earlier
# run would only compare the machine with itself; it is checked against this
# host instead: its memory copy bandwidth, measured now by one rank sending
# to itself at the sweep's largest size. An all_reduce over local ranks
# copies each byte a few times through shared memory, so it should reach a
# good share of that copy rate; far below it, the ranks are not using shared
# memory (a TCP loopback path, a starved or oversubscribed CPU).
report=$bin/fabric-report
check=()
if [ "$gpus" -eq 0 ]; then
  share=0.15
  profdir=$(mktemp -d "${TMPDIR:-/tmp}/fabric-demo-profile.XXXXXX")
  trap 'rm -rf "$profdir"' EXIT
  copy=$("${mpi[@]}" -np 1 "$bin/fabric-coll" sendrecv --backend mpi -b 64M -e 64M -n 10 -c 1 \
           --cluster demo -J "$profdir/copy/sendrecv.json" | awk '$1 == 67108864 && NF >= 13 { print $8 }')
  [ -n "$copy" ] || { echo "demo: could not measure this host's copy bandwidth" >&2; exit 1; }
  floor=$(awk -v c="$copy" -v s="$share" 'BEGIN { printf "%.3f", c * s }')
  cat >"$profdir/demo-host.json" <<JSON
{"schema": "fabric-bench.profile", "schema_version": 1, "name": "demo-host", "revision": 1,
 "role": "target", "description": "this host's memory copy bandwidth, measured by make demo",
 "match": {"backend": "mpi"},
 "collectives": {"all_reduce": {"at_bytes": 67108864, "floor_GBps": $floor}},
 "sources": [{"what": "one rank sending 64M to itself: $copy GB/s; floor = $share of it",
              "ref": "measured by scripts/demo.sh in this run"}]}
JSON
  echo "demo: this host copies memory at $copy GB/s (one rank, 64M); the all_reduce must reach $share of it: $floor GB/s"
  check=(--profiles "$profdir" --profile demo-host)
fi
echo
echo "demo: verdict"
set +e
"$report" check "$json" "${check[@]}"
verdict=$?
set -e
echo "(fabric-report check exit code $verdict: 0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL, 23 INCOMPLETE)"
runs=$(find results/demo -name '*-all_reduce.json' | wc -l)
if [ "$runs" -gt 1 ]; then
  echo
  echo "demo: this run beside the earlier demo runs on this machine"
  "$report" compare results/demo || true
fi
echo
# The TCP-fallback reference line gives the curve its scale: what NCCL
# gets between nodes when the fabric is not used. The limit drawn is the one
# the verdict used (on host memory: this run's, not a profile found lying
# in the user's directory).
plot_limit=()
[ ${#check[@]} -eq 0 ] || plot_limit=("${check[@]}" --no-auto-profile)
"$report" plot "$json" --profile tcp-fallback "${plot_limit[@]}" -o plots/demo-all_reduce.png
echo "demo: results $json, plot plots/demo-all_reduce.png"
exit "$verdict"
