"""Intent: one sentence saying what the prompt is for.

The template shows one example answer. A small model sometimes hands the example back
as the intent (the 1.5B model did for commit-message: "Summarises a news article in
three bullet points ..."); such an answer is asked again without the example.
"""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction, template
from promptgen.prompting.analysis import IntentAnswer, analysis_messages
from promptgen.prompting.seeds import content_words
from promptgen.stage import Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"
# Share of the example's content words in an answer that copies it.
COPIED = 0.6


def enabled(cfg: RunConfig) -> bool:
    return cfg.analysing


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    return [] if ctx.intent is not None else [WorkItem("intent")]


def example() -> str:
    """The example answer the intent template shows (its `example` input's default)."""
    return template("intent").inputs["example"].default or ""


def copies_example(answer: str, shown: str) -> bool:
    """Most of the example's content words are in the answer: the example handed back,
    not a description of the prompt."""
    wanted = content_words(shown)
    return bool(wanted) and len(wanted & content_words(answer)) >= COPIED * len(wanted)


async def _ask(scope: Scope, shown: str) -> str | None:
    messages = analysis_messages(
        scope.ctx.prompt,
        "intent",
        instructions=instruction(scope.ctx.prompt, scope.cfg.gen.instructions, "intent"),
        example=shown,
    )
    result = await scope.complete(
        messages, model="rules", output=IntentAnswer, temperature=scope.cfg.gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return None
    return str(result.parsed.task_description).strip()


async def run(item: WorkItem[None], scope: Scope) -> None:
    shown = example()
    intent = await _ask(scope, shown)
    if intent is not None and copies_example(intent, shown):
        scope.count("example_copied")
        intent = await _ask(scope, "")  # nothing left to copy
    if intent is not None:
        scope.ctx.intent = intent
