"""The saved context: round trip, versions, secrets, and crash-safe writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promptgen import Context, load_context, load_prompt, save_context
from promptgen.context import CONTEXT_VERSION
from promptgen.errors import ContextError
from promptgen.options import Evaluation, Options
from promptgen.results import MetricInfo, MetricResult, Rule, Test, TestRun, Usage

Write = Callable[[str, str], Path]
PROMPT = "---\nname: ctx\nmodel:\n  id: m\n  connection:\n    api_key: sk-live-abc\n---\n{{q}}\n"


def _context(write: Write) -> Context:
    options = Options(evaluation=Evaluation(model_params={"api_key": "sk-opt-1"}))
    ctx = Context.new(load_prompt(write("p.prompty", PROMPT)), options=options)
    rule = Rule.make("Answer in one word.")
    inverse = Rule.make("Answer in several words.", inverse_of=rule.id)
    ctx.rules, ctx.inverse_rules = [rule], [inverse]
    test_id = Test.make_id("generated", rule.id, None, {"q": "hi"})
    ctx.tests = [Test(id=test_id, rule_id=rule.id, inputs={"q": "hi"}, expected_output="Hi")]
    ctx.test_runs = [TestRun(test_id=test_id, model="m", output="Hi", usage=Usage(calls=1))]
    return ctx


def test_round_trip(write: Write, tmp_path: Path) -> None:
    ctx = _context(write)
    path = save_context(ctx, tmp_path / "out" / "context.json")
    loaded = load_context(path)
    assert loaded.model_dump(exclude={"prompt", "options"}) == ctx.model_dump(
        exclude={"prompt", "options"}
    )
    assert loaded.prompt.messages == ctx.prompt.messages
    assert loaded.prompt_hash == ctx.prompt.content_hash()
    assert next(iter(json.loads(path.read_text()))) == "version"


def test_repr_is_short_whatever_the_size(write: Write) -> None:
    """asyncio formats a finished task with its result's repr (asyncio.run does at exit)."""
    ctx = _context(write)
    ctx.test_runs *= 5000
    assert repr(ctx) == (
        f"Context(run_id={ctx.run_id!r}, prompt='ctx', rules=1, tests=1, test_runs=5000, "
        "metric_results=0)"
    )


def test_no_secrets_on_disk(write: Write, tmp_path: Path) -> None:
    path = save_context(_context(write), tmp_path / "context.json")
    text = path.read_text()
    assert "sk-live-abc" not in text and "sk-opt-1" not in text


def test_stable_ids() -> None:
    a, b = Rule.make("Be brief."), Rule.make("  Be brief. ")
    assert a.id == b.id and a.id.startswith("rule-")
    inverse = Rule.make("Be long.", inverse_of=a.id)
    assert inverse.inverse and inverse.inverse_of == a.id and inverse.id.startswith("inv-")
    assert Test.make_id("generated", a.id, "s", {"x": 1}) == Test.make_id(
        "generated", a.id, "s", {"x": 1}
    )
    assert Test.make_id("generated", a.id, "s", {"x": 1}) != Test.make_id(
        "expanded", a.id, "s", {"x": 1}
    )


def test_newer_version_is_refused(write: Write, tmp_path: Path) -> None:
    path = save_context(_context(write), tmp_path / "context.json")
    data = json.loads(path.read_text())
    data["version"] = CONTEXT_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(ContextError, match="newer than this promptgen"):
        load_context(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not valid JSON"), ('{"version": 1}', "prompt"), ("[]", "not a valid")],
)
def test_invalid_context_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "context.json"
    path.write_text(content)
    with pytest.raises(ContextError, match=message):
        load_context(path)


