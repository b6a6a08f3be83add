"""OpenAI Evals and Azure OpenAI Evals: an eval create body (`eval.json`), one run create
body per model the platform can run (`runs/<model>.json`) and the items (`items.jsonl`).

The bodies are what `client.evals.create(**body)` and `client.evals.runs.create(eval_id,
**body)` take; `settings.create_eval_runs` sends them (promptgen/export/openai_create.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptgen import __version__
from promptgen.context import PASS_SCORE, Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    ExportSettings,
    arguments,
    check_value,
    compliance_judge,
    expected_output,
    exported_tests,
    input_text,
    metric_sources,
    models_under_test,
    parsed_checks,
    placeholder_messages,
    provider_and_name,
    quoted_prompt,
    rendered_messages,
    rules_text,
    sampling,
    write_json,
    write_jsonl,
)
from promptgen.formats import load_prompt
from promptgen.llm.config import ALIASES
from promptgen.model import PromptUnderTest
from promptgen.prompting import template
from promptgen.render import render_messages
from promptgen.results import MetricInfo, Test

OUTPUT = "{{sample.output_text}}"
FALLBACK_GRADER = "gpt-4o-mini"
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
# Call parameters a completions run takes (the SDK's SamplingParams), besides
# max_tokens (max_completion_tokens there) and response_format.
_SAMPLING = ("temperature", "top_p", "seed", "reasoning_effort")
_FORMATS = ("text", "json_object", "json_schema")


# -- the two platforms ------------------------------------------------------------------


@dataclass(frozen=True)
class Platform:
    """What differs between OpenAI and Azure OpenAI: which models it runs, by what name."""

    target: str
    provider: str | None  # the provider prefix of the models it runs (None: openai or bare)
    kind: str  # "an OpenAI model" / "an Azure OpenAI deployment (azure/<deployment>)"
    create: str  # "openai" or "azure" (openai_create.py)

    def model_name(self, model: str) -> str | None:
        """The model's name on this platform, or None when it cannot run it."""
        provider, name = provider_and_name(model)
        if self.provider is None:
            return name if provider in (None, "openai") and _is_model_name(name) else None
        return name if provider == self.provider and name else None


OPENAI = Platform("openai-evals", None, "an OpenAI model", "openai")
AZURE = Platform("azure-evals", "azure", "an Azure OpenAI deployment (azure/<deployment>)", "azure")


def _is_model_name(name: str) -> bool:
    """A real model id, not a promptgen alias or the `openai/default` of an API base."""
    return bool(name) and name not in (*ALIASES, "default")


