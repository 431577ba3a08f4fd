#!/usr/bin/env bash
# Hostile input for every reader: each mutation class applied to a good input
# of each reader must end in the documented exit code with exactly one line
# on stderr, leave no output file behind, and never hang or exhaust memory
# (every run is bounded in time and address space). A class a reader may
# accept (CRLF line ends, a directory walk passing over a FIFO) must give the
# same exit code as the unmutated input.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

R=$FB_BIN/fabric-report
TOPO=$FB_BIN/fabric-topo
DOC=$FB_BIN/fabric-doctor
FIX=$FB_ROOT/tests/fixtures
RES=$FIX/report/results
NCCLT=$FIX/report/ncclt/nccl-tests-2.19-socket-16rank.txt
# Profiles come from results/reference and the directories a case gives.
export XDG_CONFIG_HOME=$T_DIR/config
unset FABRIC_PROFILE_PATH
export FABRIC_REFERENCE_DIR=$FB_ROOT/results/reference
OUT=$T_DIR/out        # every output a case asks for goes here
M=$T_DIR/mutated      # the mutated inputs
mkdir -p "$M"

for b in "$R" "$TOPO" "$DOC"; do
  [ -x "$b" ] || { not_ok "hostile input: $(basename "$b") built" "$b missing"; exit 1; }
done

# Bounds of every run: a reader that hangs or grows without limit fails its
# case instead of the machine. Sanitizer builds reserve terabytes of address
# space: FB_HOSTILE_VMEM_KB=unlimited lifts the memory bound for them.
VMEM_KB=${FB_HOSTILE_VMEM_KB:-4194304}
TIME_S=20

# bounded CMD...: CMD under the time and memory bounds.
bounded() { (ulimit -v "$VMEM_KB" && exec timeout -k 5 "$TIME_S" "$@"); }

# ---- the mutations ----
JSON_CLASSES="truncated nul crlf long-line garbage huge fifo dev-zero directory link-to-dev-zero
  nan inf dup-key top-array top-string top-null top-number"
TEXT_CLASSES="truncated nul crlf long-line garbage huge fifo dev-zero directory link-to-dev-zero"

# Documents of the wrong kind: "wrong-KIND" gives the reader $KINDS/KIND.json.
KINDS=$T_DIR/kinds
mkdir -p "$KINDS"
cp "$RES/gke-tcpxo-allreduce.json" "$KINDS/result.json"
cp "$FB_ROOT/results/reference/gke-a3-mega-tcpxo.json" "$KINDS/profile.json"
cp "$FIX/doctor/cluster/tcpxo-healthy/nodes.json" "$KINDS/kubectl.json"
cat >"$KINDS/probe.json" <<'JSON'
{"schema": "fabric-bench.result", "schema_version": 1, "kind": "probe", "complete": true,
 "tool": {"name": "fabric-rdma"}, "links": [], "summary": {"flagged": 0}}
JSON

# json_insert BASE TEXT: BASE with TEXT right after its first '{'.
json_insert() { /usr/bin/python3 -c 'import sys; t = open(sys.argv[1]).read(); i = t.index("{") + 1; sys.stdout.write(t[:i] + sys.argv[2] + t[i:])' "$1" "$2"; }

# The first member of a JSON text ("key": scalar), to write it twice.
first_member() { grep -oE -m1 '"[^"]+" *: *("[^"]*"|[-0-9.eE+]+|true|false|null)' "$1" | head -n 1; }

