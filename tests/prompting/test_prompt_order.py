"""Stage prompts put what the calls of one stage share first and what differs last, so
a model that keeps the KV state of earlier calls (the embedded llama.cpp engine, or a
provider's prompt cache) reads only the tail of each call again."""

from __future__ import annotations

from typing import Any

import pytest

from promptgen.prompting import stage_messages

PROMPT = "system:\nLabel the review as positive or negative.\n\nuser:\n{{review}}"
RULES = "1. The output is one word.\n2. The output is lower case."

# template: (values every call of its stage shares, the values that differ per call: two
# calls' worth)
STAGES: dict[str, tuple[dict[str, Any], tuple[dict[str, Any], dict[str, Any]]]] = {
    "compliance": (
        {"prompt": PROMPT, "rules": RULES, "intent": ""},
        ({"input": "Great lid.", "output": "positive"}, {"input": "It broke.", "output": "no"}),
    ),
    "groundtruth": (
        {"prompt": PROMPT, "rules": RULES},
        ({"input": "Great lid.", "output": "positive"}, {"input": "It broke.", "output": "no"}),
    ),
    "accuracy": (
        {"prompt": PROMPT},
        (
            {"input": "Great lid.", "groundtruth": "positive", "output": "positive"},
            {"input": "It broke.", "groundtruth": "negative", "output": "no"},
        ),
    ),
    "class_check": (
        {"classes": "positive: praise\nnegative: complaint"},
        ({"value": "Great lid."}, {"value": "It broke."}),
    ),
    "test_input": (
        {"inputs": "review (string): a product review", "noun": "review"},
        ({"case": "the review is sarcastic"}, {"case": "the review is in French"}),
    ),
    "rule_from_instruction": (
        {},
        ({"instruction": "Answer in one word."}, {"instruction": "Use lower case."}),
    ),
    "groundedness": (
        {"prompt": PROMPT},
        ({"rule": "The output is one word."}, {"rule": "The output is lower case."}),
    ),
    "expand": (
        {"prompt": PROMPT},
        (
            {"rule": "The output is one word.", "test": "Great lid."},
            {"rule": "The output is lower case.", "test": "It broke."},
        ),
    ),
}


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_what_calls_share_comes_before_what_differs(name: str) -> None:
    shared, (first, second) = STAGES[name]
    one = _text(stage_messages(name, **shared, **first))
    two = _text(stage_messages(name, **shared, **second))
    split = next(i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b)
    # every shared value is read before the first character where the calls differ
    for key, value in shared.items():
        if value:
            assert one.index(str(value)) + len(str(value)) <= split, (name, key)
    # and the shared part is most of the prompt: the system message at the least
    assert split > len(one) // 2, (name, split, len(one))
