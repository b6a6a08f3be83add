"""The lean HTTP client under the openai SDK: the same requests as the SDK's own client,
cookies, redirects and `elapsed` as httpx handles them, and the body sent as given."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from openai import AsyncOpenAI, DefaultAioHttpClient
from openai._models import FinalRequestOptions

from promptgen.llm import LLM
from promptgen.llm.http_client import LeanAioHttpClient
from promptgen.llm.openai_compat import OpenAICompatBackend
from promptgen.llm.types import ChatRequest
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply
from tests.llm.test_gateway import HI, make

BODY = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "temperature": 0}


def _built(http_client: httpx.AsyncClient, url: str) -> httpx.Request:
    """The request the SDK builds for a chat completion with this HTTP client."""
    client = AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0, http_client=http_client)
    options = FinalRequestOptions.construct(
        method="post", url=f"{url}/chat/completions", json_data=BODY, timeout=30.0
    )
    return client._build_request(options)  # the SDK's own builder, as `post` uses it


def test_builds_the_same_request_as_the_sdks_client() -> None:
    url = "http://127.0.0.1:9/v1"
    lean, stock = _built(LeanAioHttpClient(), url), _built(DefaultAioHttpClient(), url)
    assert type(lean) is httpx.Request
    assert lean.method == stock.method == "POST"
    assert str(lean.url) == str(stock.url) == "http://127.0.0.1:9/v1/chat/completions"
    assert lean.headers.multi_items() == stock.headers.multi_items()
    assert lean.headers["authorization"] == "Bearer sk-test"
    assert lean.content == stock.content and json.loads(lean.content) == BODY
    assert (
        lean.extensions["timeout"]
        == stock.extensions["timeout"]
        == {
            "connect": 30.0,
            "read": 30.0,
            "write": 30.0,
            "pool": 30.0,
        }
    )


def test_a_relative_url_or_cookies_take_httpxs_own_path() -> None:
    client = LeanAioHttpClient(base_url="http://127.0.0.1:9/v1/")
    relative = client.build_request("GET", "models")
    assert str(relative.url) == "http://127.0.0.1:9/v1/models"
    client.cookies.set("session", "abc")
    request = client.build_request("POST", httpx.URL("http://127.0.0.1:9/v1/x"), content=b"{}")
    assert request.headers["cookie"] == "session=abc"


def test_call_sends_the_body_as_the_sdk_would_and_stamps_elapsed(fake_llm: FakeLLM) -> None:
    fake_llm.queue(Reply("hi"))
    backend = OpenAICompatBackend(fake_llm.url)
    request = ChatRequest(model="openai/m", messages=BODY["messages"], temperature=0.0)

    async def call() -> str:
        try:
            reply = await backend.chat(request, "text")
            return reply.text
        finally:
            await backend.aclose()

    assert run(call()) == "hi"
    assert fake_llm.requests == [{**BODY, "temperature": 0.0}]


def test_a_redirect_is_followed_as_httpx_follows_it(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.queue(
        Reply(status=307, raw=b"", headers={"Location": f"{fake_llm.url}/chat/completions"}),
        Reply("after the redirect"),
    )
    llm = make(fake_llm, tmp_path, cache=False)
    assert run(llm.complete(HI)).text == "after the redirect"
    # A 307 keeps the method and the body.
    assert [r["messages"] for r in fake_llm.requests] == [HI, HI]


def test_cookies_a_server_sets_are_sent_back() -> None:
    """httpx's cookie jar, as with the SDK's own client (a made-up host: no network, the
    answers come from httpx's in-process transport)."""
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        return httpx.Response(200, json={"ok": 1}, headers={"Set-Cookie": "affinity=node-2"})

    async def twice() -> float:
        client = LeanAioHttpClient(transport=httpx.MockTransport(answer))
        url = httpx.URL("http://api.promptgen.test/v1/chat/completions")
        for _ in range(2):
            response = await client.send(client.build_request("POST", url, content=b"{}"))
        await client.aclose()
        return response.elapsed.total_seconds()

    assert run(twice()) >= 0
    assert seen == [None, "affinity=node-2"]


def test_a_backend_checked_before_the_first_call_is_the_one_used(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.queue(Reply("one"), Reply("two"))
    llm: LLM = make(fake_llm, tmp_path, cache=False)

    async def calls() -> list[str | None]:
        checked, _ = llm.backend_for(llm.settings.resolve("rules"))
        texts = [(await llm.complete(HI)).text, (await llm.complete(HI)).text]
        assert llm.backend_for(llm.settings.resolve("rules"))[0] is checked
        return texts

    assert run(calls()) == ["one", "two"]
