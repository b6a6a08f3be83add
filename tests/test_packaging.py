"""The wheel ships prompts/ and schemas/, and an installed copy finds them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_wheel_ships_data_and_finds_it(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path / "dist")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    wheel = next((tmp_path / "dist").glob("promptgen-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    for schema in ("prompt.schema.json", "context.schema.json"):
        assert f"promptgen/_data/schemas/{schema}" in names
    assert any(n.startswith("promptgen/_data/prompts/") for n in names)
    assert not any(n.startswith(("tests/", "samples/")) for n in names)
    probe = (
        "import promptgen, promptgen.resources as r; "
        "print(promptgen.__file__); print(r.data_dir('schemas')); print(r.data_dir('prompts'))"
    )
    # Run from the extracted wheel only (-I: isolated, so the checkout is not on sys.path).
    found = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r}); {probe}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    module, schemas, prompts = found.stdout.split()
    site = str(tmp_path / "site")
    assert module.startswith(site)
    assert schemas == f"{site}/promptgen/_data/schemas"
    assert prompts == f"{site}/promptgen/_data/prompts"
