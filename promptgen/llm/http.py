"""JSON over HTTP to one OpenAI-compatible server: the transport of `--api-base` calls.

A chat completion is one POST of JSON and one JSON answer, so this is aiohttp (the
HTTP client the openai SDK itself uses in promptgen's install) with nothing between:
the SDK costs about 0.6-0.9 s to import and about 1 ms of CPU per call (request
options models, the httpx adapter), which decided the start-up and the evaluation
time of a run (docs/llm.md, "Transport"). The SDK stays for the Files and Batches
API (`--batch`), imported only then; other providers go through litellm.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from promptgen.llm.remote import parse_retry_after
from promptgen.llm.types import CallError

if TYPE_CHECKING:
    import aiohttp

_NO_RETRY = {400, 401, 403, 404, 413, 422}


class JsonClient:
    """Keep-alive connections to one server; its session belongs to the event loop
    that opened it (the backend's policy is `per_loop`)."""

    def __init__(self, base_url: str, api_key: str, max_connections: int) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._max = max_connections
        self._session: aiohttp.ClientSession | None = None
        # HTTP(S)_PROXY / NO_PROXY, read once for this server: aiohttp's `trust_env` would
        # look them (and ~/.netrc) up again in a thread for every request.
        self._proxy = proxy_for(self.base_url)

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self._max, limit_per_host=0)
        return aiohttp.ClientSession(connector=connector)

    async def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str], timeout: float
    ) -> Any:
        """The answer's JSON; any failure is a classified CallError."""
        import aiohttp

        if self._session is None:
            self._session = self._open()
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            async with self._session.post(
                self.base_url + path,
                data=data,
                headers={**self._headers, **headers} if headers else self._headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                proxy=self._proxy,
            ) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise _status_error(response.status, raw, response.headers)
        except TimeoutError as exc:
            raise CallError(f"timed out after {timeout:g} s", retryable=True) from exc
        except aiohttp.ClientError as exc:
            raise CallError(f"connection failed: {exc}", retryable=True) from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise CallError("the server's answer is not JSON", retryable=True) from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (None: direct, or NO_PROXY matches)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host or proxy_bypass(host):
        return None
    return getproxies().get(parts.scheme)


def _status_error(status: int, raw: bytes, headers: Any) -> CallError:
    """An HTTP error as the retry loop understands it, with the server's own message."""
    message = _error_message(raw) or f"HTTP {status}"
    text = f"Error code: {status} - {message}"
    retry_after = parse_retry_after(headers.get("retry-after"))
    if status == 429:
        return CallError(
            text, status=429, retryable=True, retry_after=retry_after, rate_limited=True
        )
    if status >= 500:
        return CallError(text, status=status, retryable=True, retry_after=retry_after)
    return CallError(text, status=status, retryable=status not in _NO_RETRY)


def _error_message(raw: bytes) -> str:
    """`error.message` of an OpenAI-style error body, else the body's first line."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip().splitlines()[0][:300] if raw.strip() else ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return json.dumps(body)[:300]
