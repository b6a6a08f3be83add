"""`promptgen mutate` end to end against the scripted fake: a killed mutant, surviving
ones, an equivalent one, the score in the terminal, mutation.md, the context and the
reports; resume without duplicate calls; the dry run's count."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from tests.conftest import isolated_env
from tests.conftest import promptgen_in as promptgen
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

PROMPT = """---
name: shout
inputs:
  text: {type: string}
---
system:
Rewrite the text you are given. Answer in uppercase.
{% if false %}Always add a signature line at the end of the reply.{% endif %}

user:
{{text}}
"""


class MutationResponder(PipelineResponder):
    """The model under test breaks the rules (says the judge's bad word) unless its
    prompt asks for uppercase; the rules model proposes two edits."""

    def __init__(self) -> None:
        super().__init__(rules=2)
        self.by_content = True
        self.fail_text: str | None = None  # a model-under-test call holding it fails

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "MutantProposals":
            return {"mutants": [
                {"message": 1, "find": "Rewrite the text", "replace": "Paraphrase the text",
                 "why": "wording only"},
                {"message": 1, "find": "Answer in uppercase.",
                 "replace": "Answer in uppercase letters.", "why": "same demand"},
            ]}  # fmt: skip
        return super().answer(name, schema, text, n)

    def _under_test(self, body: dict[str, Any], text: str) -> Reply:
        with self._lock:
            self.seen.append(body)
        if self.fail_text and self.fail_text in text:
            return Reply(status=400, content="bad request for this cell")
        if "Answer in uppercase" in text:
            return Reply(content="A REWRITTEN TEXT")
        return Reply(content=f"a rewritten text {self.bad_word}")


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, MutationResponder]]:
    responder = MutationResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def mutate(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp / "shout.prompty").write_text(PROMPT, encoding="utf-8")
    return promptgen(
        tmp, "mutate", "shout.prompty", "--models", "m1", "--api-base", url,
        "--out", str(tmp / "out"), "--llm-mutants", "2", "--no-cache", *extra,
    )  # fmt: skip


def test_killed_surviving_and_equivalent_mutants_and_the_score(
    server: tuple[FakeLLM, MutationResponder], tmp_path: Path
) -> None:
    fake, _ = server
    result = mutate(tmp_path, fake.url)
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    state = ctx.mutation
    assert state is not None and state.proposed
    by_change = {m.description.split(" (")[0]: m for m in state.mutants}
    status = {v.mutant_id: v.status for v in state.verdicts}
    expected = {
        'deleted "Rewrite the text you are given."': ("delete-sentence", "survived"),
        'deleted "Answer in uppercase."': ("delete-sentence", "killed"),
        '"Always" -> "Never"': ("negate", "equivalent"),
        '"uppercase" -> "lowercase"': ("format", "killed"),
        '"Rewrite the text" -> "Paraphrase the text"': ("llm", "survived"),
        '"Answer in uppercase." -> "Answer in uppercase letters."': ("llm", "survived"),
    }
    assert {k: (m.operator, status[m.id]) for k, m in by_change.items()} == expected
    assert (state.score.killed, state.score.counted) == (2, 5)
    tests = [t for t in ctx.tests if t.valid is not False and not t.flagged]
    killed = by_change['deleted "Answer in uppercase."']
    verdict = next(v for v in state.verdicts if v.mutant_id == killed.id)
    assert sorted(verdict.killed_by) == sorted(t.id for t in tests)
    assert all("pass rate 100% -> 0% (noise 0%)" in r for r in verdict.reasons)
    assert "-Rewrite the text you are given. Answer in uppercase." in killed.diff
    assert "+Rewrite the text you are given." in killed.diff
    # every rule whose tests ran counts all 5 mutants and the 2 killed
    rules = {t.rule_id or "" for t in tests}
    assert {r: (s.killed, s.counted) for r, s in state.by_rule.items()} == {
        r: (2, 5) for r in rules
    }
    # each live mutant ran every test once (runsPerTest 1) on m1, never the equivalent
    assert len(state.runs) == 5 * len(tests)
    # what the user reads: the table, mutation.md, report.md and report.html
    assert "all mutants" in result.stdout and "40%" in result.stdout
    assert "2 killed, 3 survived, 1 equivalent, 0 incomplete" in result.stdout
    text = (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")
    assert "Mutation score: **40%** (2 of 5 mutants killed; 1 equivalent, 0 incomplete" in text
    survivor = by_change['deleted "Rewrite the text you are given."']
    assert f"`{survivor.id}` (delete-sentence)" in text and survivor.diff in text
    assert f"`{killed.id}` (delete-sentence)" not in text
    assert "## Mutation testing" in (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert 'id="mutation"' in html and "<strong>40%</strong>" in html


def test_the_dry_run_counts_the_calls_a_run_makes(
    server: tuple[FakeLLM, MutationResponder], tmp_path: Path
) -> None:
    fake, _ = server
    fresh = mutate(tmp_path, fake.url, "--dry-run")  # no suite yet: the main run's plan too
    assert fresh.returncode == 0, fresh.stderr
    assert fake.requests == []
    assert [line.split(":")[0] for line in fresh.stdout.splitlines()][-4:] == [
        "metrics",
        "mutants",
        "mutant_runs",
        "total",
    ]
    main = promptgen(tmp_path, "shout.prompty", "--models", "m1", "--api-base", fake.url,
                     "--out", str(tmp_path / "out"), "--no-cache")  # fmt: skip
    assert main.returncode == 0, main.stderr
    before = len(fake.requests)
    planned = mutate(tmp_path, fake.url, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert len(fake.requests) == before
    lines = dict(line.split(": ") for line in planned.stdout.strip().splitlines())
    assert set(lines) == {"mutants", "mutant_runs", "total"}
    # 5 live mutants x 8 tests (the rules' slots, filled by behaviours where the prompt
    # names some, and two more for the behaviours beyond them) x (1 call + 1 compliance
    # judgement), and the proposal
    assert lines["mutant_runs"] == "80" and lines["mutants"] == "1"
    result = mutate(tmp_path, fake.url)
    assert result.returncode == 0, result.stderr
    assert len(fake.requests) - before == 81 == int(lines["total"].split()[0])


def test_a_failed_run_resumes_without_asking_twice(
    server: tuple[FakeLLM, MutationResponder], tmp_path: Path
) -> None:
    fake, responder = server
    responder.fail_text = "Paraphrase the text"  # the cells of one mutant fail
    first = mutate(tmp_path, fake.url)
    assert first.returncode == 3, first.stderr
    assert "mutant_runs did not finish" in first.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert ctx.mutation is not None
    failed = [r for r in ctx.mutation.runs if not r.ok]
    done = [r for r in ctx.mutation.runs if r.ok]
    assert failed and done
    asked = len(responder.seen)
    responder.fail_text = None
    second = mutate(tmp_path, fake.url)
    assert second.returncode == 0, second.stderr
    # only the failed cells were asked again: no mutant re-proposed, no cell run twice
    assert len(responder.seen) - asked == len(failed)
    assert responder.calls["MutantProposals"] == 1
    ctx = load_context(tmp_path / "out" / "context.json")
    assert ctx.mutation is not None and len(ctx.mutation.runs) == len(failed) + len(done)
    assert (ctx.mutation.score.killed, ctx.mutation.score.counted) == (2, 5)
    assert json.loads((tmp_path / "out" / "context.json").read_text())["mutation"]["score"]


def test_sigkill_while_mutants_run_then_the_same_command_resumes(tmp_path: Path) -> None:
    responder = MutationResponder()
    with FakeLLM(latency=0.2, responder=responder) as fake:
        (tmp_path / "shout.prompty").write_text(PROMPT, encoding="utf-8")
        out = tmp_path / "out"
        first = promptgen(tmp_path, "shout.prompty", "--models", "m1", "--api-base", fake.url,
                          "--out", str(out), "--no-cache")  # fmt: skip
        assert first.returncode == 0, first.stderr
        env = isolated_env(tmp_path)
        command = [sys.executable, "-m", "promptgen", "mutate", "shout.prompty", "--models",
                   "m1", "--api-base", fake.url, "--out", str(out), "--llm-mutants", "2",
                   "--no-cache"]  # fmt: skip
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        saved: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        while len(saved) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            try:
                state = json.loads((out / "context.json").read_text())["mutation"] or {}
            except (ValueError, KeyError):
                continue
            saved = state.get("runs", [])
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL and len(saved) >= 4
        asked = len(responder.seen)
        again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)  # fmt: skip
        assert again.returncode == 0, again.stderr
    ctx = load_context(out / "context.json")
    state = ctx.mutation
    assert state is not None and responder.calls["MutantProposals"] == 1
    cells = 5 * len([t for t in ctx.tests if t.valid is not False and not t.flagged])
    keys = [(r.mutant_id, r.test_id, r.model, r.run_index) for r in state.runs]
    assert len(keys) == len(set(keys)) == cells  # nothing lost, nothing doubled
    # the cells saved before the kill were not asked again
    assert len(responder.seen) - asked <= cells - len(saved)
    assert (state.score.killed, state.score.counted) == (2, 5)


def test_no_models_is_bad_input_before_any_call(
    server: tuple[FakeLLM, MutationResponder], tmp_path: Path
) -> None:
    fake, _ = server
    (tmp_path / "shout.prompty").write_text(PROMPT, encoding="utf-8")
    result = promptgen(tmp_path, "mutate", "shout.prompty", "--api-base", fake.url)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "promptgen: error: mutate needs the models under test (give --models, as for the main run)"
    ]
    assert fake.requests == []
