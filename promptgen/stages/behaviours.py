"""Behaviours: what a suite must exercise, before any test is written.

Read from the prompt without a model (`prompting/behaviours.py`: each output class or
label, condition and exception, criterion, prohibition's temptation, the author's named
cases, and boundary and hostile inputs). Where the rules model is not small (whole-prompt
mode), one call adds what a reading of the prompt finds beyond them.
"""

from __future__ import annotations

from pydantic import BaseModel

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import inputs_text, instruction
from promptgen.prompting.analysis import Sentence, analysis_messages
from promptgen.prompting.behaviours import derive, distinct, steady
from promptgen.prompting.bounded import Items, Text
from promptgen.results import Behaviour
from promptgen.stage import Projection, Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"
KEY = "behaviours"
# Behaviours one call may add (whole-prompt mode).
ASKED = 5


class Found(BaseModel):
    case: Sentence
    expected_class: Text(60) | None = None  # type: ignore[valid-type]


class BehavioursAnswer(BaseModel):
    behaviours: Items(Found, ASKED)  # type: ignore[valid-type]


def enabled(cfg: RunConfig) -> bool:
    """Behaviours are what generated tests are planned for."""
    return cfg.generating


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    if KEY in ctx.stage("behaviours").done:
        return []
    asks = cfg.gen.behaviours and not cfg.stepwise and not _reread(ctx)
    return [WorkItem(KEY, calls=1 if asks else 0)]


def _reread(ctx: Context) -> bool:
    """After an edit: the behaviours are read from the prompt again, and those a model
    found in the previous version's reading kept (no call: a new reading would give
    other words for the same cases, and tests for them)."""
    return ctx.edit is not None and "behaviours" in ctx.edit.rederived


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return sum(item.calls for item in todo(ctx, cfg))


def guidance(ctx: Context, cfg: RunConfig) -> list[str]:
    """The author's guidance given on the command line for the inputs and tests (the
    frontmatter's is read from the prompt itself)."""
    extra = cfg.gen.instructions
    return [t for t in (extra.input_spec, extra.tests, extra.test_expansion) if t]


async def run(item: WorkItem[None], scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    if not cfg.gen.behaviours:  # --no-behaviours: a test per rule and inverse rule only
        ctx.behaviours = []
        scope.set_count("behaviours", 0)
        scope.done()
        return
    found = derive(ctx.prompt, guidance(ctx, cfg))
    if _reread(ctx):
        before = ctx.behaviours
        found = distinct(steady(found, before) + [b for b in before if b.kind == "model"])
    elif not cfg.stepwise:
        asked = await _ask(scope, found)
        if asked is None:
            return
        found = distinct(found + asked)
    ctx.behaviours = found
    scope.set_count("behaviours", len(found))
    scope.done()


async def _ask(scope: Scope, found: list[Behaviour]) -> list[Behaviour] | None:
    ctx, gen = scope.ctx, scope.cfg.gen
    messages = analysis_messages(
        ctx.prompt,
        "behaviours",
        inputs=inputs_text(ctx.prompt),
        found="\n".join(f"- {b.text}" for b in found),
        count=ASKED,
        instructions=instruction(ctx.prompt, gen.instructions, "tests"),
    )
    result = await scope.complete(
        messages, model="rules", output=BehavioursAnswer, temperature=gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return None
    return [
        Behaviour.make(
            "model", b.case.strip(), expected_class=(b.expected_class or "").strip() or None
        )
        for b in result.parsed.behaviours
        if b.case.strip()
    ]
