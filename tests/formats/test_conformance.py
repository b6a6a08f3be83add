"""The Prompty spec's parse/render vectors and real prompt files written by others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import corpus
from tests.conftest import needs_corpus

pytestmark = needs_corpus


def _ids(stage: str) -> list[Any]:
    if not corpus.available():
        return []
    return [pytest.param(v, id=v["name"]) for v in corpus.vectors(stage)]


def _skip_out_of_scope(vector: dict[str, Any]) -> None:
    reason = corpus.SKIPPED_VECTORS.get(vector["name"])
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("vector", _ids("parse"))
def test_parse_vector(vector: dict[str, Any]) -> None:
    _skip_out_of_scope(vector)
    assert corpus.parsed_messages(vector) == corpus.expected_messages(vector)


@pytest.mark.parametrize("vector", _ids("render"))
def test_render_vector(vector: dict[str, Any]) -> None:
    _skip_out_of_scope(vector)
    assert corpus.rendered(vector) == vector["expected"]["rendered"]


def test_vector_counts_and_skips() -> None:
    fig = corpus.figures()
    # Only thread vectors may be skipped, and each skip carries a written reason.
    assert fig.skipped == len(corpus.SKIPPED_VECTORS) == 2
    assert fig.vectors_total == len(corpus.vectors("parse")) + len(corpus.vectors("render"))
    assert fig.parse_passed + fig.render_passed == fig.vectors_total - fig.skipped
    print("\n".join(fig.lines()))


def _files() -> list[Any]:
    if not corpus.available():
        return []
    return [pytest.param(p, id=str(p.relative_to(corpus.CORPUS))) for p in corpus.corpus_files()]


@pytest.mark.parametrize("path", _files())
def test_corpus_file_loads_or_fails_deliberately(path: Path) -> None:
    outcome = corpus.load_outcome(path)
    expected_error = corpus.EXPECTED_FAILURES.get(path.name)
    if expected_error is None:
        assert outcome == "loaded"
    else:
        assert expected_error in outcome
        assert str(path) in outcome  # the error names the file


def test_every_expected_failure_exists() -> None:
    names = {p.name for p in corpus.corpus_files()}
    assert set(corpus.EXPECTED_FAILURES) <= names


def test_corpus_has_the_expected_size() -> None:
    assert len(corpus.corpus_files()) >= 200


def test_promptpex_demo_reads_fully() -> None:
    from promptgen import load_prompt

    prompt = load_prompt(corpus.CORPUS / "promptpex/samples/demo/demo.prompty")
    assert [s.name for s in prompt.scenarios] == ["English", "French"]
    assert prompt.scenarios[1].parameters == {"locale": "fr-FR"}
    assert len(prompt.test_samples) == 2 and prompt.test_samples[0].expected == "funny"
    assert prompt.instructions.input_spec and prompt.instructions.output_rules
    assert prompt.inputs["joke"].sample.startswith("how do you make")
    assert prompt.inputs["locale"].default == "en-us"
    assert [m.role for m in prompt.messages] == ["system", "user"]


def test_entities_markdown_gets_an_input() -> None:
    from promptgen import load_prompt

    prompt = load_prompt(corpus.CORPUS / "promptpex/samples/demo/entities.md")
    assert list(prompt.inputs) == ["input"]
    assert prompt.messages[-1].role == "user" and prompt.messages[-1].content == "{{input}}"


def test_gh_models_json_schema_prompt() -> None:
    from promptgen import load_prompt

    prompt = load_prompt(corpus.CORPUS / "gh-models/json_schema_prompt.yml")
    assert prompt.model.response_format["type"] == "json_schema"
    assert prompt.model.response_format["json_schema"]["name"] == "animal_description"
    assert [s.inputs for s in prompt.test_samples] == [
        {"animal": "dog"},
        {"animal": "cat"},
        {"animal": "elephant"},
    ]
    assert list(prompt.inputs) == ["animal"]
