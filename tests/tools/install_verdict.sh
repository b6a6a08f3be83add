#!/usr/bin/env bash
# Installs the pinned Verdict (tests/tools/verdict/requirements.txt) into its own
# virtual environment, tests/tools/verdict/.venv, where
# tests/rendering/test_verdict_template.py renders templates with Verdict's own prompt
# code. --no-deps: only the modules that code imports are listed (the full dependency
# set pins instructor 1.7.2, which needs openai < 2).
# Idempotent: does nothing when that venv was made from the current requirements.
# Uses the package index pip is configured with.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/verdict"
# One install at a time: the test workers (pytest -n) may ask for it at once; the
# second waits, then finds it installed.
exec 9>"$here/.install.lock"
flock 9
venv="$here/.venv"
stamp="$venv/.installed-from-requirements"

if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$stamp" "$here/requirements.txt"; then
  echo "verdict already installed in $venv"
  exit 0
fi

echo "installing verdict into $venv"
rm -rf "$venv"
python3 -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
echo "verdict $("$venv/bin/pip" show verdict | sed -n 's/^Version: //p') installed in $venv"
