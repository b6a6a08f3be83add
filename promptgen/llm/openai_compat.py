"""Any OpenAI-compatible server (`--api-base`): the openai SDK directly, no translation layer.

litellm adds ~2 ms per call to translate between providers; a server that already
speaks the OpenAI protocol does not need it.
"""

from __future__ import annotations

import os

from promptgen.llm.remote import classify
from promptgen.llm.types import CallError, ChatRequest, RawReply


class OpenAICompatBackend:
    default_concurrency = 8

    def __init__(self, api_base: str) -> None:
        import httpx
        from openai import AsyncOpenAI, DefaultAioHttpClient

        self.api_base = api_base
        # aiohttp's connection pool stays fast with hundreds of calls in flight; httpx's
        # default pool scans every connection for every request.
        http_client = DefaultAioHttpClient(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=512)
        )
        self._client = AsyncOpenAI(
            base_url=api_base,
            api_key=os.environ.get("OPENAI_API_KEY") or "no-key",
            max_retries=0,  # the gateway retries
            http_client=http_client,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def check_credentials(self, model: str) -> None:
        return None  # local servers usually need none; a 401 says so clearly

    def supports_json_schema(self, model: str) -> bool:
        return True  # downgraded automatically if the server refuses it

    async def chat(self, request: ChatRequest, mode: str) -> RawReply:
        params = request.openai_params(mode)
        params["model"] = request.model.removeprefix("openai/")
        try:
            response = await self._client.chat.completions.create(**params)
        except Exception as exc:
            raise classify(exc) from exc
        if not response.choices:
            raise CallError("the server's answer has no choices", retryable=True)
        usage = response.usage
        return RawReply(
            text=response.choices[0].message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cost=None,
            model=response.model,
        )
