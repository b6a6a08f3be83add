"""Tests judged in numbered batches (validity, safety screening): the batches left to
do, their estimate, and one call that writes each item's verdict onto its test.

An item the answer leaves out keeps no verdict, so `todo` puts it in a new, smaller
batch on the next pass; the failure is recorded on this unit of work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from promptgen.prompting import stage_messages
from promptgen.prompting.per_item import answers, numbered_model
from promptgen.results import Test, content_id
from promptgen.stage import Projection, Scope, WorkItem


def batches(stage: str, left: list[Test], size: int) -> list[WorkItem]:
    """`left` cut into batches of `size`, each keyed by its tests' ids."""
    cut = [left[i : i + size] for i in range(0, len(left), size)]
    return [WorkItem(content_id(stage, [t.id for t in b]), b) for b in cut]


def estimate(todo: list[WorkItem], waits_for: set[str], projection: Projection, size: int) -> int:
    """The batches left once the stages it waits for are complete, else the projection's."""
    if waits_for <= projection.complete:
        return len(todo)
    return -(-projection.tests // size)


async def judge(
    scope: Scope,
    tests: list[Test],
    *,
    prompt: str,
    answer: tuple[str, type[BaseModel]],
    record: Callable[[Test, Any], None],
    judged: Callable[[Test], bool],
    **inputs: str,
) -> None:
    """One call of the `eval` model on the numbered inputs of `tests` with the `prompt`
    template; `record` writes an item's verdict onto its test."""
    shown = "\n".join(
        f"{i}. {json.dumps(t.inputs, ensure_ascii=False)}" for i, t in enumerate(tests, start=1)
    )
    messages = stage_messages(prompt, tests=shown, **inputs)
    name, item = answer
    result = await scope.complete(
        messages, model="eval", output=numbered_model(name, len(tests), item)
    )
    if not result.ok:
        scope.fail(result.error)
        return
    for number, verdict in answers(result.parsed).items():
        record(tests[number - 1], verdict)
    missing = sum(not judged(t) for t in tests)
    if missing:
        scope.fail(f"{missing} test(s) got no verdict; a re-run asks again")
