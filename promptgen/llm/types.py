"""Gateway data types: what a call asks for, what comes back, and how calls fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from pydantic import BaseModel

from promptgen.errors import BadInputError
from promptgen.llm.adaptive import RateHeaders
from promptgen.llm.cache import cache_key
from promptgen.llm.shaping import shape
from promptgen.llm.structured import OutputSpec, provider_schema
from promptgen.results import Fault, Usage
from promptgen.secrets import scrub

Messages = list[dict[str, Any]]
# The type of a call's parsed answer: the pydantic model asked for (M), JSON for a raw
# JSON Schema, None for a text call.
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
# `Completion.parsed` before an answer is parsed, whatever type was asked for.
_UNPARSED: Any = None
# What each fault means, as the error line of the call says it.
FAULT_TEXT: dict[str, str] = {
    "empty": "empty answer",
    "truncated": "answer cut off at the token limit (finish_reason: length)",
}


class ModelConfigError(BadInputError):
    """A model cannot be used as configured (unknown name, missing key, missing extra)."""


@dataclass
class ChatRequest:
    """One call as a backend sees it (the model id is the backend's own)."""

    model: str
    messages: Messages
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    json_schema: dict[str, Any] | None = None  # for structured output
    schema_name: str = "answer"
    strict: bool = True
    schema_description: str | None = None  # a prompt's own response format's
    timeout: float = 120.0
    params: dict[str, Any] = field(default_factory=dict)  # more call parameters (top_p, ...)
    n: int = 1  # answers asked in this one request (`complete_choices`)
    # The provider profile promptgen's own schema is shaped to (llm/shaping.py); None: a
    # schema the prompt declares, or a backend that reads it as a grammar.
    profile: str | None = None
    # A JSON Schema given as is (a prompt's own response format, `ask --json-schema`):
    # sent as written, bounds and all, as the deployed prompt sends it.
    declared: bool = False

    def openai_params(self, mode: str) -> dict[str, Any]:
        """The chat-completions parameters in OpenAI spelling, for structured `mode`."""
        params: dict[str, Any] = {
            **self.params,
            "model": self.model,
            "messages": self.messages,
            "timeout": self.timeout,
        }
        for name in ("temperature", "max_tokens", "seed"):
            value = getattr(self, name)
            if value is not None:
                params[name] = value
        if self.n > 1:
            params["n"] = self.n
        if self.json_schema is not None and mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": self.schema_name,
                    "schema": self.sent_schema(),
                    "strict": self.strict,
                },
            }
            if self.schema_description is not None:
                params["response_format"]["json_schema"]["description"] = self.schema_description
        elif self.json_schema is not None and mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def sent_schema(self) -> dict[str, Any]:
        """The schema as the provider gets it: shaped to the request's profile."""
        assert self.json_schema is not None
        if self.declared:
            return self.json_schema
        if self.profile is not None:
            return shape(self.json_schema, self.profile)
        return provider_schema(self.json_schema)


@dataclass
class RawReply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of prompt_tokens, those the model reused from its cache (Usage.cached_tokens).
    cached_tokens: int = 0
    cost: float | None = None
    model: str | None = None
    finish_reason: str | None = None  # "stop", "length", ... as the provider says it
    # Every choice, in the provider's order, when a request asked for several (`n`); the
    # tokens and cost above are then the whole request's, the choices' own are zero.
    choices: list[RawReply] = field(default_factory=list)
    # The provider's request budget, when its reply said it (x-ratelimit-*-requests).
    rate: RateHeaders | None = None

    @property
    def fault(self) -> Fault | None:
        """Whether the reply is not a whole answer: cut off, or empty (docs/llm.md)."""
        if self.finish_reason == "length":
            return "truncated"
        return "empty" if not self.text.strip() else None


class CallError(Exception):
    """A failed provider call, classified for the retry loop. The message is scrubbed of
    keys here, where a provider's error becomes promptgen's text (providers may quote
    the key or the headers they were sent)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        rate_limited: bool = False,
    ) -> None:
        message = scrub(message)
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class CallOptions(TypedDict, total=False):
    """The keyword arguments of `LLM.complete_choices` besides `variants` and `output`
    (which decides the answer's type); `LLM.complete` takes `variant` too."""

    model: str
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    stage: str | None
    params: dict[str, Any] | None


class CompleteOptions(CallOptions, total=False):
    """The keyword arguments of `LLM.complete` besides `output`."""

    variant: int


@dataclass
class Completion(Generic[T]):
    """The gateway's answer. Failures are data: `error` is set and `text` may be None.

    A reply that is empty or cut off (`fault`) is a failure too: `error` says so and
    `text` keeps what came back, for the record; it is never cached.

    `parsed` is the validated answer, of the type the call asked for: an instance of the
    pydantic model passed as `output`, JSON for a raw JSON Schema, None for a text call.
    A failed call has none (None whatever was asked): read it once `ok` is True.
    """

    text: str | None
    model: str
    parsed: T = _UNPARSED
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    cached: bool = False
    attempts: int = 1
    error: str | None = None
    finish_reason: str | None = None
    fault: Fault | None = None

    def __post_init__(self) -> None:
        if self.error is not None:
            self.error = scrub(self.error)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Call:
    """One `LLM.complete` call but its variant: what the candidates of
    `complete_choices` share, and what decides a cache key and a request."""

    messages: Messages
    model: str
    output: type[BaseModel] | dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stage: str | None = None
    params: dict[str, Any] | None = None

    def key(
        self, model_id: str, api_base: str | None, spec: OutputSpec | None, variant: int
    ) -> str:
        """The response cache's key of this call with `variant`."""
        declared = None
        if spec is not None and spec.model is None:
            # A raw schema's name, strictness and description are sent as the prompt (or
            # caller) gives them; a pydantic model's follow from the model.
            declared = {"name": spec.name, "strict": spec.strict, "description": spec.description}
        return cache_key(
            model=model_id,
            api_base=api_base,
            messages=self.messages,
            schema=spec.schema if spec else None,
            schema_format=declared,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            variant=variant,
            params=self.params,
        )

    def request(
        self,
        name: str,
        spec: OutputSpec | None,
        timeout: float,
        variant: int,
        n: int = 1,
        profile: str | None = None,
    ) -> ChatRequest:
        """The request a backend gets (`name`: the model's name there); a variant moves
        the seed, so it is a distinct request. promptgen's own schemas (a pydantic
        model's) are shaped to `profile`; a schema the prompt declares is sent as written."""
        return ChatRequest(
            model=name,
            messages=self.messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed + variant if self.seed is not None else (variant or None),
            json_schema=spec.schema if spec else None,
            schema_name=spec.name if spec else "answer",
            strict=spec.strict if spec else True,
            schema_description=spec.description if spec else None,
            timeout=timeout,
            params=dict(self.params or {}),
            n=n,
            profile=profile if spec is not None and spec.model is not None else None,
            declared=spec is not None and spec.model is None,
        )
