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

echo
echo "demo: verdict"
set +e
"$bin/fabric-report" check "$json"
verdict=$?
set -e
echo "(fabric-report check exit code $verdict: see docs/exit-codes.md)"
echo
"$bin/fabric-report" plot "$json" -o plots/demo-all_reduce.png
echo "demo: results $json, plot plots/demo-all_reduce.png"
