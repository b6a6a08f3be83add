#!/usr/bin/env bash
# Installs the pinned promptfoo (tests/tools/promptfoo/package-lock.json) that
# tests/export/test_promptfoo.py runs. Idempotent: does nothing when the pinned version is
# already installed from the current lockfile. Needs node ^20.20 and npm; the only step
# that uses the network (the npm registry).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/promptfoo"
# One install at a time: the test workers (pytest -n) may ask for it at once; the
# second waits, then finds it installed.
exec 9>"$here/.install.lock"
flock 9
pinned="$(node -p "require('$here/package.json').dependencies.promptfoo")"
bin="$here/node_modules/.bin/promptfoo"
stamp="$here/node_modules/.installed-from-lock"

export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1

if [[ -x "$bin" && -f "$stamp" ]] && cmp -s "$stamp" "$here/package-lock.json"; then
  echo "promptfoo $pinned already installed in $here"
  exit 0
fi

echo "installing promptfoo $pinned into $here (npm ci)"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
installed="$(cd "$here" && "$bin" --version | tail -n 1)"
if [[ "$installed" != "$pinned" ]]; then
  echo "installed promptfoo reports version '$installed', expected $pinned" >&2
  exit 1
fi
cp "$here/package-lock.json" "$stamp"
echo "promptfoo $installed installed in $here"
