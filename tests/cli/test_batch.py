"""Many prompts in one command: `promptgen DIR_OR_GLOB...` and `--prompt TEXT`.

Every call goes over real HTTP to the fake server; `promptgen` runs in a subprocess, in
a temporary working folder (the default output folder is relative to it).
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from tests.conftest import REPO, isolated_env
from tests.conftest import promptgen_in as promptgen
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

GOOD = """---
name: Shout
description: Turns a sentence into upper case.
inputs:
  text:
    type: string
    sample: hello there
---
system:
Rewrite the sentence in upper case. Keep the punctuation.

user:
{{text}}
"""
# The fake judge finds every output non-compliant when the prompt holds its bad word.
FLAWED = GOOD.replace("Shout", "Whisper").replace("upper case.", "lower case. VIOLATION")
BROKEN = "---\nname: broken\ninputs: [unclosed\n---\nuser:\n{{text}}\n"
METRIC = """---
name: shout-metric
tags: [scorer]
---
system:
Score the output from 0 to 100.

user:
{{output}}
"""


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, PipelineResponder]]:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def prompts(root: Path, broken: bool = True) -> Path:
    """A folder of prompts: two good ones (one in a subfolder), maybe a broken one, and
    files that are not prompts."""
    folder = root / "prompts"
    (folder / "more").mkdir(parents=True)
    (folder / "shout.prompty").write_text(GOOD)
    (folder / "more" / "whisper.prompty").write_text(FLAWED)
    if broken:
        (folder / "broken.prompty").write_text(BROKEN)
    (folder / "README.md").write_text("# Our prompts\n\nRun them with promptgen.\n")
    (folder / "data.json").write_text('[{"text": "hi"}]')
    (folder / "notes.csv").write_text("a,b\n")
    return folder


def evaluate(cwd: Path, fake: FakeLLM, *args: str) -> subprocess.CompletedProcess[str]:
    base = ("--effort", "min", "--api-base", fake.url, "--models", "m1", "--quiet")
    return promptgen(cwd, *args, *base)


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {r["prompt"]: r for r in csv.DictReader(handle)}


def test_a_folder_runs_every_prompt_and_a_broken_one_stops_no_other(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompts(tmp_path)
    result = evaluate(tmp_path, fake, "prompts", "--junit", "junit.xml")
    assert result.returncode == 2, result.stderr  # the highest code: the broken file's
    out = tmp_path / "promptgen-out"
    assert "error: broken: " in result.stderr and "Traceback" not in result.stderr
    contexts = {}
    for name in ("shout", "whisper"):
        for file in ("context.json", "tests.json", "overview.csv", "report.md", "report.html"):
            assert (out / name / file).is_file(), (name, file)
        contexts[name] = load_context(out / name / "context.json")
    assert not (out / "broken").exists()

    table = rows(out / "summary.csv")
    assert set(table) == {"shout", "whisper", "broken"}
    for name, ctx in contexts.items():
        row = table[name]
        runs = ctx.test_runs
        assert row["model"] == "m1" and row["status"] == "ok"
        assert int(row["runs"]) == len(runs) > 0
        assert int(row["tests"]) == len({r.test_id for r in runs})
        assert int(row["errors"]) == 0
        assert int(row["invalid"]) == sum(t.valid is False for t in ctx.tests)
        assert int(row["unsafe"]) == 0  # the fake judge finds every input safe
    assert float(table["shout"]["compliance"]) == 100.0
    assert float(table["whisper"]["compliance"]) == 0.0
    assert table["shout"]["exit_code"] == table["whisper"]["exit_code"] == "0"
    broken = table["broken"]
    assert (broken["status"], broken["exit_code"], broken["runs"]) == ("bad input", "2", "0")
    assert broken["file"].endswith("broken.prompty")

    summary = (out / "summary.md").read_text()
    assert "3 prompt(s), 1 with an error; exit code 2." in summary
    assert "| shout | prompts/shout.prompty | m1 | ok |" in summary and "| 100.0% |" in summary
    assert "prompts/README.md: documentation (README-like), not a prompt" in summary
    assert "prompts/data.json: not a prompt" in summary
    assert "and 1 other file(s)" in summary  # notes.csv
    # printed: the counts, a row per prompt and model, the same lists (every column in
    # the files); no raw Markdown table
    assert "promptgen batch: 3 prompt(s), 1 with an error; exit code 2." in result.stdout
    assert "|" not in result.stdout
    assert "prompts/data.json: not a prompt" in result.stdout

    suites = {s.get("name"): s for s in ET.parse(tmp_path / "junit.xml").getroot()}
    assert set(suites) == {"shout", "whisper", "broken"}
    shout_runs, whisper_runs = (len(contexts[n].test_runs) for n in ("shout", "whisper"))
    assert suites["shout"].get("tests") == str(shout_runs)
    assert suites["shout"].get("failures") == "0"
    assert suites["whisper"].get("failures") == str(whisper_runs)  # every run non-compliant
    assert suites["broken"].get("errors") == "1"
    error = suites["broken"].find("testcase/error")
    assert error is not None and "broken.prompty" in error.get("message", "")


def test_the_gate_applies_to_each_prompt(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompts(tmp_path, broken=False)
    result = evaluate(tmp_path, fake, "prompts", "--fail-under", "50", "--junit", "j.xml")
    assert result.returncode == 1, result.stderr
    table = rows(tmp_path / "promptgen-out" / "summary.csv")
    assert (table["shout"]["status"], table["shout"]["exit_code"]) == ("ok", "0")
    assert (table["whisper"]["status"], table["whisper"]["exit_code"]) == (
        "below --fail-under",
        "1",
    )
    assert "overall compliance 0.0% is below --fail-under 50%" in result.stderr
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "j.xml").getroot()}
    gate = suites["whisper"].find("testcase[@name='promptgen']/failure")
    assert gate is not None and gate.get("type") == "exit-1"
    assert suites["shout"].find("testcase[@name='promptgen']") is None


def test_dry_run_lists_what_runs_and_what_is_skipped(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    folder = prompts(tmp_path)
    (folder / "shout.metric.prompty").write_text(METRIC)
    result = promptgen(tmp_path, "prompts", "--dry-run", "--api-base", fake.url)
    assert result.returncode == 2, result.stderr  # the broken file would fail
    lines = result.stdout.splitlines()
    assert lines[0] == "3 prompt(s) to run:"
    run = [ln.split()[1] for ln in lines if ln.startswith("  run ")]
    assert run == ["prompts/shout.prompty", "prompts/more/whisper.prompty"]
    assert any(ln.startswith("  error  prompts/broken.prompty: ") for ln in lines)
    assert "-> promptgen-out/shout  (" in result.stdout
    skipped = {ln.split()[1].rstrip(":") for ln in lines if ln.startswith("  skip ")}
    assert skipped == {"prompts/README.md", "prompts/data.json", "prompts/shout.metric.prompty"}
    assert "a metric (*.metric.prompty)" in result.stdout
    assert fake.requests == [] and not (tmp_path / "promptgen-out").exists()


def test_a_file_gone_when_read_is_skipped_with_a_note(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Issue 28 item 14: a file the walk lists but that is gone when read (here dangling
    links) is skipped with a note on stderr and counted in the summary, not a failure."""
    fake, _ = server
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "shout.prompty").write_text(GOOD)
    (folder / "gone.prompty").symlink_to(folder / "deleted.prompty")
    (folder / "notes.md").symlink_to(folder / "deleted.md")
    result = evaluate(tmp_path, fake, "prompts")
    assert result.returncode == 0, result.stderr
    reason = "it was gone when read (deleted meanwhile, or a dangling link)"
    assert result.stderr.splitlines() == [
        f"promptgen: note: skipped prompts/gone.prompty: {reason}",
        f"promptgen: note: skipped prompts/notes.md: {reason}",
    ]
    summary = (tmp_path / "promptgen-out" / "summary.md").read_text()
    assert "1 prompt(s), 0 with an error; exit code 0." in summary
    assert summary.endswith(
        "## Skipped files\n\n2 file(s) skipped:\n\n"
        f"- prompts/gone.prompty: {reason}\n- prompts/notes.md: {reason}\n"
    )
    assert set(rows(tmp_path / "promptgen-out" / "summary.csv")) == {"shout"}


