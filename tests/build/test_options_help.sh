#!/usr/bin/env bash
# Every program's --help (and each fabric-report subcommand's and each
# fabric-doctor mode's) lists every exit code it can return, in the lines
# from its "exit" paragraph on (docs/exit-codes.md is the shared table).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

# lists NAME "CODES" CMD...: CMD --help, from its first line starting with
# "exit" or "Exit" to its options list (or the end), names each code as a
# number of its own.
lists() {
  local name=$1 codes=$2 text missing="" c; shift 2
  text=$(timeout 30 bash -c 'awk "/^[Ee]xit/ {on = 1} /^options:/ {on = 0} on" < <("$@" --help 2>&1)' _ "$@")
  if [ -z "$text" ]; then not_ok "$name --help lists its exit codes" "no exit paragraph"; return; fi
  for c in $codes; do
    grep -Eq "(^|[^0-9])$c([^0-9]|$)" <<<"$text" || missing="$missing $c"
  done
  if [ -z "$missing" ]; then ok "$name --help lists exit codes $codes"; else not_ok "$name --help lists every exit code" "missing$missing in: $text"; fi
}

B=$FB_BIN
COLL="0 1 2 3 4 5 6 7 8 9 130 143"
lists fabric-coll "$COLL" "$B/fabric-coll"
# Every *_perf name the collective table gives (fabric-coll --list).
for p in $("$B/fabric-coll" --list | sed 's/$/_perf/'); do
  lists "$p" "$COLL" "$B/$p"
done
lists fabric-rdma "0 1 2 4 5 6 7 8 9 130 143" "$B/fabric-rdma"
lists fabric-topo "0 1 2 7 9 10" "$B/fabric-topo"
DOCTOR="0 1 2 5 7 8 9 10 30 31"
lists fabric-doctor "$DOCTOR" "$B/fabric-doctor"
lists "fabric-doctor node" "$DOCTOR" "$B/fabric-doctor" node
lists "fabric-doctor cluster" "$DOCTOR" "$B/fabric-doctor" cluster
lists fabric-report "0 1 2 5 7 8 9 10 20 21 22 23" "$B/fabric-report"
lists "fabric-report check" "0 1 2 10 20 21 22 23" "$B/fabric-report" check
lists "fabric-report compare" "0 1 2 10" "$B/fabric-report" compare
lists "fabric-report import" "0 1 2 7 10" "$B/fabric-report" import
lists "fabric-report plot" "0 1 2 5 7 8 9 10" "$B/fabric-report" plot
lists "fabric-report baseline" "0 1 2 7 10" "$B/fabric-report" baseline
lists "fabric-report transport" "0 1 2 10" "$B/fabric-report" transport
lists "fabric-report profiles" "0 1 2 10" "$B/fabric-report" profiles