# mutate CLASS BASE DEST: DEST becomes BASE mutated by CLASS.
mutate() {
  local class=$1 base=$2 dest=$3 half lines
  rm -rf "$dest"
  half=$(( $(wc -c <"$base") / 2 ))
  lines=$(( $(wc -l <"$base") / 2 + 1 ))
  case $class in
    truncated) head -c "$half" "$base" >"$dest" ;;
    nul) { head -c "$half" "$base"; printf '\0'; tail -c +"$((half + 1))" "$base"; } >"$dest" ;;
    crlf) sed 's/$/\r/' "$base" >"$dest" ;;
    long-line) { head -n "$lines" "$base"; head -c 1048576 /dev/zero | tr '\0' 'A'; echo; tail -n +"$((lines + 1))" "$base"; } >"$dest" ;;
    garbage) /usr/bin/python3 -c 'import random, sys; random.seed(7); sys.stdout.buffer.write(random.randbytes(65536))' >"$dest" ;;
    huge) truncate -s 300M "$dest" ;;
    fifo) mkfifo "$dest" ;;
    dev-zero | link-to-dev-zero) ln -s /dev/zero "$dest" ;;
    directory) mkdir "$dest" ;;
    nan) json_insert "$base" '"hostile": NaN, ' >"$dest" ;;
    inf) json_insert "$base" '"hostile": -Infinity, ' >"$dest" ;;
    dup-key) json_insert "$base" "$(first_member "$base"), " >"$dest" ;;
    top-array) { echo '['; cat "$base"; echo ']'; } >"$dest" ;;
    top-string) echo '"results"' >"$dest" ;;
    top-null) echo 'null' >"$dest" ;;
    top-number) echo '42' >"$dest" ;;
    wrong-*) cp "$KINDS/${class#wrong-}.json" "$dest" ;;
    # A table row 1 MB long: no row is, and a reader must say which line.
    long-row) { head -n "$lines" "$base"; printf '  524288  131072  float  sum  -1  '; head -c 1048576 /dev/zero | tr '\0' '9'; echo; tail -n +"$((lines + 1))" "$base"; } >"$dest" ;;
    *) echo "unknown mutation $class" >&2; return 1 ;;
  esac
}

# The path a reader is given for CLASS: /dev/zero itself for dev-zero.
input_path() { if [ "$1" = dev-zero ]; then echo /dev/zero; else echo "$2"; fi; }

# ---- the cases ----

# outcome CMD...: runs CMD bounded, output cleared first; sets RC and LINES.
outcome() {
  rm -rf "$OUT" && mkdir -p "$OUT"
  bounded "$@" >"$T_OUT" 2>"$T_ERR"
  RC=$?
  LINES=$(grep -c . "$T_ERR")
}

# expect_case NAME CODE CMD...: CMD ends with CODE; a failure prints exactly
# one stderr line, naming $NAMED when that is set, and leaves $OUT empty (no
# partial output file).
NAMED=
expect_case() {
  local name=$1 code=$2 left; shift 2
  outcome "$@"
  left=$(find "$OUT" -mindepth 1 -print -quit)
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
    not_ok "$name" "hung or ran out of memory (exit $RC after at most ${TIME_S} s)"
  elif [ "$RC" -ne "$code" ]; then
    not_ok "$name" "exit $RC, expected $code: $(head -c 300 "$T_ERR" | tr '\n' '|')"
  elif [ "$code" -ne 0 ] && [ "$LINES" -ne 1 ]; then
    not_ok "$name" "$LINES lines on stderr, expected 1: $(head -c 400 "$T_ERR" | tr '\n' '|')"
  elif [ "$code" -ne 0 ] && [ -n "$NAMED" ] && ! grep -qF -- "$NAMED" "$T_ERR"; then
    not_ok "$name" "the message does not name $NAMED: $(head -c 400 "$T_ERR")"
  elif [ "$code" -ne 0 ] && [ -n "$left" ]; then
    not_ok "$name" "a failed run left $left behind"
  else
    ok "$name"
  fi
}

# expect_base NAME CODE CMD...: the unmutated input gives CODE, the code an
# accepted mutation must give too; false when it does not.
expect_base() {
  local name=$1 code=$2; shift 2
  outcome "$@"
  if [ "$RC" -eq "$code" ]; then ok "$name: the unmutated input (exit $code)"; return 0; fi
  not_ok "$name: the unmutated input (exit $code)" "exit $RC: $(head -c 300 "$T_ERR" | tr '\n' '|')"
  return 1
}

