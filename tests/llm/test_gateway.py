"""The gateway against a real HTTP server: structured output, cache, retries, limits, usage."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

import promptgen
from promptgen.llm import LLM, ModelConfigError, RetryPolicy, bounded_gather, load_settings
from promptgen.llm.cores import physical_cores
from promptgen.llm.remote import classify
from promptgen.llm.replies import without_redacted
from promptgen.secrets import REDACTED
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import FakeLLM, Reply, finished_reply, json_reply

HI = [{"role": "user", "content": "Say hi"}]


class Verdict(BaseModel):
    ok: bool
    reason: str


def make(fake: FakeLLM, tmp_path: Path, **cli: object) -> LLM:
    settings = load_settings(
        {"api_base": fake.url, "rules": "openai/fake", "cache_dir": str(tmp_path / "c"), **cli},
        env={},
        cwd=tmp_path,
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05))
    OPEN_GATEWAYS.append(llm)
    return llm


def test_plain_answer_and_usage(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(Reply("hello there", prompt_tokens=7, completion_tokens=3))
    result = run(gateway.complete(HI, model="rules", stage="intent"))
    assert result.ok and result.text == "hello there" and not result.cached
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 3)
    assert result.latency_ms > 0
    assert fake_llm.requests[0]["messages"] == HI
    assert fake_llm.requests[0]["model"] == "gpt-4o-mini"


def test_structured_output_uses_strict_json_schema(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(json_reply({"ok": True, "reason": "fine"}))
    result = run(gateway.complete(HI, output=Verdict))
    assert result.ok and result.parsed == Verdict(ok=True, reason="fine")
    fmt = fake_llm.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["ok", "reason"] and schema["additionalProperties"] is False


def test_fenced_json_is_accepted(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue('Here:\n```json\n{"ok": false, "reason": "no"}\n```')
    result = run(gateway.complete(HI, output=Verdict))
    assert result.parsed == Verdict(ok=False, reason="no")


def test_repair_turn_quotes_the_error(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(json_reply({"ok": "maybe"}), json_reply({"ok": True, "reason": "fixed"}))
    result = run(gateway.complete(HI, output=Verdict))
    assert result.ok and result.parsed == Verdict(ok=True, reason="fixed")
    assert len(fake_llm.requests) == 2
    repair = fake_llm.requests[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "not valid" in repair[-1]["content"]
    assert "reason" in repair[-1]["content"]  # the validation error names the field
    assert result.usage.calls == 2


def test_failed_repair_is_recorded_not_raised(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue("not json", "still not json")
    result = run(gateway.complete(HI, output=Verdict))
    assert not result.ok and "does not match the schema" in (result.error or "")
    assert result.text == "still not json"
    again = run(gateway.complete(HI, output=Verdict))  # failures are not cached
    assert not again.cached and len(fake_llm.requests) >= 3


def test_server_refusing_json_schema_gets_json_object(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(Reply(status=400), json_reply({"ok": True, "reason": "r"}))
    result = run(gateway.complete(HI, output=Verdict))
    assert result.ok and result.parsed is not None
    second = fake_llm.requests[1]
    assert second["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in second["messages"][0]["content"]


def test_cache_hit_miss_and_variant(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue("first", "second", "third")
    a = run(gateway.complete(HI))
    b = run(gateway.complete(HI))
    c = run(gateway.complete(HI, variant=1))
    d = run(gateway.complete(HI, variant=1))
    e = run(gateway.complete(HI, temperature=0.5))
    assert (a.text, b.text, c.text, d.text, e.text) == (
        "first",
        "first",
        "second",
        "second",
        "third",
    )
    assert [x.cached for x in (a, b, c, d, e)] == [False, True, False, True, False]
    assert len(fake_llm.requests) == 3
    assert fake_llm.requests[1]["seed"] == 1  # variant gives a reproducible fresh answer
    totals = gateway.usage.totals.total
    assert totals.calls == 5 and totals.cache_hits == 2


def test_cache_ignores_timeout_and_concurrency(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.queue("cached answer")
    one = make(fake_llm, tmp_path, timeout=30, concurrency=2)
    assert run(one.complete(HI)).text == "cached answer"
    one.close()
    two = make(fake_llm, tmp_path, timeout=99, concurrency=7)
    again = run(two.complete(HI))
    two.close()
    assert again.cached and again.text == "cached answer" and len(fake_llm.requests) == 1


def test_no_cache(fake_llm: FakeLLM, tmp_path: Path) -> None:
    llm = make(fake_llm, tmp_path, cache=False)
    run(llm.complete(HI))
    run(llm.complete(HI))
    assert len(fake_llm.requests) == 2 and llm.cache is None


def test_nothing_secret_on_disk(
    fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-123")
    llm = make(fake_llm, tmp_path)
    run(llm.complete(HI))
    llm.close()
    blobs = b"".join(p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file())
    assert b"sk-very-secret-123" not in blobs
    assert fake_llm.requests  # the call really happened


def test_retry_honours_retry_after(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(Reply(status=429, headers={"Retry-After": "1"}), Reply("after wait"))
    started = time.perf_counter()
    result = run(gateway.complete(HI))
    assert result.ok and result.text == "after wait" and result.attempts == 2
    assert time.perf_counter() - started >= 0.95


@pytest.mark.parametrize(
    "failure",
    [Reply(status=500), Reply(status=503), Reply(raw=b"{not json"), Reply(drop=True)],
    ids=["500", "503", "malformed-json", "dropped-connection"],
)
def test_transient_failures_are_retried(fake_llm: FakeLLM, gateway: LLM, failure: Reply) -> None:
    fake_llm.queue(failure, Reply("recovered"))
    result = run(gateway.complete(HI))
    assert result.ok and result.text == "recovered" and len(fake_llm.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(fake_llm: FakeLLM, gateway: LLM, status: int) -> None:
    fake_llm.queue(Reply(status=status))
    result = run(gateway.complete(HI))
    assert not result.ok and f"HTTP {status}" in (result.error or "")
    assert len(fake_llm.requests) == 1


def test_persistent_failure_comes_back_as_data(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(*[Reply(status=500)] * 3)
    result = run(gateway.complete(HI))
    assert not result.ok and result.attempts == 3 and len(fake_llm.requests) == 3
    assert "HTTP 500" in (result.error or "")


def test_timeout(fake_llm: FakeLLM, tmp_path: Path) -> None:
    llm = make(fake_llm, tmp_path, timeout=0.5)
    llm.retry = RetryPolicy(max_attempts=2, base_delay=0.01)
    fake_llm.queue(Reply(delay=3), Reply(delay=3))
    started = time.perf_counter()
    result = run(llm.complete(HI))
    assert not result.ok and "timed out" in (result.error or "").lower()
    assert time.perf_counter() - started < 10


def test_concurrency_limit_is_respected(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.latency = 0.2
    llm = make(fake_llm, tmp_path, concurrency=3, cache=False)
    jobs = [lambda i=i: llm.complete([{"role": "user", "content": f"q{i}"}]) for i in range(12)]
    results = run(bounded_gather(jobs))
    assert all(r.ok for r in results)
    assert fake_llm.max_in_flight == 3


def test_rate_limit_lowers_the_model_limit(fake_llm: FakeLLM, tmp_path: Path) -> None:
    llm = make(fake_llm, tmp_path, concurrency=8, cache=False)
    fake_llm.queue(Reply(status=429, headers={"Retry-After": "0"}), Reply("ok"))
    run(llm.complete(HI))
    assert llm.limits.for_model("openai/fake", 8).limit == 4


def test_prompt_tokens_the_provider_reused_are_summed_per_stage(
    fake_llm: FakeLLM, gateway: LLM
) -> None:
    fake_llm.queue(Reply("a", prompt_tokens=1200, completion_tokens=3, cached_tokens=1024))
    fake_llm.queue(Reply("b", prompt_tokens=1300, completion_tokens=4, cached_tokens=1152))
    fake_llm.queue(Reply("c", prompt_tokens=50, completion_tokens=5))  # nothing reused
    run(gateway.complete(HI, stage="rules"))
    run(gateway.complete([{"role": "user", "content": "again"}], stage="rules"))
    run(gateway.complete([{"role": "user", "content": "other"}], stage="tests"))
    t = gateway.usage.totals
    rules, tests = t.by_stage["rules"], t.by_stage["tests"]
    assert (rules.prompt_tokens, rules.cached_tokens, rules.calls) == (2500, 2176, 2)
    assert (tests.prompt_tokens, tests.cached_tokens) == (50, 0)
    assert t.total.cached_tokens == 2176
    assert [u.cached_tokens for u in t.by_model.values()] == [2176]


def test_bounded_gather_keeps_order() -> None:
    async def job(i: int) -> int:
        await asyncio.sleep(0.01 * (5 - i))
        return i

    assert run(bounded_gather([lambda i=i: job(i) for i in range(5)], limit=2)) == [0, 1, 2, 3, 4]


def test_usage_totals_per_model_and_stage(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.queue(Reply("a", prompt_tokens=10, completion_tokens=1))
    fake_llm.queue(Reply("b", prompt_tokens=20, completion_tokens=2))
    run(gateway.complete(HI, stage="intent"))
    run(gateway.complete([{"role": "user", "content": "other"}], stage="rules"))
    run(gateway.complete(HI, stage="intent"))  # a cache hit
    t = gateway.usage.totals
    assert (t.total.prompt_tokens, t.total.completion_tokens, t.total.calls) == (30, 3, 3)
    assert t.by_stage["intent"].calls == 2 and t.by_stage["intent"].cache_hits == 1
    assert t.by_model["openai/gpt-4o-mini"].prompt_tokens == 30


def test_missing_key_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = load_settings({"rules": "openai/gpt-4o-mini"}, env={}, cwd=tmp_path)
    llm = LLM(settings)
    with pytest.raises(ModelConfigError) as info:
        run(llm.complete(HI))
    text = info.value.one_line()
    assert "OPENAI_API_KEY" in text and "local/qwen2.5-coder-1.5b" in text


def test_unknown_local_model(tmp_path: Path) -> None:
    llm = LLM(load_settings({"rules": "local/nope"}, env={}, cwd=tmp_path))
    with pytest.raises(ModelConfigError, match="unknown local model"):
        run(llm.complete(HI))


def test_backends_declare_their_policy(tmp_path: Path) -> None:
    from promptgen.llm.local import LocalBackend
    from promptgen.llm.openai_compat import OpenAICompatBackend
    from promptgen.llm.remote import RemoteBackend

    local = LocalBackend.policy
    cores = physical_cores()  # a call per physical core; the threads are split between them
    assert (local.concurrency, local.cancellable) == (cores, False)
    assert local.structured_mode == "grammar"
    for kind in (OpenAICompatBackend, RemoteBackend):
        assert kind.policy.cancellable and kind.policy.structured_mode == "negotiate"
        assert kind.policy.concurrency is None  # adaptive, up to --concurrency
    llm = LLM(load_settings({"concurrency": 3, "cache": False}, env={}, cwd=tmp_path))
    local_bounds, remote_bounds = (
        llm.concurrency_for(LocalBackend()),
        llm.concurrency_for(RemoteBackend()),
    )
    assert (local_bounds.ceiling, remote_bounds.ceiling) == (cores, 3)
    # Only the backend that owns the prefix tests it.
    package = Path(promptgen.__file__).parent
    offenders = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if not (path.parent == package / "llm" and path.name.startswith("local"))
        and 'startswith("local/")' in path.read_text(encoding="utf-8").replace("'", '"')
    ]
    assert offenders == []


def test_settings_precedence(tmp_path: Path) -> None:
    config = tmp_path / "promptgen.toml"
    config.write_text(
        '[models]\nrules = "from/config"\neval = "from/config"\ngroundtruth = "from/config"\n'
        'under_test = ["a/one", "b/two"]\n'
    )
    env = {"PROMPTGEN_MODEL_EVAL": "from/env", "PROMPTGEN_MODEL_GROUNDTRUTH": "from/env"}
    s = load_settings({"groundtruth": "from/cli"}, env=env, cwd=tmp_path)
    assert s.models["rules"] == "from/config" and s.sources["rules"].startswith("config")
    assert s.models["eval"] == "from/env" and s.sources["eval"] == "PROMPTGEN_MODEL_EVAL"
    assert s.models["groundtruth"] == "from/cli" and s.sources["groundtruth"] == "command line"
    assert s.models["baseline"] == "local/qwen2.5-coder-1.5b"
    assert s.models_under_test == ["a/one", "b/two"]
    with_key = load_settings({}, env={"OPENAI_API_KEY": "x"}, cwd=tmp_path / "none")
    assert with_key.models["rules"] == "openai/gpt-4o-mini"
    mut = load_settings({"models": ["x/1;x/2", "x/3"]}, env={}, cwd=tmp_path)
    assert mut.models_under_test == ["x/1", "x/2", "x/3"]


def test_request_bodies_are_json(fake_llm: FakeLLM, gateway: LLM) -> None:
    run(gateway.complete(HI, temperature=0.3, max_tokens=50, seed=7))
    body = fake_llm.requests[0]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 50, 7)
    json.dumps(body)


def test_strict_schema_keeps_fields_named_like_keywords() -> None:
    from promptgen.llm.structured import strict_schema

    class Odd(BaseModel):
        title: str
        default: int = 3
        items: list[Verdict]

    schema = strict_schema(Odd)
    assert set(schema["properties"]) == {"title", "default", "items"}
    assert schema["required"] == ["title", "default", "items"]
    assert "title" not in schema["$defs"]["Verdict"]
    assert schema["$defs"]["Verdict"]["required"] == ["ok", "reason"]


def test_empty_and_cut_off_replies_are_faults_never_cached(fake_llm: FakeLLM, gateway: LLM) -> None:
    # Each fault is asked again once as the same request; this server repeats it.
    cut_off, empty_reply = finished_reply("half an ans", "length"), Reply(content=" \n")
    fake_llm.queue(cut_off, cut_off, empty_reply, empty_reply, "whole answer")
    cut = run(gateway.complete(HI))
    assert (cut.ok, cut.fault, cut.finish_reason, cut.text) == (
        False, "truncated", "length", "half an ans"
    )  # fmt: skip
    assert (
        cut.error == "openai/gpt-4o-mini: answer cut off at the token limit (finish_reason: length)"
    )
    empty = run(gateway.complete(HI))  # the fault was not cached: asked again
    assert (empty.ok, empty.fault, empty.cached) == (False, "empty", False)
    assert empty.error == "openai/gpt-4o-mini: empty answer"
    whole = run(gateway.complete(HI))
    assert (whole.ok, whole.fault, whole.finish_reason, whole.text) == (
        True, None, "stop", "whole answer"
    )  # fmt: skip
    assert run(gateway.complete(HI)).cached and len(fake_llm.requests) == 5


def test_a_provider_error_quoting_the_key_is_scrubbed(fake_llm: FakeLLM, gateway: LLM) -> None:
    key = "sk-leaky-0123456789abcdef"
    message = f"Incorrect API key provided: {key}. You sent Authorization: Bearer {key}"
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    fake_llm.queue(Reply(status=401, raw=body.encode()))
    result = run(gateway.complete(HI))
    assert not result.ok and "HTTP 401" in (result.error or "")
    assert "0123456789abcdef" not in (result.error or "")
    assert f"Authorization: Bearer {REDACTED}" in (result.error or "")


def test_classify_scrubs_before_it_cuts() -> None:
    error = classify(RuntimeError("x" * 290 + " sk-abcdefghijklmnopqrstuv"))
    assert "sk-abc" not in error.message and error.message.endswith(" ***redact")


def test_keys_in_call_params_are_headers_not_body_nor_cache_key(
    fake_llm: FakeLLM, gateway: LLM
) -> None:
    params = {"api_key": "sk-param-key-0123456789", "extra_headers": {"api-key": "k" * 20}}
    first = run(gateway.complete(HI, params=params))
    other = {"api_key": "sk-rotated-key-9876543210", "extra_headers": {"api-key": "j" * 20}}
    again = run(gateway.complete(HI, params=other))
    assert first.ok and again.cached  # a rotated key asks nothing again
    sent = fake_llm.requests[0]
    assert "api_key" not in sent and "extra_headers" not in sent
    # From a saved context the values are blanked: they are dropped, never sent.
    redacted = {"api_key": REDACTED, "extra_headers": {"api-key": REDACTED}, "top_p": 1}
    assert without_redacted(redacted) == {"extra_headers": {}, "top_p": 1}
