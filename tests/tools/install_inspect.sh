#!/usr/bin/env bash
# Installs the pinned Inspect AI (tests/tools/inspect/requirements.txt) into its own
# virtual environment, tests/tools/inspect/.venv, where tests/export/test_inspect.py runs
# `inspect eval`. Idempotent: does nothing when that venv was made from the current
# requirements. The only step that uses the network (PyPI).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inspect"
# One install at a time: the test workers (pytest -n) may ask for it at once; the
# second waits, then finds it installed.
exec 9>"$here/.install.lock"
flock 9
venv="$here/.venv"
stamp="$venv/.installed-from-requirements"

if [[ -x "$venv/bin/inspect" && -f "$stamp" ]] && cmp -s "$stamp" "$here/requirements.txt"; then
  echo "inspect-ai already installed in $venv"
  exit 0
fi

echo "installing inspect-ai into $venv"
rm -rf "$venv"
python3 -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
echo "inspect-ai $("$venv/bin/python" -c 'import inspect_ai; print(inspect_ai.__version__)') installed in $venv"