# accepts READER CLASS: the mutations a reader takes as the unmutated input.
# JSON allows CR as white space; directory walks pass over FIFOs, devices
# and directories that are not profiles.
accepts() {
  case "$1 $2" in
    *" crlf") return 0 ;;
    "profiles-dir fifo" | "profiles-dir dev-zero" | "profiles-dir link-to-dev-zero" | "profiles-dir directory") return 0 ;;
  esac
  return 1
}

# code_for READER CLASS BASE-CODE: the documented exit code of that case.
code_for() {
  if accepts "$1" "$2"; then echo "$3"; return; fi
  case "$1 $2" in
    # A killed nccl-tests run is cut short: the rows it finished import.
    "import-text truncated") echo 0 ;;
    # Output between table lines is passed over (nccl-tests interleaves it).
    "import-text long-line") echo "$3" ;;
    # A log cut short still names its transport; a foreign line is ignored.
    "transport truncated" | "transport long-line" | "nccl-log truncated" | "nccl-log long-line") echo "$3" ;;
    *) echo 10 ;;
  esac
}

# reader NAME BASE BASE-CODE CLASSES CMD...: every class of CLASSES on a
# copy of BASE, each message naming the input; "@" in CMD stands for it.
reader() {
  local name=$1 base=$2 base_rc=$3 classes=$4 class code input; shift 4
  expect_base "$name" "$base_rc" "${@/#@/$base}" || return
  for class in $classes; do
    mutate "$class" "$base" "$M/$name.$class" || continue
    input=$(input_path "$class" "$M/$name.$class")
    code=$(code_for "$name" "$class" "$base_rc")
    NAMED=$(basename "$input") expect_case "$name: $class (exit $code)" "$code" "${@/#@/$input}"
    rm -rf "$M/$name.$class"
  done
}

# dir_reader NAME DIR FILE BASE-CODE CLASSES CMD...: as reader, the mutation
# applied to FILE inside a copy of DIR; "@" in CMD stands for the copy.
dir_reader() {
  local name=$1 dir=$2 file=$3 base_rc=$4 classes=$5 class code copy=$M/$1.dir; shift 5
  rm -rf "$copy" && cp -r "$dir" "$copy"
  expect_base "$name" "$base_rc" "${@/#@/$copy}" || return
  for class in $classes; do
    rm -rf "$copy" && cp -r "$dir" "$copy"
    mutate "$class" "$dir/$file" "$copy/$file" || continue
    code=$(code_for "$name" "$class" "$base_rc")
    NAMED=$file expect_case "$name: $file $class (exit $code)" "$code" "${@/#@/$copy}"
  done
  rm -rf "$copy"
}

if ! bounded true; then
  VMEM_KB=unlimited
  skip "memory bound" "ulimit -v $VMEM_KB is refused here; runs are bounded in time only"
fi

