"""Issue 28, item 13: hints that fit. A note never suggests the target writing it."""

from __future__ import annotations

from pathlib import Path

from promptgen.export import write_exports
from promptgen.results import MetricInfo
from tests.conftest import promptgen_in, run_cli
from tests.stagekit import context


def checks(notes: list[str]) -> list[str]:
    return [n for n in notes if n.startswith("check ")]


def test_an_export_note_never_suggests_the_target_it_is_written_by(tmp_path: Path) -> None:
    ctx = context(rules=1, tests=1)
    ctx.metrics = [
        MetricInfo(name="compliance", kind="compliance"),
        MetricInfo(name="lve:exact", kind="check"),
        MetricInfo(name="pa:json", kind="check"),
    ]
    lve, pa, foo = write_exports(ctx, ["lve", "promptarchitect", "promptfoo"], tmp_path)
    assert checks(lve.skipped) == [
        "check 'pa:json': a Promptarchitect test; this target has no equivalent "
        "(export --to promptarchitect)"
    ]
    assert checks(pa.skipped) == [
        "check 'lve:exact': the LVE's checker; this target has no equivalent (export --to lve)"
    ]
    assert checks(foo.skipped) == [
        "check 'lve:exact': the LVE's checker; this target has no equivalent (export --to lve)",
        "check 'pa:json': a Promptarchitect test; this target has no equivalent "
        "(export --to promptarchitect)",
    ]


def test_a_mistyped_command_gets_the_nearest_command(tmp_path: Path) -> None:
    result = run_cli("improt")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "promptgen: error: no such command 'improt' (did you mean 'import'?)\n"
    result = run_cli("expotr", "out/context.json")
    assert result.stderr == "promptgen: error: no such command 'expotr' (did you mean 'export'?)\n"
    # A word close to no command is a prompt file not found; a file of that name runs.
    assert run_cli("banana").stderr == (
        "promptgen: error: banana: prompt file not found (check the path)\n"
    )
    (tmp_path / "improt").write_text("Say hello to {{name}}.\n")
    result = promptgen_in(tmp_path, "improt", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "no such command" not in result.stderr


def test_diff_given_a_prompt_file_says_it_is_one_and_what_diff_compares() -> None:
    result = run_cli("diff", "samples/classify-sentiment.prompty", "samples/summarize.prompt.yml")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "promptgen: error: A: samples/classify-sentiment.prompty is a prompt file, not a run "
        "(diff compares two runs: give A and B as run folders or their context.json files)\n"
    )
