"""A prompt's own json_schema response format through the gateway (issue 30, item 1): sent
with the author's name (made one providers accept), `strict` and description, and the
response cache keyed on all of them, through both transports."""

from __future__ import annotations

from typing import Any

import pytest

from promptgen.llm import LLM
from promptgen.llm.structured import format_name, output_spec
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply

HI = [{"role": "user", "content": "Triage this ticket"}]
SCHEMA = {
    "type": "object",
    "properties": {"queue": {"type": "string"}},
    "required": ["queue"],
    "additionalProperties": False,
}


def declared(**spec: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "triage", "schema": SCHEMA, **spec}}


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("Ticket triage (v2)", "Ticket_triage_v2"),
        ("rate-title v2", "rate-title_v2"),
        ("already_fine-1", "already_fine-1"),
        ("é" * 3 + "x" * 70, "x" * 64),
        ("((( )))", "answer"),
        (None, "answer"),
    ],
)
def test_format_names_match_the_providers_rule(given: Any, name: str) -> None:
    assert format_name(given) == name


def test_a_raw_schema_is_named_after_its_title_as_providers_accept_it() -> None:
    assert output_spec({**SCHEMA, "title": "Ticket triage (v2)"}).name == "Ticket_triage_v2"


def test_the_declared_format_is_sent_and_keys_the_cache(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.responder = lambda body: Reply(content='{"queue": "billing"}')
    outputs = [
        declared(),
        declared(),  # the same request: from the cache
        declared(strict=True),
        declared(name="Triage (other)"),
        declared(description="Where the ticket goes."),
    ]
    answers = [run(gateway.complete(HI, output=o)) for o in outputs]
    assert [a.parsed for a in answers] == [{"queue": "billing"}] * 5
    assert [a.cached for a in answers] == [False, True, False, False, False]
    sent = [b["response_format"]["json_schema"] for b in fake_llm.requests]
    assert [(s["name"], s["strict"], s.get("description")) for s in sent] == [
        ("triage", False, None),
        ("triage", True, None),
        ("Triage_other", False, None),
        ("triage", False, "Where the ticket goes."),
    ]
    assert all(s["schema"] == SCHEMA for s in sent)
