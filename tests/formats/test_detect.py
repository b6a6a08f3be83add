"""Format detection: by name where a suffix belongs to one format, by content where it is
shared; a file that fits two formats, or JSON of neither known shape, is one clear
error (exit 2) naming the formats considered; --format settles it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from promptgen.errors import PromptFormatError
from promptgen.formats import FORMATS, load_prompt, read_text
from promptgen.formats.detect import CONTEXT, detect, json_kind
from tests import corpus
from tests.conftest import REPO

LVE = corpus.CORPUS / "lve" / "repository"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


VERDICT = "@system\nYou grade replies.\n@user\nReply: {source.reply}\nScore it 1-5.\n"
PA = (
    "---\nprovider: openai\nmodel: gpt-4o-mini\ntest_path: samples\ntests:\n"
    "  short:\n    type: property\n    unit: words\n    limit: {max: 50}\n---\n"
    "Summarise the text.\n"
)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("judge.md", VERDICT, "verdict"),
        ("judge.txt", VERDICT, "verdict"),
        ("judge.prompt", VERDICT, "verdict"),
        ("any.verdict.md", "Plain words, no sections.", "verdict"),
        ("summary.prompt", PA, "promptarchitect"),
        ("summary.md", PA, "promptarchitect"),
        ("lve.prompt", '{"content": "What is {a} + {b}?", "role": "user"}\n', "lve-prompt"),
        ("lve2.prompt", "<please fill in>\n", "lve-prompt"),
        ("plain.prompt", "What is {a} + {b}?\n", "lve-prompt"),
        ("note.md", "system:\nYou help.\nuser:\n{{q}}\n", "markdown"),
        ("note.txt", "Translate {{text}} to French.", "text"),
        ("mail.md", "Write to me at someone@system.example\n", "markdown"),
    ],
)
def test_detected_by_content(tmp_path: Path, name: str, text: str, expected: str) -> None:
    assert detect(_write(tmp_path, name, text), text) == expected


def test_a_file_that_fits_two_formats_is_an_error_naming_both(tmp_path: Path) -> None:
    path = _write(tmp_path, "both.md", "system:\nYou grade.\n@user\n{source.reply}\n")
    with pytest.raises(PromptFormatError) as err:
        detect(path, read_text(path))
    line = err.value.one_line()
    assert "verdict" in line and "markdown" in line
    assert "--format verdict or --format markdown" in line
    run = _cli("inspect", str(path))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"promptgen: error: {line}"]
    forced = _cli("inspect", str(path), "--format", "markdown", "--json")
    assert forced.returncode == 0, forced.stderr
    assert '"format": "markdown"' in forced.stdout


def test_json_of_neither_shape_names_context_and_lve(tmp_path: Path) -> None:
    path = _write(tmp_path, "data.json", '{"rows": [1, 2, 3]}')
    with pytest.raises(PromptFormatError) as err:
        json_kind(path)
    assert "neither a promptgen context nor an LVE test" in err.value.one_line()
    run = _cli(str(path), "--dry-run")
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert "data.json" in line and "LVE test.json" in line and "Traceback" not in run.stderr
    assert json_kind(_write(tmp_path, "c.json", '{"version": 2, "prompt": {}}')) == CONTEXT
    assert json_kind(_write(tmp_path, "broken.json", '{"version": ')) == CONTEXT


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("script.py", "PROMPT = 'Summarise {text}'\n", "a Python file"),
        ("rows.csv", "a,b\n1,2\n", "a CSV file"),
        ("instances.jsonl", '{"args": {"a": 1}, "response": "2", "passed": true}\n', "JSON lines"),
        ("messages.txt", '[{"role": "user", "content": "Hi"}]', "a JSON document"),
    ],
)
def test_files_that_are_not_prompts_are_refused_not_read_as_text(
    tmp_path: Path, name: str, text: str, kind: str
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(PromptFormatError) as err:
        load_prompt(path)
    line = err.value.one_line()
    assert kind in line and "--format text" in line
    assert load_prompt(path, "text").messages[0].content.strip() == text.strip()


def test_an_unknown_forced_format_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.txt", "Hello")
    with pytest.raises(PromptFormatError) as err:
        load_prompt(path, "yaml")
    assert "unknown format 'yaml'" in err.value.one_line()
    assert set(FORMATS) >= {"lve", "promptarchitect", "verdict", "prompty", "prompt.yml"}


@pytest.mark.skipif(not corpus.available(), reason="../shared corpus not present")
def test_every_corpus_file_gets_the_format_its_name_and_shape_say() -> None:
    counts: dict[str, int] = {}
    for path in corpus.corpus_files():
        fmt = detect(path, read_text(path))
        name = path.name.lower()
        if name.endswith(".prompty"):
            assert fmt == "prompty", path
        elif name.endswith((".yml", ".yaml")):
            assert fmt == "prompt.yml", path
        else:
            assert fmt == "markdown", path
        counts[fmt] = counts.get(fmt, 0) + 1
    tests = sorted(LVE.rglob("test.json"))
    assert len(tests) == 48
    assert {json_kind(p) for p in tests} == {"lve"}
    prompts = sorted(LVE.rglob("*.prompt"))
    assert prompts and {detect(p, read_text(p)) for p in prompts} == {"lve-prompt"}
    assert counts["prompty"] > 0 and counts["prompt.yml"] > 0
