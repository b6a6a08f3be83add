"""Prompting helpers every stage and judge shares: stage templates, the prompt under
test as text, numbered lists, what a test targets."""

from __future__ import annotations

import functools
import json
import random
import re
from typing import Any

from promptgen.context import Context
from promptgen.formats import load_prompt
from promptgen.model import Message, PromptUnderTest, Scenario, TestSample
from promptgen.rendering.render import render_messages
from promptgen.resources import data_dir
from promptgen.results import Test


@functools.cache
def template(name: str) -> PromptUnderTest:
    return load_prompt(data_dir("prompts") / f"{name}.prompty")


def stage_messages(name: str, **values: Any) -> list[dict[str, Any]]:
    """The stage's prompt template rendered with `values` (None/empty become "")."""
    clean = {k: ("" if v is None else v) for k, v in values.items()}
    return render_messages(template(name), clean)


def prompt_text(prompt: PromptUnderTest) -> str:
    """The prompt under test as its author wrote it: role markers and raw templates; a
    step the model writes, and each prompt of a multi-run prompt, said in words."""
    if prompt.variants:
        return "\n\n".join(
            f"[prompt {v.name!r}, run {v.repetitions} time(s)]\n\n{_messages_text(v.messages)}"
            for v in prompt.variants
        )
    return _messages_text(prompt.messages)


_TAG = re.compile(
    r"\{%-?\s*(.*?)\s*-?%\}|\{\{([#^/])\s*(.*?)\s*\}\}|\{\{\s*(.*?)\s*\}\}|\{#.*?#\}", re.S
)


def _slot(match: re.Match[str]) -> str:
    """A template tag said without template syntax: "[review]", "[when x is set]"."""
    block, section, name, value = match.groups()
    if value is not None:
        return f"[{value.split('|')[0].strip()}]"
    if section is not None:
        return {"#": f"[when {name} is set]", "^": f"[when {name} is not set]", "/": "[end]"}[
            section
        ]
    if block is None:
        return ""  # a comment
    word, _, rest = block.partition(" ")
    if word in ("if", "elif"):
        return f"[when {rest}]"
    if word == "else":
        return "[otherwise]"
    if word in ("endif", "endfor"):
        return "[end]"
    if word == "for":
        return f"[for {rest}]"
    return ""


def writer_view(prompt: PromptUnderTest) -> str:
    """The prompt under test as a test writer sees it: its messages with every template
    tag said in brackets ("[review]", "[when output_format == 'csv']"), never as template
    syntax (a small writer copied `{{review}}` as a test's input)."""
    return _PYFORMAT.sub(lambda m: f"[{m.group(1)}]", _TAG.sub(_slot, prompt_text(prompt)))


# str.format / LVE placeholders ("{request}"), said the same way.
_PYFORMAT = re.compile(r"(?<!\{)\{([A-Za-z_]\w*)\}(?!\})")


def _messages_text(messages: list[Message]) -> str:
    return "\n\n".join(
        f"{m.role}:\n"
        + (f"(the model's own answer here, named {m.variable!r})" if m.to_fill else m.content)
        for m in messages
    )


def generated_inputs(prompt: PromptUnderTest, fixed: set[str] | None = None) -> list[str]:
    """Inputs a test must give a value for (those a scenario or the run fixes are left
    out: the answer schema does not even ask for them)."""
    left_out = (fixed or set()) | set(prompt.fixed_inputs)
    return [name for name in prompt.inputs if name not in left_out]


def fixed_text(prompt: PromptUnderTest) -> str:
    """The inputs the run fixes (`--var`), as generation prompts state them."""
    return "\n".join(
        f"- {name} = {json.dumps(value, ensure_ascii=False)}"
        for name, value in prompt.fixed_inputs.items()
    )


def scenario_text(scenario: Scenario | None) -> str:
    """A scenario as generation prompts state it: name, instructions, fixed values."""
    if scenario is None:
        return ""
    params = ", ".join(f"{k} = {v}" for k, v in scenario.parameters.items())
    return " ".join(p for p in (scenario.name + ":", scenario.instructions, params) if p)


def inputs_text(prompt: PromptUnderTest, names: list[str] | None = None) -> str:
    lines = []
    for name in names if names is not None else list(prompt.inputs):
        spec = prompt.inputs[name]
        extra = f": {spec.description}" if spec.description else ""
        enum = f" (one of {', '.join(map(str, spec.enum))})" if spec.enum else ""
        if name in prompt.fixed_inputs:
            value = json.dumps(prompt.fixed_inputs[name], ensure_ascii=False)
            enum = f" (fixed: {value} in every test)"
        lines.append(f"- {name} ({spec.type}){enum}{extra}")
    return "\n".join(lines)


def shown_samples(
    prompt: PromptUnderTest, count: int = 5, shuffle: bool = False
) -> list[TestSample]:
    """The author's test samples generation prompts show as examples: the first `count`,
    or with `shuffle` `count` picked in an order seeded by the prompt's content hash, so
    the same prompt shows the same samples on every run (the cache and resume hold)."""
    samples = list(prompt.test_samples)
    if shuffle:
        random.Random(prompt.content_hash()).shuffle(samples)
    return samples[:count]


def samples_text(prompt: PromptUnderTest, count: int = 5, shuffle: bool = False) -> str:
    """The shown samples' inputs, one JSON object a line (an input the run fixes is left
    out: the generator does not write it)."""
    rows = [
        {k: v for k, v in s.inputs.items() if k not in prompt.fixed_inputs}
        for s in shown_samples(prompt, count, shuffle)
    ]
    return "\n".join(f"- {json.dumps(row, ensure_ascii=False)}" for row in rows if row)


def instruction(prompt: PromptUnderTest, extra: object, stage: str) -> str:
    """Frontmatter instructions for a stage, plus any given on the command line
    (`extra`: the options' Instructions)."""
    parts = [getattr(prompt.instructions, stage, None), getattr(extra, stage, None)]
    return "\n".join(p for p in parts if p)


def numbered(texts: list[str]) -> str:
    return "\n".join(f"{i}. {t}" for i, t in enumerate(texts, start=1))


def target_label(ctx: Context, test: Test) -> str:
    """What a test targets, in one line: its rule (marked inverse), or its origin."""
    rule = ctx.rule(test.rule_id)
    if rule is not None:
        label = ("(inverse) " if test.inverse else "") + rule.text
    elif test.origin == "sample":
        label = "(author's sample)"
    elif test.origin == "baseline":
        label = "(baseline test, no rule)"
    else:
        label = "(no rule)"
    if test.scenario:
        label += f" [scenario: {test.scenario}]"
    return " ".join(label.split())
