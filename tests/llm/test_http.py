"""The `--api-base` transport (promptgen/llm/http.py) against raw servers on 127.0.0.1:
chunked replies, kept-alive and closed connections, broken answers, header injection,
TLS, and proxies from the environment."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from promptgen.llm.http import JsonClient, proxy_for
from promptgen.llm.types import CallError, ModelConfigError

BODY = {"choices": [{"index": 0, "message": {"content": "hi"}}]}
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """One request as the server reads it: request line, headers, body."""
    line = (await reader.readline()).decode()
    head: dict[str, str] = {}
    while (field := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = field.decode().partition(":")
        head[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(head.get("content-length", 0)))
    return line, head, body


def _reply(payload: bytes, *headers: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def _chunks(payload: bytes) -> bytes:
    """`payload` in two chunks, then the last (empty) chunk."""
    half = len(payload) // 2
    parts = (payload[:half], payload[half:])
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"


async def _serve(handler: Handler, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    return await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)


def _url(server: asyncio.Server, scheme: str = "http") -> str:
    port = server.sockets[0].getsockname()[1]
    return f"{scheme}://127.0.0.1:{port}/v1"


def test_kept_alive_chunked_and_closed_connections() -> None:
    connections: list[int] = []
    seen: list[tuple[str, dict[str, str], bytes]] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        while not reader.at_eof():
            try:
                request = await _request(reader)
            except asyncio.IncompleteReadError:
                break
            if not request[0]:
                break
            seen.append(request)
            payload = json.dumps({**BODY, "n": len(seen)}).encode()
            if len(seen) == 1:  # plain, kept alive
                writer.write(_reply(payload, f"Content-Length: {len(payload)}"))
            elif len(seen) == 2:  # chunked, in two chunks, kept alive
                half = len(payload) // 2
                chunks = b"".join(
                    f"{len(p):x}\r\n".encode() + p + b"\r\n"
                    for p in (payload[:half], payload[half:])
                )
                writer.write(_reply(chunks + b"0\r\n\r\n", "Transfer-Encoding: chunked"))
            else:  # the server ends the connection after this answer
                writer.write(
                    _reply(payload, f"Content-Length: {len(payload)}", "Connection: close")
                )
                await writer.drain()
                writer.close()
                return
            await writer.drain()

    async def main() -> list[object]:
        server = await _serve(handler)
        client = JsonClient(_url(server), "sk-test")
        try:
            answers = [
                await client.post("/chat/completions", {"q": i}, {"X-Trace": "t"}, 5)
                for i in range(4)
            ]
        finally:
            await client.aclose()
            server.close()
        return answers

    answers = asyncio.run(main())
    assert [a["n"] for a in answers] == [1, 2, 3, 4]  # type: ignore[index]
    assert len(connections) == 2  # three answers on the first, then a new connection
    line, head, body = seen[0]
    assert line.startswith("POST /v1/chat/completions HTTP/1.1")
    assert head["authorization"] == "Bearer sk-test" and head["x-trace"] == "t"
    assert json.loads(body) == {"q": 0}


def test_broken_answers_are_retryable_errors() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"SMTP ready\r\n\r\n")
        await writer.drain()
        writer.close()

    async def main() -> CallError:
        server = await _serve(handler)
        client = JsonClient(_url(server), "k")
        try:
            with pytest.raises(CallError) as caught:
                await client.post("/chat/completions", {}, {}, 5)
        finally:
            await client.aclose()
            server.close()
        return caught.value

    error = asyncio.run(main())
    assert error.retryable and "not an HTTP answer" in error.message


def test_a_key_with_a_line_break_is_a_configuration_error() -> None:
    with pytest.raises(ModelConfigError, match="line break"):
        JsonClient("http://127.0.0.1:9/v1", "sk-1\r\nX-Injected: 1")


def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    client = JsonClient("http://127.0.0.1:9/v1", "k")
    with pytest.raises(CallError) as caught:
        asyncio.run(client.post("/x", {}, {"X-Evil": "a\r\nInjected: 1"}, 5))
    assert not caught.value.retryable and "line break" in caught.value.message


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_with_a_certificate_the_environment_trusts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        payload = json.dumps(BODY).encode()
        writer.write(_reply(payload, f"Content-Length: {len(payload)}"))
        await writer.drain()

    async def main() -> object:
        server = await _serve(handler, tls)
        client = JsonClient(_url(server, "https"), "k")
        try:
            return await client.post("/chat/completions", {}, {}, 5)
        finally:
            await client.aclose()
            server.close()

    assert asyncio.run(main()) == BODY


def test_the_environment_names_the_proxy_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost,.internal")
    assert proxy_for("https://api.example.com/v1") == "http://proxy.example:3128"
    assert proxy_for("http://api.example.com/v1") is None  # no HTTP_PROXY given
    assert proxy_for("http://127.0.0.1:8000/v1") is None
    assert proxy_for("https://models.internal/v1") is None
