"""A model given tools may answer with tool calls instead of text (issue 30, item 1): the
answer's text is then the calls as JSON text judges can read, through both transports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptgen.llm import LLM
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply

HI = [{"role": "user", "content": "What is the weather in Paris and in Oslo?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def tool_reply(content: str | None, *arguments: str) -> Reply:
    """A chat completion whose message calls get_weather once per `arguments` text."""
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": text},
        }
        for i, text in enumerate(arguments)
    ]
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "tool_calls": calls},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(raw=json.dumps(body).encode())


CASES: list[tuple[str | None, tuple[str, ...], str]] = [
    (
        None,
        ('{"city": "Paris"}', '{"city": "Oslo"}'),
        '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}]}',
    ),
    (
        "Let me look that up.",
        ('{"city": "Paris"',),  # cut short: kept as the model wrote it
        'Let me look that up.\n\n{"tool_calls": [{"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"Paris\\""}]}',
    ),
]


@pytest.mark.parametrize(("content", "arguments", "text"), CASES, ids=["calls", "text-and-call"])
def test_tool_calls_are_the_answers_text(
    content: str | None,
    arguments: tuple[str, ...],
    text: str,
    fake_llm: FakeLLM,
    gateway: LLM,
) -> None:
    fake_llm.queue(tool_reply(content, *arguments))
    answer: Any = run(gateway.complete(HI, params={"tools": TOOLS}))
    assert (answer.error, answer.text, answer.finish_reason) == (None, text, "tool_calls")
    assert fake_llm.requests[0]["tools"] == TOOLS
