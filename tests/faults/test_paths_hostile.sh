#!/usr/bin/env bash
# Results paths and trees that someone else shaped: a results/<cluster> or
# a results directory that is a symbolic link, or a directory of another
# user, is refused with exit 7 and one line before anything is written
# there; a tree holding a symbolic link loop and a link to a sibling run is
# read with each run once by history, compare, export and html; the
# temporary a writer killed by SIGKILL left is read by no reader and
# removed by the next run into its directory.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
RES=$FB_ROOT/tests/fixtures/report/results
SIZES=(-b 1K -e 4K -f 2 -n 2 -w 0 -c 0 --backend mpi)
command -v jq >/dev/null || { skip "hostile paths" "jq is not installed"; exit 0; }

coll() { mpi_quiet 2 "$FB_BIN/fabric-coll" all_reduce "${SIZES[@]}" "$@"; }
# nothing_in NAME DIR: DIR is still empty.
nothing_in() {
  local left
  left=$(find "$2" -mindepth 1 -printf '%P ')
  if [ -z "$left" ]; then ok "$1"; else not_ok "$1" "$left"; fi
}

# ---- 1. the results root and below: no links, nobody else's directories ----
theirs=$T_DIR/theirs
mkdir -p "$theirs" "$T_DIR/res"
ln -s "$theirs" "$T_DIR/res/lab"
expect_error "results/<cluster> a symbolic link: exit 7 naming it" 7 "res/lab is a symbolic link" fabric-coll \
  coll --results-dir "$T_DIR/res" --cluster lab
nothing_in "nothing written where results/<cluster> leads" "$theirs"
ln -s "$theirs" "$T_DIR/linked-res"
expect_error "the results directory a symbolic link: exit 7 naming it" 7 "linked-res is a symbolic link" fabric-coll \
  coll --results-dir "$T_DIR/linked-res" --cluster lab
nothing_in "no cluster directory made where the results directory leads" "$theirs"
expect_error "import -o into a linked directory: exit 7 naming -o" 7 "res/lab is a symbolic link.*-o OUT" "fabric-report import" \
  "$R" import "$FB_ROOT/tests/fixtures/report/ncclt/all_reduce_perf-J.json" -o "$T_DIR/res/lab/imported.json"
nothing_in "nothing imported where the link leads" "$theirs"
expect_error "plot -o into a linked directory: exit 7 naming -o" 7 "res/lab is a symbolic link.*-o FILE" "fabric-report plot" \
  "$R" plot "$RES/vm-mpi-allreduce-2.json" -o "$T_DIR/res/lab/p.png"
nothing_in "nothing drawn where the link leads" "$theirs"
if command -v gnuplot >/dev/null; then
  mkdir -p "$T_DIR/plots"
  expect_exit "plot into a directory of one's own" 0 "$R" plot "$RES/vm-mpi-allreduce-2.json" -o "$T_DIR/plots/p.png"
  left=$(find "$T_DIR/plots" -mindepth 1 ! -name p.png -printf '%P ')
  if [ -z "$left" ]; then ok "plot leaves only its picture"; else not_ok "plot leaves only its picture" "$left"; fi
fi

if is_root; then
  mkdir -p "$T_DIR/res2/lab"
  chown nobody "$T_DIR/res2/lab"
  expect_error "results/<cluster> of another user: exit 7 naming its owner" 7 "res2/lab belongs to uid $(id -u nobody)" \
    fabric-coll coll --results-dir "$T_DIR/res2" --cluster lab
  nothing_in "nothing written in the other user's directory" "$T_DIR/res2/lab"
else
  skip "results/<cluster> of another user" "chown needs root"
fi

# ---- 2. a tree with a loop and a link to a sibling run: each run once ----
# tree_of DIR: three runs of cluster lab, 2026-01-01 to 03.
tree_of() {
  local d
  mkdir -p "$1/lab"
  for d in 01 02 03; do
    jq --arg t "2026-01-${d}T00:00:00Z" '.start_time = $t | .cluster = "lab"' "$RES/vm-mpi-allreduce-2.json" \
      >"$1/lab/202601${d}T000000Z-all_reduce.json"
  done
}
tree_of "$T_DIR/clean"
tree_of "$T_DIR/hostile"
ln -s .. "$T_DIR/hostile/lab/loop"
ln -s 20260103T000000Z-all_reduce.json "$T_DIR/hostile/lab/latest.json"
# What `timeout -s KILL` leaves: a half-written temporary of a dead writer
# of this host, named as writers name them (.NAME@HOST.PIDNS.PID.TAG.tmp).
host=$(hostname)
host=${host//[^A-Za-z0-9.-]/_}
dead=$(bash -c 'echo $$')
tmp_of() { echo ".20260103T000000Z-all_reduce.json@${host:0:64}.$(stat -L -c %i /proc/self/ns/pid).$1.$2.tmp"; }
stale=$(tmp_of "$dead" 0badcafe)
live=$(tmp_of $$ 0000cafe)
printf '{"schema": "fabric-bench.result", "rows": [' >"$T_DIR/hostile/lab/$stale"
printf '{"schema": "fabric-bench.result", "rows": [' >"$T_DIR/hostile/lab/$live"

runs() { jq '[.series[].runs | length] | add' "$1"; }
expect_exit "history on the clean tree" 0 "$R" history --json "$T_DIR/clean"
want=$(runs "$T_OUT")
expect_exit "history on the tree with a loop, a sibling link and a leftover" 0 "$R" history --json "$T_DIR/hostile"
got=$(runs "$T_OUT")
if [ "$got" = "$want" ] && [ "$want" = 3 ]; then ok "history: each run once"; else not_ok "history: each run once" "$got runs, $want in the clean tree"; fi

# same_count NAME REGEX CMD...: CMD prints as many lines matching REGEX on
# the hostile tree as on the clean one (and some).
same_count() {
  local name=$1 regex=$2 a b; shift 2
  a=$("$@" "$T_DIR/clean" 2>&1 | grep -Ec -- "$regex")
  b=$("$@" "$T_DIR/hostile" 2>&1 | grep -Ec -- "$regex")
  if [ "$a" -gt 0 ] && [ "$a" = "$b" ]; then ok "$name"; else not_ok "$name" "$b lines, $a in the clean tree"; fi
}
same_count "compare: each run once" '^# \[[0-9]+\] ' "$R" compare
same_count "export: each run once" '<testcase ' "$R" export --format junit
html() { "$R" html -o "$T_DIR/page.html" "$1" && grep -o 'all_reduce.json' "$T_DIR/page.html"; }
same_count "html: each run once" 'all_reduce.json' html

# ---- 3. the next run into the directory removes the dead writer's temporary ----
run coll --results-dir "$T_DIR/hostile" --cluster lab
if [ "$T_RC" -eq 0 ] && [ ! -e "$T_DIR/hostile/lab/$stale" ]; then
  ok "the next run removed the temporary of the killed writer"
else
  not_ok "the next run removed the temporary of the killed writer" "exit $T_RC: $(find "$T_DIR/hostile/lab" -mindepth 1 -printf '%P ')"
fi
check "a live writer's temporary stays" test -e "$T_DIR/hostile/lab/$live"
