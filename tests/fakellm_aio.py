"""The fake OpenAI-compatible server (tests/fakellm.py) on one asyncio event loop.

Same replies, responder and fault injection (`Reply`: status, headers, delay, raw body,
dropped connection) as `FakeLLM`, but no thread per connection and no sleeping thread
per call: an answer is written by a timer when its latency has passed. The threaded
server spends about half a millisecond of CPU per request and, with a thousand calls
in flight, a thousand threads; a benchmark round of ~1,300 calls then measures the
server. This one answers several thousand requests a second on one core, so the bench
(`python -m tests.fakellm`) measures the client. Tests keep the threaded `FakeLLM`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from http import HTTPStatus
from typing import Any

from tests.fakellm import Reply, Responder, answer

# GET /v1/models: one model, as tests/fakellm.py lists by default.
_MODELS = json.dumps({"object": "list", "data": [{"id": "default", "object": "model"}]}).encode()


class AsyncFakeLLM:
    """The `FakeLLM` interface (url, queue, reset, requests, max_in_flight, context
    manager) on an asyncio loop in a daemon thread."""

    def __init__(
        self,
        latency: float = 0.0,
        responder: Responder | None = None,
        profile: str | None = None,
    ) -> None:
        self.latency = latency
        self.responder = responder
        self.profile = profile  # a provider profile whose refusals this server enforces
        self.refused: list[Any] = []  # tests/enforcing.py Refusal, one per refused request
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Reply | str) -> None:
        for reply in replies:
            self.script.append(Reply(content=reply) if isinstance(reply, str) else reply)

    def reset(self) -> None:
        self.script.clear()
        self.requests.clear()
        self.refused.clear()
        self.max_in_flight = 0

    def start(self) -> AsyncFakeLLM:
        server = self._loop.create_server(
            lambda: _Connection(self), "127.0.0.1", 0, backlog=4096, reuse_address=True
        )
        self._server = self._loop.run_until_complete(server)
        self._thread.start()
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def __enter__(self) -> AsyncFakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def next_reply(self, body: dict[str, Any]) -> Reply:
        # Everything runs on the loop's thread: no lock needed (the responder has its own).
        from tests.enforcing import refusal

        self.requests.append(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        refusing = refusal(body, self.profile)
        if refusing is not None:
            self.refused.append(refusing[1])
            return refusing[0]
        if self.script:
            return self.script.popleft()
        return self.responder(body) if self.responder else Reply()


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests are answered in the order they came."""

    def __init__(self, fake: AsyncFakeLLM) -> None:
        self.fake = fake
        self.buffer = b""
        self.busy = False  # a request is waiting for its answer (no pipelining past it)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next_request()

    def _next_request(self) -> None:
        if self.busy or self.transport is None:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].decode("latin-1").split("\r\n")
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if len(self.buffer) < end + 4 + length:
            return  # the body is still arriving
        raw = self.buffer[end + 4 : end + 4 + length]
        self.buffer = self.buffer[end + 4 + length :]
        method = head[0].split(" ", 1)[0]
        self.busy = True
        if method != "POST":
            path = head[0].split(" ")[1] if " " in head[0] else "/"
            if path.rstrip("/").endswith("/stats"):  # what benchmarks count
                counts = {"requests": len(self.fake.requests), "refused": len(self.fake.refused)}
                self._send(200, json.dumps(counts).encode(), {})
            else:
                self._send(200, _MODELS, {})
            return
        body = json.loads(raw or b"{}")
        reply = self.fake.next_reply(body)
        loop = asyncio.get_running_loop()
        loop.call_later(self.fake.latency + reply.delay, self._answer, body, reply)

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        self.fake.in_flight -= 1
        if self.transport is None:
            return  # the client hung up while waiting
        if reply.drop:
            self.transport.abort()
            return
        self._send(*answer(body, reply))

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        assert self.transport is not None
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        lines = [
            f"HTTP/1.1 {status} {phrase}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        self.busy = False
        if self.buffer:
            self._next_request()
