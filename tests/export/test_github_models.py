"""The github-models export: a new .prompt.yml from any prompt, and the round trip of an
author's .prompt.yml (comments, order, quoting and rows kept; only additions)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    ExportResult,
    ExportSettings,
    expected_output,
    exported_tests,
    models_under_test,
)
from promptgen.export.github_models import write
from promptgen.formats import load_prompt
from promptgen.model import Message
from promptgen.rendering.render import render_messages
from promptgen.results import Test
from tests import corpus
from tests.conftest import REPO
from tests.export.conftest import SENTIMENT_TESTS, SavedRun

# The keys of gh models' File struct and its parts (pkg/prompt/prompt.go, yaml tags).
FILE_KEYS = {
    "name", "description", "model", "modelParameters", "responseFormat", "jsonSchema",
    "messages", "testData", "evaluators",
}  # fmt: skip
PARAMETER_KEYS = {"maxTokens", "temperature", "topP"}
MESSAGE_KEYS = {"role", "content"}
EVALUATOR_KEYS = {"name", "string", "llm", "uses"}
STRING_KEYS = {"endsWith", "startsWith", "contains", "equals"}
LLM_KEYS = {"modelId", "prompt", "choices", "systemPrompt"}
CHOICE_KEYS = {"choice", "score"}
# Words a judge's reply may hold around its verdict; gh models matches choices as
# substrings, so no choice may hide inside one of them.
COMMON_WORDS = (
    "broken", "token", "okay", "error", "correct", "incorrect", "compliant", "yes", "no",
    "rule", "rules", "answer", "output", "model", "prompt", "input", "none", "not", "word",
)  # fmt: skip

SAMPLE = REPO / "samples" / "summarize.prompt.yml"
COMMENTS = (
    "# Summaries for the weekly digest (top comment)",
    "  # rows written by hand (inside testData)",
    "# owner: docs team",
)


def export(ctx: Context, out: Path, **settings: Any) -> tuple[ExportResult, dict[str, Any]]:
    result = write(ctx, out, ExportSettings(**settings))
    assert len(result.paths) == 1
    return result, yaml.safe_load(result.paths[0].read_text(encoding="utf-8"))


def author_copy(tmp_path: Path, run: SavedRun) -> tuple[Context, Path]:
    """samples/summarize.prompt.yml with extra comments and an unknown key, in tmp."""
    text = SAMPLE.read_text(encoding="utf-8")
    text = f"{COMMENTS[0]}\n{text}"
    text = text.replace("testData:\n", f"testData:\n{COMMENTS[1]}\n", 1)
    text = text.replace("model: openai/gpt-4o-mini\n", "model: openai/gpt-4o-mini  # cheap\n", 1)
    text += f"{COMMENTS[2]}\nreviewers: ['ana', \"bo\"]\n"
    path = tmp_path / "author" / "summarize.prompt.yml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    ctx = run.ctx.model_copy(deep=True)
    ctx.prompt.source = str(path)
    return ctx, path


def keys_of(doc: dict[str, Any]) -> None:
    """Every key written is one gh models reads."""
    assert set(doc) <= FILE_KEYS
    assert set(doc.get("modelParameters") or {}) <= PARAMETER_KEYS
    for message in doc["messages"]:
        assert set(message) == MESSAGE_KEYS
    for evaluator in doc.get("evaluators") or []:
        assert set(evaluator) <= EVALUATOR_KEYS
        assert set(evaluator.get("string") or {}) <= STRING_KEYS
        llm = evaluator.get("llm") or {}
        assert set(llm) <= LLM_KEYS
        for choice in llm.get("choices", []):
            assert set(choice) == CHOICE_KEYS


def gh_template(text: str, data: dict[str, Any]) -> str:
    """gh models' templating: each `{{key}}` of the row replaced by its value as text."""
    for key, value in data.items():
        text = text.replace("{{" + key + "}}", str(value))
    return text


def gh_choice(reply: str, choices: list[dict[str, Any]]) -> float | None:
    """gh models' reading of a judge's reply: the first choice found in it, ignoring case."""
    reply = reply.strip().lower()
    return next((c["score"] for c in choices if c["choice"].lower() in reply), None)


