"""The promptarchitect export: a Promptarchitect prompt round-trips (tests, samples,
model, system message, body), any other prompt becomes one (rules as question tests,
checks that map), and templates are converted where that is exact."""

from __future__ import annotations

from pathlib import Path

import yaml

from promptgen.context import Context, save_context
from promptgen.export.common import ExportResult, ExportSettings, exported_tests
from promptgen.export.promptarchitect import write
from promptgen.formats import load_prompt
from promptgen.model import Message, PromptInput, PromptUnderTest
from promptgen.results import Rule, Test
from promptgen.selection import sample_tests
from tests.conftest import run_cli
from tests.export.conftest import SavedRun
from tests.formats.test_promptarchitect import CODE, DOCS


def front(path: Path) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def pa_context(tmp_path: Path, text: str) -> Context:
    """A run of a Promptarchitect prompt: its samples, plus one generated test."""
    folder = tmp_path / "src"
    (folder / "roles").mkdir(parents=True)
    (folder / "roles" / "poet.md").write_text("You are a careful editor.\n")
    for sub in ("tests", "samples"):
        (folder / sub).mkdir()
        (folder / sub / "a.md").write_text("---\ntopic: the sea\nsource: S.\n---\nWaves.\n")
        (folder / sub / "b.md").write_text("---\n---\n--- a body that starts like a fence\n")
    prompt = load_prompt(_write(folder / "poem.prompt", text))
    ctx = Context.new(prompt)
    ctx.tests = sample_tests(prompt)
    inputs = {"topic": "rain", "input": "Drops on a roof.", "source": "Rain."}
    ctx.tests.append(Test(id=Test.make_id("generated", None, None, inputs), inputs=inputs))
    return ctx


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_promptarchitect_prompt_round_trips(tmp_path: Path) -> None:
    for text, name in ((DOCS, "docs"), (CODE, "code")):
        ctx = pa_context(tmp_path / name, text)
        result = write(ctx, tmp_path / name / "out", ExportSettings())
        assert result.skipped == []
        written = result.paths[0]
        back = load_prompt(written)
        source = ctx.prompt
        assert back.format == "promptarchitect" and back.name == "poem"
        assert back.extra["promptarchitect"]["tests"] == source.extra["promptarchitect"]["tests"]
        assert (
            back.extra["promptarchitect"]["metadata"]
            == (source.extra["promptarchitect"]["metadata"])
        )
        assert (back.model.provider, back.model.id, back.model.parameters) == (
            source.model.provider,
            source.model.id,
            source.model.parameters,
        )
        assert [(m.role, m.content) for m in back.messages] == [
            (m.role, m.content) for m in source.messages
        ]
        # One sample per exported test, in order, with the same inputs.
        assert [s.inputs for s in back.test_samples] == [t.inputs for t in exported_tests(ctx)]
        assert back.warnings == []


def test_the_files_written_for_a_promptarchitect_prompt(tmp_path: Path) -> None:
    ctx = pa_context(tmp_path, CODE)
    out = tmp_path / "out"
    result = write(ctx, out, ExportSettings(models=["anthropic/claude-3-haiku", "m2"]))
    prompt_file, system_file, *samples = result.paths
    assert (prompt_file.name, system_file.name) == ("poem.prompt", "system_role.md")
    assert system_file.read_text() == "You are a careful editor.\n"
    assert [p.relative_to(out).as_posix() for p in samples] == [
        f"tests/{i:03d}-{t.id}.md" for i, t in enumerate(exported_tests(ctx), start=1)
    ]
    data = front(prompt_file)
    assert list(data) == [
        "provider", "model", "prompt_version", "input", "output", "output_format",
        "temperature", "max_tokens", "top_p", "presence_penalty", "frequency_penalty",
        "system_role", "test_path", "tests",
    ]  # fmt: skip
    assert (data["provider"], data["model"], data["prompt_version"]) == (
        "anthropic", "claude-3-haiku", "1.1",
    )  # fmt: skip
    # Promptarchitect's code shape: unit with limit or equals at the top of the test.
    assert data["tests"]["paragraphs"] == {
        "type": "property", "unit": "paragraphs", "limit": {"min": 1, "max": 3},
    }  # fmt: skip
    assert data["tests"]["exact"] == {"type": "property", "unit": "sentences", "equals": 4}
    assert data["tests"]["grounded"]["limit"] == {"min": 0.8}
    assert prompt_file.read_text().endswith("---\n\nSummarise the text as JSON. {{input}}\n")
    assert result.skipped == ["model m2: a Promptarchitect file names one model "
                              "(anthropic/claude-3-haiku is written)"]  # fmt: skip
    # Every sample has a frontmatter, so a body starting like a fence stays the body.
    bodies = [p.read_text() for p in samples]
    assert "---\n---\n\n--- a body that starts like a fence\n" in bodies
    again = write(ctx, out, ExportSettings())  # a second export replaces the samples
    assert sorted((out / "tests").iterdir()) == sorted(again.paths[2:])


