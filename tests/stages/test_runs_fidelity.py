"""The model under test gets the request its prompt declares (issue 30, item 1): every
call parameter each format can declare reaches the request body the fake server reads; a
prompt's own `response_format` of every kind is sent (json_schema with the author's
`strict` and a name providers accept), and so are its tools; a tool call answered is the
run's output, as JSON text; what promptgen cannot send is one warning naming it."""

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
from tests.conftest import OPEN_GATEWAYS, REPO, promptgen_in
from tests.fakellm import FakeLLM, Reply
from tests.mockserver import mockllm
from tests.stagekit import config, stage

A = "openai/model-a"
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
# parameter -> the value a prompt declares (and the request carries, as written)
VALUES: dict[str, Any] = {
    "seed": 7,
    "stop": ["END", "STOP"],
    "top_p": 0.25,
    "frequency_penalty": 0.5,
    "presence_penalty": -0.5,
    "logit_bias": {"1734": -100},
    "tools": [TOOL],
}


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


def prompty_v1(name: str, value: Any) -> str:
    return (
        f"---\nname: fidelity\nmodel:\n  parameters:\n    {name}: {flow(value)}\n"
        "---\nuser:\nSay {{text}}\n"
    )


_V2 = {
    "seed": "seed",
    "stop": "stopSequences",
    "top_p": "topP",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
}


def prompty_v2(name: str, value: Any) -> str:
    if name == "tools":  # Prompty v2 declares tools at the top, in its own shape
        tools = [
            {
                "name": "get_weather",
                "kind": "function",
                "description": "The weather in a city.",
                "parameters": {
                    "properties": [{"name": "city", "kind": "string", "required": True}]
                },
            }
        ]
        return (
            f"---\nname: fidelity\nmodel:\n  id: gpt-4o\ntools: {flow(tools)}\n"
            "---\nuser:\nSay {{text}}\n"
        )
    option = (
        f"{_V2[name]}: {flow(value)}"
        if name in _V2
        else f"additionalProperties: {flow({name: value})}"
    )
    return (
        f"---\nname: fidelity\nmodel:\n  id: gpt-4o\n  options:\n    {option}\n"
        "---\nuser:\nSay {{text}}\n"
    )


_GITHUB = {
    "seed": "seed",
    "stop": "stopSequences",
    "top_p": "topP",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
    "logit_bias": "logitBias",
    "tools": "tools",
}


def github(name: str, value: Any) -> str:
    return (
        "name: fidelity\nmodel: openai/gpt-4o-mini\n"
        f"modelParameters:\n  {_GITHUB.get(name, name)}: {flow(value)}\n"
        'messages:\n  - role: user\n    content: "Say {{text}}"\n'
    )


def promptarchitect(name: str, value: Any) -> str:
    # Promptarchitect's code reads top_p and the penalties as flat keys; its docs write
    # call parameters in `parameters:`, where promptgen reads the others.
    flat = name in ("top_p", "frequency_penalty", "presence_penalty")
    key = f"{name}: {flow(value)}" if flat else f"parameters:\n  {name}: {flow(value)}"
    return f"---\nprovider: openai\nmodel: gpt-4o-mini\n{key}\n---\nSay {{{{input}}}}\n"


def lve(name: str, value: Any) -> str:
    return json.dumps(
        {
            "description": "The model says the secret.",
            "model": "openai/gpt-4",
            "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False},
            "prompt": [{"content": "Say {text}", "role": "user"}],
            "prompt_parameters": ["text"],
            "default_model_args": {name: value},
        },
        indent=1,
    )


FORMATS = {
    "prompty-v1": (prompty_v1, "p.prompty", list(VALUES)),
    "prompty-v2": (prompty_v2, "p.prompty", list(VALUES)),
    "prompt.yml": (github, "p.prompt.yml", list(VALUES)),
    "promptarchitect": (promptarchitect, "p.prompt", [n for n in VALUES if n != "tools"]),
    "lve": (lve, "repository/security/leak/openai--gpt-4/test.json", list(VALUES)),
}
CASES = [(fmt, name) for fmt, (_, _, names) in FORMATS.items() for name in names]


@pytest.mark.parametrize(("fmt", "name"), CASES, ids=[f"{f}-{n}" for f, n in CASES])
def test_each_declared_parameter_reaches_the_model_under_test(
    fmt: str, name: str, fake: FakeLLM, llm: LLM, tmp_path: Path
) -> None:
    writer, file, _ = FORMATS[fmt]
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(writer(name, VALUES[name]), encoding="utf-8")
    prompt = load_prompt(path)
    assert prompt.warnings == []
    body = sent(prompt, fake, llm)
    assert body[name] == VALUES[name]


def test_prompty_v2_tools_are_sent_as_prompty_projects_them(
    fake: FakeLLM, llm: LLM, write: Any
) -> None:
    tools = [
        {
            "name": "lookup_order",
            "kind": "function",
            "strict": True,
            "parameters": [
                {"name": "orderId", "kind": "string", "required": True},
                {"name": "days", "kind": "float", "description": "How far back."},
                {"name": "status", "kind": "string", "enumValues": ["open", "shipped"]},
            ],
        },
        {"name": "filesystem", "kind": "mcp", "serverName": "fs"},
        {"name": "weather_api", "kind": "openapi", "specification": "./w.json"},
        "fs_read_file",  # a tool named, not defined (GenAIScript's way)
    ]
    path = write(
        "p.prompty",
        f"---\nname: p\ntools: {flow(tools)}\n---\nuser:\nWhere is order {{{{id}}}}?\n",
    )
    prompt = load_prompt(path)
    assert prompt.warnings == [
        f"{path}:3: tool 'filesystem' (kind mcp) is not sent: promptgen sends function tools",
        f"{path}:3: tool 'weather_api' (kind openapi) is not sent: promptgen sends function tools",
        f"{path}:3: tool 'fs_read_file' is not sent: promptgen sends function tools",
    ]
    assert sent(prompt, fake, llm)["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "orderId": {"type": "string"},
                        "days": {"type": "number", "description": "How far back."},
                        "status": {"type": "string", "enum": ["open", "shipped"]},
                    },
                    "required": ["orderId"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }
    ]


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


