"""The benchmarks' asyncio fake server answers as the threaded one does."""

from __future__ import annotations

import json
from pathlib import Path

from promptgen.llm import LLM, RetryPolicy, load_settings
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import Reply
from tests.fakellm_aio import AsyncFakeLLM

HI = [{"role": "user", "content": "Say hi"}]


def _gateway(url: str, tmp_path: Path) -> LLM:
    cli = {"api_base": url, "rules": "openai/fake", "cache": False, "concurrency": 64}
    settings = load_settings(cli, env={}, cwd=tmp_path)
    retry = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)
    llm = LLM(settings, retry=retry, start_limit=64)  # 64 in flight from the first call
    OPEN_GATEWAYS.append(llm)
    return llm


def test_replies_faults_and_the_request_log(tmp_path: Path) -> None:
    with AsyncFakeLLM() as fake:
        fake.queue(
            Reply("a", prompt_tokens=7, completion_tokens=3),
            Reply(status=500),
            Reply(drop=True),
            Reply("after two faults"),
            Reply(status=400),
        )
        llm = _gateway(fake.url, tmp_path)
        first = run(llm.complete(HI))
        second = run(llm.complete(HI))
        third = run(llm.complete(HI))
    assert (first.text, first.usage.prompt_tokens, first.usage.completion_tokens) == ("a", 7, 3)
    assert second.text == "after two faults" and second.attempts == 3
    assert not third.ok and "HTTP 400" in (third.error or "")
    assert [r["messages"] for r in fake.requests] == [HI] * 5
    assert fake.in_flight == 0


def test_latency_overlaps_across_calls(tmp_path: Path) -> None:
    with AsyncFakeLLM(latency=0.2, responder=lambda body: Reply(json.dumps(body["n"]))) as fake:
        llm = _gateway(fake.url, tmp_path)

        async def many() -> list[str | None]:
            import asyncio

            calls = [llm.complete(HI, params={"n": i}) for i in range(50)]
            return [c.text for c in await asyncio.gather(*calls)]

        assert run(many()) == [str(i) for i in range(50)]
    assert fake.max_in_flight == 50  # answered side by side, not one by one
