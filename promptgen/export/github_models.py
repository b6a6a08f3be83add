"""GitHub Models: `<prompt name>.prompt.yml`, run by `gh models eval` (docs/exports.md).

A prompt that was not a .prompt.yml becomes a new file: its messages with `{{name}}`
inputs, one `testData` row per test, a rules-compliance `llm` evaluator and a `string`
evaluator per check gh models runs the same way. An author's .prompt.yml comes back as
written (a ruamel round trip keeps its comments, key order and quoting): promptgen only
appends the rows and evaluators it does not already hold, and never touches its
messages, model or parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    ExportSettings,
    JudgeWords,
    arguments,
    check_value,
    compliance_judge,
    expected_output,
    exported_tests,
    file_stem,
    metric_sources,
    models_under_test,
    native_metrics_skipped,
    output_rules,
    parsed_checks,
    placeholder_messages,
    provider_and_name,
    rendered_messages,
    sampling,
    text_value,
)
from promptgen.export.yaml_rt import (
    NEW_STYLE,
    block,
    commented,
    dump,
    load_document,
    read_bytes,
    rt_yaml,
    write_atomic,
)
from promptgen.results import Test
from promptgen.secrets import scrub

TARGET = "github-models"
DEFAULT_MODEL = "openai/gpt-4o-mini"
COMPLIANCE = "rules compliance"
# gh models picks the first choice found (case-insensitively) anywhere in the judge's
# reply: neither word is part of the other, and `fail` is tried first, so a reply that
# names both counts as a failure.
WORDS = JudgeWords(passed="pass", failed="fail")
CHOICES = ((WORDS.failed, 0.0), (WORDS.passed, 1.0))
# With template logic, each templated message is written as this row value.
MESSAGE_VALUE = "prompt_message_{}"

# Call parameters gh models sends (modelParameters in pkg/prompt/prompt.go).
_PARAMETERS = {"temperature": "temperature", "max_tokens": "maxTokens", "top_p": "topP"}
# Checks gh models' string evaluators run exactly alike: (base, ignores case) -> key.
# `equals` compares exactly; contains/startsWith/endsWith ignore case.
_STRING_KEYS = {
    ("equals", False): "equals",
    ("contains", True): "contains",
    ("starts-with", True): "startsWith",
    ("ends-with", True): "endsWith",
}


def write(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    """Write `out/<name>.prompt.yml` (or, with settings.in_place, the author's file)."""
    result = ExportResult(TARGET)
    result.skipped += native_metrics_skipped(ctx)
    target = out / f"{file_stem(ctx)}.prompt.yml"
    if ctx.prompt.format != "prompt.yml":
        if settings.in_place:
            result.notes.append("--in-place applies to a .prompt.yml prompt only: wrote a new file")
        doc = _new_document(ctx, settings, result)
        write_atomic(target, scrub(dump(doc, rt_yaml(NEW_STYLE)), shapes=False).encode("utf-8"))
        result.paths.append(target)
        return result
    return _round_trip(ctx, settings, target, result)


# -- a new document ---------------------------------------------------------------------


def _new_document(ctx: Context, settings: ExportSettings, result: ExportResult) -> CommentedMap:
    prompt = ctx.prompt
    doc = CommentedMap()
    origin = Path(prompt.source).name if prompt.source else "a promptgen run"
    doc.yaml_set_start_comment(f"Written by `promptgen export` from {origin}.")
    doc["name"] = prompt.name
    doc["description"] = block(prompt.description or "")
    doc["model"] = _model(ctx, settings, result)
    _set_sampling(ctx, doc, result)
    messages = placeholder_messages(ctx, _placeholder)
    templated: dict[int, str] = {}
    if messages is None:
        messages, templated = _fallback_messages(ctx)
        names = ", ".join(f"{{{{{n}}}}}" for n in templated.values())
        result.notes.append(
            "the prompt's templates hold logic gh models cannot run: messages "
            f"{names} are filled with each row's rendered message"
        )
    doc["messages"] = CommentedSeq(
        CommentedMap(role=m["role"], content=block(m["content"])) for m in messages
    )
    rows = CommentedSeq()
    for test in exported_tests(ctx):
        _append_row(rows, _row(ctx, test, templated), test, NEW_STYLE[2])
    doc["testData"] = rows
    _note_rows(rows, result)
    evaluators = _evaluators(ctx, result)
    if evaluators:
        doc["evaluators"] = CommentedSeq(evaluators)
    return doc


def _model(ctx: Context, settings: ExportSettings, result: ExportResult) -> str:
    models = models_under_test(ctx, settings)
    for other in models[1:]:
        result.skipped.append(
            f"model {other}: a .prompt.yml names one model ({models[0]}); "
            "copy the file and change `model:` to evaluate it"
        )
    if models:
        return models[0]
    return ctx.prompt.model.id or DEFAULT_MODEL


def _set_sampling(ctx: Context, doc: CommentedMap, result: ExportResult) -> None:
    params = sampling(ctx)
    fmt = params.pop("response_format", None)
    written = CommentedMap()
    for name, key in _PARAMETERS.items():
        value = params.pop(name, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            written[key] = int(value) if key == "maxTokens" else float(value)
    if written:
        doc["modelParameters"] = written
    for name in params:
        result.skipped.append(
            f"parameter {name}: gh models sends only maxTokens, temperature and topP"
        )
    kind, schema = _response_format(fmt, result)
    if kind is not None:
        doc["responseFormat"] = kind
    if schema is not None:
        doc["jsonSchema"] = LiteralScalarString(schema)


def _response_format(fmt: Any, result: ExportResult) -> tuple[str | None, str | None]:
    """promptgen's response_format -> (responseFormat, jsonSchema as a JSON string)."""
    kind = fmt.get("type") if isinstance(fmt, Mapping) else fmt
    if kind in (None, "text"):
        return None, None
    if kind == "json_schema":
        schema = fmt.get("json_schema") if isinstance(fmt, Mapping) else None
        if isinstance(schema, Mapping) and {"name", "schema"} <= set(schema):
            return "json_schema", json.dumps(schema, indent=2, ensure_ascii=False)
        result.skipped.append(
            "response format json_schema: gh models needs a schema with 'name' and "
            "'schema'; written as json_object"
        )
        return "json_object", None
    if kind == "json_object":
        return "json_object", None
    result.skipped.append(
        f"response format {kind!r}: gh models knows text, json_object and json_schema"
    )
    return None, None


def _fallback_messages(ctx: Context) -> tuple[list[dict[str, str]], dict[int, str]]:
    """Messages for a prompt whose templates hold logic: a message without template
    syntax stays as written, every other one becomes `{{prompt_message_N}}`, a value each
    row carries (the message rendered for that row's test). Returns the messages and
    {message index: row key}."""
    taken = set(ctx.prompt.inputs) | {"expected", "completion"}
    messages, templated = [], {}
    for i, message in enumerate(ctx.prompt.messages):
        if "{" not in message.content and "}" not in message.content:
            messages.append({"role": message.role, "content": message.content})
            continue
        key = MESSAGE_VALUE.format(i + 1)
        while key in taken:
            key = f"_{key}"
        templated[i] = key
        messages.append({"role": message.role, "content": _placeholder(key)})
    return messages, templated


# -- testData ---------------------------------------------------------------------------


def _row(ctx: Context, test: Test, templated: Mapping[int, str]) -> CommentedMap:
    """A test as a testData row: every input, the rendered messages a template with
    logic needs, and `expected` when the test has a reference answer."""
    row = CommentedMap()
    for name, value in arguments(ctx, test).items():
        row[name] = block(value)
    if templated:
        rendered = rendered_messages(ctx, test)
        for index, key in templated.items():
            row[key] = block(rendered[index]["content"])
    expected = expected_output(test)
    if expected is not None and "expected" not in row:
        row["expected"] = block(expected)
    return row


def _append_row(rows: CommentedSeq, row: CommentedMap, test: Test, indent: int) -> None:
    rows.append(row)
    about = f"rule {test.rule_id}" if test.rule_id else test.origin
    inverse = ", inverse" if test.inverse else ""
    rows.yaml_set_comment_before_after_key(
        len(rows) - 1, before=f"promptgen {test.id} ({about}{inverse})", indent=indent
    )


def _note_rows(rows: CommentedSeq, result: ExportResult) -> None:
    expected = sum(1 for r in rows if isinstance(r, Mapping) and "expected" in r)
    result.notes.append(f"testData: {len(rows)} rows, {expected} with `expected`")


def _row_key(names: list[str], values: Mapping[str, Any]) -> tuple[str | None, ...]:
    """A row's (or test's) input values as text: how rows are told apart."""
    return tuple(text_value(values[n]) if n in values else None for n in names)


def _list_of(doc: CommentedMap, key: str, file: str, shape: str) -> Any:
    """The author's `key` list (a new one when absent); anything else is bad input."""
    value = doc.get(key)
    if value is None:
        return CommentedSeq()
    if not isinstance(value, list):
        raise BadInputError(f"{key} is not a list", file=file, hint=f"make {key} {shape}")
    return value


def _add_rows(ctx: Context, doc: CommentedMap, indent: int, result: ExportResult, file: str) -> int:
    rows = _list_of(doc, "testData", file, "a list of {input: value}")
    names = list(ctx.prompt.inputs)
    seen = {_row_key(names, r) for r in rows if isinstance(r, Mapping)}
    kept, added = len(rows), 0
    for test in exported_tests(ctx):
        keys = {_row_key(names, arguments(ctx, test)), _row_key(names, test.inputs)}
        if keys & seen:
            continue
        _append_row(rows, _row(ctx, test, {}), test, indent)
        seen |= keys
        added += 1
    if added and doc.get("testData") is None:
        if "testData" in doc:
            doc["testData"] = rows
        else:
            at = list(doc).index("evaluators") if "evaluators" in doc else len(doc)
            doc.insert(at, "testData", rows)
    result.notes.append(f"testData: kept {kept} rows, added {added}")
    return added


# -- evaluators -------------------------------------------------------------------------


def _placeholder(name: str) -> str:
    return "{{" + name + "}}"


def _evaluators(ctx: Context, result: ExportResult) -> list[CommentedMap]:
    """The rules-compliance judge and the checks gh models runs alike; everything else
    goes to result.skipped with the reason."""
    evaluators = []
    judge = _compliance(ctx, result)
    if judge is not None:
        evaluators.append(judge)
    for info in metric_sources(ctx):
        if info.kind == "accuracy":
            result.skipped.append(
                f"metric {info.name}: a 0-100 score against the groundtruth; gh models' llm "
                "evaluators pick fixed choices (rows carry `expected` for `uses: "
                "github/similarity`)"
            )
        elif info.kind == "custom":
            where = f" ({Path(info.source).name})" if info.source else ""
            result.skipped.append(
                f"metric {info.name}{where}: custom judges read promptgen's values (intent, "
                "rules, groundtruth) that gh models does not give an llm evaluator"
            )
        elif info.kind == "groundtruth":
            result.skipped.append(
                f"metric {info.name}: it judges the groundtruth answers, not the model's output"
            )
    for spec in parsed_checks(ctx):
        evaluator = _string_evaluator(spec, result)
        if evaluator is not None:
            evaluators.append(evaluator)
    return evaluators


def _compliance(ctx: Context, result: ExportResult) -> CommentedMap | None:
    if not output_rules(ctx):
        result.skipped.append("metric compliance: the run has no rules to judge against")
        return None
    names = list(ctx.prompt.inputs)
    if len(names) == 1:
        shown = _placeholder(names[0])
    else:
        shown = "\n".join(f"{n}: {_placeholder(n)}" for n in names)
    messages = compliance_judge(ctx, input=shown, output="{{completion}}", words=WORDS)
    system = [m["content"] for m in messages if m["role"] == "system"]
    user = [m["content"] for m in messages if m["role"] != "system"]
    llm = CommentedMap()
    llm["modelId"] = _judge_model(ctx, result)
    if system:
        llm["systemPrompt"] = block("\n\n".join(system))
    llm["prompt"] = block("\n\n".join(user))
    llm["choices"] = CommentedSeq(CommentedMap(choice=c, score=s) for c, s in CHOICES)
    return CommentedMap(name=COMPLIANCE, llm=llm)


def _judge_model(ctx: Context, result: ExportResult) -> str:
    judges = ctx.options.models.eval_models
    if judges:
        provider, _ = provider_and_name(judges[0])
        if provider:
            return judges[0]
        result.notes.append(
            f"judge model {judges[0]} has no provider: the llm evaluator uses {DEFAULT_MODEL}"
        )
    return DEFAULT_MODEL


def _string_evaluator(spec: CheckSpec, result: ExportResult) -> CommentedMap | None:
    key = None if spec.negated else _STRING_KEYS.get((spec.base, spec.ignore_case))
    value = check_value(spec, _placeholder)
    reason = None
    if spec.negated:
        reason = "gh models' string evaluators cannot negate a check"
    elif key is None and (spec.base, not spec.ignore_case) in _STRING_KEYS:
        reason = (
            "gh models' equals is case-sensitive"
            if spec.base == "equals"
            else f"gh models' {_STRING_KEYS[(spec.base, True)]} ignores case; this check does not"
        )
    elif key is None:
        reason = "gh models' string evaluators only test equals, contains, startsWith, endsWith"
    elif not isinstance(value, str) or not value:
        reason = "gh models' string evaluators need one non-empty text"
    if reason is not None or key is None:
        result.skipped.append(f"check '{spec.label}': {reason}")
        return None
    return CommentedMap(name=spec.label, string=CommentedMap({key: value}))


def _add_evaluators(ctx: Context, doc: CommentedMap, result: ExportResult, file: str) -> int:
    evaluators = _list_of(doc, "evaluators", file, "a list of {name, ...}")
    names = {str(e.get("name")) for e in evaluators if isinstance(e, Mapping)}
    specs = [dict(e["string"]) for e in evaluators if isinstance(e, Mapping) and _has_string(e)]
    added = 0
    for evaluator in _evaluators(ctx, result):
        string = evaluator.get("string")
        if evaluator["name"] in names or (string is not None and dict(string) in specs):
            result.notes.append(f"evaluator '{evaluator['name']}': the file already has it")
            continue
        evaluators.append(evaluator)
        names.add(evaluator["name"])
        added += 1
    if added and doc.get("evaluators") is None:
        doc["evaluators"] = evaluators
    return added


def _has_string(evaluator: Mapping[str, Any]) -> bool:
    return isinstance(evaluator.get("string"), Mapping)


# -- round trip of an author's .prompt.yml ----------------------------------------------


def _round_trip(
    ctx: Context, settings: ExportSettings, target: Path, result: ExportResult
) -> ExportResult:
    source = Path(ctx.prompt.source).expanduser() if ctx.prompt.source else None
    exists = source is not None and source.is_file()
    in_place = settings.in_place and exists
    if settings.in_place and not in_place:
        result.notes.append(f"--in-place: {source} does not exist; wrote {target.name} instead")
    base = source if in_place or (exists and not target.is_file()) else None
    if not in_place and target.is_file():
        base = target  # a re-export adds to what the last one wrote
    dest = source if in_place and source is not None else target
    if base is None:
        doc, style, original = _rebuilt(ctx, result), NEW_STYLE, None
    else:
        original = read_bytes(base)
        doc, style = load_document(base, original)
    _check_model(ctx, settings, doc, result)
    changed = _add_rows(ctx, doc, style[2], result, str(base or dest))
    changed += _add_evaluators(ctx, doc, result, str(base or dest))
    if original is not None and not changed:
        result.notes.append(f"{base}: nothing to add")
        if in_place:
            result.paths.append(dest)
            return result
        data = original
    else:
        text = scrub(dump(doc, rt_yaml(style)), shapes=False)
        if original is not None and b"\r\n" in original:
            text = text.replace("\n", "\r\n")
        data = text.encode("utf-8")
    write_atomic(dest, data)
    result.paths.append(dest)
    return result


def _check_model(
    ctx: Context, settings: ExportSettings, doc: CommentedMap, result: ExportResult
) -> None:
    model = doc.get("model")
    for other in models_under_test(ctx, settings):
        if other != model:
            result.skipped.append(
                f"model {other}: the file keeps its model ({model}); "
                "copy it and change `model:` to evaluate another one"
            )


def _rebuilt(ctx: Context, result: ExportResult) -> CommentedMap:
    """The author's file is gone: rebuild it from the frontmatter the run saved."""
    doc = commented(ctx.prompt.frontmatter)
    if not isinstance(doc, CommentedMap):
        doc = CommentedMap()
    doc.yaml_set_start_comment(
        f"Rebuilt by `promptgen export` from the saved run: {ctx.prompt.source} no longer "
        "exists,\nso the comments and formatting of the original file are lost."
    )
    result.notes.append(
        f"{ctx.prompt.source} not found: rebuilt from the saved run (its comments are lost)"
    )
    return doc
