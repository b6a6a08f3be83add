"""A fake server that enforces a provider profile's documented structured-output rules
(promptgen/llm/profiles.py): a request whose `response_format` schema breaks a rule the
provider refuses gets HTTP 400 in that provider's error shape and message style, as the
real one would, before any answer. `FakeLLM(profile=...)`, `AsyncFakeLLM(profile=...)`
and `python -m tests.fakellm --profile NAME` use it.

The rules are the ones promptgen shapes to (`promptgen.llm.schema_rules.problems`, the
single source); what a provider ignores rather than refuses is not refused here either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from promptgen.llm.schema_rules import Problem, problems
from tests.fakellm import Reply


@dataclass(frozen=True)
class Refusal:
    """One request refused: its format's name and the provider's message."""

    name: str
    message: str


def refused(body: dict[str, Any], profile: str) -> list[Problem]:
    """The problems of the request's json_schema that `profile` refuses (none: sent)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return []
    spec = fmt.get("json_schema") or {}
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        return []
    return [p for p in problems(schema, profile, spec.get("name")) if p.refused]


def message(profile: str, name: str, problem: Problem) -> str:
    """The provider's message for `problem`, in its own words' style."""
    if profile in ("openai", "azure", "openai-ft"):
        return f"Invalid schema for response_format '{name}': {problem.text}"
    if profile == "anthropic":
        return f"output_format.schema: {problem.text}"
    if profile == "ollama":
        return f"invalid JSON schema in format: {problem.text}"
    return f"Invalid JSON schema: {problem.text}"


def error_body(profile: str, text: str) -> dict[str, Any]:
    """An HTTP 400 body as the provider writes it."""
    if profile == "anthropic":  # the Messages API's shape (litellm passes its message on)
        return {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
    if profile == "compatible":  # vLLM's
        return {"object": "error", "message": text, "type": "BadRequestError", "code": 400}
    error = {"message": text, "type": "invalid_request_error", "param": "response_format"}
    return {"error": {**error, "code": None}}


def refusal(body: dict[str, Any], profile: str | None) -> tuple[Reply, Refusal] | None:
    """The 400 reply to `body` under `profile`, and what it refused (None: no refusal)."""
    if profile is None:
        return None
    found = refused(body, profile)
    if not found:
        return None
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    name = str(spec.get("name") or "")
    text = message(profile, name, found[0])
    raw = json.dumps(error_body(profile, text)).encode()
    return Reply(status=400, raw=raw), Refusal(name, text)


# The model id a user names for each profile (the profile read from it), and
# --provider-profile where the id cannot say (OpenAI's own rules through a server that is
# not api.openai.com). tests/llm/test_profile_runs.py and bench/profiles.py use it.
MODEL_OF: dict[str, tuple[str, str | None]] = {
    "openai": ("gpt-4o-mini", "openai"),
    "azure": ("azure/gpt-4o", None),
    "openai-ft": ("ft:gpt-4o-mini-2024-07-18:acme::abc123", None),
    "anthropic": ("anthropic/claude-sonnet-4-5", None),
    "gemini": ("gemini/gemini-2.5-flash", None),
    "ollama": ("ollama/llama3.2", None),
    "compatible": ("qwen2.5-7b-instruct", None),
}