def write_openai(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    return _write(ctx, out, settings, OPENAI)


def write_azure(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    return _write(ctx, out, settings, AZURE)


def _write(ctx: Context, out: Path, settings: ExportSettings, platform: Platform) -> ExportResult:
    result = ExportResult(target=platform.target)
    tests = exported_tests(ctx)
    fields = Fields.of(ctx, tests)
    template_messages = placeholder_messages(ctx, item_ref)
    items = [make_item(ctx, t, fields, rendered=template_messages is None) for t in tests]
    grader = grader_model(ctx, platform, result)
    body = eval_body(ctx, tests, fields, grader, result, rendered=template_messages is None)
    runs = run_bodies(ctx, settings, platform, fields, items, template_messages, result)
    try:
        result.paths.append(write_json(out / "eval.json", body))
        result.paths.append(write_jsonl(out / "items.jsonl", [{"item": i} for i in items]))
        for stale in sorted((out / "runs").glob("*.json")):
            if stale.name not in runs:  # a model of an earlier export
                stale.unlink()
        for filename, run in runs.items():
            result.paths.append(write_json(out / "runs" / filename, run))
    except OSError as err:
        raise BadInputError(
            f"cannot write the {platform.target} export: {err.strerror or err}",
            file=out,
            hint="give a writable --out folder",
        ) from err
    if not tests:
        result.notes.append("no test to export: items.jsonl is empty")
    if template_messages is None:
        result.notes.append(
            "the prompt's template has logic: each item carries its rendered `messages`"
        )
    if settings.create_eval_runs:
        from promptgen.export.openai_create import create_eval_runs

        create_eval_runs(platform.create, out, body, runs, result)
    return result


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


# -- the eval ---------------------------------------------------------------------------


def grader_model(ctx: Context, platform: Platform, result: ExportResult) -> str:
    """The run's first eval model when the platform can run it, else a placeholder."""
    models = ctx.options.models
    first = (models.eval_models or [models.eval_model or ""])[0]
    name = platform.model_name(first) if first else None
    if name:
        return name
    given = f"the run's eval model {first} is not {platform.kind}" if first else "no eval model"
    if platform is AZURE:
        result.notes.append(
            f"grader model: {given}; eval.json names the placeholder deployment "
            f"{FALLBACK_GRADER!r}: replace it with a deployment of yours"
        )
    else:
        result.notes.append(f"grader model: {given}; the graders use {FALLBACK_GRADER}")
    return FALLBACK_GRADER


def eval_body(
    ctx: Context,
    tests: list[Test],
    fields: Fields,
    grader: str,
    result: ExportResult,
    *,
    rendered: bool,
) -> dict[str, Any]:
    criteria = testing_criteria(ctx, tests, fields, grader, result)
    return {
        "name": ctx.prompt.name,
        "data_source_config": {
            "type": "custom",
            "item_schema": item_schema(ctx, tests, fields, rendered=rendered),
            "include_sample_schema": True,
        },
        "testing_criteria": criteria,
        "metadata": metadata(ctx),
    }


def metadata(ctx: Context, **extra: str) -> dict[str, str]:
    """OpenAI metadata: at most 16 text values of at most 512 characters."""
    values = {
        "promptgen_run_id": ctx.run_id,
        "promptgen_prompt": ctx.prompt.name,
        "promptgen_version": __version__,
        **extra,
    }
    return {k[:64]: str(v)[:512] for k, v in list(values.items())[:16]}


def testing_criteria(
    ctx: Context, tests: list[Test], fields: Fields, grader: str, result: ExportResult
) -> list[dict[str, Any]]:
    checks = {c.label: c for c in parsed_checks(ctx)}
    criteria: list[dict[str, Any]] = []
    for info in metric_sources(ctx):
        if info.kind == "check":
            spec = checks.get(info.name)
            if spec is None:
                result.skipped.append(f"check {info.name!r}: it no longer parses")
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


# -- runs -------------------------------------------------------------------------------


def run_bodies(
    ctx: Context,
    settings: ExportSettings,
    platform: Platform,
    fields: Fields,
    items: list[dict[str, Any]],
    template_messages: list[dict[str, str]] | None,
    result: ExportResult,
) -> dict[str, dict[str, Any]]:
    """`runs/<file name>` -> run create body, one per model the platform can run."""
    if template_messages is None:
        input_messages: dict[str, Any] = {
            "type": "item_reference",
            "item_reference": f"item.{fields['messages']}",
        }
    else:
        input_messages = {"type": "template", "template": template_messages}
    params = sampling_params(ctx, result)
    bodies: dict[str, dict[str, Any]] = {}
    for model in models_under_test(ctx, settings):
        name = platform.model_name(model)
        if name is None:
            result.skipped.append(f"model {model}: not {platform.kind}; {_elsewhere(model)}")
            continue
        data_source: dict[str, Any] = {
            "type": "completions",
            "model": name,
            "input_messages": input_messages,
            "source": {"type": "file_content", "content": [{"item": i} for i in items]},
        }
        if params:
            data_source["sampling_params"] = params
        body = {
            "name": f"{ctx.prompt.name} on {name}",
            "data_source": data_source,
            "metadata": metadata(ctx, promptgen_model=model),
        }
        bodies[_filename(name, bodies)] = body
    if not bodies:
        result.notes.append(f"no model under test is {platform.kind}: no run body written")
    return bodies


def _elsewhere(model: str) -> str:
    """Where a model the platform cannot run can run instead."""
    for other in (OPENAI, AZURE):
        if other.model_name(model) is not None:
            return f"the {other.target} target takes it, or run it with promptgen"
    return "run it with promptgen"


def sampling_params(ctx: Context, result: ExportResult) -> dict[str, Any]:
    """The prompt's call parameters a completions run takes; the others are skipped."""
    params: dict[str, Any] = {}
    for key, value in sampling(ctx).items():
        if key in ("max_tokens", "max_completion_tokens"):
            params["max_completion_tokens"] = value
        elif key in _SAMPLING or (key == "response_format" and _format_ok(value)):
            params[key] = value
        else:
            result.skipped.append(
                f"parameter {key}: an OpenAI Evals completions run does not take it"
            )
    return params


def _format_ok(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _FORMATS


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _filename(model: str, taken: dict[str, Any]) -> str:
    stem = _UNSAFE.sub("_", model).strip("._") or "model"
    name, n = f"{stem}.json", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.json"
    return name
