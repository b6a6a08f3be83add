"""The embedded model's engine (promptgen/llm/llama_engine.py): kept prefix states, the
grammar applied last; the thread count (cores.py) and the answer bound (token_bound.py).

Pure parts only: the engine's answers against llama.cpp's own, on the real 0.5B model, are
in test_local.py (the file of the real-model tests, one xdist worker's)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from promptgen.llm.cores import physical_cores
from promptgen.llm.token_bound import WHITESPACE, answer_bound


def test_physical_cores_counts_cores_not_hyperthreads(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("PROMPTGEN_LOCAL_THREADS", raising=False)
    for cpu, core in enumerate([0, 1, 0, 1]):  # 2 cores, 2 threads each
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{core}\n")
    assert physical_cores(tmp_path, {0, 1, 2, 3}) == 2
    assert physical_cores(tmp_path, {0, 2}) == 1  # both threads of core 0
    assert physical_cores(tmp_path, {0, 1, 5}) == 3  # no topology for cpu5: count CPUs
    monkeypatch.setenv("PROMPTGEN_LOCAL_THREADS", "3")
    assert physical_cores(tmp_path, {0, 1, 2, 3}) == 3


def test_answer_bound_counts_bytes_of_the_longest_answer() -> None:
    label = {"type": "object", "properties": {"label": {"enum": ["positive", "mixed"]}}}
    assert answer_bound(label) == 2 + len(b'"label"') + 2 + len(b'"positive"') + 2 * WHITESPACE
    bounded = {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}
    assert answer_bound(bounded) == 2 + 3 * (42 + 1 + WHITESPACE)
    assert answer_bound({"type": "string"}) is None  # no maxLength: no bound
    assert answer_bound({"type": "array", "items": {"type": "integer"}}) is None
    ref = {"$defs": {"N": {"type": "integer"}}, "anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}
    assert answer_bound(ref) == 24


def test_prefix_states_find_the_longest_shared_prefix_and_drop_the_oldest() -> None:
    pytest.importorskip("llama_cpp", reason="the engine needs llama-cpp-python")
    from promptgen.llm.llama_engine import PrefixStates, Saved, common_prefix

    def saved(tokens: list[int], size: int) -> Saved:
        return Saved(np.array(tokens, dtype=np.intc), len(tokens), None, size)

    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2 and common_prefix([], [1]) == 0
    states = PrefixStates(capacity=100)
    assert bool(states)  # llama-cpp-python asks `if self.cache:` even when it is empty
    with pytest.raises(KeyError):
        states[[1, 2]]
    states[[0]] = saved([1, 2, 3, 4], 40)  # judge A's prompt
    states[[0]] = saved([1, 2, 9, 9, 9], 40)  # judge B's
    assert list(states[[1, 2, 3, 4, 7]].input_ids) == [1, 2, 3, 4]
    assert list(states[[1, 2, 9, 8]].input_ids) == [1, 2, 9, 9, 9]
    with pytest.raises(KeyError):
        states[[5, 6]]
    states[[0]] = saved([7, 7], 40)  # past 100 bytes: the least recently used goes
    assert [list(s.input_ids) for s in states.states.values()] == [[1, 2, 9, 9, 9], [7, 7]]


def test_a_call_waits_for_a_prompt_being_read_that_shares_more_than_any_kept_state() -> None:
    """Two calls of one stage at once: the second waits (its core lent) for the first's
    read of their shared instructions and starts from its state; a call that shares
    little with the prompt being read does not wait."""
    pytest.importorskip("llama_cpp", reason="the engine needs llama-cpp-python")
    from promptgen.llm import llama_engine
    from promptgen.llm.llama_engine import PrefixStates, Saved

    shared = list(range(100, 100 + llama_engine.WAIT_GAIN + 10))
    first, second, other = [*shared, 1, 2], [*shared, 3, 4], [7] * 80
    states = PrefixStates()
    states[None] = Saved(np.array([100, 5], dtype=np.intc), 2, None, 1)  # shares 1 token
    idle: list[str] = []

    @contextlib.contextmanager
    def lent(name: str) -> Iterator[None]:
        idle.append(name)
        yield

    assert list(states.lookup(first, 1, lambda: lent("first")).input_ids) == [100, 5]
    found: list[list[int]] = []
    waiting = threading.Thread(
        target=lambda: found.append(
            list(states.lookup(second, 2, lambda: lent("second")).input_ids)
        )
    )
    waiting.start()
    with pytest.raises(KeyError):  # shares nothing with the read: no wait, nothing kept
        states.lookup(other, 3, lambda: lent("other"))
    time.sleep(0.2)
    assert found == [] and idle == ["second"]  # the second waits, idle
    states[None] = Saved(np.array(first, dtype=np.intc), len(first), None, 1)  # read: kept
    states.read(1)
    waiting.join(timeout=5)
    assert found == [first]  # started from the first call's prompt
    assert set(states.reading) == {2, 3}
    # the first call's answer kept: its prompt's state begins it, so it goes
    states[None] = Saved(np.array([*first, 9, 9], dtype=np.intc), len(first) + 2, None, 1)
    assert [len(k) for k in states.states] == [2, len(first) + 2]


def test_calls_split_the_cores_and_a_model_gets_a_second_context_only_when_needed() -> None:
    import threading

    from promptgen.llm.contexts import Contexts, Cores

    made: list[str] = []

    def make(name: str) -> dict[str, Any]:
        made.append(name)
        return {"name": name, "n": len(made)}

    cores = Cores(2)
    pool: Contexts[dict[str, Any]] = Contexts(make, cores)
    assert cores.share() == 2  # nothing computes: a call would use both cores
    with pool.use("1.5b") as first:
        assert cores.share() == 2  # alone: both cores
    with pool.use("1.5b") as again:
        assert again is first  # one after another: the same context, its kept states
    assert made == ["1.5b"]

    inside = threading.Barrier(2)
    shares: list[int] = []

    def call(name: str) -> None:
        with pool.use(name):
            inside.wait(timeout=5)
            shares.append(cores.share())
            inside.wait(timeout=5)

    threads = [threading.Thread(target=call, args=("1.5b",)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert shares == [1, 1]  # two at once: a core each
    assert made == ["1.5b", "1.5b"]  # the second context, made for the second call
    assert pool.made == {"1.5b": 2} and len(pool.free["1.5b"]) == 2
    assert cores.active == 0 and cores.share() == 2


def test_no_more_calls_compute_at_once_than_there_are_cores() -> None:
    import threading
    import time

    from promptgen.llm.contexts import Contexts, Cores

    cores = Cores(2)
    pool: Contexts[object] = Contexts(lambda name: object(), cores)
    most = 0
    lock = threading.Lock()

    def call(name: str) -> None:
        nonlocal most
        with pool.use(name):
            with lock:
                most = max(most, cores.active)
            time.sleep(0.05)

    threads = [threading.Thread(target=call, args=(n,)) for n in ("a", "b", "a", "b", "a")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert most == 2  # five calls of two models, never more than two computing
    assert sum(pool.made.values()) <= 4 and cores.active == 0
