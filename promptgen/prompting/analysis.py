"""Answer schemas and the one call shape shared by the analysis stages (intent, input
specification, rules, inverse rules)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from promptgen.prompting import prompt_text, stage_messages
from promptgen.prompting.bounded import Items, Text
from promptgen.prompting.per_item import numbered_model

# Bounded lengths keep a small model from running on until its token limit.
Sentence = Text(300, min_length=3)


def analysis_messages(prompt: Any, template: str, **values: object) -> list[dict[str, Any]]:
    """A stage template about the prompt under test (shown as its author wrote it)."""
    return stage_messages(template, prompt=prompt_text(prompt), **values)


class IntentAnswer(BaseModel):
    # The field name itself steers small models toward describing, not answering.
    task_description: Text(  # type: ignore[valid-type]
        300, min_length=20, description="One sentence describing the task."
    )


class InputSpecAnswer(BaseModel):
    constraints: Items(  # type: ignore[valid-type]
        Sentence, 15, min_length=1, description="One constraint on the inputs per item."
    )


class ShortInputSpecAnswer(BaseModel):
    """Stepwise (small models): asked for 15, the 1.5B model filled them by repeating
    itself ("must not contain any other punctuation", three times over)."""

    constraints: Items(  # type: ignore[valid-type]
        Sentence, 6, min_length=1, description="One constraint on the inputs per item."
    )


class RulesAnswer(BaseModel):
    rules: Items(Sentence, 50, min_length=1)  # type: ignore[valid-type]


def inverse_answer(count: int) -> type[BaseModel]:
    """One inverse per numbered rule, under the rule's number."""
    return numbered_model("InverseAnswer", count, Sentence)
