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

# The verdict needs a reference. A host-memory run has none shipped, so
# the first demo on a machine becomes that machine's baseline profile and
# later ones are checked against it (a regression shows as DEGRADED).
report=$bin/fabric-report
profile=demo-$(hostname | tr -c 'A-Za-z0-9._-' '_' | sed 's/_*$//')
if [ "$gpus" -eq 0 ] && ! "$report" profiles | grep -q "^$profile "; then
  "$report" baseline "$json" --name "$profile" --tolerance 25
  echo "demo: first run here: saved as the baseline profile $profile (fabric-report profiles)"
fi
check=()
[ "$gpus" -eq 0 ] && check=(--profile "$profile")
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
# gets between nodes when the fabric is not used.
"$report" plot "$json" --profile tcp-fallback -o plots/demo-all_reduce.png
echo "demo: results $json, plot plots/demo-all_reduce.png"
