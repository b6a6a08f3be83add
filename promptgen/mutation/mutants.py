"""Stage `mutants`: the mutant list, made once: the deterministic operators' edits plus
the edits the rules model proposes (one structured call), then no-ops and duplicates
dropped, equivalent mutants marked, and the cap applied (promptgen.mutation.build).

Its settings live in `ctx.mutation` (set by `promptgen.mutate` before it runs), so a
resumed run keeps them."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.mutation.build import choose, deterministic_edits, distinct, mark_equivalent
from promptgen.mutation.operators import MASK, Edit, keeps_template, masked
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Items, Text
from promptgen.selection import eval_tests
from promptgen.stage import Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "evaluation"


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    state = ctx.mutation
    if state is None or state.proposed:
        return []
    return [WorkItem("mutants", calls=1 if state.llm_mutants else 0)]


@functools.cache
def proposals_model(messages: int, count: int) -> type[BaseModel]:
    """The answer: up to `count` edits, each naming a message by its number (1..N)."""
    message = Annotated[int, Field(ge=1, le=messages, description="Number of the message.")]
    item = create_model(
        "ProposedMutant",
        message=(message, ...),
        find=(Text(400, min_length=1, description="Exact text of that message."), ...),
        replace=(Text(400, description="What to put in its place."), ...),
        why=(Text(200, description="The behaviour it should change."), ...),
    )
    return create_model("MutantProposals", mutants=(Items(item, count, min_length=1), ...))


def numbered_messages(prompt: PromptUnderTest) -> str:
    return "\n\n".join(
        f"Message {i} ({m.role}):\n{m.content}" for i, m in enumerate(prompt.messages, start=1)
    )


def proposed_edits(prompt: PromptUnderTest, answer: Any, dropped: Counter[str]) -> list[Edit]:
    """The model's edits that apply: its `find` occurs in the message, touches no
    template syntax, and the edit keeps the template's pieces."""
    edits = []
    engine = prompt.template_engine
    for item in answer.mutants:
        index = item.message - 1
        content = prompt.messages[index].content if index < len(prompt.messages) else ""
        start = content.find(item.find) if item.find else -1
        if start < 0:
            dropped["llm: text not found"] += 1
            continue
        end = start + len(item.find)
        edit = Edit("llm", index, start, end, item.replace, _described(item))
        if MASK in masked(content, engine)[start:end] or not keeps_template(
            content, edit.apply(content), engine
        ):
            dropped["llm: touches the template"] += 1
            continue
        edits.append(edit)
    return edits


def _described(item: Any) -> str:
    change = f'"{item.find}" -> "{item.replace}"' if item.replace else f'deleted "{item.find}"'
    return f"{change} ({item.why})" if item.why else change


async def run(item: WorkItem[None], scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    state = ctx.mutation
    assert state is not None  # todo() yields work only with a mutation state
    edits = deterministic_edits(ctx.prompt)
    dropped: Counter[str] = Counter()
    if state.llm_mutants:
        prompt = ctx.prompt
        messages = stage_messages(
            "mutate", messages=numbered_messages(prompt), count=state.llm_mutants
        )
        answer = await scope.complete(
            messages,
            model="rules",
            output=proposals_model(len(prompt.messages), state.llm_mutants),
            temperature=cfg.gen.temperature,
        )
        if not answer.ok:
            scope.fail(answer.error)
            return
        edits += proposed_edits(prompt, answer.parsed, dropped)
    mutants = distinct(ctx.prompt, edits, dropped)
    mark_equivalent(ctx.prompt, mutants, eval_tests(ctx, cfg))
    state.candidates = dict(Counter(m.operator for m in mutants if not m.equivalent))
    state.mutants = choose(mutants, state.max_mutants)
    state.dropped = dict(dropped)
    state.proposed = True
    scope.checkpoint()
