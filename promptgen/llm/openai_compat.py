"""Any OpenAI-compatible server (`--api-base`): its own protocol, no translation layer.

litellm adds ~2 ms per call to translate between providers, and the openai SDK about
1 ms and most of a second of start-up: a server that already speaks the OpenAI
protocol gets its JSON over `llm/http.py`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar, Self

from promptgen.llm.backend import BackendPolicy
from promptgen.llm.http import JsonClient
from promptgen.llm.types import ChatRequest, RawReply
from promptgen.llm.wire import chat_reply, rate_headers

if TYPE_CHECKING:
    from promptgen.llm.batch import BatchAPI


class OpenAICompatBackend:
    """Every model, when --api-base names a server."""

    policy: ClassVar[BackendPolicy] = BackendPolicy(
        concurrency=None,
        cancellable=True,
        structured_mode="negotiate",
        uses_api_base=True,
        per_loop=True,  # the aiohttp session belongs to its event loop
        batch=True,  # if the server has no Batch API, submitting says so and calls go one by one
    )

    @classmethod
    def owns(cls, model_id: str, api_base: str | None) -> bool:
        return bool(api_base)

    @classmethod
    def model_name(cls, model_id: str) -> str:
        return model_id

    @classmethod
    def create(cls, api_base: str | None) -> Self:
        return cls(str(api_base))

    def __init__(self, api_base: str) -> None:
        self.api_base = api_base
        self._key = os.environ.get("OPENAI_API_KEY") or "no-key"
        self._http = JsonClient(api_base, self._key)
        self._sdk: Any = None  # the openai SDK client, for the Batch API only

    async def aclose(self) -> None:
        await self._http.aclose()
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

    def batch_api(self, model: str) -> BatchAPI:
        from openai import AsyncOpenAI

        from promptgen.llm.batch import BatchAPI

        if self._sdk is None:
            self._sdk = AsyncOpenAI(base_url=self.api_base, api_key=self._key, max_retries=0)
        return BatchAPI(self._sdk)

    @classmethod
    def many_choices(cls, model: str) -> bool:
        return True  # a server that ignores `n` answers once; the gateway asks the rest

    def check_credentials(self, model: str) -> None:
        return None  # local servers usually need none; a 401 says so clearly

    def stores_completions(self, model: str) -> bool:
        return True  # the server gets `store` and `metadata` as sent; it may ignore them

    def supports_json_schema(self, model: str) -> bool:
        return True  # downgraded automatically if the server refuses it

    async def chat(self, request: ChatRequest, mode: str) -> RawReply:
        params = request.openai_params(mode)
        params["model"] = request.model.removeprefix("openai/")
        timeout = params.pop("timeout")
        headers = _headers(params)
        response, head = await self._http.exchange("/chat/completions", params, headers, timeout)
        reply = chat_reply(response)
        reply.rate = rate_headers(head)
        return reply


def _headers(params: dict[str, Any]) -> dict[str, str]:
    """A prompt's `api_key` and `extra_headers` parameters, taken out of the body (where
    the server would see them as request fields) and sent as headers."""
    headers = {str(k): str(v) for k, v in (params.pop("extra_headers", None) or {}).items()}
    key = params.pop("api_key", None)
    if key:
        headers.setdefault("Authorization", f"Bearer {key}")
    return headers
