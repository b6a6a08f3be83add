"""The edit loop on the command line: an edited prompt's run killed with SIGKILL resumes
into the result of a straight run, and the `.prompt.yml` round trip (run, export the
tests into the author's file with --in-place, run again) continues the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from promptgen import load_context
from promptgen.context import Context
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

HAIKU = """---
name: haiku
inputs:
  topic:
    type: string
---
system:
You are a poet. Write one haiku about the topic. Avoid rhyme.
Reply with the three lines only.

user:
{{topic}}
"""
EDITED = HAIKU.replace("Avoid rhyme.", "Avoid rhyme. Never mention the moon.")


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(REPO)}


def _command(url: str, prompt: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "promptgen", str(prompt), "--effort", "min", "--api-base", url,
        "--out", str(out), "--quiet", "--concurrency", "2", *extra,
    ]  # fmt: skip


def _run(url: str, prompt: Path, out: Path, tmp: Path, *extra: str) -> str:
    done = subprocess.run(
        _command(url, prompt, out, *extra), cwd=REPO, env=_env(tmp), text=True,
        capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def _shape(ctx: Context) -> dict[str, object]:
    """What a run's result is, without its times, ids of the run and usage."""
    edit = ctx.edit
    assert edit is not None
    return {
        "rules": [r.id for r in ctx.all_rules],
        "tests": [t.id for t in ctx.tests],
        "runs": sorted((r.test_id, r.model, r.run_index, r.output) for r in ctx.test_runs),
        "kept": (edit.rules_kept, edit.rules_added, [r.id for r in edit.rules_retired]),
        "tests kept": (edit.tests_kept, [t.id for t in edit.tests_retired]),
        "summary": edit.summary.rsplit("; the previous run is in ", 1)[0],
    }


def test_sigkill_during_the_edited_run_resumes_into_the_same_result(tmp_path: Path) -> None:
    responder = PipelineResponder()
    responder.by_content = True  # the same request, the same answer, in any order
    prompt = tmp_path / "haiku.prompty"
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    models = ("--models", "m1;m2")
    with FakeLLM(latency=0.08, responder=responder) as fake:
        for out in (straight, killed):
            prompt.write_text(HAIKU, encoding="utf-8")
            _run(fake.url, prompt, out, tmp_path, *models, "--no-cache")
        prompt.write_text(EDITED, encoding="utf-8")
        _run(fake.url, prompt, straight, tmp_path, *models, "--no-cache")
        proc = subprocess.Popen(
            _command(fake.url, prompt, killed, *models, "--no-cache"), cwd=REPO,
            env=_env(tmp_path), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                data = json.loads((killed / "context.json").read_text())
            except (OSError, ValueError):
                data = {}
            if data.get("edit") and len(data.get("test_runs", [])) >= 2:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("never saw the edited run in its runs stage")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        again = _run(fake.url, prompt, killed, tmp_path, *models, "--no-cache")
    assert "resuming the run in" in again and "changed since" not in again
    a, b = load_context(straight / "context.json"), load_context(killed / "context.json")
    assert _shape(a) == _shape(b)
    assert b.edit is not None and len(b.edit.rules_added) == 2
    versions = sorted(p.name for p in (killed / "history").iterdir())
    assert versions == [b.edit.previous]


def test_the_prompt_yml_round_trip_continues_the_run(tmp_path: Path) -> None:
    source = (REPO / "samples" / "summarize.prompt.yml").read_text(encoding="utf-8")
    prompt = tmp_path / "summarize.prompt.yml"
    prompt.write_text(source, encoding="utf-8")
    out = tmp_path / "out"
    with FakeLLM(responder=PipelineResponder()) as fake:
        _run(fake.url, prompt, out, tmp_path)
        first = load_context(out / "context.json")
        exported = subprocess.run(
            [sys.executable, "-m", "promptgen", "export", str(out / "context.json"),
             "--to", "github-models", "--in-place"],
            cwd=REPO, env=_env(tmp_path), text=True, capture_output=True, timeout=120,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        fake.requests.clear()
        said = _run(fake.url, prompt, out, tmp_path)
        names = {
            (b.get("response_format") or {}).get("json_schema", {}).get("name")
            for b in fake.requests
        }
    import yaml

    rows = yaml.safe_load(prompt.read_text(encoding="utf-8"))["testData"]
    generated = [t for t in first.tests if t.origin == "generated"]
    assert len(rows) == 2 + len(generated)  # the author's two, then the exported ones
    ctx = load_context(out / "context.json")
    edit = ctx.edit
    assert edit is not None and edit.changed == ["author tests"]
    assert f"(author tests: {len(generated)} rows added)" in said
    assert [s.inputs for s in ctx.prompt.test_samples] == [
        {k: v for k, v in row.items() if k != "expected"} for row in rows
    ]
    # Every test of the first run is kept, under its id: an exported row is the generated
    # test it came from (one test per input), the author's rows are theirs.
    assert edit.tests_kept == [t.id for t in first.tests] and edit.tests_retired == []
    assert [t.id for t in ctx.tests] == [t.id for t in first.tests]
    assert edit.rules_kept == [r.id for r in first.all_rules]
    assert not names & {"RulesAnswer", "InverseAnswer", "TestCases", "IntentAnswer"}
