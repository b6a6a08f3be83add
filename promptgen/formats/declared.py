"""The call parameters a prompt declares, as the model under test gets them: promptgen
sends each as written, except the few it cannot send, each of which is one warning when
the prompt is read (docs/formats.md#what-the-model-under-test-is-sent)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Parameters promptgen cannot send: it asks one whole text answer per call.
UNSENT: dict[str, str] = {
    "stream": "promptgen reads each answer whole",
    "stream_options": "promptgen reads each answer whole",
    "n": "promptgen asks one answer per run (runsPerTest runs a test more times)",
    "logprobs": "promptgen keeps no token log probabilities",
    "top_logprobs": "promptgen keeps no token log probabilities",
    "functions": "the deprecated functions API (declare them as tools)",
    "function_call": "the deprecated functions API (declare them as tools)",
}
FORMAT_TYPES = ("text", "json_object", "json_schema")


def _changes_nothing(name: str, value: Any) -> bool:
    """Whether a value of an unsent parameter asks for what promptgen does anyway
    (`stream: false`, `n: 1`): then leaving it out is no change, and no warning."""
    if value is None:
        return True
    if name == "n":
        return value == 1 and not isinstance(value, bool)
    return name in ("stream", "logprobs") and value is False


def _said(name: str, value: Any) -> str:
    """`'stream: true'`, `'n: 3'`; a list or mapping by its name alone."""
    if isinstance(value, dict | list):
        return f"'{name}'"
    return f"'{name}: {json.dumps(value)}'"


def response_format_problem(fmt: Any) -> str | None:
    """Why a declared `response_format` cannot be sent (None: it can)."""
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind not in FORMAT_TYPES:
        shown = json.dumps(kind if isinstance(fmt, dict) else fmt)
        return f"'response_format' of type {shown} is not sent: the types are " + ", ".join(
            FORMAT_TYPES
        )
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            return "'response_format' json_schema is not sent: it has no 'schema' mapping"
    return None


def problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(parameter, what is said) for each declared parameter the model under test is not
    sent; `params` in OpenAI spelling (formats/common.py normalize_options)."""
    found = []
    for name, value in params.items():
        if name in UNSENT and not _changes_nothing(name, value):
            found.append((name, f"{_said(name, value)} is not sent: {UNSENT[name]}"))
    if params.get("tool_choice") is not None and not params.get("tools"):
        found.append(("tool_choice", "'tool_choice' is not sent: no tools are declared"))
    fmt = params.get("response_format")
    problem = response_format_problem(fmt) if fmt is not None else None
    if problem:
        found.append(("response_format", problem))
    return found


def sendable(params: dict[str, Any]) -> dict[str, Any]:
    """`params` without what the model under test is not sent (`problems` says why)."""
    kept = {k: v for k, v in params.items() if k not in UNSENT}
    if not kept.get("tools"):
        kept.pop("tool_choice", None)
    if kept.get("response_format") is not None and response_format_problem(kept["response_format"]):
        kept.pop("response_format")
    return kept


def warnings(params: dict[str, Any], where: Callable[[str], str]) -> list[str]:
    """One warning line per parameter the model under test is not sent; `where(name)` is
    the place the file declares it (`p.prompty:5`)."""
    return [f"{where(name)}: model parameter {said}" for name, said in problems(params)]
