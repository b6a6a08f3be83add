"""The items of an OpenAI eval: the prompt's inputs under their own names, then
promptgen's fields (the judged input, the reference answer, test and rule ids), and
the item schema that describes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from promptgen.context import Context
from promptgen.export.common import (
    arguments,
    expected_output,
    input_text,
    rendered_messages,
)
from promptgen.results import Test

OUTPUT = "{{sample.output_text}}"
# The item fields promptgen adds beside the prompt's inputs (renamed when an input has
# the same name: see `Fields`).
META = ("input", "expected", "test_id", "rule_id", "scenario", "inverse", "messages")
_META_DOC = {
    "input": "the test's input as judges read it",
    "expected": 'the reference answer ("" when the test has none)',
    "test_id": "promptgen test id",
    "rule_id": 'the rule the test targets ("" when none)',
    "scenario": 'the scenario of the test ("" when none)',
    "inverse": "whether the test targets an inverse rule",
    "messages": "the prompt rendered for this test (its template has logic)",
}


# -- items ------------------------------------------------------------------------------


def item_ref(key: str) -> str:
    """`{{item.<key>}}`: a field of the item, as OpenAI's templates write it."""
    return "{{item." + key + "}}"


@dataclass(frozen=True)
class Fields:
    """The item's field names: the prompt's inputs under their own names, then promptgen's
    fields (META), each renamed `promptgen_<name>` when an input already has that name."""

    inputs: list[str]
    keys: dict[str, str]

    @classmethod
    def of(cls, ctx: Context, tests: list[Test]) -> Fields:
        names = [*ctx.prompt.inputs, *(n for t in tests for n in arguments(ctx, t))]
        inputs = list(dict.fromkeys(names))
        keys = {}
        for meta in META:
            key = meta
            while key in inputs:
                key = f"promptgen_{key}"
            keys[meta] = key
        return cls(inputs, keys)

    def __getitem__(self, meta: str) -> str:
        return self.keys[meta]

    def ref(self, name: str) -> str:
        """`{{item.<field>}}` for a prompt input (a check's `{{name}}`), else for one of
        promptgen's fields (`{{expected}}`)."""
        return item_ref(name if name in self.inputs else self.keys.get(name, name))

    def meta(self, name: str) -> str:
        """`{{item.<field>}}` for one of promptgen's fields (META)."""
        return item_ref(self.keys[name])


def make_item(ctx: Context, test: Test, fields: Fields, *, rendered: bool) -> dict[str, Any]:
    item: dict[str, Any] = dict(arguments(ctx, test))
    item[fields["input"]] = input_text(ctx, test)
    item[fields["expected"]] = expected_output(test) or ""
    item[fields["test_id"]] = test.id
    item[fields["rule_id"]] = test.rule_id or ""
    item[fields["scenario"]] = test.scenario or ""
    item[fields["inverse"]] = bool(test.inverse)
    if rendered:
        item[fields["messages"]] = rendered_messages(ctx, test)
    return item


def item_schema(
    ctx: Context, tests: list[Test], fields: Fields, *, rendered: bool
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name in fields.inputs:
        spec = ctx.prompt.inputs.get(name)
        properties[name] = {"type": "string"}
        if spec is not None and spec.description:
            properties[name]["description"] = spec.description
    metas = [m for m in META if m != "messages" or rendered]
    for meta in metas:
        kind = "boolean" if meta == "inverse" else "string"
        properties[fields[meta]] = {"type": kind, "description": _META_DOC[meta]}
    if rendered:
        message = {
            "type": "object",
            "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
            "required": ["role", "content"],
        }
        properties[fields["messages"]]["type"] = "array"
        properties[fields["messages"]]["items"] = message
    given = [set(arguments(ctx, t)) for t in tests]
    always = [n for n in fields.inputs if all(n in g for g in given)]
    return {
        "type": "object",
        "properties": properties,
        "required": [*always, *(fields[m] for m in metas)],
    }
