# shellcheck shell=bash
# Results trees for the history and html tests, sourced after tests/lib.sh:
# real fabric-coll MPI runs, placed as the launchers write them
# (DIR/<cluster>/<stamp>-<collective>.json), with numbers edited by jq where
# a test needs a slow run or a spread it can name.

# real_runs CLUSTER N DIR: N short all_reduce runs of 2 MPI ranks,
# DIR/CLUSTER-1.json ... DIR/CLUSTER-N.json. False when one did not run.
real_runs() {
  local cluster=$1 n=$2 dir=$3 i
  for ((i = 1; i <= n; i++)); do
    fb_mpirun 2 "$FB_BIN/fabric-coll" all_reduce -b 64K -e 1M -f 2 -n 5 -w 1 --backend mpi \
      --cluster "$cluster" -J "$dir/$cluster-$i.json" >/dev/null 2>&1 || return 1
  done
}

# place SRC TREE CLUSTER DAY [FACTOR [JQ-FILTER]]: SRC as the run of CLUSTER
# started on 2026-01-DAY, its busBW and algBW times FACTOR (default 1), then
# JQ-FILTER. The start time is set because real runs of one test start within
# seconds of each other (often the same second): the day orders them.
place() {
  local src=$1 tree=$2 cluster=$3 day=$4 factor=${5:-1} extra=${6:-.}
  local dir="$tree/$cluster" stamp="2026-01-${day}T00:00:00Z"
  mkdir -p "$dir"
  jq --arg c "$cluster" --arg t "$stamp" --argjson f "$factor" '
      def scale: if type == "number" then . * $f else . end;
      .cluster = $c | .start_time = $t
      | .rows |= map(.out_of_place.busbw_GBps |= scale | .out_of_place.algbw_GBps |= scale
                     | .in_place.busbw_GBps |= scale | .in_place.algbw_GBps |= scale)' "$src" |
    jq "$extra" >"$dir/202601${day}T000000Z-all_reduce.json"
}
