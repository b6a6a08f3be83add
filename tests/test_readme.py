"""The README's test command is the one CI runs."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run the test suite", 1)[1]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()  # type: ignore[union-attr]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci, f".ci/run does not run the README command: {command}"
