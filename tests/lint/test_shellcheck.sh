#!/usr/bin/env bash
# Every shell script of the project passes shellcheck (warnings count).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

if ! command -v shellcheck >/dev/null; then
  not_ok "shellcheck present" "install shellcheck (scripts/install-deps.sh)"
  exit 0
fi
cd "$FB_ROOT" || exit 1
mapfile -t scripts < <(git ls-files '*.sh' tests/run .ci/run 2>/dev/null)
[ ${#scripts[@]} -gt 0 ] || mapfile -t scripts < <(find . -name '*.sh' -not -path './build*' -not -path './tests/node_modules/*')
for f in "${scripts[@]}"; do
  # Fixture trees hold copies of other systems' files: data, not our scripts.
  case $f in tests/fixtures/*) continue ;; esac
  if out=$(shellcheck -x "$f" 2>&1); then
    ok "shellcheck $f"
  else
    not_ok "shellcheck $f" "$(echo "$out" | grep -m3 -E 'SC[0-9]+' | tr '\n' ' ')"
  fi
done
