"""Promptarchitect: `<name>.prompt`, its system_role file and one sample file per test in
its test_path folder, run by `promptarchitect` (docs/promptarchitect.md#export).

The frontmatter names one provider and model, the call parameters Promptarchitect's code
reads (flat keys), the test_path and the tests: a Promptarchitect prompt's own tests, or
else a `question` test per output rule and the checks that have a Promptarchitect
equal. The body is the prompt's user message as a Mustache template. No model is called.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from promptgen.context import Context
from promptgen.evaluation.promptarchitect import pa_tests
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    ExportSettings,
    exported_tests,
    file_stem,
    metric_sources,
    models_under_test,
    native_metrics_skipped,
    output_rules,
    parsed_checks,
    placeholder_messages,
    provider_and_name,
    sampling,
    text_value,
    write_text,
)
from promptgen.formats.pa_samples import MAX_SAMPLE_FILES
from promptgen.formats.promptarchitect import DEFAULT_SYSTEM, METADATA, PARAMETERS
from promptgen.prompting.invoke import test_arguments
from promptgen.results import Test

TARGET = "promptarchitect"
DEFAULT_MODEL = ("openai", "gpt-4o-mini")
TEST_PATH = "tests"
SYSTEM_FILE = "system_role.md"
INPUT = "input"
COUNTS = {"word-count": "words", "line-count": "lines", "sentence-count": "sentences",
          "paragraph-count": "paragraphs", "character-count": "characters"}  # fmt: skip
_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_LANG = re.compile(r"^[a-z]{2}$")


def write(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    """Write `out/<name>.prompt`, `out/system_role.md` and `out/tests/*.md`."""
    result = ExportResult(TARGET)
    result.skipped += [n for n in native_metrics_skipped(ctx) if "'lve:" in n]
    name = file_stem(ctx)
    system, body = prompt_messages(ctx, result)
    front: dict[str, Any] = {**_model(ctx, settings, result), **_metadata(ctx)}
    front |= _parameters(ctx, result)
    if system is not None:
        result.paths.append(write_text(out / SYSTEM_FILE, system + "\n"))
        front["system_role"] = SYSTEM_FILE
    front["test_path"] = TEST_PATH
    tests = export_tests(ctx, result)
    if tests:
        front["tests"] = tests
    text = "---\n" + _yaml(front) + "---\n\n" + body + "\n"
    result.paths.insert(0, write_text(out / f"{name}.prompt", text))
    result.paths += _samples(ctx, out / TEST_PATH, result)
    return result


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


# -- model, parameters, metadata ---------------------------------------------------------


def _model(ctx: Context, settings: ExportSettings, result: ExportResult) -> dict[str, str]:
    """One provider and model: an author's own (a Promptarchitect file, unless --models
    says otherwise), else the first model under test, else the prompt's."""
    prompt = ctx.prompt.model
    models = models_under_test(ctx, settings)
    if prompt.id and ((ctx.prompt.format == TARGET and not settings.models) or not models):
        chosen = (prompt.provider, prompt.id)
    elif models:
        provider, model = provider_and_name(models[0])
        chosen = (provider or prompt.provider, model)
        result.skipped += [
            f"model {m}: a Promptarchitect file names one model ({models[0]} is written)"
            for m in models[1:]
        ]
    else:
        chosen = DEFAULT_MODEL
        result.notes.append(f"no model given: {'/'.join(DEFAULT_MODEL)} is written")
    return {"provider": chosen[0] or DEFAULT_MODEL[0], "model": chosen[1] or DEFAULT_MODEL[1]}


def _metadata(ctx: Context) -> dict[str, str]:
    facts = ctx.prompt.extra.get(TARGET) if ctx.prompt.format == TARGET else None
    metadata = dict(facts.get("metadata") or {}) if isinstance(facts, dict) else {}
    if ctx.prompt.description and "description" not in metadata:
        metadata["description"] = ctx.prompt.description
    return {k: str(metadata[k]) for k in METADATA if metadata.get(k) is not None}


