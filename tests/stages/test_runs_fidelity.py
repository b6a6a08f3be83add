"""The model under test gets the request its prompt declares (issue 30, item 1): a
prompt's own `response_format` of every kind is sent (json_schema with the author's
`strict` and a name providers accept), and so are its tools; a tool call answered is the
run's output, as JSON text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen.context import Context
from promptgen.formats import load_prompt
from promptgen.llm import LLM, load_settings
from promptgen.model import PromptUnderTest
from promptgen.results import Test
from tests.conftest import OPEN_GATEWAYS
from tests.fakellm import FakeLLM, Reply
from tests.mockserver import mockllm
from tests.stagekit import config, stage

A = "openai/model-a"
REPO = Path(__file__).resolve().parents[2]
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CHOICE = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    """One fake server for the module: stopping one takes half a second."""
    with FakeLLM() as running:
        yield running


@pytest.fixture
def fake(server: FakeLLM) -> FakeLLM:
    server.reset()
    return server


def bodies_of(
    prompt: PromptUnderTest, fake: FakeLLM, llm: LLM, answer: str = "an answer"
) -> list[dict[str, Any]]:
    """The request bodies the model under test got for one test of `prompt` (it answers
    `answer`)."""
    fake.responder = lambda body: Reply(content=answer)
    ctx = Context.new(prompt)
    inputs = {name: "x" for name in prompt.inputs}
    ctx.tests = [Test(id=Test.make_id("sample", None, None, inputs), inputs=inputs)]
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compliance": False})
    stage("runs", ctx, cfg, llm)
    assert [r.error for r in ctx.test_runs] == [None]
    return [b for b in fake.requests if b["model"] == "model-a"]


def sent(
    prompt: PromptUnderTest, fake: FakeLLM, llm: LLM, answer: str = "an answer"
) -> dict[str, Any]:
    (body,) = bodies_of(prompt, fake, llm, answer)
    return body


def flow(value: Any) -> str:
    """A value as YAML flow (JSON is YAML)."""
    return json.dumps(value)


def test_tool_choice_is_sent_beside_the_tools(fake: FakeLLM, llm: LLM, write: Any) -> None:
    path = write(
        "p.prompty",
        f"---\nname: p\nmodel:\n  parameters:\n    tools: {flow([TOOL])}\n"
        f"    tool_choice: {flow(CHOICE)}\n    parallel_tool_calls: false\n"
        "---\nuser:\nWeather in {{city}}?\n",
    )
    body = sent(load_prompt(path), fake, llm)
    assert (body["tools"], body["tool_choice"], body["parallel_tool_calls"]) == (
        [TOOL],
        CHOICE,
        False,
    )


def test_the_json_mode_sample_runs_in_json_mode(fake: FakeLLM, llm: LLM) -> None:
    prompt = load_prompt(REPO / "samples/rate-product-title.prompty")
    body = sent(prompt, fake, llm)
    assert body["response_format"] == {"type": "json_object"}
    assert (body["temperature"], body["max_tokens"]) == (0, 200)


def test_a_text_response_format_is_sent(fake: FakeLLM, llm: LLM, write: Any) -> None:
    path = write(
        "p.prompt.yml",
        "name: p\nresponseFormat: text\nmessages:\n  - role: user\n    content: '{{text}}'\n",
    )
    assert sent(load_prompt(path), fake, llm)["response_format"] == {"type": "text"}


SCHEMA = {
    "title": "Ticket triage (v2)",
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 200}},
    "required": ["answer"],
    "additionalProperties": False,
}


def test_a_strict_json_schema_keeps_strict_and_gets_a_name_providers_accept(
    fake: FakeLLM, llm: LLM, write: Any
) -> None:
    spec = {"name": "Ticket triage (v2)", "strict": True, "schema": SCHEMA}
    path = write(
        "triage.prompt.yml",
        "name: triage\nmodel: openai/gpt-4o-mini\nresponseFormat: json_schema\n"
        f"jsonSchema: '{json.dumps(spec)}'\n"
        "messages:\n  - role: user\n    content: 'Triage {{ticket}}'\n",
    )
    body = sent(load_prompt(path), fake, llm, json.dumps({"answer": "billing"}))
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert (fmt["json_schema"]["name"], fmt["json_schema"]["strict"]) == ("Ticket_triage_v2", True)
    assert fmt["json_schema"]["schema"]["properties"]["answer"]["type"] == "string"


@pytest.mark.parametrize(
    ("declared", "name"),
    [
        ({"name": "triage", "schema": SCHEMA}, "triage"),  # the author's name
        ({"schema": SCHEMA}, "Ticket_triage_v2"),  # else the schema's title
        ({"schema": {**SCHEMA, "title": None}}, "rate-title_v2"),  # else the prompt's name
    ],
)
def test_a_json_schema_name_comes_from_the_author_then_title_then_prompt(
    declared: dict[str, Any], name: str, fake: FakeLLM, llm: LLM, write: Any
) -> None:
    schema = {k: v for k, v in declared["schema"].items() if v is not None}
    fmt = {"type": "json_schema", "json_schema": {**declared, "schema": schema}}
    path = write(
        "p.prompty",
        f"---\nname: rate-title v2\nmodel:\n  parameters:\n    response_format: {flow(fmt)}\n"
        "---\nuser:\n{{text}}\n",
    )
    body = sent(load_prompt(path), fake, llm, json.dumps({"answer": "a"}))
    spec = body["response_format"]["json_schema"]
    assert (spec["name"], spec["strict"]) == (name, False)  # strict: OpenAI's default


def test_a_tool_call_is_the_runs_output_against_an_independent_server(
    tmp_path: Path, write: Any
) -> None:
    """../shared/tools/mockllm.py answers a forced tool_choice with a call to that tool."""
    forced = {**CHOICE, "function": {"name": "get_weather"}}
    path = write(
        "p.prompty",
        f"---\nname: p\nmodel:\n  parameters:\n    tools: {flow([TOOL])}\n"
        f"    tool_choice: {flow(forced)}\n---\nuser:\nWeather in {{{{city}}}}?\n",
    )
    with mockllm("--literal", "1") as url:
        settings = load_settings({"api_base": url, "cache": False}, env={}, cwd=tmp_path)
        llm = LLM(settings)
        OPEN_GATEWAYS.append(llm)
        ctx = Context.new(load_prompt(path))
        ctx.tests = [Test(id="t1", inputs={"city": "Paris"})]
        cfg = config(ctx, llm, models={"models": ["mock-model"]}, evaluation={"compliance": False})
        stage("runs", ctx, cfg, llm)
    (record,) = ctx.test_runs
    assert record.error is None and record.output is not None
    (call,) = json.loads(record.output)["tool_calls"]
    assert call["name"] == "get_weather" and list(call["arguments"]) == ["city"]
    assert isinstance(call["arguments"]["city"], str)