# Results where a collective result is expected: check, compare, plot, baseline.
# Results where a collective result is expected (a probe result is one
# check judges: no wrong kind there).
NOT_COLLECTIVE="wrong-probe wrong-profile wrong-kubectl"
PLOTS=$(command -v gnuplot >/dev/null && echo 0 || echo 5) # 5: gnuplot not installed
reader check "$RES/gke-tcpxo-allreduce.json" 0 "$JSON_CLASSES wrong-profile wrong-kubectl" "$R" check @
reader compare "$RES/gke-tcpxo-allreduce.json" 0 "$JSON_CLASSES $NOT_COLLECTIVE" "$R" compare @
reader plot "$RES/vm-mpi-allreduce-4.json" "$PLOTS" "$JSON_CLASSES $NOT_COLLECTIVE" "$R" plot @ -o "$OUT/p.png"
reader baseline "$RES/vm-mpi-allreduce-4.json" 0 "$JSON_CLASSES $NOT_COLLECTIVE" "$R" baseline @ --name hostile -o "$OUT/p.json"
# Imports: nccl-tests text and -J JSON.
reader import-text "$NCCLT" 0 "$TEXT_CLASSES long-row wrong-result wrong-kubectl" "$R" import @ -o "$OUT/r.json"
reader import-json "$FIX/report/ncclt/all_reduce_perf-J.json" 0 "$JSON_CLASSES wrong-result wrong-kubectl" "$R" import @ -o "$OUT/r.json"
# NCCL logs: transport's arguments and --nccl-log.
LOG=$FIX/report/nccl-logs/ib-gdr/nccl.gpu-a.4100
reader transport "$LOG" 0 "$TEXT_CLASSES wrong-result" "$R" transport @
reader nccl-log "$LOG" 0 "$TEXT_CLASSES wrong-result" "$R" import "$NCCLT" -o "$OUT/r.json" --nccl-log @
# Topologies (hwloc XML) and kubectl lists.
reader topology "$FIX/doctor/topo/h100-8gpu-8nic.xml" 0 "$TEXT_CLASSES wrong-result" "$TOPO" --topology @ -J "$OUT/t.json"
dir_reader cluster-from "$FIX/doctor/cluster/tcpxo-healthy" nodes.json 0 "$JSON_CLASSES wrong-result wrong-profile" \
  "$DOC" cluster --from @ -J "$OUT/d.json"
# Profile directories: a profile that does not read is refused, naming it.
mkdir -p "$T_DIR/profiles"
cp "$FB_ROOT/results/reference/gke-a3-mega-tcpxo.json" "$T_DIR/profiles/"
dir_reader profiles-dir "$T_DIR/profiles" gke-a3-mega-tcpxo.json 0 "$JSON_CLASSES wrong-result" \
  "$R" check "$RES/gke-tcpxo-allreduce.json" --profiles @

# ---- what the readers are given instead of a file or directory ----
expect_case "--profiles names a device: usage (exit 2)" 2 "$R" check "$RES/gke-tcpxo-allreduce.json" --profiles /dev/zero
expect_case "--from names a file: exit 10" 10 "$DOC" cluster --from "$KINDS/kubectl.json" -J "$OUT/d.json"
expect_grep "... saying it is not a directory" 'is not a directory; give the directory holding the kubectl lists' "$T_ERR"
cp -r "$FIX/doctor/cluster/tcpxo-healthy" "$M/fifo-from"
rm "$M/fifo-from/nodes.json" && mkfifo "$M/fifo-from/nodes.json"
expect_case "--from DIR whose nodes.json is a FIFO (exit 10)" 10 "$DOC" cluster --from "$M/fifo-from"
expect_grep "... naming it as a FIFO" 'nodes.json is a FIFO \(named pipe\), not a regular file' "$T_ERR"

# ---- directory walks pass over FIFOs and devices ----
WALK=$T_DIR/walk
mkdir -p "$WALK/results" "$WALK/logs"
cp "$RES/gke-tcpxo-allreduce.json" "$WALK/results/"
mkfifo "$WALK/results/fifo.json"
ln -s /dev/zero "$WALK/results/zero.json"
expect_case "compare DIR passes over a FIFO and a link to /dev/zero (exit 0)" 0 "$R" compare "$WALK/results"
expect_case "plot DIR passes over them too (exit $PLOTS)" "$PLOTS" \
  "$R" plot "$WALK/results" -o "$T_DIR/walk.png"
cp "$LOG" "$WALK/logs/"
mkfifo "$WALK/logs/nccl.fifo"
ln -s /dev/zero "$WALK/logs/nccl.zero"
expect_case "transport DIR passes over a FIFO and a link to /dev/zero (exit 0)" 0 "$R" transport "$WALK/logs"