def _parameters(ctx: Context, result: ExportResult) -> dict[str, Any]:
    """The call parameters Promptarchitect's code reads, as its flat keys (its docs'
    `parameters:` block is not read by its code)."""
    written = {}
    for key, value in sampling(ctx).items():
        if key in PARAMETERS:
            written[key] = value
        else:
            result.skipped.append(f"parameter {key}: Promptarchitect has no key for it")
    return written


# -- messages ------------------------------------------------------------------------------


def prompt_messages(ctx: Context, result: ExportResult) -> tuple[str | None, str]:
    """The system message (None: promptgen's default, or none) and the body: the user
    message, as Mustache. Promptarchitect sends exactly one of each."""
    messages = _mustache(ctx, result)
    systems = [m["content"] for m in messages if m["role"] in ("system", "developer")]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(systems) > 1:
        result.notes.append(f"{len(systems)} system messages are joined into {SYSTEM_FILE}")
    body_index = users[-1] if users else None
    for i, message in enumerate(messages):
        if message["role"] not in ("system", "developer") and i != body_index:
            result.skipped.append(
                f"message {i + 1} ({message['role']}): Promptarchitect sends one system "
                "and one user message"
            )
    if not users:
        result.notes.append("the prompt has no user message: the body is only {{input}}")
    system = "\n\n".join(systems).strip() or None
    body = messages[body_index]["content"] if body_index is not None else "{{" + INPUT + "}}"
    return (None if system == DEFAULT_SYSTEM else system), body


def _mustache(ctx: Context, result: ExportResult) -> list[dict[str, str]]:
    """The messages with Mustache placeholders: Mustache templates as written, plain
    `{{ name }}` and `{name}` substitutions converted; anything else as written, said."""
    prompt = ctx.prompt
    as_written = [{"role": m.role, "content": m.content} for m in prompt.messages]
    if prompt.template_engine == "mustache" and not prompt.variants:
        return as_written
    converted = placeholder_messages(ctx, lambda name: "{{" + name + "}}")
    if converted is not None:
        return converted
    why = {
        "jinja2": "Jinja2 logic (conditions, loops, filters) has no Mustache equivalent",
        "format": "its {placeholders} are more than plain names",
        "verdict": "Verdict {expressions} have no Mustache equivalent",
    }.get(prompt.template_engine, "it cannot be written as Mustache")
    if prompt.variants or any(m.to_fill for m in prompt.messages):
        why = "a multi-step or multi-run prompt is more than one call"
    result.skipped.append(f"the prompt's template: {why}; written as is, to convert by hand")
    return as_written


# -- tests ---------------------------------------------------------------------------------


def export_tests(ctx: Context, result: ExportResult) -> dict[str, dict[str, Any]]:
    """A Promptarchitect prompt's own tests; else a question per output rule and the
    checks that map (counts, contains, is-json, language)."""
    own = pa_tests(ctx.prompt)
    if own:
        for test_id, test in own.items():
            if test["type"] == "format" and test["format"] == "text":
                result.notes.append(
                    f"test {test_id}: format text is in Promptarchitect's docs, not its code"
                )
        if ctx.rules:
            result.notes.append(
                f"the run's {len(ctx.rules)} rules are not made into tests: the file's own "
                "tests are written"
            )
        result.skipped += [
            f"check {spec.label!r}: the file's own tests are written, not the run's checks"
            for spec in parsed_checks(ctx)
        ]
        return {test_id: file_spec(spec) for test_id, spec in own.items()}
    tests: dict[str, dict[str, Any]] = {}
    for i, rule in enumerate(output_rules(ctx), start=1):
        tests[f"rule_{i}"] = {
            "type": "question",
            "prompt": f"Does the output follow this rule? {rule.text}",
        }
    for i, spec in enumerate(parsed_checks(ctx), start=1):
        made, why = check_test(spec)
        if made is None:
            result.skipped.append(f"check {spec.label!r}: {why}")
            continue
        tests[f"{spec.base.replace('-', '_')}_{i}"] = made
        if why:
            result.notes.append(f"check {spec.label!r}: {why}")
    for info in metric_sources(ctx):
        if info.kind in ("accuracy", "custom", "groundtruth"):
            result.skipped.append(
                f"metric {info.name}: Promptarchitect's question and score tests see only "
                "the output and one fixed question, not promptgen's judge values"
            )
    return tests


