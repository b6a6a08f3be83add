"""From edits to mutants: each edit applied to a copy of the prompt, identified by a
content hash, shown as a unified diff; no-ops and duplicates dropped; mutants that
render exactly like the original for every test marked equivalent; the ones kept
chosen round-robin over the operators."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable

from promptgen.errors import RenderError
from promptgen.model import PromptUnderTest
from promptgen.mutation.operators import Edit, edits_of
from promptgen.prompting import prompt_text
from promptgen.prompting.invoke import test_arguments
from promptgen.rendering.render import render_messages
from promptgen.results import Mutant, Test, content_id

ORDER = ("delete-sentence", "negate", "number", "format", "swap-steps", "llm")


def deterministic_edits(prompt: PromptUnderTest) -> list[Edit]:
    """Every operator's edits of every message the model reads (a step the model
    writes has no template to edit)."""
    return [
        edit
        for index, message in enumerate(prompt.messages)
        if not message.to_fill and message.content
        for edit in edits_of(index, message.content, prompt.template_engine)
    ]


def mutated(prompt: PromptUnderTest, mutant: Mutant) -> PromptUnderTest:
    """The prompt with the mutant's message in place of the original one."""
    messages = list(prompt.messages)
    messages[mutant.message] = messages[mutant.message].model_copy(
        update={"content": mutant.content}
    )
    return prompt.model_copy(update={"messages": messages})


def _normal(text: str) -> str:
    return " ".join(text.split())


def make_mutant(prompt: PromptUnderTest, edit: Edit) -> Mutant:
    content = edit.apply(prompt.messages[edit.message].content)
    texts = [(m.role, m.content) for m in prompt.messages]
    texts[edit.message] = (texts[edit.message][0], content)
    mutant = Mutant(
        id=content_id("mut", [(r, _normal(c)) for r, c in texts]),
        operator=edit.operator,
        description=edit.description,
        message=edit.message,
        content=content,
        diff="",
    )
    after = prompt_text(mutated(prompt, mutant))
    lines = difflib.unified_diff(
        prompt_text(prompt).splitlines(), after.splitlines(), "original", mutant.id, n=1,
        lineterm="",
    )  # fmt: skip
    mutant.diff = "\n".join(lines)
    return mutant


def distinct(prompt: PromptUnderTest, edits: Iterable[Edit], dropped: Counter[str]) -> list[Mutant]:
    """A mutant per edit, without no-ops (the same text once whitespace is normalised)
    and duplicates (the same mutated prompt from another edit: the first is kept)."""
    original = content_id("mut", [(m.role, _normal(m.content)) for m in prompt.messages])
    seen: set[str] = set()
    kept = []
    for edit in edits:
        mutant = make_mutant(prompt, edit)
        if mutant.id == original:
            dropped["no-op"] += 1
        elif mutant.id in seen:
            dropped["duplicate"] += 1
        else:
            seen.add(mutant.id)
            kept.append(mutant)
    return kept


def _render(prompt: PromptUnderTest, test: Test) -> object:
    try:
        return render_messages(prompt, test_arguments(prompt, test))
    except RenderError as err:
        return f"render error: {err}"


def mark_equivalent(prompt: PromptUnderTest, mutants: list[Mutant], tests: list[Test]) -> None:
    """A mutant whose messages render exactly like the original's for every test (an
    edit inside a branch no test takes) cannot be told apart by this suite."""
    if not tests:
        return
    originals = [_render(prompt, t) for t in tests]
    for mutant in mutants:
        changed = mutated(prompt, mutant)
        mutant.equivalent = all(
            _render(changed, t) == rendered for t, rendered in zip(tests, originals, strict=True)
        )


def choose(mutants: list[Mutant], cap: int) -> list[Mutant]:
    """At most `cap` non-equivalent mutants, round-robin over the operators (in ORDER,
    each operator's in the order found), so every operator is represented; equivalent
    mutants cost nothing and are all kept, listed apart."""
    live = [m for m in mutants if not m.equivalent]
    queues = {op: [m for m in live if m.operator == op] for op in ORDER}
    chosen: list[Mutant] = []
    while len(chosen) < cap and any(queues.values()):
        for op in ORDER:
            if queues[op] and len(chosen) < cap:
                chosen.append(queues[op].pop(0))
    ids = {m.id for m in chosen}
    return [m for m in mutants if m.id in ids or m.equivalent]
