"""Refusals are data: a schema a server refuses (HTTP 400) is asked another way for that
schema on that model only, recorded, and an error under --strict-output; a bound the
provider was not told is kept by cutting the answer to it, or stated in the repair turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from promptgen.errors import SchemaRefusedError
from promptgen.evaluation.judges import GroundtruthScore, ScoreVerdict
from promptgen.llm import LLM, RetryPolicy, load_settings
from promptgen.llm.refusals import reason
from promptgen.results import SchemaRefusal
from promptgen.secrets import REDACTED
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import FakeLLM, Reply, json_reply

HI = [{"role": "user", "content": "Rate it"}]
SCORE = {"explanation": "close enough", "score": 80}


def refusal_body(message: str) -> bytes:
    """An OpenAI-style 400 body, as OpenAI words a schema it refuses."""
    error = {"message": message, "type": "invalid_request_error", "param": "response_format"}
    return json.dumps({"error": error}).encode()


class RefusesOneSchema:
    """Refuses the json_schema of the schema named `name` (HTTP 400 with `message`);
    answers every other request, in any mode, with `answer`."""

    def __init__(self, name: str, message: str, answer: Any = SCORE) -> None:
        self.name, self.message, self.answer = name, message, answer

    def __call__(self, body: dict[str, Any]) -> Reply:
        spec = (body.get("response_format") or {}).get("json_schema") or {}
        if spec.get("name") == self.name:
            return Reply(status=400, raw=refusal_body(self.message))
        return json_reply(self.answer)


def modes(fake: FakeLLM) -> list[tuple[str, str]]:
    """(model, how the answer was asked) per request: the schema's name under
    json_schema, else the response_format type (json_object), else "prompt"."""
    said = []
    for body in fake.requests:
        fmt = body.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name") or fmt.get("type") or "prompt"
        said.append((body["model"].removeprefix("openai/"), name))
    return said


def make(fake: FakeLLM, tmp_path: Path, **cli: object) -> LLM:
    settings = load_settings(
        {"api_base": fake.url, "rules": "openai/x", "cache": False, **cli}, env={}, cwd=tmp_path
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return llm


def test_a_refused_schema_steps_down_for_that_schema_on_that_model_only(
    fake_llm: FakeLLM, gateway: LLM
) -> None:
    fake_llm.responder = RefusesOneSchema("GroundtruthScore", "'minimum' is not permitted")
    first = run(gateway.complete(HI, output=GroundtruthScore))
    other = run(gateway.complete(HI, output=ScoreVerdict))
    again = run(gateway.complete([{"role": "user", "content": "again"}], output=GroundtruthScore))
    elsewhere = run(gateway.complete(HI, model="openai/gpt-4o", output=GroundtruthScore))
    assert [r.parsed.score for r in (first, other, again, elsewhere)] == [80, 80, 80, 80]
    assert modes(fake_llm) == [
        ("gpt-4o-mini", "GroundtruthScore"),  # refused (HTTP 400)
        ("gpt-4o-mini", "json_object"),  # the same call, the schema in the prompt
        ("gpt-4o-mini", "ScoreVerdict"),  # another schema on that model: as before
        ("gpt-4o-mini", "json_object"),  # the refused schema: asked so at once, no 400
        ("gpt-4o", "GroundtruthScore"),  # another model: refused in its own right
        ("gpt-4o", "json_object"),
    ]
    assert "JSON Schema" in fake_llm.requests[1]["messages"][0]["content"]
    # The server's own words, whichever transport quoted them (litellm's prefix dropped).
    assert gateway.schema_refusals == [
        SchemaRefusal(
            model=model,
            schema_name="GroundtruthScore",
            mode="json_schema",
            instead="json_object",
            message="'minimum' is not permitted",
        )
        for model in ("openai/gpt-4o-mini", "openai/gpt-4o")
    ]
    assert gateway.schema_refusals[0].said() == (
        "openai/gpt-4o-mini refused the json_schema of GroundtruthScore: 'minimum' is not "
        "permitted; asked with the schema in the prompt instead"
    )


def test_the_servers_reason_is_kept_on_one_line(fake_llm: FakeLLM, tmp_path: Path) -> None:
    said = "Invalid schema for response_format 'GroundtruthScore':\n  'minimum' is not permitted."
    fake_llm.responder = RefusesOneSchema("GroundtruthScore", said)
    llm = make(fake_llm, tmp_path)
    assert run(llm.complete(HI, output=GroundtruthScore)).ok
    assert [r.message for r in llm.schema_refusals] == [
        "Invalid schema for response_format 'GroundtruthScore': 'minimum' is not permitted."
    ]
    key = "sk-leaky-0123456789abcdef"
    assert reason(f"litellm.BadRequestError: OpenAIException - {key} " + "y" * 400) == (
        f"{REDACTED} " + "y" * (299 - len(REDACTED) - 1) + "…"
    )


def test_a_400_every_mode_gets_is_the_calls_error_not_a_refusal(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.responder = lambda body: Reply(status=400, raw=refusal_body("context too long"))
    llm = make(fake_llm, tmp_path)
    failed = run(llm.complete(HI, output=GroundtruthScore))
    assert failed.error == "openai/x: Error code: 400 - context too long (HTTP 400, 3 attempt(s))"
    fake_llm.responder = lambda body: json_reply(SCORE)
    assert run(llm.complete(HI, output=GroundtruthScore)).ok
    # Nothing was refused: the next call asks in json_schema again.
    assert [m for _, m in modes(fake_llm)] == [
        "GroundtruthScore", "json_object", "prompt", "GroundtruthScore"
    ]  # fmt: skip
    assert llm.schema_refusals == []


def test_strict_output_makes_a_refusal_an_error(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.responder = RefusesOneSchema("GroundtruthScore", "'minimum' is not permitted")
    llm = make(fake_llm, tmp_path, strict_output=True)
    line = (
        "openai/x refused the json_schema of GroundtruthScore: 'minimum' is not permitted "
        "(--strict-output; without it the schema is asked in the prompt instead)"
    )
    with pytest.raises(SchemaRefusedError) as info:
        run(llm.complete(HI, output=GroundtruthScore))
    assert (info.value.one_line(), info.value.exit_code) == (line, 3)
    assert run(llm.complete(HI, output=ScoreVerdict)).ok  # another schema is not refused
    with pytest.raises(SchemaRefusedError) as again:  # known now: no call is made
        run(llm.complete([{"role": "user", "content": "again"}], output=GroundtruthScore))
    assert again.value.one_line() == line
    assert [m for _, m in modes(fake_llm)] == ["GroundtruthScore", "json_object", "ScoreVerdict"]
    assert [(r.mode, r.instead) for r in llm.schema_refusals] == [("json_schema", None)]


class Tagged(BaseModel):
    tags: list[str] = Field(min_length=2, max_length=3)


AUTHOR_SCHEMA = {
    "title": "Tagged",
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3},
        "title": {"type": "string", "maxLength": 12},
    },
    "required": ["tags", "title"],
}


@pytest.mark.parametrize("output", [Tagged, AUTHOR_SCHEMA], ids=["pydantic", "json-schema"])
def test_an_answer_over_its_bounds_is_cut_to_them(
    fake_llm: FakeLLM, tmp_path: Path, output: Any
) -> None:
    six = ["a", "b", "c", "d", "e", "f"]
    fake_llm.queue(json_reply({"tags": six, "title": "Six tags for a title"}))
    result = run(make(fake_llm, tmp_path).complete(HI, output=output))
    parsed = result.parsed if isinstance(result.parsed, dict) else result.parsed.model_dump()
    assert parsed == {"tags": ["a", "b", "c"]} | (
        {"title": "Six tags for"} if output is AUTHOR_SCHEMA else {}
    )
    assert (result.ok, len(fake_llm.requests)) == (True, 1)  # cut, not asked again


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (Tagged, "tags: List should have at least 2 items after validation, not 1"),
        (AUTHOR_SCHEMA, "tags: has 1 item, needs at least 2 (minItems: 2)"),
    ],
    ids=["pydantic", "json-schema"],
)
def test_an_answer_under_a_min_items_is_asked_again_with_the_bound_stated(
    fake_llm: FakeLLM, tmp_path: Path, output: Any, said: str
) -> None:
    fake_llm.queue(
        json_reply({"tags": ["a"], "title": "One"}),
        json_reply({"tags": ["a", "b"], "title": "Two"}),
    )
    result = run(make(fake_llm, tmp_path).complete(HI, output=output))
    assert result.ok and len(fake_llm.requests) == 2
    repair = fake_llm.requests[1]["messages"][-1]["content"]
    assert repair.splitlines()[0] == f"That answer is not valid: {said}"
