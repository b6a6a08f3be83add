"""Answer schemas and the one call shape shared by the analysis stages (intent, input
specification, rules, inverse rules)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from promptgen.prompting import prompt_text, stage_messages
from promptgen.prompting.per_item import numbered_model

# Bounded lengths keep a small model from running on until its token limit.
Sentence = Annotated[str, Field(min_length=3, max_length=300)]


def analysis_messages(prompt: Any, template: str, **values: object) -> list[dict[str, Any]]:
    """A stage template about the prompt under test (shown as its author wrote it)."""
    return stage_messages(template, prompt=prompt_text(prompt), **values)


class IntentAnswer(BaseModel):
    # The field name itself steers small models toward describing, not answering.
    task_description: str = Field(
        min_length=20, max_length=300, description="One sentence describing the task."
    )


class InputSpecAnswer(BaseModel):
    constraints: list[Sentence] = Field(
        min_length=1, max_length=15, description="One constraint on the inputs per item."
    )


class RulesAnswer(BaseModel):
    rules: list[Sentence] = Field(min_length=1, max_length=50)


def inverse_answer(count: int) -> type[BaseModel]:
    """One inverse per numbered rule, under the rule's number."""
    return numbered_model("InverseAnswer", count, Sentence)
