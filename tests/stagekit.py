"""What in-process stage and metric tests share: a gateway pointed at the fake server,
a run configuration, a small context, and one stage run on its own.

A stage test is a context in, a context out: build a context, run one stage against the
fake OpenAI-compatible server on 127.0.0.1 (real HTTP), assert on the context.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen.config import RunConfig, build_config, resolve_options
from promptgen.context import Context
from promptgen.llm import LLM, RetryPolicy, load_settings
from promptgen.model import Message, PromptInput, PromptUnderTest, Scenario
from promptgen.options import Evaluation, Generation, Models, Options
from promptgen.pipeline import run_stage
from promptgen.results import Rule, Test
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

EVAL = "openai/judge-model"


def make_llm(fake: FakeLLM, tmp_path: Path, **aliases: str) -> LLM:
    """A gateway on the fake server: no response cache, fast retries."""
    settings = load_settings(
        {"api_base": fake.url, "eval": EVAL, "cache": False, **aliases}, env={}, cwd=tmp_path
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return llm


def config(
    ctx: Context,
    llm: LLM | None = None,
    *,
    generation: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    models: dict[str, Any] | None = None,
    effort: str = "low",
) -> RunConfig:
    """A run configuration resolved as `promptgen.prepare` does: the effort preset under
    what is given here, and the metrics loaded."""
    given = Options(
        effort=effort,
        generation=Generation(**(generation or {})),
        evaluation=Evaluation(**(evaluation or {})),
        models=Models(**(models or {})),
    )
    options, sources = resolve_options(given)
    return build_config(ctx.prompt, options, sources, settings=llm.settings if llm else None)


def stage(name: str, ctx: Context, cfg: RunConfig, llm: LLM) -> Context:
    """Run one stage on its own (its requirements taken as met)."""
    return run(run_stage(name, ctx, cfg, llm))


def prompt(scenarios: int = 0) -> PromptUnderTest:
    return PromptUnderTest(
        name="sentiment",
        messages=[
            Message(role="system", content="Label the review positive or negative."),
            Message(role="user", content="{{review}}"),
        ],
        inputs={"review": PromptInput(name="review", type="string")},
        scenarios=[Scenario(name=f"s{i}", instructions=f"case {i}") for i in range(scenarios)],
    )


def context(rules: int = 2, tests: int = 0, scenarios: int = 0) -> Context:
    """A context with `rules` rules, an inverse of each, and `tests` generated tests."""
    ctx = Context.new(prompt(scenarios), intent="Labels the sentiment of a review.")
    ctx.input_spec = "- review: one customer review in English"
    ctx.rules = [Rule.make(f"The output follows requirement {i}.") for i in range(1, rules + 1)]
    ctx.inverse_rules = [
        Rule.make(f"The output breaks requirement {i}.", inverse_of=r.id)
        for i, r in enumerate(ctx.rules, start=1)
    ]
    targets = ctx.all_rules
    for i in range(tests):
        rule = targets[i % len(targets)]
        inputs = {"review": f"review number {i}"}
        ctx.tests.append(
            Test(
                id=Test.make_id("generated", rule.id, None, inputs),
                rule_id=rule.id,
                inverse=rule.inverse,
                inputs=inputs,
            )
        )
    return ctx


def schema_names(fake: FakeLLM) -> list[str]:
    return [
        (b.get("response_format") or {}).get("json_schema", {}).get("name", "text")
        for b in fake.requests
    ]


def texts(fake: FakeLLM, name: str) -> list[str]:
    """The messages of each request answered with schema `name`, joined into one text."""
    return [
        "\n".join(str(m.get("content", "")) for m in body["messages"])
        for body, sent in zip(fake.requests, schema_names(fake), strict=True)
        if sent == name
    ]


class FailWhen(PipelineResponder):
    """Answers HTTP 500 to every call whose messages contain `marker` (one unit fails)."""

    def __init__(self, marker: str, **options: Any) -> None:
        super().__init__(**options)
        self.marker = marker

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if self.marker and self.marker in text:
            return Reply(status=500)
        return super().__call__(body)


# Fixtures (re-exported by the conftest of tests/stages and tests/evaluation). Changing
# the responder's attributes (e.g. `fail_stage = None`) changes the next answers; a test
# that needs another kind of responder sets `fake.responder`.


@pytest.fixture
def responder() -> PipelineResponder:
    return PipelineResponder()


@pytest.fixture
def fake(responder: PipelineResponder) -> Iterator[FakeLLM]:
    with FakeLLM(responder=responder) as server:
        yield server


@pytest.fixture
def llm(fake: FakeLLM, tmp_path: Path) -> LLM:
    return make_llm(fake, tmp_path)
