"""Exports of hostile values: file names cut to a slug's length, CSV cells a spreadsheet
would evaluate written as text (the promptfoo vars are tested with promptfoo itself, in
test_promptfoo.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from promptgen.api import SLUG_LENGTH
from promptgen.context import Context
from promptgen.export import write_exports
from promptgen.formats import load_prompt
from promptgen.results import Test

PROMPT = (
    "---\nname: {name}\ninputs:\n  topic: {{type: string}}\n---\n"
    "user:\nTell me about {{{{topic}}}}.\n"
)


def _context(path: Path, *tests: Test) -> Context:
    return Context(
        prompt=load_prompt(path), tests=list(tests or [Test(id="test-a", inputs={"topic": "tea"})])
    )


def test_a_long_file_name_is_cut_like_the_run_folder(write: Any, tmp_path: Path) -> None:
    stem = "a-very-long-prompt-" + "m" * 226  # 245 characters: `.prompt.yml` makes it 256
    path = write(f"{stem}.prompty", PROMPT.format(name="n" * 300))
    ctx = _context(path)
    out = tmp_path / "out"
    results = write_exports(ctx, ["github-models", "promptarchitect"], out)
    cut = stem[:SLUG_LENGTH]
    assert len(cut) == 80
    assert results[0].paths == [out / "github-models" / f"{cut}.prompt.yml"]
    assert results[1].paths[0] == out / "promptarchitect" / f"{cut}.prompt"
    written = yaml.safe_load(results[0].paths[0].read_text())
    assert written["name"] == "n" * 300  # the display name is kept whole
