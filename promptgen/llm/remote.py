"""Remote providers through litellm (OpenAI, Azure, Ollama, GitHub Models, Anthropic, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

from promptgen.llm.backend import BackendPolicy
from promptgen.llm.types import CallError, ChatRequest, ModelConfigError, RawReply
from promptgen.llm.wire import (
    cached_tokens,
    classify,
    load_litellm,
    message_text,
    rate_headers,
)

if TYPE_CHECKING:
    from promptgen.llm.batch import BatchAPI


class RemoteBackend:
    """Any litellm model string (openai/..., azure/..., ollama/..., github/..., ...)."""

    policy: ClassVar[BackendPolicy] = BackendPolicy(
        concurrency=None,
        cancellable=True,
        structured_mode="negotiate",
        uses_api_base=False,
        per_loop=False,
        batch=True,  # OpenAI's own models (batch_api)
    )

    @classmethod
    def owns(cls, model_id: str, api_base: str | None) -> bool:
        return True  # asked last: what no other backend owns

    @classmethod
    def model_name(cls, model_id: str) -> str:
        return model_id

    @classmethod
    def create(cls, api_base: str | None) -> Self:
        return cls()

    def __init__(self) -> None:
        self._batch: BatchAPI | None = None

    @classmethod
    def many_choices(cls, model: str) -> bool:
        """OpenAI's and Azure OpenAI's chat completions take `n`; litellm's other
        providers would drop it (drop_params) or refuse it."""
        return model.startswith(("openai/", "azure/"))

    def check_credentials(self, model: str) -> None:
        """One clear line when the provider's key is missing (before any call)."""
        if model.startswith("ollama"):
            return
        missing = load_litellm().validate_environment(model).get("missing_keys") or []
        if missing:
            raise ModelConfigError(
                f"no credentials for {model}: set {', '.join(missing)} (or put it in .env)",
                hint="or use the offline model: --model local/qwen2.5-coder-1.5b",
            )

    def supports_json_schema(self, model: str) -> bool:
        try:
            return bool(load_litellm().supports_response_schema(model))
        except Exception:
            return False

    def stores_completions(self, model: str) -> bool:
        try:
            _, provider, _, _ = load_litellm().get_llm_provider(model)
        except Exception:
            return False
        return provider in ("openai", "azure")

    def batch_api(self, model: str) -> BatchAPI | None:
        """OpenAI's Batch API, for OpenAI's models (litellm's other providers have none
        that promptgen drives)."""
        try:
            _, provider, _, _ = load_litellm().get_llm_provider(model)
        except Exception:
            return None
        if provider != "openai":
            return None
        if self._batch is None:
            from openai import AsyncOpenAI

            from promptgen.llm.batch import BatchAPI

            self._batch = BatchAPI(AsyncOpenAI(max_retries=2))
        return self._batch

    async def chat(self, request: ChatRequest, mode: str) -> RawReply:
        litellm = load_litellm()
        params = request.openai_params(mode)
        if "metadata" in params:
            # litellm keeps `metadata` for its own logging: the provider gets it in the body.
            extra = dict(params.get("extra_body") or {})
            extra["metadata"] = params.pop("metadata")
            params["extra_body"] = extra
        try:
            response = await litellm.acompletion(**params, num_retries=0)
        except Exception as exc:
            raise classify(exc) from exc
        return self._reply(litellm, response)

    @staticmethod
    def _reply(litellm: Any, response: Any) -> RawReply:
        try:
            choice = response.choices[0]
            text = message_text(choice.message)
            more = [
                RawReply(text=message_text(c.message), finish_reason=c.finish_reason)
                for c in response.choices
            ]
        except (AttributeError, IndexError) as exc:
            raise CallError("the provider's answer has no message", retryable=True) from exc
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:
            cost = None
        hidden = getattr(response, "_hidden_params", None) or {}
        head = hidden.get("additional_headers") if isinstance(hidden, dict) else None
        return RawReply(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_tokens=cached_tokens(usage) if usage is not None else 0,
            cost=cost,
            model=getattr(response, "model", None),
            finish_reason=getattr(choice, "finish_reason", None),
            choices=more if len(more) > 1 else [],  # a request with `n`
            rate=rate_headers({str(k).lower(): str(v) for k, v in dict(head or {}).items()}),
        )