def evaluator(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [e for e in doc["evaluators"] if e["name"] == name]
    return found


# -- a new document: the sentiment run (.prompty) ---------------------------------------


def test_sentiment_file_loads_back_with_every_test(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx
    result, doc = export(ctx, tmp_path)
    tests = exported_tests(ctx)
    assert result.paths == [tmp_path / "classify-sentiment.prompt.yml"]
    assert len(tests) == SENTIMENT_TESTS
    assert len(doc["testData"]) == SENTIMENT_TESTS
    loaded = load_prompt(result.paths[0])
    assert loaded.name == "classify-sentiment"
    assert [m.role for m in loaded.messages] == ["system", "user"]
    assert loaded.messages[1].content == "{{review}}"
    assert loaded.messages[0].content == ctx.prompt.messages[0].content
    assert list(loaded.inputs) == ["review"]
    assert len(loaded.test_samples) == SENTIMENT_TESTS
    assert [s.inputs["review"] for s in loaded.test_samples] == [t.inputs["review"] for t in tests]
    assert loaded.checks == [{"icontains": "answer", "name": "icontains=answer"}]
    assert loaded.model.parameters == {"temperature": 0.2, "max_tokens": 50}
    assert doc["modelParameters"] == {"temperature": 0.2, "maxTokens": 50}


def test_sentiment_rows_carry_the_accepted_groundtruth(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx
    _, doc = export(ctx, tmp_path)
    tests = exported_tests(ctx)
    assert all(t.groundtruth_status == "ok" for t in tests)
    assert [row["expected"] for row in doc["testData"]] == [t.groundtruth for t in tests]
    assert [set(row) for row in doc["testData"]] == [{"review", "expected"}] * SENTIMENT_TESTS


def test_sentiment_model_is_the_first_model_under_test(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    # the run's models in first-run order (which one ran first varies)
    first, other = models_under_test(sentiment_run.ctx, ExportSettings())
    assert {first, other} == {"openai/gpt-4o-mini", "azure/my-deployment"}
    result, doc = export(sentiment_run.ctx, tmp_path)
    assert doc["model"] == first
    assert any(
        s.startswith(f"model {other}: a .prompt.yml names one model") for s in result.skipped
    )
    _, doc = export(sentiment_run.ctx, tmp_path / "b", models=["openai/gpt-4.1"])
    assert doc["model"] == "openai/gpt-4.1"


def test_compliance_evaluator_choices_never_overlap(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    _, doc = export(sentiment_run.ctx, tmp_path)
    llm = evaluator(doc, "rules compliance")["llm"]
    assert llm["modelId"] == "openai/gpt-4o-mini"
    choices = llm["choices"]
    assert choices == [{"choice": "fail", "score": 0.0}, {"choice": "pass", "score": 1.0}]
    words = [c["choice"] for c in choices]
    for word in words:
        assert [w for w in words if word in w] == [word]
        assert not [c for c in COMMON_WORDS if word in c]
    # gh models reads a reply as the first choice found in it, ignoring case
    assert gh_choice("PASS", choices) == 1.0
    assert gh_choice(" fail\n", choices) == 0.0
    assert gh_choice("broken", choices) is None
    assert gh_choice("pass, but one rule failed", choices) == 0.0
    # the judge is told to answer with those words, and sees the rules and the output
    assert "pass when no rule is broken, fail when" in llm["systemPrompt"]
    assert "{{" not in llm["systemPrompt"]  # gh models does not template the system prompt
    assert llm["prompt"].endswith("<ANSWER>\n{{completion}}\n</ANSWER>\n\nOne word: pass or fail.")
    assert "<INPUT>\n{{review}}\n</INPUT>" in llm["prompt"]
    rules = [r.text for r in sentiment_run.ctx.rules]
    assert len(rules) == 4
    assert all(f"{i}. {text}" in llm["prompt"] for i, text in enumerate(rules, 1))


def test_compliance_judge_model_is_the_runs_eval_model(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.options.models.eval_models = ["openai/gpt-4.1", "mistral-ai/x"]
    _, doc = export(ctx, tmp_path / "a")
    assert evaluator(doc, "rules compliance")["llm"]["modelId"] == "openai/gpt-4.1"
    ctx.options.models.eval_models = ["eval"]
    result, doc = export(ctx, tmp_path / "b")
    assert evaluator(doc, "rules compliance")["llm"]["modelId"] == "openai/gpt-4o-mini"
    assert any("judge model eval has no provider" in n for n in result.notes)


def test_sentiment_checks_map_or_are_skipped_with_reasons(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    result, doc = export(sentiment_run.ctx, tmp_path)
    assert [e["name"] for e in doc["evaluators"]] == ["rules compliance", "icontains=answer"]
    assert evaluator(doc, "icontains=answer") == {
        "name": "icontains=answer",
        "string": {"contains": "answer"},
    }
    skipped = {line.split(":")[0]: line for line in result.skipped}
    assert "cannot negate" in skipped["check 'not-contains=VIOLATION'"]
    assert "only test equals, contains" in skipped["check 'word-count={max"]
    assert "only test equals, contains" in skipped["check 'regex=^[a-z]'"]
    assert "0-100 score" in skipped["metric accuracy"]
    custom = skipped["metric classify-sentiment-compliance (classify-sentiment.metric.prompty)"]
    assert "custom judges" in custom
    assert len(result.skipped) == 6  # 3 checks, 2 metrics, 1 model


def test_case_sensitive_and_expected_checks(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.options.evaluation.checks = ["contains=Good", "starts-with=x"]
    ctx.prompt.checks = [
        {"equals": "{{expected}}"},
        {"iends-with": "{{review}}"},
        {"istarts-with": "", "name": "empty"},
    ]
    result, doc = export(ctx, tmp_path)
    strings = {e["name"]: e["string"] for e in doc["evaluators"] if "string" in e}
    assert strings == {
        "equals={{expected}}": {"equals": "{{expected}}"},
        "iends-with={{review}}": {"endsWith": "{{review}}"},
    }
    assert "contains ignores case; this check does not" in " ".join(result.skipped)
    assert "startsWith ignores case; this check does not" in " ".join(result.skipped)
    assert any(s.startswith("check 'empty': ") for s in result.skipped)
    # gh models fills `{{expected}}` from the row: every row carries it
    row = doc["testData"][0]
    assert gh_template(strings["equals={{expected}}"]["equals"], row) == row["expected"]


def test_every_key_is_one_gh_models_reads(sentiment_run: SavedRun, tmp_path: Path) -> None:
    _, doc = export(sentiment_run.ctx, tmp_path)
    keys_of(doc)
    assert list(doc) == [
        "name", "description", "model", "modelParameters", "messages", "testData", "evaluators",
    ]  # fmt: skip


def test_rows_fill_every_placeholder_gh_models_templates(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    _, doc = export(sentiment_run.ctx, tmp_path)
    llm = evaluator(doc, "rules compliance")["llm"]
    for row in doc["testData"]:
        user = gh_template(doc["messages"][1]["content"], row)
        assert user == row["review"]
        judged = gh_template(llm["prompt"], {**row, "completion": "positive"})
        assert "{{" not in judged
        assert f"<INPUT>\n{row['review']}\n</INPUT>" in judged


def test_json_schema_response_format(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    schema = {
        "name": "label",
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    }
    fmt = {"type": "json_schema", "json_schema": schema}
    ctx.prompt.model.parameters["response_format"] = fmt
    ctx.prompt.model.parameters["seed"] = 7
    result, doc = export(ctx, tmp_path)
    keys_of(doc)
    assert doc["responseFormat"] == "json_schema"
    assert isinstance(doc["jsonSchema"], str)
    assert load_prompt(result.paths[0]).model.response_format == fmt
    assert "parameter seed: gh models sends only maxTokens, temperature and topP" in (
        result.skipped
    )
    ctx.prompt.model.parameters["response_format"] = {"type": "json_object"}
    _, doc = export(ctx, tmp_path / "b")
    assert doc["responseFormat"] == "json_object"
    assert "jsonSchema" not in doc


def test_template_logic_falls_back_to_rendered_messages(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.prompt.messages[1] = Message(
        role="user", content="{% if review %}Review: {{ review | upper }}{% endif %}"
    )
    result, doc = export(ctx, tmp_path)
    system = ctx.prompt.messages[0].content
    assert doc["messages"] == [
        {"role": "system", "content": system},
        {"role": "user", "content": "{{prompt_message_2}}"},
    ]
    tests = exported_tests(ctx)
    assert len(doc["testData"]) == len(tests) == SENTIMENT_TESTS
    for row, test in zip(doc["testData"], tests, strict=True):
        assert row["prompt_message_2"] == "Review: " + str(test.inputs["review"]).upper()
        assert row["review"] == test.inputs["review"]
        assert row["expected"] == expected_output(test)
    assert any("{{prompt_message_2}}" in n for n in result.notes)
    loaded = load_prompt(result.paths[0])
    assert list(loaded.inputs) == ["prompt_message_2"]
    assert len(loaded.test_samples) == SENTIMENT_TESTS
    sample = loaded.test_samples[0]
    rendered = render_messages(loaded, sample.inputs)
    assert rendered[1]["content"] == "Review: " + str(tests[0].inputs["review"]).upper()


def test_in_place_on_a_prompty_writes_a_new_file(sentiment_run: SavedRun, tmp_path: Path) -> None:
    source = REPO / "samples" / "classify-sentiment.prompty"
    before = source.read_bytes()
    result, _ = export(sentiment_run.ctx, tmp_path, in_place=True)
    assert result.paths == [tmp_path / "classify-sentiment.prompt.yml"]
    assert source.read_bytes() == before
    assert any("--in-place applies to a .prompt.yml" in n for n in result.notes)


# -- round trip: the summarize run (.prompt.yml) ----------------------------------------


def test_round_trip_keeps_the_author_file_and_adds_the_tests(
    summarize_run: SavedRun, tmp_path: Path
) -> None:
    ctx, author = author_copy(tmp_path, summarize_run)
    before = author.read_bytes()
    out = tmp_path / "out"
    result, doc = export(ctx, out)
    assert result.paths == [out / "summarize.prompt.yml"]
    assert author.read_bytes() == before  # never written without --in-place
    written = result.paths[0].read_text(encoding="utf-8")
    # every line of the author's file, in order: comments, quoting, key order
    lines = iter(written.splitlines())
    assert all(line in lines for line in before.decode().splitlines())
    for comment in COMMENTS:
        assert comment in written.splitlines()
    assert "model: openai/gpt-4o-mini  # cheap" in written
    assert '      startsWith: "Summary:"' in written
    assert doc["reviewers"] == ["ana", "bo"]
    assert list(doc)[-1] == "reviewers"
    # the author's rows first and unchanged, then one row per generated test
    original = yaml.safe_load(before)
    tests = exported_tests(ctx)
    assert len(tests) == 15
    assert [t.origin for t in tests[:2]] == ["sample", "sample"]
    assert doc["testData"][:2] == original["testData"]
    assert len(doc["testData"]) == len(tests) == 15
    assert [r["input"] for r in doc["testData"][2:]] == [t.inputs["input"] for t in tests[2:]]
    assert all(set(r) == {"audience", "input"} for r in doc["testData"][2:])
    assert doc["messages"] == original["messages"]
    assert doc["model"] == original["model"]
    assert doc["modelParameters"] == original["modelParameters"]
    # the author's evaluators first; the compliance judge added; the check not repeated
    assert [e["name"] for e in doc["evaluators"]] == [
        "starts with the summary label",
        "faithful and short",
        "rules compliance",
    ]
    assert doc["evaluators"][:2] == original["evaluators"]
    assert "testData: kept 2 rows, added 13" in result.notes
    loaded = load_prompt(result.paths[0])
    assert len(loaded.test_samples) == 15
    assert loaded.checks == [{"istarts-with": "Summary:", "name": "starts with the summary label"}]
    assert list(loaded.inputs) == ["audience", "input"]
    assert loaded.extra == {"reviewers": ["ana", "bo"]}
    keys_of({k: v for k, v in doc.items() if k != "reviewers"})


def test_a_second_export_adds_nothing(summarize_run: SavedRun, tmp_path: Path) -> None:
    ctx, _ = author_copy(tmp_path, summarize_run)
    out = tmp_path / "out"
    first, _ = export(ctx, out)
    once = first.paths[0].read_bytes()
    second, doc = export(ctx, out)
    assert second.paths[0].read_bytes() == once
    assert len(doc["testData"]) == 15
    assert [e["name"] for e in doc["evaluators"]].count("rules compliance") == 1
    assert "testData: kept 15 rows, added 0" in second.notes


def test_in_place_writes_the_author_file_only(summarize_run: SavedRun, tmp_path: Path) -> None:
    ctx, author = author_copy(tmp_path, summarize_run)
    before = author.read_text(encoding="utf-8")
    out = tmp_path / "out"
    result, doc = export(ctx, out, in_place=True)
    assert result.paths == [author]
    assert not out.exists()
    assert len(doc["testData"]) == 15
    after = author.read_text(encoding="utf-8")
    lines = iter(after.splitlines())
    assert all(line in lines for line in before.splitlines())
    assert [p.name for p in author.parent.iterdir()] == ["summarize.prompt.yml"]  # no temp
    _, doc = export(ctx, out, in_place=True)
    assert author.read_text(encoding="utf-8") == after
    assert len(doc["testData"]) == 15


def test_rows_already_in_the_file_are_not_repeated(summarize_run: SavedRun, tmp_path: Path) -> None:
    ctx, _ = author_copy(tmp_path, summarize_run)
    generated = exported_tests(ctx)[2]
    ctx.tests.append(Test(id="test-copy", inputs=dict(generated.inputs), origin="generated"))
    _, doc = export(ctx, tmp_path / "out")
    assert len(exported_tests(ctx)) == 16
    assert len(doc["testData"]) == 15
    assert [r["input"] for r in doc["testData"]].count(generated.inputs["input"]) == 1


def test_missing_author_file_is_rebuilt_from_the_run(
    summarize_run: SavedRun, tmp_path: Path
) -> None:
    ctx = summarize_run.ctx.model_copy(deep=True)
    ctx.prompt.source = str(tmp_path / "gone" / "summarize.prompt.yml")
    result, doc = export(ctx, tmp_path / "out")
    text = result.paths[0].read_text(encoding="utf-8")
    assert text.startswith("# Rebuilt by `promptgen export` from the saved run:")
    assert any("its comments are lost" in n for n in result.notes)
    original = yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))
    assert doc["messages"] == original["messages"]
    assert doc["testData"][:2] == original["testData"]
    assert len(doc["testData"]) == 15
    assert not (tmp_path / "gone").exists()


def test_unwritable_or_broken_output_is_a_bad_input_error(
    summarize_run: SavedRun, tmp_path: Path
) -> None:
    ctx, _ = author_copy(tmp_path, summarize_run)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BadInputError, match="cannot write"):
        write(ctx, blocker, ExportSettings())
    out = tmp_path / "out"
    out.mkdir()
    (out / "summarize.prompt.yml").write_text("messages: [unclosed\n")
    with pytest.raises(BadInputError, match="cannot read it as YAML"):
        write(ctx, out, ExportSettings())


# -- the shared corpus: gh models' own example files ------------------------------------


def corpus_prompts() -> list[Path]:
    folder = corpus.CORPUS / "gh-models"
    if not folder.is_dir():
        pytest.skip(f"shared corpus not found at {corpus.CORPUS}")
    return sorted(p for p in folder.glob("*.yml") if "messages" in yaml.safe_load(p.read_text()))


def test_top_level_keys_are_those_gh_models_examples_use(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    used = {key for path in corpus_prompts() for key in yaml.safe_load(path.read_text())}
    assert used == FILE_KEYS
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.prompt.model.parameters["response_format"] = {"type": "json_object"}
    _, doc = export(ctx, tmp_path)
    assert set(doc) <= used
    # the examples hold no `llm:` evaluator: those keys are checked against the File
    # struct (keys_of), as is topP, which no example sets
    evaluator_keys = {
        key
        for path in corpus_prompts()
        for e in yaml.safe_load(path.read_text()).get("evaluators", [])
        for key in e
    }
    assert evaluator_keys == {"name", "string", "uses"}


# ruamel writes one indentation style per file; this example indents mappings by 4 but
# its `messages:` list by 4 too, and `modelParameters` comes back indented by 2.
REINDENTED = {"test_generate.yml"}


def test_every_gh_models_example_round_trips(tmp_path: Path) -> None:
    reindented = set()
    for path in corpus_prompts():
        copy = tmp_path / path.stem / path.name
        copy.parent.mkdir()
        shutil.copy(path, copy)
        prompt = load_prompt(copy)
        ctx = Context(prompt=prompt)
        # nothing to add: the file is copied byte for byte
        result = write(ctx, tmp_path / path.stem / "same", ExportSettings())
        assert result.paths[0].read_bytes() == path.read_bytes(), path.name
        # one new test: the author's content is kept, the row appended
        values = {name: f"value of {name}" for name in prompt.inputs}
        ctx.tests.append(Test(id="test-new", inputs=values, origin="generated"))
        result = write(ctx, tmp_path / path.stem / "new", ExportSettings())
        again = load_prompt(result.paths[0])
        assert [m.model_dump(exclude={"line"}) for m in again.messages] == [
            m.model_dump(exclude={"line"}) for m in prompt.messages
        ], path.name
        assert again.model == prompt.model, path.name
        assert again.checks == prompt.checks, path.name
        samples = len(prompt.test_samples)
        assert again.test_samples[:samples] == prompt.test_samples, path.name
        assert [s.inputs for s in again.test_samples[samples:]] == [values], path.name
        assert again.extra == prompt.extra, path.name
        # every line kept, in order (a whitespace-only line in a block scalar comes back
        # empty: the same text)
        lines = iter(line.rstrip() for line in result.paths[0].read_text().splitlines())
        if not all(line.rstrip() in lines for line in path.read_text().splitlines()):
            reindented.add(path.name)
    assert reindented == REINDENTED