def test_any_prompt_becomes_a_promptarchitect_prompt(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx
    result = write(ctx, tmp_path, ExportSettings())
    data = front(result.paths[0])
    rules = [r.text for r in ctx.rules]
    tests = data["tests"]
    assert [tests[f"rule_{i}"] for i in range(1, len(rules) + 1)] == [
        {"type": "question", "prompt": f"Does the output follow this rule? {rule}"}
        for rule in rules
    ]
    # --check icontains=answer, not-contains=VIOLATION, word-count={max: 40}, regex=^[a-z]
    assert tests["word_count_3"] == {"type": "property", "unit": "words", "limit": {"max": 40}}
    assert len(tests) == len(rules) + 1
    assert (data["provider"], data["model"]) == ("openai", "gpt-4o-mini")
    assert data["temperature"] == 0.2 and data["max_tokens"] == 50
    assert result.skipped[:4] == [
        "model azure/my-deployment: a Promptarchitect file names one model "
        "(openai/gpt-4o-mini is written)",
        "check 'icontains=answer': Promptarchitect's keyword test is case-sensitive",
        "check 'not-contains=VIOLATION': Promptarchitect tests cannot be negated",
        "check 'regex=^[a-z]': Promptarchitect has no test that decides the same",
    ]
    back = load_prompt(result.paths[0])
    assert back.messages[1].content == "{{review}} {{input}}"  # Promptarchitect appends it
    # Samples: the review in the frontmatter, an empty body (the prompt has no `input`).
    assert [s.inputs for s in back.test_samples] == [
        {"review": t.inputs["review"], "input": ""} for t in exported_tests(ctx)
    ]
    system = (tmp_path / "system_role.md").read_text()
    assert system.strip() == ctx.prompt.messages[0].content.strip()


def test_templates_are_converted_where_that_is_exact(tmp_path: Path) -> None:
    def exported(engine: str, content: str) -> tuple[ExportResult, str]:
        prompt = PromptUnderTest(
            name="facts",
            messages=[Message(role="user", content=content)],
            inputs={"topic": PromptInput(name="topic"), "input": PromptInput(name="input")},
            template_engine=engine,  # type: ignore[arg-type]
        )
        ctx = Context.new(prompt)
        ctx.rules = [Rule.make("The output is one sentence.")]
        out = tmp_path / engine
        result = write(ctx, out, ExportSettings())
        return result, load_prompt(result.paths[0]).messages[1].content

    result, body = exported("format", "Tell me about {topic}: {input}")  # LVE's str.format
    assert (body, result.skipped) == ("Tell me about {{topic}}: {{input}}", [])
    result, body = exported("jinja2", "About {{ topic }}: {{input}}")
    assert (body, result.skipped) == ("About {{topic}}: {{input}}", [])
    result, body = exported("jinja2", "{% if topic %}About {{ topic }}{% endif %} {{input}}")
    assert result.skipped == [
        "the prompt's template: Jinja2 logic (conditions, loops, filters) has no Mustache "
        "equivalent; written as is, to convert by hand"
    ]
    assert result.notes[0] == "no model given: openai/gpt-4o-mini is written"


def test_promptgen_export_writes_the_target(tmp_path: Path) -> None:
    ctx = pa_context(tmp_path, DOCS)
    path = save_context(ctx, tmp_path / "run" / "context.json")
    result = run_cli("export", str(path), "--to", "promptarchitect", "--out", str(tmp_path / "x"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "promptarchitect: 4 file(s)",
        f"  {tmp_path / 'x' / 'promptarchitect' / 'poem.prompt'}",
        f"  {tmp_path / 'x' / 'promptarchitect' / 'tests' / ('001-' + ctx.tests[0].id + '.md')}",
    ]
    assert result.stderr == (
        "promptgen: promptarchitect: test plain: format text is in Promptarchitect's docs, "
        "not its code\npromptgen: promptarchitect: 3 sample file(s) in tests/\n"
    )
