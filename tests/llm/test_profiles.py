"""Provider profiles (promptgen/llm/profiles.py): which profile a model is called under,
a schema shaped to each before it is sent (llm/shaping.py), what a schema breaks
(llm/schema_rules.py), and the fake server that refuses it as the provider would
(tests/enforcing.py). The whole pipeline against them: tests/llm/test_profile_runs.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from promptgen.errors import BadInputError
from promptgen.evaluation.judges import ScoreVerdict
from promptgen.importing.named import ImportAnswer
from promptgen.llm import load_settings
from promptgen.llm.profiles import PROFILES, profile_for
from promptgen.llm.schema_rules import problems
from promptgen.llm.schema_walk import object_depth, union_count
from promptgen.llm.shaping import shape
from promptgen.llm.structured import output_spec, provider_schema, strict_schema
from promptgen.model import PromptInput, PromptUnderTest
from promptgen.prompting.bounded import Items, Text
from promptgen.prompting.cases import cases_model
from tests.conftest import run_cli
from tests.fakellm import FakeLLM
from tests.fakellm_aio import AsyncFakeLLM


@pytest.mark.parametrize(
    ("model", "api_base", "chosen", "expected"),
    [
        ("openai/gpt-4o-mini", None, None, "openai"),
        ("gpt-4o-mini", None, None, "openai"),
        ("azure/my-deployment", None, None, "azure"),
        ("github/gpt-4o-mini", None, None, "azure"),
        ("openai/ft:gpt-4o-mini-2024-07-18:acme::abc123", None, None, "openai-ft"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "http://127.0.0.1:9/v1", None, "openai-ft"),
        ("anthropic/claude-sonnet-4-5", None, None, "anthropic"),
        ("vertex_ai/claude-sonnet-4-5", None, None, "anthropic"),
        ("gemini/gemini-2.5-flash", None, None, "gemini"),
        ("vertex_ai/gemini-2.5-pro", None, None, "gemini"),
        ("ollama/llama3.2", None, None, "ollama"),
        ("groq/llama-3.3-70b", None, None, "compatible"),
        ("gpt-4o", "https://acme.openai.azure.com/openai/v1", None, "azure"),
        ("gpt-4o", "https://api.openai.com/v1", None, "openai"),
        ("llama3.2", "http://localhost:11434/v1", None, "ollama"),
        ("openai/default", "http://127.0.0.1:8080/v1", None, "compatible"),
        ("anthropic/claude-sonnet-4-5", "http://127.0.0.1:4000/v1", None, "anthropic"),
        ("anything", "http://127.0.0.1:8080/v1", "azure", "azure"),
    ],
)
def test_profile_for_a_model_and_server(
    model: str, api_base: str | None, chosen: str | None, expected: str
) -> None:
    assert profile_for(model, api_base, chosen) == expected


def test_a_bound_a_profile_refuses_is_told_in_the_description() -> None:
    schema = output_spec(ScoreVerdict).schema
    assert schema["properties"]["score"] == {"maximum": 100, "minimum": 0, "type": "integer"}
    for name in ("azure", "openai-ft", "anthropic"):
        score = shape(schema, name)["properties"]["score"]
        assert score == {"type": "integer", "description": "At least 0, at most 100."}, name
    for name in ("openai", "gemini", "compatible", "ollama"):  # they take integer bounds
        assert shape(schema, name)["properties"]["score"] == schema["properties"]["score"]
    assert schema["properties"]["score"]["minimum"] == 0  # the spec's schema is unchanged


class _Bounded(BaseModel):
    ratio: float = Field(ge=0, le=1, description="A share.")
    slug: str = Field(pattern=r"[a-z]+")
    notes: Items(Text(40), 3, min_length=2)  # type: ignore[valid-type]


def test_each_profile_keeps_what_it_takes_and_tells_the_rest() -> None:
    schema = strict_schema(_Bounded)
    props = {name: shape(schema, name)["properties"] for name in PROFILES}
    assert props["openai"]["ratio"] == {
        "description": "A share.", "maximum": 1, "minimum": 0, "type": "number"
    }  # fmt: skip
    assert props["openai"]["notes"] == {
        "items": {"type": "string", "description": "At most 40 characters."},
        "maxItems": 3, "minItems": 2, "type": "array",
    }  # fmt: skip
    assert props["azure"]["notes"] == {
        "items": {"type": "string", "description": "At most 40 characters."},
        "type": "array", "description": "At least 2 items, at most 3 items.",
    }  # fmt: skip
    assert props["azure"]["slug"] == {
        "type": "string", "description": "Matching the regular expression [a-z]+."
    }  # fmt: skip
    # Anthropic takes a minItems of 0 or 1 only; llama.cpp a pattern written ^...$ and
    # numeric bounds on integers only.
    assert props["anthropic"]["notes"]["description"] == "At least 2 items, at most 3 items."
    assert props["anthropic"]["slug"] == {"pattern": "[a-z]+", "type": "string"}
    assert props["compatible"]["slug"]["description"] == "Matching the regular expression [a-z]+."
    assert props["compatible"]["ratio"]["description"] == "A share. At least 0, at most 1."
    assert props["gemini"]["ratio"]["maximum"] == 1 and "pattern" not in props["gemini"]["slug"]
    for name in PROFILES:
        assert problems(shape(schema, name), name, "_Bounded") == [], name


def _prompt(inputs: dict[str, PromptInput]) -> PromptUnderTest:
    return PromptUnderTest(name="p", messages=[], inputs=inputs)


def test_nullable_inputs_stay_within_anthropics_union_limit() -> None:
    """Three nullable inputs, three tests under each of two rules: 18 union fields once
    litellm inlines the definitions; Anthropic takes 16."""
    prompt = _prompt({n: PromptInput(name=n, type="string") for n in ("a", "b", "c")})
    model = cases_model(prompt, ["a", "b", "c"], {"R1": 3, "I1": 3})
    schema = output_spec(model).schema
    assert union_count(schema) == 18
    assert [p.text for p in problems(schema, "anthropic", "TestCases") if p.rule == "unions"] == [
        "Schemas contains too many parameters with union types (18 parameters with type "
        "arrays or anyOf) which exceeds the limit: 16"
    ]
    # The most repeated nullable fields require a value until the limit holds: one input
    # of the six test cases, 6 fewer unions.
    shaped = shape(schema, "anthropic")
    assert union_count(shaped) == 12 and problems(shaped, "anthropic", "TestCases") == []
    inputs = shaped["$defs"]["Inputs"]["properties"]
    assert inputs["a"] == {"type": "string", "description": "At most 4000 characters."}
    assert inputs["b"]["anyOf"][1] == {"type": "null"}
    assert union_count(shape(schema, "openai")) == 18  # no union limit: nulls kept
    # An answer to the shaped schema is one the pipeline reads as before.
    case = {"inputs": {"a": "x", "b": "y", "c": "z"}, "expected_output": "e", "reasoning": "r"}
    answer = model.model_validate({"R1": {str(k): case for k in (1, 2, 3)}, "I1": {"1": case}})
    assert answer.model_dump(by_alias=True)["R1"]["2"]["inputs"] == {"a": "x", "b": "y", "c": "z"}


def test_nested_inputs_within_azures_five_levels() -> None:
    """An input shaped like a nested sample: test cases under a rule under the answer,
    its inputs, then three levels of the sample: 7 object levels; Azure allows 5. The
    deepest object the model may write as JSON text is asked so."""
    sample = {"order": {"customer": {"name": "Ada", "city": "Paris"}}}
    prompt = _prompt({"doc": PromptInput(name="doc", type="object", sample=sample)})
    model = cases_model(prompt, ["doc"], {"R1": 1})
    schema = output_spec(model).schema
    assert object_depth(schema) == 7
    assert [p.text for p in problems(schema, "azure", "TestCases") if p.rule == "depth"] == [
        "7 levels of nesting exceeds limit of 5"
    ]
    shaped = shape(schema, "azure")
    assert object_depth(shaped) == 5 and problems(shaped, "azure", "TestCases") == []
    assert object_depth(shape(schema, "openai")) == 7  # OpenAI takes 10 levels
    texts = [n for n in shaped["$defs"].values() if n.get("type") == "string"]
    assert texts == [
        {"type": "string", "description": "JSON text of an object with the keys customer."}
    ]
    # The model's answer with that object as JSON text reads as the object.
    order = json.dumps({"customer": {"name": "Bo", "city": "Oslo"}})
    case = {"inputs": {"doc": {"order": order}}, "expected_output": "e", "reasoning": "r"}
    answer = model.model_validate({"R1": {"1": case}})
    assert answer.model_dump(by_alias=True)["R1"]["1"]["inputs"]["doc"] == {
        "order": {"customer": {"name": "Bo", "city": "Oslo"}}
    }
    assert "x-promptgen-json-text" not in json.dumps(shaped)


def test_what_a_schema_breaks_reads_as_the_provider_says_it() -> None:
    schema = output_spec(ImportAnswer).schema
    texts = [p.text for p in problems(schema, "azure", "Ticket triage (v2)") if p.refused]
    assert texts[0] == "name 'Ticket triage (v2)' does not match the pattern ^[a-zA-Z0-9_-]{1,64}$"
    assert "In context=('properties', 'name'), 'pattern' is not permitted." in texts
    assert "In context=('properties', 'description'), 'maxLength' is not permitted." in texts
    # Gemini ignores what it does not take: a problem (the bound would not hold), no 400.
    ignored = problems(schema, "gemini", "ImportAnswer")
    assert ignored and not any(p.refused for p in ignored)


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _body(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": fmt}


@pytest.mark.parametrize("server", [FakeLLM, AsyncFakeLLM])
def test_the_enforcing_server_refuses_as_the_provider_does(server: Any) -> None:
    schema = output_spec(ScoreVerdict).schema
    with server(profile="azure") as fake:
        # What promptgen sent before profiles: length bounds left out, nothing else.
        status, body = _post(fake.url, _body("ScoreVerdict", provider_schema(schema)))
        assert status == 400
        assert body == {
            "error": {
                "message": "Invalid schema for response_format 'ScoreVerdict': In context="
                "('properties', 'score'), 'maximum' is not permitted.",
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        }
        status, _ = _post(fake.url, _body("ScoreVerdict", shape(schema, "azure")))
        assert status == 200
        assert [r.name for r in fake.refused] == ["ScoreVerdict"]
    prompt = _prompt({n: PromptInput(name=n, type="string") for n in ("a", "b", "c")})
    cases = output_spec(cases_model(prompt, ["a", "b", "c"], {"R1": 3, "I1": 3})).schema
    with server(profile="anthropic") as fake:
        status, body = _post(fake.url, _body("TestCases", shape(cases, "openai")))
        assert (status, body["type"], body["error"]["message"]) == (
            400,
            "error",
            "output_format.schema: Schemas contains too many parameters with union types "
            "(18 parameters with type arrays or anyOf) which exceeds the limit: 16",
        )
        assert _post(fake.url, _body("TestCases", shape(cases, "anthropic")))[0] == 200


def test_a_profile_is_chosen_by_flag_environment_or_config(tmp_path: Path) -> None:
    given = load_settings({"provider_profile": "azure"}, env={}, cwd=tmp_path)
    assert given.profile == "azure"
    env = {"PROMPTGEN_PROVIDER_PROFILE": "gemini"}
    assert load_settings({}, env=env, cwd=tmp_path).profile == "gemini"
    (tmp_path / "promptgen.toml").write_text('provider_profile = "nope"\n', encoding="utf-8")
    with pytest.raises(BadInputError) as err:
        load_settings({}, env={}, cwd=tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'promptgen.toml'}: provider_profile 'nope': no such provider profile "
        "(one of openai, azure, openai-ft, anthropic, gemini, ollama, compatible)"
    )
    result = run_cli("samples/haiku.md", "--provider-profile", "nope", "--dry-run")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--provider-profile" in result.stderr
