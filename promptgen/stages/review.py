"""The review stage (`--rate-tests`): a review of the whole test collection, and an
importance rating of every test, asked of the eval model."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import numbered, prompt_text, stage_messages, target_label
from promptgen.prompting.bounded import Items, Text
from promptgen.prompting.per_item import answers, numbered_model
from promptgen.results import FailureMode, Test, TestReview, content_id
from promptgen.stage import TEST_SET, Projection, Scope, WorkItem

requires = ("intent", "rules", *TEST_SET)
phase = "generation"
COLLECTION = "collection"
# The collection review sees at most this many tests: enough to judge coverage, and a
# prompt a small model can still read in one piece.
REVIEW_SHOWN = 60
# Tests rated per importance call; batches run concurrently.
IMPORTANCE_BATCH = 20
# A test's inputs are shown cut to this many characters (inputs may be 4000 each).
INPUTS_SHOWN = 600

# Bounded lengths keep a small model from running on until its token limit.
if TYPE_CHECKING:
    Item = str  # a call is no type to mypy: the bounded string it builds, as mypy sees it
else:
    Item = Text(300, min_length=3)
# An enum rather than minimum/maximum: the local model's grammar enforces enums only.
Score = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


class ReviewedFailureMode(BaseModel):
    description: Item
    harm: Literal["low", "medium", "high"]


class CollectionReview(BaseModel):
    # Analysis first, verdict last: the score is written after the reasons for it.
    failure_modes: Items(ReviewedFailureMode, 12, min_length=1)  # type: ignore[valid-type]
    weaknesses: Items(Item, 12)  # type: ignore[valid-type]
    quality_score: Score = Field(description="1 (useless) to 10 (thorough).")
    summary: Text(500, min_length=10)  # type: ignore[valid-type]


class ImportanceVerdict(BaseModel):
    importance: Score = Field(description="1 (least) to 10 (most important).")
    note: Text(200, description="One line: why.")  # type: ignore[valid-type]


def collection_key(ctx: Context) -> str:
    """The `done` key of the collection review: it is asked again when the tests change."""
    return content_id("collection", [t.id for t in ctx.tests])


def enabled(cfg: RunConfig) -> bool:
    return cfg.reviewing


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[str | list[Test]]]:
    """The collection review while it does not match the current tests, and the tests
    without an importance, in batches."""
    items: list[WorkItem[str | list[Test]]] = []
    if ctx.tests and collection_key(ctx) not in ctx.stage("review").done:
        items.append(WorkItem(collection_key(ctx), COLLECTION))
    rated = ctx.review.importance if ctx.review else {}
    left = [t for t in ctx.tests if t.id not in rated]
    batches = [left[i : i + IMPORTANCE_BATCH] for i in range(0, len(left), IMPORTANCE_BATCH)]
    items += [WorkItem(content_id("rate", [t.id for t in b]), b) for b in batches]
    return items


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if projection.test_set_known:
        return len(todo(ctx, cfg))
    return 1 + -(-projection.tests // IMPORTANCE_BATCH)


async def run(item: WorkItem[str | list[Test]], scope: Scope) -> None:
    ctx = scope.ctx
    review = ctx.review = ctx.review or TestReview()
    ids = {t.id for t in ctx.tests}
    for stale in [k for k in review.importance if k not in ids]:  # tests no longer here
        review.importance.pop(stale)
        review.notes.pop(stale, None)
    if isinstance(item.data, str):  # COLLECTION: the one item that is not a batch
        await _review(scope, review)
    else:
        await _rate(scope, review, item.data)
    shown = min(len(ctx.tests), REVIEW_SHOWN)
    scope.set_count("rated", sum(t.id in review.importance for t in ctx.tests))
    scope.set_count("not_rated", sum(t.id not in review.importance for t in ctx.tests))
    scope.set_count("reviewed", shown)
    scope.set_count("left_out", len(ctx.tests) - shown)


def tests_text(ctx: Context, tests: list[Test]) -> str:
    """Numbered tests, each its target on one line and its inputs as JSON on the next."""
    lines = []
    for i, test in enumerate(tests, start=1):
        inputs = json.dumps(test.inputs, ensure_ascii=False)
        if len(inputs) > INPUTS_SHOWN:
            inputs = inputs[:INPUTS_SHOWN] + " ...(cut)"
        lines += [f"{i}. {target_label(ctx, test)}", f"   inputs: {inputs}"]
    return "\n".join(lines)


async def _review(scope: Scope, review: TestReview) -> None:
    ctx = scope.ctx
    shown = ctx.tests[:REVIEW_SHOWN]
    messages = stage_messages(
        "review",
        prompt=prompt_text(ctx.prompt),
        intent=ctx.intent,
        rules=numbered([r.text for r in ctx.rules]),
        tests=tests_text(ctx, shown),
        left_out=len(ctx.tests) - len(shown),
        total=len(ctx.tests),
    )
    result = await scope.complete(messages, model="eval", output=CollectionReview)
    if not result.ok:
        scope.fail(result.error)
        return
    answer: CollectionReview = result.parsed
    review.model = result.model
    review.summary = answer.summary.strip()
    review.quality_score = answer.quality_score
    review.failure_modes = [
        FailureMode(description=f.description.strip(), harm=f.harm) for f in answer.failure_modes
    ]
    review.weaknesses = [w.strip() for w in answer.weaknesses if w.strip()]
    scope.done(collection_key(ctx))


async def _rate(scope: Scope, review: TestReview, tests: list[Test]) -> None:
    ctx = scope.ctx
    messages = stage_messages(
        "review_importance",
        prompt=prompt_text(ctx.prompt),
        intent=ctx.intent,
        tests=tests_text(ctx, tests),
    )
    answer = numbered_model("ImportanceVerdicts", len(tests), ImportanceVerdict)
    result = await scope.complete(messages, model="eval", output=answer)
    if not result.ok:
        scope.fail(result.error)
        return
    for number, verdict in answers(result.parsed).items():
        test = tests[number - 1]
        review.importance[test.id] = verdict.importance
        note = " ".join(verdict.note.split())
        if note:
            review.notes[test.id] = note
    review.model = review.model or result.model
    missing = sum(t.id not in review.importance for t in tests)
    if missing:
        scope.fail(f"{missing} test(s) got no importance; a re-run asks again")
