# Shared by the fabric-doctor cluster tests (source it after tests/lib.sh).
# shellcheck shell=bash

# doctor ARGS...: fabric-doctor with nothing of this shell's environment.
doctor() { env -i PATH="$PATH" "$FB_BIN/fabric-doctor" "$@"; }

# verdict_line NAME CHECK VERDICT REGEX: the last run printed
# "VERDICT CHECK ...REGEX".
verdict_line() {
  local name=$1 check=$2 verdict=$3 regex=$4
  if grep -Eq "^$verdict +$check +.*$regex" "$T_OUT"; then
    ok "$name"
  else
    not_ok "$name" "no '$verdict $check ...$regex' line (exit $T_RC): $(grep -E "^[A-Z]+ +$check " "$T_OUT")"
  fi
}

# exit_is NAME CODE: the last run exited CODE.
exit_is() {
  if [ "$T_RC" -eq "$2" ]; then ok "$1"; else not_ok "$1" "exit $T_RC, expected $2: $(cat "$T_OUT" "$T_ERR")"; fi
}

# culprit NAME CHECK WHO FILE: the document lists WHO among CHECK's culprits.
culprit() {
  if /usr/bin/python3 - "$2" "$3" "$4" <<'PY'
import json, sys
check, who, path = sys.argv[1:]
doc = json.load(open(path))
sys.exit(0 if any(c["name"] == check and who in c["culprits"] for c in doc["checks"]) else 1)
PY
  then ok "$1"; else not_ok "$1" "$3 not among $2's culprits in $4"; fi
}
