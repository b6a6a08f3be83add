"""Refusals are data: a bound the provider was not told is kept by cutting the answer
to it, or stated in the repair turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from promptgen.llm import LLM, RetryPolicy, load_settings
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import FakeLLM, json_reply

HI = [{"role": "user", "content": "Rate it"}]


def make(fake: FakeLLM, tmp_path: Path, **cli: object) -> LLM:
    settings = load_settings(
        {"api_base": fake.url, "rules": "openai/x", "cache": False, **cli}, env={}, cwd=tmp_path
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return llm


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