def test_failed_serialisation_keeps_the_old_file(write: Write, tmp_path: Path) -> None:
    ctx = _context(write)
    path = save_context(ctx, tmp_path / "context.json")
    before = path.read_text()
    ctx.options.evaluation.model_params = {"bad": object()}  # cannot be serialised
    with pytest.raises(Exception):  # noqa: B017 - any serialisation error will do
        save_context(ctx, path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.json", "p.prompty"]


WRITER = textwrap.dedent(
    """
    import sys
    from promptgen import Context, load_prompt, save_context
    from promptgen.results import Test

    prompt = load_prompt(sys.argv[1])
    big = [Test(id=f"t{i}", inputs={"q": "x" * 200}) for i in range(4000)]
    versions = [Context.new(prompt, run_id="A", tests=big), Context.new(prompt, run_id="B")]
    print("ready", flush=True)
    i = 0
    while True:
        save_context(versions[i % 2], sys.argv[2])
        i += 1
    """
)


def test_kill_mid_write_never_leaves_a_truncated_file(write: Write, tmp_path: Path) -> None:
    prompt = write("p.prompty", PROMPT)
    target = tmp_path / "context.json"
    script = write("writer.py", WRITER)
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    for delay in (0.05, 0.13, 0.21, 0.34, 0.55, 0.8):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(prompt), str(target)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.exists():
            assert load_context(target).run_id in ("A", "B")
    assert target.exists()


def test_a_killed_saves_temp_file_is_removed_on_the_next_load(write: Write, tmp_path: Path) -> None:
    """Issue 29 item 5e: a save killed before its rename leaves `.context.json.PID.X.tmp`;
    the next load removes it when its process is gone (or it is over an hour old), never
    a young one or one whose process still runs, nor another file's."""
    ctx = _context(write)
    path = save_context(ctx, tmp_path / "context.json")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **TEXT)
    dead, live = int(ended.stdout), os.getppid()
    ages = {
        f".context.json.{dead}.k1lled_x.tmp": 120,  # a killed save: removed
        ".context.json.a1b2c3d4.tmp": 7200,  # no pid (an older promptgen), 2 h: removed
        f".context.json.{dead}.y0ung123.tmp": 0,  # may be a save just begun: kept
        f".context.json.{live}.l1ve1234.tmp": 120,  # its process runs: kept
        ".notes.json.abcdef12.tmp": 7200,  # not a save of this file: kept
    }
    now = time.time()
    for name, age in ages.items():
        (tmp_path / name).write_text("{")
        os.utime(tmp_path / name, (now - age, now - age))
    assert load_context(path).run_id == ctx.run_id
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == sorted([
        f".context.json.{dead}.y0ung123.tmp",
        f".context.json.{live}.l1ve1234.tmp",
        ".notes.json.abcdef12.tmp",
    ])  # fmt: skip


TEXT: dict[str, Any] = {"capture_output": True, "text": True, "check": True}


@pytest.mark.parametrize("version", ['"1"', "true", "0"])
def test_malformed_version_is_reported_as_such(write: Write, tmp_path: Path, version: str) -> None:
    path = save_context(_context(write), tmp_path / "context.json")
    path.write_text(
        path.read_text().replace(f'"version": {CONTEXT_VERSION}', f'"version": {version}', 1)
    )
    with pytest.raises(ContextError, match="must be a whole number"):
        load_context(path)


V1 = Path(__file__).parent / "fixtures" / "context_v1.json"


def test_a_version_1_context_is_upgraded(tmp_path: Path) -> None:
    """A context.json written by promptgen 0.1 before the options were typed."""
    ctx = load_context(V1)
    assert ctx.version == 2
    assert ctx.options.effort == "min"
    assert ctx.options.generation.max_rules == 6 and ctx.options["max_rules"] == 6
    assert ctx.options.generation.instructions.intent == "Be brief."
    assert ctx.options.evaluation.checks == ["icontains=answer"]
    assert ctx.options.models.models == ["m1"]
    assert ctx.option_sources["instructions_intent"] == "command line"
    assert ctx.option_sources["max_tests_to_run"] == "command line"
    # Summaries are derived from the verdicts on load: every run has its compliance.
    assert len(ctx.test_runs) == 2
    for run in ctx.test_runs:
        assert run.metrics["compliance"].outcome == "ok"
        assert run.metrics["icontains=answer"].score == 100.0
    again = load_context(save_context(ctx, tmp_path / "context.json"))
    assert again.version == 2 and again.options == ctx.options