def test_a_declared_json_schema_is_sent_as_written_bounds_and_all(
    fake: FakeLLM, llm: LLM, write: Any
) -> None:
    """The author's schema is the deployed request: its bounds are not stripped (they
    were, as promptgen's own schemas' length bounds are), and nothing is added."""
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "minLength": 2, "maxLength": 40},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["answer", "tags"],
        "additionalProperties": False,
    }
    spec = {"name": "triage", "strict": True, "schema": schema}
    path = write(
        "bounded.prompt.yml",
        "name: bounded\nmodel: openai/gpt-4o-mini\nresponseFormat: json_schema\n"
        f"jsonSchema: '{json.dumps(spec)}'\n"
        "messages:\n  - role: user\n    content: 'Triage {{ticket}}'\n",
    )
    body = sent(load_prompt(path), fake, llm, json.dumps({"answer": "billing", "tags": []}))
    assert body["response_format"]["json_schema"]["schema"] == schema


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


UNSENT = [
    ("stream", True, "'stream: true' is not sent: promptgen reads each answer whole"),
    (
        "n",
        3,
        "'n: 3' is not sent: promptgen asks one answer per run "
        "(runsPerTest runs a test more times)",
    ),
    ("logprobs", True, "'logprobs: true' is not sent: promptgen keeps no token log probabilities"),
    (
        "functions",
        [{"name": "f", "parameters": {"type": "object"}}],
        "'functions' is not sent: the deprecated functions API (declare them as tools)",
    ),
]


@pytest.mark.parametrize(("name", "value", "said"), UNSENT, ids=[u[0] for u in UNSENT])
def test_what_cannot_be_sent_is_one_warning_naming_it(
    name: str, value: Any, said: str, fake: FakeLLM, llm: LLM, write: Any
) -> None:
    path = write("p.prompty", prompty_v1(name, value))
    prompt = load_prompt(path)
    assert prompt.warnings == [f"{path}:5: model parameter {said}"]
    assert name not in sent(prompt, fake, llm)


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (
            {"tool_choice": "required"},
            "p.prompty:5: model parameter 'tool_choice' is not sent: no tools are declared",
        ),
        (
            {"response_format": {"type": "xml"}},
            "p.prompty:5: model parameter 'response_format' of type \"xml\" is not sent: "
            "the types are text, json_object, json_schema",
        ),
    ],
    ids=["tool_choice", "response_format"],
)
def test_a_tool_choice_without_tools_or_an_unknown_format_is_a_warning_not_a_request(
    params: dict[str, Any], said: str, fake: FakeLLM, llm: LLM, write: Any
) -> None:
    ((name, value),) = params.items()
    path = write("p.prompty", prompty_v1(name, value))
    prompt = load_prompt(path)
    assert prompt.warnings == [f"{path.parent}/{said}"]
    assert name not in sent(prompt, fake, llm)


def test_what_changes_nothing_is_left_out_without_a_warning(
    fake: FakeLLM, llm: LLM, write: Any
) -> None:
    path = write(
        "p.prompty",
        "---\nname: p\nmodel:\n  parameters: {stream: false, n: 1, logprobs: false}\n"
        "---\nuser:\nSay {{text}}\n",
    )
    prompt = load_prompt(path)
    assert prompt.warnings == []
    assert not {"stream", "n", "logprobs"} & set(sent(prompt, fake, llm))


@pytest.mark.parametrize(
    ("fmt", "name", "line"),
    [("prompt.yml", "stream", 4), ("promptarchitect", "n", 5), ("lve", "logprobs", 19)],
)
def test_each_format_says_what_is_not_sent_at_its_line(
    fmt: str, name: str, line: int, tmp_path: Path
) -> None:
    writer, file, _ = FORMATS[fmt]
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    value = {"stream": True, "n": 2, "logprobs": True}[name]
    path.write_text(writer(name, value), encoding="utf-8")
    said = {
        "stream": "'stream: true' is not sent: promptgen reads each answer whole",
        "n": "'n: 2' is not sent: promptgen asks one answer per run "
        "(runsPerTest runs a test more times)",
        "logprobs": "'logprobs: true' is not sent: promptgen keeps no token log probabilities",
    }[name]
    assert load_prompt(path).warnings == [f"{path}:{line}: model parameter {said}"]


def test_the_command_line_shows_each_warning_once(write: Any, tmp_path: Path) -> None:
    """A load warning as every load warning is shown, and a `--param` that cannot be sent."""
    write("p.prompty", prompty_v1("n", 3))
    result = promptgen_in(
        tmp_path, "p.prompty", "--dry-run", "--models", "m", "--api-base", "http://127.0.0.1:9/v1",
        "--param", "stream=true",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "promptgen: warning: p.prompty:5: model parameter 'n: 3' is not sent: promptgen asks "
        "one answer per run (runsPerTest runs a test more times)",
        "promptgen: warning: --param 'stream: true' is not sent: promptgen reads each answer whole",
    ]
