"""The prompts in samples/ load cleanly through the real CLI and show what they claim to."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
# A format whose prompt comes with a folder of its own sits in a subfolder.
PATTERNS = (
    "*.prompty", "*.prompt.yml", "*.md", "*.txt", "promptarchitect/*.prompt",
    "lve/*/*/test.json", "judges/*.verdict.md",
)  # fmt: skip


def _prompt_files() -> list[Path]:
    files = {p for pattern in PATTERNS for p in SAMPLES.glob(pattern)}
    # an instruction list (`*.instructions.txt`) is what bench/quality.py reads, no prompt
    return sorted(
        p for p in files if p.name != "README.md" and not p.name.endswith(".instructions.txt")
    )


PROMPT_FILES = _prompt_files()


@functools.cache
def _run_inspect(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "promptgen", "inspect", str(path), "--json"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def inspect(name: str) -> dict[str, Any]:
    """`promptgen inspect samples/<name> --json`, checked to have succeeded cleanly."""
    path = SAMPLES / name
    assert path.is_file(), f"missing sample {name}"
    result = _run_inspect(path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["render_error"] is None
    return data


def _templates(data: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in data["prompt"]["messages"])


def _rendered(data: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in data["rendered"])


# --- every sample ---------------------------------------------------------------------------


def test_there_are_enough_samples() -> None:
    assert len(PROMPT_FILES) >= 6


@pytest.mark.parametrize("path", PROMPT_FILES, ids=lambda p: p.name)
def test_sample_loads_and_renders(path: Path) -> None:
    result = _run_inspect(path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", f"warnings or errors on stderr: {result.stderr}"
    data = json.loads(result.stdout)
    assert data["render_error"] is None
    assert data["rendered"], "nothing rendered"
    assert all(m["content"].strip() for m in data["rendered"]), "a rendered message is empty"
    assert data["prompt"]["warnings"] == []
    # Every input gets a real value, never the `<name>` placeholder, except the input
    # promptgen adds by itself to a prompt that has none.
    auto_added = data["inputs_detected"] == ["input"] and not data["inputs_declared"]
    if not auto_added:
        assert "placeholder" not in data["render_value_sources"].values()


def test_readme_lists_every_sample() -> None:
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for path in PROMPT_FILES:
        name = path.relative_to(SAMPLES).as_posix()
        assert f"`{name}`" in readme, f"samples/README.md does not mention {name}"
    for path in (SAMPLES / "data").glob("*"):
        assert f"`data/{path.name}`" in readme, f"samples/README.md does not mention {path.name}"


# --- the feature each sample shows ----------------------------------------------------------


def test_single_input_prompty_v1() -> None:
    data = inspect("classify-sentiment.prompty")
    prompt = data["prompt"]
    assert prompt["format"] == "prompty"
    assert prompt["model"]["api"] == "chat"
    assert prompt["model"]["parameters"] == {"temperature": 0.2, "max_tokens": 50}
    assert data["inputs_declared"] == ["review"]
    assert data["inputs_detected"] == []
    review = prompt["inputs"]["review"]
    assert review["type"] == "string"
    assert review["description"]
    assert review["sample"]
    assert data["render_value_sources"] == {"review": "sample"}
    assert [m["role"] for m in data["rendered"]] == ["system", "user"]
    assert data["rendered"][-1]["content"] == review["sample"]


def test_metric_judge() -> None:
    data = inspect("classify-sentiment.metric.prompty")
    prompt = data["prompt"]
    assert "scorer" in prompt["tags"]
    assert {"input", "output", "rules"} <= set(data["inputs_declared"])
    assert prompt["inputs"]["rules"]["required"] is False
    templates = _templates(data)
    assert "{{output}}" in templates
    assert "{{input}}" in templates
    rendered = _rendered(data)
    assert '"explanation"' in rendered
    assert '"score"' in rendered
    assert "100" in rendered


def test_several_inputs_prompty_v2() -> None:
    data = inspect("extract-contacts.prompty")
    prompt = data["prompt"]
    assert len(data["inputs_declared"]) >= 3
    assert data["inputs_declared"] == ["document", "fields", "output_format"]
    model = prompt["model"]
    assert model["id"] == "gpt-4o-mini"
    assert model["provider"] == "openai"
    # Prompty v2 option names come out in OpenAI spelling.
    assert model["parameters"] == {"temperature": 0, "max_tokens": 400}
    for spec in prompt["inputs"].values():
        assert spec["description"]
        assert spec["default"] is not None
    assert prompt["inputs"]["fields"]["type"] == "array"
    templates = _templates(data)
    assert "{% for" in templates
    assert "{% if" in templates
    rendered = _rendered(data)
    for field in prompt["inputs"]["fields"]["default"]:
        assert f"- {field}\n" in rendered
    assert "JSON" in rendered
    assert "CSV only" not in rendered  # the {% if %} picked the json branch


def test_scenarios_with_parameters() -> None:
    data = inspect("translate-support-reply.prompty")
    prompt = data["prompt"]
    assert {"message", "target_language", "tone"} <= set(data["inputs_declared"])
    scenarios = prompt["scenarios"]
    assert len(scenarios) >= 2
    names = [s["name"] for s in scenarios]
    assert len(set(names)) == len(names)
    for scenario in scenarios:
        assert scenario["instructions"]
        assert scenario["parameters"]
        assert "target_language" in scenario["parameters"]
        assert set(scenario["parameters"]) <= set(prompt["inputs"])
    assert prompt["inputs"]["tone"]["enum"]


def test_test_samples_inline_and_from_file() -> None:
    data = inspect("rate-product-title.prompty")
    samples = data["prompt"]["test_samples"]
    inline = [s for s in samples if s["source"] is None]
    from_file = [s for s in samples if s["source"] is not None]
    assert inline
    assert from_file
    assert all(s["expected"] is not None for s in inline)
    for sample in samples:
        assert "output" not in sample["inputs"], "the expected output is split off"
        assert set(sample["inputs"]) == {"title", "category"}
    path = "data/rate-product-title.samples.json"
    assert {s["source"] for s in from_file} == {path}
    rows = json.loads((SAMPLES / path).read_text(encoding="utf-8"))
    assert isinstance(rows, list)
    assert len(from_file) == len(rows)


def test_stage_instructions() -> None:
    data = inspect("sql-from-question.prompty")
    prompt = data["prompt"]
    instructions = prompt["instructions"]
    fields = ("intent", "input_spec", "output_rules", "inverse_output_rules", "test_expansion")
    for field in fields:
        assert isinstance(instructions[field], str)
        assert len(instructions[field].split()) >= 10, f"{field} is too thin to guide a stage"
    assert "sample" in prompt["tags"]


def test_github_models_prompt_yml() -> None:
    data = inspect("summarize.prompt.yml")
    prompt = data["prompt"]
    assert prompt["format"] == "prompt.yml"
    assert prompt["template_engine"] == "mustache"
    assert prompt["model"]["id"] == "openai/gpt-4o-mini"
    assert set(prompt["model"]["parameters"]) == {"temperature", "max_tokens"}
    assert "input" in data["inputs_detected"]
    samples = prompt["test_samples"]
    assert samples
    assert all(s["expected"] for s in samples)
    assert all("input" in s["inputs"] for s in samples)
    assert set(data["render_value_sources"].values()) == {"testSamples[0]"}
    assert samples[0]["inputs"]["input"] in _rendered(data)
    # promptgen keeps evaluators for later stages; check the file itself declares both kinds.
    raw = yaml.safe_load((SAMPLES / "summarize.prompt.yml").read_text(encoding="utf-8"))
    evaluators = raw["evaluators"]
    assert any("startsWith" in e.get("string", {}) for e in evaluators)
    assert any("llm" in e for e in evaluators)


def test_bare_markdown_gets_an_input() -> None:
    path = SAMPLES / "haiku.md"
    assert not path.read_text(encoding="utf-8").lstrip().startswith("---")
    data = inspect("haiku.md")
    assert data["prompt"]["format"] == "markdown"
    assert data["inputs_declared"] == []
    assert data["inputs_detected"] == ["input"]
    assert data["rendered"][-1]["role"] == "user"
    assert data["prompt"]["messages"][-1]["content"] == "{{input}}"


def test_mustache_template() -> None:
    data = inspect("release-notes.prompty")
    prompt = data["prompt"]
    assert prompt["template_engine"] == "mustache"
    rendered = _rendered(data)
    for change in prompt["inputs"]["changes"]["sample"]:
        assert f"- [{change['kind']}] {change['title']}" in rendered
    assert "{{" not in rendered


def test_promptarchitect_prompt() -> None:
    data = inspect("promptarchitect/answer-from-article.prompt")
    prompt = data["prompt"]
    assert (prompt["format"], prompt["template_engine"]) == ("promptarchitect", "mustache")
    assert prompt["model"]["provider"] == "openai"
    samples = prompt["test_samples"]
    assert [s["source"] for s in samples] == [
        "tests/01-password-reset.md", "tests/02-export-pdf.md", "tests/03-refund.md",
        "tests/04-not-covered.md",
    ]  # fmt: skip
    assert all(set(s["inputs"]) == {"product", "article", "input"} for s in samples)
    tests = prompt["extra"]["promptarchitect"]["tests"]
    assert {"question", "score", "metric", "property", "keyword"} <= {
        t["type"] for t in tests.values()
    }
    assert [m["name"] for m in data["metrics"] if m["name"].startswith("pa:")] == [
        f"pa:{name}" for name in tests
    ]
    system = (SAMPLES / "promptarchitect" / "support-agent.md").read_text(encoding="utf-8")
    assert data["rendered"][0]["content"] == system.strip()
    assert samples[0]["inputs"]["input"] in data["rendered"][1]["content"]
    assert "{{" not in data["rendered"][1]["content"]


def test_lve_test() -> None:
    data = inspect("lve/discount-code-leak/openai--gpt-4o-mini/test.json")
    prompt = data["prompt"]
    assert (prompt["format"], prompt["template_engine"]) == ("lve", "format")
    assert data["inputs_declared"] == ["code", "request"]
    assert [s["source"] for s in prompt["test_samples"]] == ["recorded.jsonl:1", "recorded.jsonl:2"]
    assert prompt["extra"]["lve"]["checker_args"]["checker_name"] == "RegexChecker"
    assert "lve:RegexChecker" in [m["name"] for m in data["metrics"]]
    assert "NW-STAFF-42" in data["rendered"][0]["content"]


def test_verdict_judge() -> None:
    data = inspect("judges/reply-tone.verdict.md")
    prompt = data["prompt"]
    assert (prompt["format"], prompt["template_engine"]) == ("verdict", "verdict")
    judge = prompt["extra"]["verdict"]
    assert (judge["scale"], judge["judges"], judge["pool"], judge["pass"]) == (
        {"kind": "discrete", "min": 1, "max": 5}, 3, "mean", 4)  # fmt: skip
    assert judge["rubric"]["count"] == 3
    rendered = _rendered(data)
    assert "1. <rubric 1>" in rendered and "scale from 1 to 5" in rendered
    assert "{" not in rendered


def test_plain_text_prompt() -> None:
    data = inspect("commit-message.txt")
    assert data["prompt"]["format"] == "text"
    assert data["render_value_sources"] == {"diff": "sample"}
    assert [m["role"] for m in data["rendered"]] == ["system", "user"]


def test_every_prompt_has_its_instruction_list() -> None:
    """bench/quality.py measures rule recall against a hand-written list beside each
    prompt; a batch over samples/ skips those lists, saying why."""
    from promptgen.discover import find_prompts

    plan = find_prompts([str(SAMPLES)], ROOT / "promptgen-out")
    for found in plan.prompts:
        listed = found.path.parent / (found.path.name.split(".")[0] + ".instructions.txt")
        lines = [x for x in listed.read_text(encoding="utf-8").splitlines() if x.strip()]
        assert len(lines) >= 3, found.path
    skipped = {s.path.name: s.reason for s in plan.skipped}
    assert skipped["haiku.instructions.txt"].startswith("an instruction list")
    assert len(plan.prompts) == 11