def test_a_link_out_of_the_folder_is_skipped_and_never_read(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Issue 29 item 5d: a folder of prompts does not follow a symbolic link that leads
    out of it (a file or a folder), as `${file:...}` refuses the same link; a link to a
    file inside the folder is that file (run once)."""
    fake, _ = server
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "shout.prompty").write_text(GOOD)
    (folder / "same.prompty").symlink_to("shout.prompty")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "canary.prompty").write_text(GOOD.replace("Shout", "CANARY-5d"))
    (folder / "leak.prompty").symlink_to(secret / "canary.prompty")
    (folder / "elsewhere").symlink_to(secret)
    result = promptgen(tmp_path, "prompts", "--dry-run", "--api-base", fake.url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("  run ")] == ["prompts/same.prompty"]
    assert [ln for ln in lines if ln.startswith("  skip ")] == [
        f"  skip   prompts/elsewhere: a symbolic link to {secret}, outside prompts: not followed",
        f"  skip   prompts/leak.prompty: a symbolic link to {secret / 'canary.prompty'}, "
        "outside prompts: not followed",
    ]
    assert "CANARY-5d" not in result.stdout + result.stderr
    assert fake.requests == []


def test_the_filesystem_root_is_no_folder_of_prompts(tmp_path: Path) -> None:
    """Issue 29 item 5c: `promptgen run /` walked the whole machine into /proc and ended
    in an internal error; the root is refused in one line, exit 2."""
    result = promptgen(tmp_path, "run", "/")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "promptgen: error: /: the filesystem's root is not a folder of prompts "
        "(give the folder that holds your prompts)\n"
    )


def test_globs_are_expanded_even_when_quoted(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompts(tmp_path)
    result = promptgen(tmp_path, "prompts/*.prompty", "--dry-run", "--api-base", fake.url)
    listed = [ln.split()[1] for ln in result.stdout.splitlines() if ln.startswith("  ")]
    assert listed == ["prompts/broken.prompty:", "prompts/shout.prompty"]
    deep = promptgen(tmp_path, "prompts/**/w*.prompty", "--dry-run", "--api-base", fake.url)
    assert deep.returncode == 0, deep.stderr
    first, second = deep.stdout.splitlines()[:2]
    assert first == "1 prompt(s) to run:"
    assert second.startswith("  run    prompts/more/whisper.prompty  [prompty]  -> promptgen-out/")
    none = promptgen(tmp_path, "prompts/*.nothing", "--dry-run")
    assert none.returncode == 2 and "prompts/*.nothing: no file matches" in none.stderr


class PerModel:
    """A responder that keeps the peak number of calls in flight per model."""

    def __init__(self, inner: PipelineResponder) -> None:
        self.inner = inner
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        model = str(body.get("model"))
        with self.lock:
            self.now[model] += 1
            self.peak[model] = max(self.peak[model], self.now[model])
        try:
            time.sleep(0.01)
            return self.inner(body)
        finally:
            with self.lock:
                self.now[model] -= 1


def test_one_gateway_one_budget_one_cache(tmp_path: Path) -> None:
    inner = PipelineResponder()
    inner.by_content = True  # the same request gets the same answer, whatever the order
    responder = PerModel(inner)
    with FakeLLM(responder=responder) as fake:
        prompts(tmp_path, broken=False)
        first = evaluate(tmp_path, fake, "prompts", "--concurrency", "1")
        assert first.returncode == 0, first.stderr
        # Two prompts at once, yet one call per model in flight: one gateway, one budget.
        assert len(responder.peak) >= 2 and set(responder.peak.values()) == {1}
        out = tmp_path / "promptgen-out"
        totals = [load_context(out / n / "context.json").usage.total for n in ("shout", "whisper")]
        calls = [t.calls for t in totals]
        # Each counts its own; a request the other prompt had in flight already is a hit.
        sent = sum(t.calls - t.cache_hits for t in totals)
        assert all(calls) and sent == len(fake.requests)
        asked = len(fake.requests)
        again = evaluate(tmp_path, fake, "prompts")  # resumes: nothing left to do
        assert again.returncode == 0, again.stderr
        fresh = evaluate(tmp_path, fake, "prompts", "--fresh")  # redone from the cache
        assert fresh.returncode == 0, fresh.stderr
        assert len(fake.requests) == asked
        hits = load_context(out / "shout" / "context.json").usage.total.cache_hits
        assert hits == calls[0]


def test_every_sample_in_one_command(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    listing = promptgen(tmp_path, "samples", "--dry-run", "--api-base", fake.url)
    assert listing.returncode == 0, listing.stderr
    run = [ln.split()[1] for ln in listing.stdout.splitlines() if ln.startswith("  run ")]
    skipped = [ln.split()[1] for ln in listing.stdout.splitlines() if ln.startswith("  skip ")]
    assert len(run) == 11 and "samples/lve/discount-code-leak/openai--gpt-4o-mini/test.json" in run
    assert "samples/promptarchitect/answer-from-article.prompt" in run
    lists = [s for s in skipped if s.endswith(".instructions.txt:")]  # bench/quality.py's
    assert len(lists) == 11  # one hand-written instruction list per prompt
    assert sorted(s for s in skipped if s not in lists) == [
        "samples/README.md:",
        "samples/classify-sentiment.metric.prompty:",
        "samples/data/rate-product-title.samples.json:",
        "samples/judges/reply-tone.verdict.md:",
        "samples/lve/discount-code-leak/openai--gpt-4o-mini/test.prompt:",
        "samples/promptarchitect/support-agent.md:",
        "samples/promptarchitect/tests/01-password-reset.md:",
        "samples/promptarchitect/tests/02-export-pdf.md:",
        "samples/promptarchitect/tests/03-refund.md:",
        "samples/promptarchitect/tests/04-not-covered.md:",
    ]
    result = evaluate(tmp_path, fake, "samples")
    assert result.returncode == 0, result.stderr
    table = rows(tmp_path / "promptgen-out" / "summary.csv")
    assert len(table) == 11 and {r["exit_code"] for r in table.values()} == {"0"}
    for name, row in table.items():
        ctx = load_context(tmp_path / "promptgen-out" / name / "context.json")
        assert int(row["runs"]) == len(ctx.test_runs) > 0, name


def test_a_single_file_writes_no_summary(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompts(tmp_path)
    result = evaluate(tmp_path, fake, "prompts/shout.prompty")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "promptgen-out"
    assert (out / "shout" / "context.json").is_file()
    assert not (out / "summary.csv").exists()
    assert "prompt       Shout" in result.stdout


def test_an_inline_prompt(server: tuple[FakeLLM, PipelineResponder], tmp_path: Path) -> None:
    fake, _ = server
    text = "Translate {{sentence}} into French. Reply with the translation only."
    result = evaluate(tmp_path, fake, "--prompt", text)
    assert result.returncode == 0, result.stderr
    name = "inline-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    ctx = load_context(tmp_path / "promptgen-out" / name / "context.json")
    assert ctx.prompt.name == name and list(ctx.prompt.inputs) == ["sentence"]
    assert ctx.prompt.source == "--prompt" and ctx.test_runs
    again = evaluate(tmp_path, fake, "--prompt", text)
    assert f"resuming the run in promptgen-out/{name}" in again.stderr
    # Another text has its own folder: not refused as "a different prompt".
    other = evaluate(tmp_path, fake, "--prompt", "Summarize {{text}} in one line.")
    assert other.returncode == 0, other.stderr
    assert len(list((tmp_path / "promptgen-out").glob("inline-*/context.json"))) == 2
    both = promptgen(tmp_path, "prompts", "--prompt", text)
    assert both.returncode == 2
    assert "--prompt TEXT and a prompt file (prompts) both given" in both.stderr
    empty = promptgen(tmp_path, "--prompt", " ")
    assert empty.returncode == 2 and "--prompt is empty" in empty.stderr


NOTES = """Meeting notes, 12 May

- write the blog post about the new prompts
- Summarize the feedback for Anna
- ask Bob about the budget
"""
SETUP = """How to set up the project

1. Install Python 3.11.
2. Run `make` in this folder.
You can then run the prompts.
"""
CHANGES = "# Release notes\n\n## 1.2.0\n\n- Fixed the CSV export.\n- Added `{{name}}` support.\n"
GUIDE = "# Our prompts\n\nThis folder holds the prompts of the support team.\n"
ASK = "Summarize the text below in one sentence.\n\n{{text}}\n"
PERSONA = "# Travel agent\n\nYou are a travel agent. Suggest three trips for the budget given.\n"
FILL = "Dear customer,\n\nyour order {order} has shipped.\n"


def text_files(root: Path) -> Path:
    folder = root / "prompts"
    folder.mkdir()
    (folder / "shout.prompty").write_text(GOOD)
    for name, text in {
        "notes.txt": NOTES,
        "instructions.txt": SETUP,
        "release-notes.md": CHANGES,
        "guide.md": GUIDE,
        "ask.txt": ASK,
        "persona.md": PERSONA,
        "fill.txt": FILL,
    }.items():
        (folder / name).write_text(text)
    return folder


def listing(result: subprocess.CompletedProcess[str]) -> tuple[list[str], list[str]]:
    lines = result.stdout.splitlines()
    run = [ln.split()[1] for ln in lines if ln.startswith("  run ")]
    return run, [ln[len("  skip   ") :] for ln in lines if ln.startswith("  skip ")]


def test_text_files_run_when_they_read_as_prompts(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    text_files(tmp_path)
    result = promptgen(tmp_path, "prompts", "--dry-run", "--api-base", fake.url)
    assert result.returncode == 0, result.stderr
    run, skipped = listing(result)
    assert run == [
        "prompts/ask.txt",
        "prompts/fill.txt",
        "prompts/persona.md",
        "prompts/shout.prompty",
    ]
    reason = (
        "not a prompt: no placeholder and no instruction to a model (You are..., Write..., "
        "Summarize...); --include it to run it"
    )
    assert skipped == [
        f"prompts/guide.md: {reason}",
        f"prompts/instructions.txt: {reason}",
        f"prompts/notes.txt: {reason}",
        f"prompts/release-notes.md: {reason}",
    ]
    assert "4 file(s) skipped:" in result.stdout and fake.requests == []


def test_include_and_exclude_settle_it(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    text_files(tmp_path)
    args = ("--include", "notes.txt", "--include", "prompts/*-notes.md", "--exclude", "*.md")
    result = promptgen(tmp_path, "prompts", "--dry-run", "--api-base", fake.url, *args)
    assert result.returncode == 0, result.stderr
    run, skipped = listing(result)
    assert run == [
        "prompts/ask.txt",
        "prompts/fill.txt",
        "prompts/notes.txt",
        "prompts/release-notes.md",
        "prompts/shout.prompty",
    ]
    assert skipped[0] == "prompts/guide.md: excluded by --exclude *.md"
    assert skipped[2] == "prompts/persona.md: excluded by --exclude *.md"
    assert [s.split(":")[0] for s in skipped] == [
        "prompts/guide.md",
        "prompts/instructions.txt",
        "prompts/persona.md",
    ]
    # a file named on the command line is a prompt, whatever it holds or excludes
    named = promptgen(
        tmp_path, "prompts/notes.txt", "prompts/guide.md", "--exclude", "*", "--dry-run",
        "--api-base", fake.url,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert listing(named) == (["prompts/notes.txt", "prompts/guide.md"], [])
    empty = promptgen(tmp_path, "prompts", "--include", " ", "--dry-run")
    assert empty.returncode == 2
    assert empty.stderr == "promptgen: error: --include is empty; give a value or drop the flag\n"


def test_a_batch_says_how_many_files_it_skipped(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    folder = text_files(tmp_path)
    for name in ("ask.txt", "fill.txt", "persona.md"):
        (folder / name).unlink()
    result = promptgen(tmp_path, "prompts", "--effort", "min", "--api-base", fake.url)
    assert result.returncode == 0, result.stderr
    skipped = [ln for ln in result.stderr.splitlines() if "skipped" in ln and "file(s)" in ln]
    assert skipped == [
        "promptgen: 4 file(s) skipped, not prompts to run (--dry-run lists them with the "
        "reason; --include GLOB runs one)"
    ]
    assert not (tmp_path / "promptgen-out" / "notes").exists()
    assert set(rows(tmp_path / "promptgen-out" / "summary.csv")) == {"shout"}


def test_every_corpus_text_prompt_is_found() -> None:
    corpus = REPO.parent / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus is absent")
    from promptgen.discover import find_prompts

    plan = find_prompts([str(corpus)], REPO / "promptgen-out")
    texts = [
        str(f.path.relative_to(corpus)) for f in plan.prompts if f.format in ("markdown", "text")
    ]
    assert texts == ["promptpex/samples/demo/entities.md"]
    assert len(plan.prompts) == 247
    samples = find_prompts([str(REPO / "samples")], REPO / "promptgen-out")
    assert sorted(f.path.name for f in samples.prompts if f.format in ("markdown", "text")) == [
        "commit-message.txt",
        "haiku.md",
    ]


def test_the_printed_summary_reads_at_80_columns(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompts(tmp_path, broken=False)
    models = "openai/gpt-4o-mini;openai/gpt-4o"
    result = subprocess.run(
        [sys.executable, "-m", "promptgen", "prompts", "--effort", "min", "--api-base",
         fake.url, "--models", models, "--quiet"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**isolated_env(tmp_path), "COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout and "|" not in result.stdout
    assert max(len(line) for line in lines if not line.startswith("summary: ")) <= 80
    table = [line.split() for line in lines]
    header = ["prompt", "model", "status", "tests", "runs", "errors", "compliance", "exit"]
    assert header in table
    shown = {(row[0], row[1], row[2], row[-2], row[-1]) for row in table if len(row) == 8}
    assert {
        ("shout", "openai/gpt-4o-mini", "ok", "100.0%", "0"),
        ("shout", "openai/gpt-4o", "ok", "100.0%", "0"),
        ("whisper", "openai/gpt-4o-mini", "ok", "0.0%", "0"),
        ("whisper", "openai/gpt-4o", "ok", "0.0%", "0"),
    } <= shown
    # the files keep every column
    written = (tmp_path / "promptgen-out" / "summary.md").read_text()
    assert "| prompt | file | model | status | tests | invalid | unsafe |" in written


def test_a_prompt_that_evaluated_nothing_is_not_ok(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Every test of one prompt is flagged (its input's name holds the fake judge's word):
    nothing ran on the model, so its row says `not evaluated` with 0 tests, and why."""
    fake, _ = server
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "shout.prompty").write_text(GOOD)
    (folder / "flagged.prompty").write_text(
        GOOD.replace("Shout", "Flagged")
        .replace("    sample: hello there\n", "")  # a sample is not screened: it would run
        .replace("text:", "harmme:")
        .replace("{{text}}", "{{harmme}}")
    )
    result = evaluate(tmp_path, fake, "prompts")
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "promptgen-out" / "flagged" / "context.json")
    assert ctx.tests and all(t.flagged for t in ctx.tests) and not ctx.test_runs
    why = (
        f"nothing was evaluated on m1: the safety screen flagged all {len(ctx.tests)} tests "
        "(--keep-unsafe runs them)"
    )
    assert f"promptgen: warning: flagged: {why}" in result.stderr.splitlines()
    table = rows(tmp_path / "promptgen-out" / "summary.csv")
    flagged, shout = table["flagged"], table["shout"]
    assert (flagged["model"], flagged["status"], flagged["tests"], flagged["runs"]) == (
        "m1",
        "not evaluated",
        "0",
        "0",
    )
    assert int(flagged["unsafe"]) == len(ctx.tests) and flagged["exit_code"] == "0"
    assert (shout["status"], int(shout["tests"]) > 0) == ("ok", True)
    summary = (tmp_path / "promptgen-out" / "summary.md").read_text()
    assert "| flagged | prompts/flagged.prompty | m1 | not evaluated | 0 |" in summary
    assert f"## Notes\n\n- `flagged`: {why}\n" in summary
    printed = [line.split() for line in result.stdout.splitlines()]
    assert ["flagged", "m1", "not", "evaluated", "0", "0", "0", "-", "0"] in printed
    assert f"- `flagged`: {why}" in " ".join(result.stdout.split())  # the Notes, wrapped
