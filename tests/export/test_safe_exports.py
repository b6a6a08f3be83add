"""Exports of hostile values: file names cut to a slug's length, CSV cells a spreadsheet
would evaluate written as text (the promptfoo vars are tested with promptfoo itself, in
test_promptfoo.py)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import yaml

from promptgen.api import SLUG_LENGTH
from promptgen.context import Context
from promptgen.csvcells import cell
from promptgen.export import write_exports
from promptgen.formats import load_prompt
from promptgen.report.files import write_reports
from promptgen.report.outputs import tests_csv as run_tests_csv
from promptgen.report.summary import Entry, summary_csv
from promptgen.results import Test
from tests.export.conftest import SavedRun

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


# Cells a spreadsheet evaluates (OWASP CSV injection), and what each is written as.
HOSTILE = {
    '=HYPERLINK("http://x.test","a")': '\'=HYPERLINK("http://x.test","a")',
    "+1+cmd|' /C calc'!A0": "'+1+cmd|' /C calc'!A0",
    "-2+3": "'-2+3",
    "@SUM(1;2)": "'@SUM(1;2)",
    "\tTAB": "'\tTAB",
    "-5": "-5",  # a plain number stays a number
    "a = b": "a = b",
}


def test_a_cell_starting_like_a_formula_gets_a_quote() -> None:
    assert [cell(v) for v in ("\rCR", "=1", -5, 2.5, None, "", "'=1")] == [
        "'\rCR", "'=1", -5, 2.5, None, "", "'=1",
    ]  # fmt: skip


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_every_cell_of_the_csv_export_is_text_to_a_spreadsheet(write: Any, tmp_path: Path) -> None:
    path = write("p.prompty", PROMPT.format(name="p"))
    tests = [Test(id=f"test-{i}", inputs={"topic": v}) for i, v in enumerate(HOSTILE)]
    ctx = _context(path, *tests)
    ctx.tests[0].scenario = "=1+1"
    (result,) = write_exports(ctx, ["csv"], tmp_path / "out")
    rows = _rows(result.paths[0].read_bytes().decode("utf-8"))
    header = rows[0]
    column = header.index("input.topic")
    assert [r[column] for r in rows[1:]] == list(HOSTILE.values())
    assert rows[1][header.index("scenario")] == "'=1+1"


def test_the_run_folder_csvs_are_text_to_a_spreadsheet(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    for test in ctx.tests:
        test.scenario = "@evil"
    ctx.tests[0].inputs["review"] = "=1+2"
    ctx.tests[0].expected_output = "\rCR"
    rows = _rows(run_tests_csv(ctx))
    header = rows[0]
    assert {r[header.index("scenario")] for r in rows[1:]} == {"'@evil"}
    assert rows[1][header.index("inputs")] == '{"review": "=1+2"}'  # JSON: starts with {
    assert rows[1][header.index("expected_output")] == "'\rCR"
    write_reports(ctx, tmp_path)
    overview = _rows((tmp_path / "overview.csv").read_text(encoding="utf-8"))
    scenarios = overview[0].index("scenario")
    assert {r[scenarios] for r in overview[1:]} == {"(all)", "'@evil"}
    entry = Entry(prompt="=cmd()", file="-x.prompty", status="+ok", code=0, ctx=ctx)
    summary = _rows(summary_csv([entry]))
    head = summary[0]
    assert [
        (r[head.index("prompt")], r[head.index("file")], r[head.index("status")])
        for r in summary[1:]
    ] == [("'=cmd()", "'-x.prompty", "'+ok")] * 2
