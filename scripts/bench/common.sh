# shellcheck shell=bash
# What the bench scripts that run fabric-coll share: the tree, a scratch
# directory removed at exit, and mpirun for 2 local ranks over shared
# memory, with Open MPI's correct int8 sums (op/avx saturates them).
# Sourced by scripts/bench.sh and scripts/bench-check.sh.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034  # read by the scripts that source this
build=${BUILD:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --mca op ^avx --mca btl "self,vader" -np 2)
[ "$(id -u)" -ne 0 ] || mpi=(mpirun --allow-run-as-root "${mpi[@]:1}")
