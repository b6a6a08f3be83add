"""JSON over HTTP to one OpenAI-compatible server: the transport of `--api-base` calls.

A chat completion is one POST of JSON and one JSON answer over a kept-alive
connection, so this is HTTP/1.1 on asyncio's own streams (TLS from the `ssl` module),
with nothing between. The openai SDK took 0.6-0.9 s to import and about 1 ms of CPU per
call; aiohttp, 0.11 s of the 0.4 s start-up budget and most of the rest of the per-call
cost (docs/performance.md). What this does not do it leaves to aiohttp, loaded only
then: a server reached through a proxy (HTTP(S)_PROXY without a matching NO_PROXY).
Other providers go through litellm; `--batch` through the openai SDK.

Replies are read by Content-Length or chunked transfer coding (no compression is
asked for); a kept-alive connection the server has closed is not used again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from promptgen.llm.types import CallError, ModelConfigError
from promptgen.llm.wire import parse_retry_after

if TYPE_CHECKING:
    import aiohttp

_NO_RETRY = {400, 401, 403, 404, 413, 422}
_IDLE = 512  # kept-alive connections at most; more are closed after their answer
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Broken(Exception):
    """The server's answer is not HTTP/1.x as expected (or the connection went away)."""


class JsonClient:
    """Kept-alive connections to one server; they belong to the event loop that opened
    them (the backend's policy is `per_loop`)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelConfigError(f"the API base is not an http(s) URL: {base_url}")
        if "\r" in api_key or "\n" in api_key:
            raise ModelConfigError("the API key holds a line break", hint="check OPENAI_API_KEY")
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        host = parts.netloc.rsplit("@", 1)[-1]  # as written, brackets of an IPv6 address kept
        self._head = (
            f"Host: {host}\r\nAuthorization: Bearer {api_key}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            "Accept-Encoding: identity\r\nUser-Agent: promptgen\r\n"
        )
        self._idle: list[Connection] = []
        self._open: set[asyncio.StreamWriter] = set()
        self._context: ssl.SSLContext | None = None
        # HTTP(S)_PROXY / NO_PROXY, read once for this server.
        self._proxy = proxy_for(self.base_url)
        self._aiohttp: aiohttp.ClientSession | None = None
        self._key = api_key

    async def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str], timeout: float
    ) -> Any:
        """The answer's JSON; any failure is a classified CallError."""
        return (await self.exchange(path, body, headers, timeout))[0]

    async def exchange(
        self, path: str, body: dict[str, Any], headers: dict[str, str], timeout: float
    ) -> tuple[Any, dict[str, str]]:
        """The answer's JSON and its headers (lower-case names), as `post`."""
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        extra = "".join(f"{_header_name(k)}: {_header_value(v)}\r\n" for k, v in headers.items())
        try:
            if self._proxy is not None:
                status, head, raw = await self._via_proxy(path, data, headers, timeout)
            else:
                exchange = self._exchange(path, data, extra)
                status, head, raw = await asyncio.wait_for(exchange, timeout)
        except TimeoutError as exc:
            raise CallError(f"timed out after {timeout:g} s", retryable=True) from exc
        except (OSError, EOFError, _Broken) as exc:
            raise CallError(
                f"connection failed: {exc or type(exc).__name__}", retryable=True
            ) from exc
        if status >= 400:
            raise _status_error(status, raw, head)
        try:
            return json.loads(raw), head
        except ValueError as exc:
            raise CallError("the server's answer is not JSON", retryable=True) from exc

    async def _exchange(self, path: str, data: bytes, extra: str) -> tuple[int, dict, bytes]:
        request = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}{extra}"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode("latin-1") + data
        reader, writer = self._kept() or await self._connect()
        try:
            writer.write(request)
            status, head, raw, keep = await _read_response(reader)
        except BaseException:
            self._close(writer)  # cancelled or broken mid-answer: never reused
            raise
        if keep and len(self._idle) < _IDLE:
            self._idle.append((reader, writer))
        else:
            self._close(writer)
        return status, head, raw

    def _kept(self) -> Connection | None:
        """An idle connection still open at both ends (one the server closed while it
        sat idle has seen the end of its stream, and is dropped)."""
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            self._close(writer)
        return None

    async def _connect(self) -> Connection:
        if self._tls and self._context is None:
            self._context = ssl.create_default_context()  # loads the CA certificates once
        reader, writer = await asyncio.open_connection(
            self._host,
            self._port,
            ssl=self._context if self._tls else None,
            limit=2**20,
        )
        self._open.add(writer)
        return reader, writer

    def _close(self, writer: asyncio.StreamWriter) -> None:
        self._open.discard(writer)
        # A connection whose event loop is closed already (a gateway used under one
        # asyncio.run and closed under another) cannot be closed through it; dropped, its
        # transport closes the socket when it is collected.
        with contextlib.suppress(RuntimeError):
            writer.close()

    async def _via_proxy(
        self, path: str, data: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int, dict, bytes]:
        """Through the environment's proxy, with aiohttp (CONNECT for https)."""
        import aiohttp

        if self._aiohttp is None:
            self._aiohttp = aiohttp.ClientSession()
        sent = {"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"}
        try:
            async with self._aiohttp.post(
                self.base_url + path,
                data=data,
                headers={**sent, **headers},
                timeout=aiohttp.ClientTimeout(total=timeout),
                proxy=self._proxy,
            ) as response:
                raw = await response.read()
                head = {k.lower(): v for k, v in response.headers.items()}
                return response.status, head, raw
        except aiohttp.ClientError as exc:
            raise _Broken(str(exc)) from exc

    async def aclose(self) -> None:
        for writer in list(self._open):
            self._close(writer)
        self._idle.clear()
        if self._aiohttp is not None:
            await self._aiohttp.close()
            self._aiohttp = None


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict, bytes, bool]:
    """Status, headers (lower-case names), body, and whether the connection stays open."""
    line = await reader.readline()
    if not line:
        raise _Broken("the server closed the connection")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise _Broken(f"not an HTTP answer: {line[:80]!r}")
    status = int(parts[1])
    head: dict[str, str] = {}
    while True:
        field = await reader.readline()
        if field in (b"\r\n", b"\n"):
            break
        if not field:
            raise _Broken("the answer's headers were cut off")
        name, _, value = field.decode("latin-1").partition(":")
        head[name.strip().lower()] = value.strip()
    keep = head.get("connection", "").lower() != "close" and parts[0] != b"HTTP/1.0"
    if "chunked" in head.get("transfer-encoding", "").lower():
        return status, head, await _chunked(reader), keep
    if "content-length" in head:
        return status, head, await reader.readexactly(int(head["content-length"])), keep
    return status, head, await reader.read(), False  # read to the end: not reusable


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailer fields
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)  # the CRLF after each chunk


def _header_name(name: str) -> str:
    if not name or any(c in name for c in ":\r\n \t"):
        raise CallError(f"header name {name!r} is not valid", retryable=False)
    return name


def _header_value(value: str) -> str:
    """A header value as sent; a line break in it (a hostile prompt's extra_headers)
    would start a header of its own, so it is refused."""
    if "\r" in value or "\n" in value:
        raise CallError("a header value holds a line break", retryable=False)
    return value


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
    if status >= 500:  # 503: overloaded, which lowers the model's limit as a 429 does
        return CallError(
            text, status=status, retryable=True, retry_after=retry_after, rate_limited=status == 503
        )
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
