"""The testing criteria of an OpenAI eval: the compliance judge, custom and accuracy
judges as label_model/score_model graders, and deterministic checks as string_check
where the operation is the same."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptgen.context import PASS_SCORE, Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    check_value,
    compliance_judge,
    expected_output,
    metric_sources,
    not_a_check,
    parsed_checks,
    quoted_prompt,
    rules_text,
)
from promptgen.export.openai_items import OUTPUT, Fields
from promptgen.formats import load_prompt
from promptgen.model import PromptUnderTest
from promptgen.prompting import template
from promptgen.rendering.render import render_messages
from promptgen.results import MetricInfo, Test


def testing_criteria(
    ctx: Context, tests: list[Test], fields: Fields, grader: str, result: ExportResult
) -> list[dict[str, Any]]:
    checks = {c.label: c for c in parsed_checks(ctx)}
    criteria: list[dict[str, Any]] = []
    for info in metric_sources(ctx):
        if info.kind == "check":
            spec = checks.get(info.name)
            if spec is None:
                result.skipped.append(f"check {info.name!r}: {not_a_check(info)}")
                continue
            made, why = string_check(spec, fields)
        elif info.kind == "compliance":
            made, why = _compliance(ctx, info, fields, grader), None
        elif info.kind == "accuracy":
            made, why = _accuracy(ctx, info, tests, fields, grader, result)
        elif info.kind == "custom":
            made, why = _custom(ctx, info, fields, grader)
        else:
            made = None
            why = f"metric {info.name!r}: scores groundtruth answers, not outputs; not exported"
        if made is not None:
            criteria.append(made)
        if why is not None:
            result.skipped.append(why)
    return criteria


def judge_values(ctx: Context, fields: Fields) -> dict[str, str]:
    """What promptgen's judges read (promptgen/evaluation/case.py), with the item's and
    the sample's placeholders for the values that change from test to test."""
    return {
        **{name: fields.ref(name) for name in fields.inputs},
        "prompt": quoted_prompt(ctx),
        "intent": ctx.intent or "",
        "inputSpec": ctx.input_spec or "",
        "rules": rules_text(ctx),
        "input": fields.meta("input"),
        "output": OUTPUT,
        "groundtruth": fields.meta("expected"),
    }


def _messages(prompt: PromptUnderTest, values: dict[str, str]) -> list[dict[str, str]]:
    return [
        {"role": str(m["role"]), "content": str(m["content"])}
        for m in render_messages(prompt, values)
    ]


def label_model(name: str, grader: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "type": "label_model",
        "name": name,
        "model": grader,
        "input": messages,
        "labels": ["ok", "err"],
        "passing_labels": ["ok"],
    }


def score_model(
    name: str, grader: str, messages: list[dict[str, str]], temperature: float | None
) -> dict[str, Any]:
    criterion: dict[str, Any] = {
        "type": "score_model",
        "name": name,
        "model": grader,
        "input": messages,
        "range": [0, 100],
        "pass_threshold": PASS_SCORE,
    }
    if temperature is not None:
        criterion["sampling_params"] = {"temperature": temperature}
    return criterion


def _compliance(ctx: Context, info: MetricInfo, fields: Fields, grader: str) -> dict[str, Any]:
    messages = compliance_judge(ctx, input=fields.meta("input"), output=OUTPUT)
    return label_model(info.name, grader, messages)


def _accuracy(
    ctx: Context,
    info: MetricInfo,
    tests: list[Test],
    fields: Fields,
    grader: str,
    result: ExportResult,
) -> tuple[dict[str, Any] | None, str | None]:
    missing = sum(expected_output(t) is None for t in tests)
    if not tests or missing == len(tests):
        return None, f"metric {info.name!r}: no exported test has a reference answer"
    if missing:
        result.notes.append(
            f"metric {info.name!r}: {missing} of {len(tests)} items have no reference "
            "answer; the grader compares their outputs with an empty one"
        )
    values = judge_values(ctx, fields)
    builtin = {k: values[k] for k in ("prompt", "rules", "input", "output", "groundtruth")}
    messages = _messages(template("accuracy"), {**builtin, "intent": values["intent"]})
    return score_model(info.name, grader, messages, 0), None


def _custom(
    ctx: Context, info: MetricInfo, fields: Fields, grader: str
) -> tuple[dict[str, Any] | None, str | None]:
    if not info.source:
        return None, f"metric {info.name!r}: an inline --custom-metric has no file to export"
    path = metric_file(ctx, info.source)
    if path is None:
        return None, f"metric {info.name!r}: its file {info.source} is not found"
    try:
        judge = load_prompt(path)
        if "groundtruth" in judge.tags:
            return None, f"metric {info.name!r}: scores groundtruth answers, not outputs"
        messages = _messages(judge, judge_values(ctx, fields))
    except BadInputError as err:
        return None, f"metric {info.name!r}: {err.one_line()}"
    if not info.scorer:
        return label_model(info.name, grader, messages), None
    temperature = judge.model.parameters.get("temperature")
    number = temperature if isinstance(temperature, int | float) else None
    return score_model(info.name, grader, messages, number), None


def metric_file(ctx: Context, source: str) -> Path | None:
    """A custom metric's file: where the run found it, else the file of that name beside
    the prompt (the run's folder may have moved)."""
    candidates = [Path(source)]
    if ctx.prompt.source:
        candidates.append(Path(ctx.prompt.source).parent / Path(source).name)
    return next((p for p in candidates if p.is_file()), None)


# -- checks -----------------------------------------------------------------------------

_NO_GRADER = {
    "starts-with": "string_check has no starts-with operation",
    "ends-with": "string_check has no ends-with operation",
    "contains-any": "string_check compares with one value, not any of several",
    "contains-all": "string_check compares with one value, not all of several",
    "regex": "OpenAI Evals has no regex grader",
    "is-json": "OpenAI Evals has no JSON validity grader",
    "language": "OpenAI Evals has no language grader",
    "levenshtein": (
        "text_similarity's fuzzy_match is a 0-1 similarity, not an edit distance; "
        "no threshold matches the check"
    ),
}


def string_check(spec: CheckSpec, fields: Fields) -> tuple[dict[str, Any] | None, str | None]:
    """A check as an OpenAI string_check, or why it cannot be one."""
    operation = _operation(spec)
    if isinstance(operation, Why):
        return None, f"check {spec.label!r}: not exportable: {operation.text}"
    value = check_value(spec, fields.ref)
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    if isinstance(value, dict | list):
        why = "compares as JSON; string_check compares text"
        return None, f"check {spec.label!r}: not exportable: {why}"
    criterion = {
        "type": "string_check",
        "name": spec.label,
        "input": OUTPUT,
        "reference": str(value),
        "operation": operation,
    }
    return criterion, None


@dataclass(frozen=True)
class Why:
    text: str


def _operation(spec: CheckSpec) -> str | Why:
    if spec.base == "equals":
        return "ne" if spec.negated else "eq"
    if spec.base == "contains" and not spec.negated:
        return "ilike" if spec.ignore_case else "like"
    if spec.base == "contains":
        return Why("string_check has no 'does not contain' operation")
    if spec.base.endswith("-count"):
        return Why(f"OpenAI Evals has no grader that counts {spec.base[:-6]}s")
    if spec.negated:
        return Why("OpenAI Evals cannot negate a grader")
    return Why(_NO_GRADER.get(spec.base, f"OpenAI Evals has no {spec.base} grader"))
