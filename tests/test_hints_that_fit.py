"""Issue 28, item 13: hints that fit. A note never suggests the target writing it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from promptgen.context import load_context
from promptgen.export import write_exports
from promptgen.report.console import evaluation_line
from promptgen.results import MetricInfo
from promptgen.words import counted
from tests.conftest import REPO, promptgen_in, run_cli
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import context

SAMPLE = "samples/classify-sentiment.prompty"


@dataclass
class SavedRun:
    out: Path
    server: FakeLLM
    calls: int  # the requests the run made
    stderr: str


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SavedRun]:
    """One run of the sentiment sample at min effort on one model, against the fake server."""
    tmp = tmp_path_factory.mktemp("run")
    with FakeLLM(responder=PipelineResponder()) as server:
        out = tmp / "out"
        args = ("--effort", "min", "--api-base", server.url, "--models", "m1", "--out", str(out))
        result = promptgen_in(tmp, str(REPO / SAMPLE), *args)
        assert result.returncode == 0, result.stderr
        yield SavedRun(out, server, len(server.requests), result.stderr)


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


def test_a_context_json_run_with_new_options_suggests_what_works_for_it(
    saved_run: SavedRun,
) -> None:
    result = run_cli(str(saved_run.out / "context.json"), "--models", "m2", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert (
        "promptgen: new options override the saved ones: models: ['m1'] -> ['m2'] (finished "
        f"stages are kept; to redo everything, run the prompt file {REPO / SAMPLE} with --fresh)"
    ) in lines
    # From the prompt file, --fresh is what works.
    result = promptgen_in(
        saved_run.out.parent, str(REPO / SAMPLE), "--out", str(saved_run.out), "--models", "m2",
        "--dry-run",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (
        "promptgen: new options override the saved ones: models: ['m1'] -> ['m2'] (finished "
        "stages are kept; --fresh redoes everything)"
    ) in result.stderr.splitlines()


def test_exported_files_are_named_after_the_authors_file_not_the_display_name(
    tmp_path: Path,
) -> None:
    ctx = context(rules=1, tests=1)
    ctx.prompt.name = "Unit converter"
    ctx.prompt.source = str(tmp_path / "unit_conv.prompty")
    gh, pa = write_exports(ctx, ["github-models", "promptarchitect"], tmp_path / "a")
    assert gh.paths == [tmp_path / "a" / "github-models" / "unit_conv.prompt.yml"]
    assert pa.paths[0] == tmp_path / "a" / "promptarchitect" / "unit_conv.prompt"
    ctx.prompt.source = str(tmp_path / "units.prompt.yml")
    ctx.prompt.format = "markdown"  # no round trip: a new document
    (gh,) = write_exports(ctx, ["github-models"], tmp_path / "b")
    assert gh.paths == [tmp_path / "b" / "github-models" / "units.prompt.yml"]
    # No file (--prompt TEXT): the run's output folder slug.
    ctx.prompt.source = None
    gh, pa = write_exports(ctx, ["github-models", "promptarchitect"], tmp_path / "c")
    assert gh.paths == [tmp_path / "c" / "github-models" / "unit-converter.prompt.yml"]
    assert pa.paths[0] == tmp_path / "c" / "promptarchitect" / "unit-converter.prompt"


def test_counts_agree_with_their_nouns(saved_run: SavedRun) -> None:
    assert [counted(n, "run") for n in (0, 1, 3)] == ["0 runs", "1 run", "3 runs"]
    assert counted(1, "model folder") == "1 model folder"
    assert counted(2, "category") == "2 categories"
    lines = saved_run.stderr.splitlines()
    assert any(line.startswith("promptgen: intent: done, 1 call, 250 tokens, ") for line in lines)
    assert not any(" 1 calls" in line for line in lines)
    ctx = load_context(saved_run.out / "context.json")
    ctx.test_runs = ctx.test_runs[:1]
    assert evaluation_line(ctx).startswith("evaluation   1 run on m1: compliance ")


def test_the_plan_is_near_the_calls_made_and_a_no_op_resume_says_it_calls_nothing(
    saved_run: SavedRun,
) -> None:
    # The start-of-run line of the fresh run, against the calls it really made (min
    # effort, one model): within 30 %.
    using, first = saved_run.stderr.splitlines()[:2]
    url = saved_run.server.url
    assert using == f"promptgen: using default, the one model {url} serves " + (
        "(--rules-model and --eval-model to choose another)"
    )
    assert first.startswith("promptgen: planned about ") and first.endswith(" model calls")
    planned = int(first.split()[3])
    assert abs(planned - saved_run.calls) <= 0.3 * saved_run.calls, (planned, saved_run.calls)
    # Resumed with nothing left: no "about 0", and no call made.
    before = len(saved_run.server.requests)
    url = saved_run.server.url
    args = ("--effort", "min", "--api-base", url, "--models", "m1", "--out", str(saved_run.out))
    result = promptgen_in(saved_run.out.parent, str(REPO / SAMPLE), *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[:2] == [
        f"promptgen: resuming the run in {saved_run.out}",
        "promptgen: nothing left to do: every stage is done, no model call",
    ]
    assert len(saved_run.server.requests) == before
    result = promptgen_in(saved_run.out.parent, str(REPO / SAMPLE), *args, "--dry-run")
    assert result.stdout == "nothing left to do: every stage is done, no model call\n"
