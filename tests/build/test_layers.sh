#!/usr/bin/env bash
# The layers hold: each tool builds with its own layers alone, a source that
# reaches into a module its module.mk does not name fails to build, and every
# list of collectives agrees with the collective table.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

# What is checked is which headers and libraries a module reaches, not the
# code: these builds skip the optimiser (CFLAGS=-O0), at a third of the CPU.
for tool in coll report probe doctor; do
  tree=$T_DIR/build-$tool
  if make -C "$FB_ROOT" -j2 MODULES="$tool" BUILD="$tree" CFLAGS=-O0 >"$T_DIR/make-$tool.log" 2>&1; then
    libs=$(cd "$tree" && echo lib*.a)
    ok "make MODULES=$tool builds it with its layers alone ($libs)"
  else
    not_ok "make MODULES=$tool builds" "$(grep -m3 -E 'error|Error' "$T_DIR/make-$tool.log")"
  fi
done
if [ -e "$T_DIR/build-report/libreport.a" ] && [ ! -e "$T_DIR/build-report/libcoll.a" ] &&
  [ ! -e "$T_DIR/build-report/libprobe.a" ] && [ ! -e "$T_DIR/build-report/libdoctor.a" ]; then
  ok "MODULES=report builds no coll, probe or doctor library"
else
  not_ok "MODULES=report builds no coll, probe or doctor library" "$(ls "$T_DIR/build-report")"
fi

# A wrong arrow, in a scratch copy of the tree: coll including a report header.
copy=$T_DIR/tree
mkdir -p "$copy"
cp -r "$FB_ROOT/Makefile" "$FB_ROOT/bench" "$FB_ROOT/scripts" "$copy/"
printf '#include "report/result.h"\nint coll_layer_probe(void) { return 0; }\n' >"$copy/bench/coll/wrong_arrow.c"
if make -C "$copy" -j2 MODULES=coll BUILD="$copy/build" CFLAGS=-O0 >"$T_DIR/wrong.log" 2>&1; then
  not_ok "coll including report/result.h fails to build" "it built"
else
  expect_grep "coll including report/result.h fails to build, naming the header" 'report/result.h: No such file' "$T_DIR/wrong.log"
fi
rm "$copy/bench/coll/wrong_arrow.c"
# A call into a layer not named links nowhere: probe calling the report.
printf 'struct fb_result;\nvoid fb_result_free(struct fb_result *r);\nvoid probe_layer_probe(void) { fb_result_free(0); }\n' >"$copy/bench/probe/wrong_call.c"
printf '#include <stddef.h>\nvoid probe_layer_probe(void);\nint main(int c, char **v) { (void)v; if (c > 99) probe_layer_probe(); return 0; }\n' >"$copy/bench/probe/wrongcall_main.c"
if make -C "$copy" -j2 MODULES=probe BUILD="$copy/build" CFLAGS=-O0 >"$T_DIR/wrong-link.log" 2>&1; then
  not_ok "probe calling a report function fails to link" "it linked"
else
  expect_grep "probe calling a report function fails to link" 'undefined reference to .fb_result_free' "$T_DIR/wrong-link.log"
fi

# One list of collectives: fabric-coll --list is the table.
same() { # same NAME GOT WANT
  if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$(echo "$2" | tr '\n' ' ')', want '$(echo "$3" | tr '\n' ' ')'"; fi
}
list=$("$FB_BIN/fabric-coll" --list)
same "fabric-coll --list prints the table's collectives, all_reduce first" "$(echo "$list" | head -1)" all_reduce
perf=$(cd "$FB_BIN" && printf '%s\n' *_perf | sed 's/_perf$//' | sort)
same "the *_perf programs are the table's collectives" "$perf" "$(echo "$list" | sort)"
schema_enum() {
  node -e 'const s=require(process.argv[1]); let o=s; for (const k of process.argv[2].split(".")) o=o[k]; console.log(o.join("\n"))' "$1" "$2"
}
if command -v node >/dev/null; then
  same "the results schema's collective enum is the table" \
    "$(schema_enum "$FB_ROOT/docs/schema/collective.schema.json" properties.collective.enum)" "$list"
  same "the profile schema's collective names are the table" \
    "$(schema_enum "$FB_ROOT/docs/schema/profile.schema.json" properties.collectives.propertyNames.enum)" "$list"
else
  skip "schema enums match the table" "node is not installed"
fi
same "the launchers offer the table's collectives" \
  "$(FB_BIN=$FB_BIN bash -c ". '$FB_ROOT/launch/lib.sh'; fb_collective_choices")" \
  "$(echo "$list" | paste -sd, - | sed 's/,/, /g; s/, \([^,]*\)$/ or \1/')"
