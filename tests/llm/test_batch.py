"""Provider batches through the gateway (`--batch`), against the fake Batch API."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from promptgen.errors import BadInputError
from promptgen.llm import LLM, RetryPolicy, batched, load_settings
from promptgen.llm.batch import BatchLimits, batch_price, split
from promptgen.results import BatchJob
from tests.conftest import OPEN_GATEWAYS, run
from tests.fake_batches import FakeBatches
from tests.fakellm import Reply

FAST = BatchLimits(poll=0.01, max_poll=0.02, gather=0.02)


class Verdict(BaseModel):
    ok: bool


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    with FakeBatches(responder=lambda body: Reply(_echo(body))) as server:
        yield server


def _echo(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return f"answer to {messages[-1]['content']}"


def make(
    fake: FakeBatches, tmp_path: Path, limits: BatchLimits = FAST, model: str = "openai/fake"
) -> tuple[LLM, list[BatchJob], list[int]]:
    settings = load_settings(
        {"api_base": fake.url, "rules": model, "cache_dir": str(tmp_path / "c"), "batch": True},
        env={},
        cwd=tmp_path,
    )
    settings.batch_limits = limits
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    ledger: list[BatchJob] = []
    saves: list[int] = []
    llm.use_batches(ledger, lambda: saves.append(len(ledger)))
    return llm, ledger, saves


async def _ask(llm: LLM, n: int, label: str = "cell") -> list[str | None]:
    async def one(i: int) -> str | None:
        with batched(f"{label}{i}"):
            done = await llm.complete([{"role": "user", "content": f"q{i}"}], model="rules")
        return done.text if done.ok else done.error

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def test_calls_go_into_one_batch_joined_by_custom_id(fake: FakeBatches, tmp_path: Path) -> None:
    llm, ledger, saves = make(fake, tmp_path)
    answers = run(_ask(llm, 5))
    assert answers == [f"answer to q{i}" for i in range(5)]
    assert fake.created == ["batch_0001"]
    lines = fake.batch_lines("batch_0001")
    assert [x["custom_id"] for x in lines] == [f"cell{i}" for i in range(5)]
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["body"]["model"] == "fake"
    assert [j.id for j in ledger] == ["batch_0001"] and ledger[0].finished
    assert saves == [1]  # saved as soon as it was submitted
    assert fake.retrieved.count("batch_0001") == fake.polls + 1
    assert not [r for r in fake.requests if "custom_id" in r]  # no call went one by one


def test_unlabelled_calls_are_not_batched(fake: FakeBatches, tmp_path: Path) -> None:
    llm, ledger, _ = make(fake, tmp_path)
    done = run(llm.complete([{"role": "user", "content": "q"}], model="rules"))
    assert done.text == "answer to q" and not fake.created and not ledger


def test_cached_answers_are_not_submitted(fake: FakeBatches, tmp_path: Path) -> None:
    llm, _, _ = make(fake, tmp_path)
    run(_ask(llm, 3))
    run(_ask(llm, 4))
    assert [len(fake.batches[b].custom_ids) for b in fake.created] == [3, 1]
    assert fake.batch_lines(fake.created[1])[0]["custom_id"] == "cell3"


def test_size_limits_split_into_several_batches(fake: FakeBatches, tmp_path: Path) -> None:
    limits = dataclasses.replace(FAST, max_requests=3)
    llm, ledger, _ = make(fake, tmp_path, limits)
    assert run(_ask(llm, 7)) == [f"answer to q{i}" for i in range(7)]
    assert [len(fake.batches[b].custom_ids) for b in fake.created] == [3, 3, 1]
    assert len(ledger) == 3


def test_split_by_bytes() -> None:
    lines = [(f"c{i}", b"x" * 40) for i in range(5)]
    chunks = split(lines, BatchLimits(max_requests=10, max_bytes=100))
    assert [len(c) for c in chunks] == [2, 2, 1]


def test_failed_lines_are_retried_as_a_smaller_batch(fake: FakeBatches, tmp_path: Path) -> None:
    fake.fail = {"cell1", "cell3"}
    llm, ledger, _ = make(fake, tmp_path)
    assert run(_ask(llm, 5)) == [f"answer to q{i}" for i in range(5)]
    assert [fake.batches[b].custom_ids for b in fake.created] == [
        [f"cell{i}" for i in range(5)],
        ["cell1", "cell3"],
    ]
    assert all(j.finished for j in ledger)


def test_lines_failing_every_time_fail_as_data(fake: FakeBatches, tmp_path: Path) -> None:
    limits = dataclasses.replace(FAST, retries=1)
    llm, _, _ = make(fake, tmp_path, limits)
    fake.fail = {"cell0"}

    def fail_again(_: object) -> None:
        fake.fail.add("cell0")

    # every batch makes cell0 fail again
    original = fake._finish
    fake._finish = lambda b: (fail_again(b), original(b))[1]  # type: ignore[method-assign]
    answers = run(_ask(llm, 2))
    assert answers[1] == "answer to q1"
    assert answers[0] == "openai/fake: batch line failed: fake line failure (server_error)"
    assert len(fake.created) == 2  # the first batch and one retry


def test_expired_batch_asks_again_for_what_it_did_not_answer(
    fake: FakeBatches, tmp_path: Path
) -> None:
    fake.expire, fake.expire_answers = 1, 2
    llm, ledger, _ = make(fake, tmp_path)
    assert run(_ask(llm, 5)) == [f"answer to q{i}" for i in range(5)]
    assert [fake.batches[b].status for b in fake.created] == ["expired", "completed"]
    assert fake.batches[fake.created[1]].custom_ids == ["cell2", "cell3", "cell4"]
    assert [j.status for j in ledger] == ["expired", "completed"]


def test_a_recorded_batch_is_polled_not_submitted_again(fake: FakeBatches, tmp_path: Path) -> None:
    fake.polls = 1000  # stays in progress: the first gateway gives up waiting
    limits = dataclasses.replace(FAST, max_wait=0.1)
    llm, ledger, _ = make(fake, tmp_path, limits)
    answers = run(_ask(llm, 3))
    assert all("still in_progress" in str(a) and "re-run polls" in str(a) for a in answers)
    saved = [BatchJob.model_validate(json.loads(j.model_dump_json())) for j in ledger]
    fake.polls = 0
    again, ledger2, _ = make(fake, tmp_path)
    ledger2.extend(saved)
    again.use_batches(ledger2, lambda: None)
    assert run(_ask(again, 3)) == [f"answer to q{i}" for i in range(3)]
    assert fake.created == ["batch_0001"] and ledger2[0].finished


def test_batch_cost_is_half_the_normal_price(fake: FakeBatches, tmp_path: Path) -> None:
    fake.responder = lambda body: Reply("x", prompt_tokens=1000, completion_tokens=500)
    llm, _, _ = make(fake, tmp_path, model="openai/gpt-4o-mini")
    run(_ask(llm, 2))
    # gpt-4o-mini: $0.15 / $0.60 per million tokens; batch: half of both.
    expected = 2 * (1000 * 0.075 + 500 * 0.30) / 1e6
    assert llm.usage.totals.total.cost == pytest.approx(expected)
    assert batch_price("openai/gpt-4o-mini", 1000, 500) == pytest.approx(expected / 2)


def test_structured_answers_come_parsed(fake: FakeBatches, tmp_path: Path) -> None:
    fake.responder = lambda body: Reply(json.dumps({"ok": True}))
    llm, _, _ = make(fake, tmp_path)

    async def go() -> object:
        with batched("v1"):
            return await llm.complete([{"role": "user", "content": "?"}], output=Verdict)

    done = run(go())
    assert done.parsed == Verdict(ok=True)
    body = fake.batch_lines(fake.created[0])[0]["body"]
    assert body["response_format"]["type"] == "json_schema"


def test_a_server_without_batches_falls_back_with_a_note(fake: FakeBatches, tmp_path: Path) -> None:
    fake.refuse = True
    llm, ledger, _ = make(fake, tmp_path)
    assert run(_ask(llm, 2)) == ["answer to q0", "answer to q1"]
    assert not ledger
    note = llm.batch_note("rules") or ""
    assert note.startswith("openai/fake: the provider refused the batch (HTTP 404): ")
    assert "no batches here" in note and note.endswith("; called one by one")


def test_bad_limit_in_the_environment_is_a_clear_error() -> None:
    with pytest.raises(BadInputError, match="PROMPTGEN_BATCH_MAX_REQUESTS='0'"):
        BatchLimits.from_env({"PROMPTGEN_BATCH_MAX_REQUESTS": "0"})
    assert BatchLimits.from_env({"PROMPTGEN_BATCH_POLL": "0.5"}).poll == 0.5