def file_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A normalised test (formats/pa_tests.py) as Promptarchitect's code reads it."""
    kind = spec["type"]
    if kind == "property":
        out: dict[str, Any] = {"type": kind, "unit": spec["unit"]}
        if spec["equals"] is not None:
            out["equals"] = spec["equals"]
        else:
            out["limit"] = {k: spec[k] for k in ("min", "max") if spec[k] is not None}
        return out
    if kind == "metric":
        limit = {k: v for k, v in spec["limit"].items() if v is not None}
        return {
            "type": kind,
            "metric": spec["metric"],
            "input": dict(spec["input"]),
            "limit": limit,
        }
    return dict(spec)


def check_test(spec: CheckSpec) -> tuple[dict[str, Any] | None, str | None]:
    """A check as the Promptarchitect test that decides the same (with a note), or None
    and why there is none."""
    args = spec.args
    if spec.negated:
        return None, "Promptarchitect tests cannot be negated"
    if "{{" in json.dumps(args, default=str):
        return None, "its value comes from each test; Promptarchitect tests are fixed"
    if spec.base in COUNTS:
        bounds = args if isinstance(args, dict) else {"equals": args}
        unit = COUNTS[spec.base]
        note = "Promptarchitect splits paragraphs on \\n\\n only" if unit == "paragraphs" else None
        if bounds.get("equals") is not None:
            return {"type": "property", "unit": unit, "equals": bounds["equals"]}, note
        limit = {k: bounds[k] for k in ("min", "max") if bounds.get(k) is not None}
        return {"type": "property", "unit": unit, "limit": limit}, note
    if spec.base == "contains":
        if spec.ignore_case:
            return None, "Promptarchitect's keyword test is case-sensitive"
        return {"type": "keyword", "keyword": str(args)}, None
    if spec.base == "is-json":
        note = "exported as format json; the JSON Schema is not checked" if args else None
        return {"type": "format", "format": "json"}, note
    if spec.base == "language":
        code = str(args.get("code") if isinstance(args, dict) else args).lower().split("-")[0]
        if not _LANG.match(code):
            return None, f"{code!r} is not a two-letter language code"
        return {"type": "language", "lang_code": code}, None
    return None, "Promptarchitect has no test that decides the same"


# -- samples -------------------------------------------------------------------------------


def _samples(ctx: Context, folder: Path, result: ExportResult) -> list[Path]:
    """One sample file per exported test: its inputs other than `input` in the
    frontmatter, `input` as the body. Files from an earlier export are replaced."""
    folder.mkdir(parents=True, exist_ok=True)  # test_path must exist, samples or not
    for old in folder.glob("*.md"):
        old.unlink()
    tests = exported_tests(ctx)
    if len(tests) > MAX_SAMPLE_FILES:
        result.skipped.append(
            f"{len(tests) - MAX_SAMPLE_FILES} tests: over {MAX_SAMPLE_FILES:,} sample files"
        )
        tests = tests[:MAX_SAMPLE_FILES]
    width = max(3, len(str(len(tests))))
    paths = []
    for i, test in enumerate(tests, start=1):
        name = f"{i:0{width}d}-{_NAME.sub('-', test.id)}.md"
        paths.append(write_text(folder / name, sample_text(ctx, test)))
    result.notes.append(f"{len(tests)} sample file(s) in {TEST_PATH}/")
    return paths


def sample_text(ctx: Context, test: Test) -> str:
    """A sample file: frontmatter (always, so a body starting with `---` stays body), body."""
    values = test_arguments(ctx.prompt, test)
    # An empty default renders as an absent property does in Mustache: left out.
    properties = {k: v for k, v in values.items() if k != INPUT and (k in test.inputs or v != "")}
    head = _yaml(properties) if properties else ""
    return f"---\n{head}---\n\n{text_value(values.get(INPUT, ''))}\n"
