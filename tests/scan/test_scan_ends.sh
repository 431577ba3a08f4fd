#!/usr/bin/env bash
# Bounded ends of fabric-scan: a rank stopped (SIGSTOP) after its last
# test while rank 0 writes the results (ends_bounded, tests/ends.sh).
# Before the bounded end, rank 0 (and mpirun) waited in MPI_Finalize for
# the stopped rank forever. Every rank that is not stopped must be gone
# within the bound docs/scan.md states (When a node is lost), and the
# results must be complete. Ranks on one machine, each on a host of its
# own (a UTS namespace): needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ends.sh
. "$(dirname "$0")/../ends.sh"

if ! is_root; then
  skip "bounded ends with a stopped rank" "needs root for unshare --uts"
  exit 0
fi

# No figure slow: a scan with suspects ends through MPI_Abort at once, not
# through the end handshake this case is about.
ends_bounded "fabric-scan, a rank stopped after its last test" 3 2 3 \
  "$FB_BIN/fabric-scan" --backend mpi -b 64K -n 2 -w 1 --threshold 0.01 --test-timeout 3 -J "$T_DIR/r.fifo"