def test_a_verdict_updates_its_runs_summary_at_once(write: Write) -> None:
    ctx = _context(write)
    ctx.use_metrics([MetricInfo(name="compliance", kind="compliance")])
    (run,) = ctx.test_runs

    def verdict(judge: str, outcome: str, error: str | None = None) -> MetricResult:
        score = {"ok": 100.0, "err": 0.0}[outcome] if error is None else None
        return MetricResult(
            test_id=run.test_id, model="m", metric="compliance", judge=judge,
            outcome=None if error else outcome, score=score, error=error,
        )  # fmt: skip

    ctx.record_verdicts([verdict("j1", "ok")])
    assert run.metrics["compliance"].outcome == "ok" and run.metrics["compliance"].judges == 1
    ctx.record_verdicts([verdict("j2", "err")])  # a split verdict is err
    assert run.metrics["compliance"].outcome == "err"
    assert run.metrics["compliance"].score == 50.0
    ctx.record_verdicts([verdict("j2", "ok", error="timed out")])  # replaces j2's verdict
    assert len(ctx.metric_results) == 2
    assert run.metrics["compliance"].outcome == "ok"
    assert run.metrics["compliance"].errors == 1


def _saved(write: Write, tmp_path: Path, change: Callable[[dict], object]) -> Path:
    data = json.loads(_context(write).to_json())
    change(data)
    path = tmp_path / "context.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_identical_duplicate_tests_are_kept_once_with_a_warning(
    write: Write, tmp_path: Path
) -> None:
    path = _saved(write, tmp_path, lambda d: d["tests"].append(dict(d["tests"][0])))
    ctx = load_context(path)
    assert len(ctx.tests) == 1
    warning = f"{path}: 1 test(s) saved twice with the same id and content; each is kept once"
    assert ctx.prompt.warnings == [warning]
    saved = json.loads(ctx.to_json())
    assert saved["prompt"]["warnings"] == [] and len(saved["tests"]) == 1  # not written back


def test_different_tests_with_one_id_are_refused(write: Write, tmp_path: Path) -> None:
    def change(data: dict) -> None:
        data["tests"].append({**data["tests"][0], "expected_output": "other"})

    with pytest.raises(ContextError, match="appears twice, with different content"):
        load_context(_saved(write, tmp_path, change))


def test_unknown_option_names_the_key_and_the_known_ones(write: Write, tmp_path: Path) -> None:
    path = _saved(write, tmp_path, lambda d: d["options"]["evaluation"].update(colour="red"))
    with pytest.raises(ContextError) as info:
        load_context(path)
    assert info.value.message == "unknown option 'evaluation.colour' in the saved options"
    assert "runs_per_test" in (info.value.hint or "")
    assert "run from the prompt file" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("checks", "message"),
    [([42], "prompt.checks[0] is not a check: 42"), (["contains"], "is not a check")],
)
def test_checks_of_the_wrong_shape_are_refused(
    write: Write, tmp_path: Path, checks: list[object], message: str
) -> None:
    path = _saved(write, tmp_path, lambda d: d["prompt"].update(checks=checks))
    with pytest.raises(ContextError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_context(path)


def test_named_checks_load(write: Write, tmp_path: Path) -> None:
    checks = [{"contains": "x", "name": "has x"}, "icontains=y"]
    path = _saved(write, tmp_path, lambda d: d["prompt"].update(checks=checks))
    assert load_context(path).prompt.checks == checks


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"version": 2, "intent": "\\ud800"}', "lone surrogate"),
        ('{"version": 2, "intent": ' + "[" * 70 + "]" * 70 + "}", "more than 64 levels deep"),
        ('{"version": 2, "intent": ' + "[" * 9000 + "]" * 9000 + "}", "more than 64 levels"),
        ('{"version": 2, "intent": ' + "9" * 5000 + "}", "more than 4,300 digits"),
    ],
)
def test_hostile_json_is_one_clear_error(tmp_path: Path, raw: str, message: str) -> None:
    path = tmp_path / "context.json"
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(ContextError, match=message):
        load_context(path)


def test_a_fifo_context_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "context.json")
    with pytest.raises(ContextError, match="named pipe"):
        load_context(tmp_path / "context.json")
