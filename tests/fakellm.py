"""An OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Real HTTP, so litellm and the openai SDK run for real. Queue scripted replies, or set
a responder function; inject errors (429 with Retry-After, 500, malformed JSON, a
dropped connection, a slow answer); answer 429 at once above `max_concurrency`
requests in flight (a provider's concurrency limit, counted in `capped`); read back
every request and the peak number of requests in flight (those answered 429 at once not
counted). `GET /v1/models` lists `models` (None: HTTP 404; `models_raw`: that body as
is), and every such request is kept in `model_lookups` (path and headers). With
`profile` (`--profile NAME`), a request whose json_schema breaks a rule that provider
refuses gets its HTTP 400 first (tests/enforcing.py), and is listed in `refused`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    raw: bytes | None = None  # a body sent as is (e.g. malformed JSON)
    drop: bool = False  # close the connection without an answer
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0  # said as usage.prompt_tokens_details.cached_tokens when > 0
    choices: list[str] | None = None  # several answers in one reply (a request with `n`)


Responder = Callable[[dict[str, Any]], Reply]


def finished_reply(content: str, finish_reason: str) -> Reply:
    """A chat completion sent as is, with the finish reason given ("length": cut off)."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(raw=json.dumps(body).encode())


def json_reply(obj: Any, **kwargs: Any) -> Reply:
    return Reply(content=json.dumps(obj), **kwargs)


class FakeLLM:
    def __init__(
        self,
        latency: float = 0.0,
        responder: Responder | None = None,
        jitter: float = 0.0,
        seed: int | None = None,
        profile: str | None = None,
    ) -> None:
        self.latency = latency
        self.responder = responder
        self.profile = profile  # a provider profile whose refusals this server enforces
        self.refused: list[Any] = []  # tests/enforcing.py Refusal, one per refused request
        # Up to `jitter` seconds more per request, drawn from a generator seeded with
        # `seed` (or set `rng`): runs with different seeds see their answers finish in other orders.
        self.jitter = jitter
        self.rng = random.Random(seed)
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # Above this many requests in flight, 429 with Retry-After: 0 at once (None: no cap).
        self.max_concurrency: int | None = None
        self.capped = 0  # requests answered 429 by that cap
        # What GET /v1/models lists (None: 404). One model, so a run with no model named
        # for a role uses it (llm/served.py), named as the id such roles were sent before.
        self.models: list[str] | None = ["default"]
        self.models_raw: bytes | None = None  # a /v1/models body sent as is (not JSON, ...)
        self.model_lookups: list[tuple[str, dict[str, str]]] = []  # (path, headers) asked
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Reply | str) -> None:
        for reply in replies:
            self.script.append(Reply(content=reply) if isinstance(reply, str) else reply)

    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.requests.clear()
            self.refused.clear()
            self.max_in_flight = 0

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, body: dict[str, Any]) -> Reply:
        """The reply to send after the latency (`_REFUSED`: at once, not in flight)."""
        from tests.enforcing import refusal

        refusing = refusal(body, self.profile)
        with self._lock:
            self.requests.append(body)
            if self.max_concurrency is not None and self.in_flight >= self.max_concurrency:
                self.capped += 1
                return _REFUSED
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            extra = self.rng.uniform(0, self.jitter) if self.jitter else 0.0
            if refusing is not None:
                self.refused.append(refusing[1])
                return refusing[0]
            if self.script:
                return _delayed(self.script.popleft(), extra)
        return _delayed(self.responder(body) if self.responder else Reply(), extra)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # answers go out at once (no 40 ms stalls)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/stats"):  # what benchmarks count
                    counts = {"requests": len(fake.requests), "refused": len(fake.refused)}
                    self._send(200, json.dumps(counts).encode(), {})
                    return
                with fake._lock:
                    fake.model_lookups.append((self.path, dict(self.headers.items())))
                if fake.models_raw is not None:
                    self._send(200, fake.models_raw, {})
                elif fake.models is None:
                    error = {"error": {"message": f"Unknown path {self.path}", "type": "x"}}
                    self._send(404, json.dumps(error).encode(), {})
                else:
                    data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode(), {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._next(body)
                if reply is _REFUSED:  # over the concurrency cap: no latency, not in flight
                    self._send(*answer(body, reply))
                    return
                try:
                    time.sleep(fake.latency + reply.delay)
                    if reply.drop:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self._send(*answer(body, reply))
                finally:
                    fake._done()

        return Handler


# The answer above `FakeLLM.max_concurrency` requests in flight.
_REFUSED = Reply(status=429, headers={"Retry-After": "0"})


def _delayed(reply: Reply, extra: float) -> Reply:
    return replace(reply, delay=reply.delay + extra) if extra else reply


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 512  # listen() backlog: many clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up (tests, benchmarks ending) is normal here


def answer(body: dict[str, Any], reply: Reply) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers a scripted reply is sent as (both fake servers)."""
    if reply.raw is not None:
        return reply.status, reply.raw, reply.headers
    if reply.status != 200:
        error = {"error": {"message": f"fake error {reply.status}", "type": "x"}}
        return reply.status, json.dumps(error).encode(), reply.headers
    return 200, json.dumps(_completion(body, reply)).encode(), reply.headers


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
            for i, content in enumerate(reply.choices or [reply.content])
        ],
        "usage": usage,
    }


def main() -> None:
    """Run the server in its own process: prints its URL, serves until stdin closes."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="fake OpenAI-compatible server")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--pipeline", action="store_true", help="answer every pipeline stage")
    parser.add_argument(
        "--groundtruth-low-share",
        type=float,
        default=None,
        help="with --pipeline: this share of groundtruth answers scores 40 (by content)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="refuse (HTTP 400) what this provider profile refuses (tests/enforcing.py)",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="the threaded server the tests use [default: one asyncio loop, tests/fakellm_aio.py]",
    )
    args = parser.parse_args()
    responder = None
    if args.pipeline:
        from tests.pipeline_fake import PipelineResponder

        responder = PipelineResponder()
        responder.groundtruth_low_share = args.groundtruth_low_share
        responder.honour_n = True
    # The benchmarks' server: the asyncio one answers thousands of calls a second on one
    # core, so a wide round measures the client, not a thread per connection.
    from tests.fakellm_aio import AsyncFakeLLM

    kind = FakeLLM if args.threads else AsyncFakeLLM
    with kind(latency=args.latency, responder=responder, profile=args.profile) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
