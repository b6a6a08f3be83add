"""What every export target shares: the tests to export, their arguments and expected
outputs, the prompt's messages with placeholders, the checks and judges, sampling.

Exporting reads the context only: no model is called.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.evaluation.check_metric import check_name
from promptgen.evaluation.parse import CASE_FOLDABLE, cli_value, parse_check
from promptgen.prompting import numbered, prompt_text, stage_messages
from promptgen.prompting.invoke import call_settings, test_arguments, test_inputs
from promptgen.rendering.render import render_messages
from promptgen.results import CLASS_CHECK, MetricInfo, Rule, Test
from promptgen.secrets import scrub


@dataclass(frozen=True)
class ExportSettings:
    """How to export. `models` replaces the context's models under test."""

    models: list[str] | None = None
    in_place: bool = False  # github-models: write back into the author's .prompt.yml
    create_eval_runs: bool = False  # openai-evals/azure-evals: create them through the SDK


@dataclass
class ExportResult:
    """What one target wrote, and what it could not carry over (one line each)."""

    target: str
    paths: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


Writer = Callable[["Context", Path, ExportSettings], ExportResult]


# -- tests ------------------------------------------------------------------------------


def exported_tests(ctx: Context) -> list[Test]:
    """Every test the run would evaluate, without a cap: tests judged invalid are left
    out unless the run kept them (keepInvalid), in the collection's order."""
    keep_invalid = ctx.options.evaluation.keep_invalid
    return [t for t in ctx.tests if keep_invalid or t.valid is not False]


def models_under_test(ctx: Context, settings: ExportSettings) -> list[str]:
    """--models of the export, else the models the run was given (in the user's order),
    then any other model it has runs of."""
    if settings.models:
        return list(settings.models)
    return list(dict.fromkeys([*ctx.options.models.models, *ctx.models_run]))


def text_value(value: Any) -> str:
    """An input value as a template substitutes it: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def arguments(ctx: Context, test: Test) -> dict[str, str]:
    """The test's value for every input of the prompt (defaults, then the scenario's
    parameters, then the test's own), as text."""
    values = test_arguments(ctx.prompt, test)
    names = [*ctx.prompt.inputs, *(k for k in values if k not in ctx.prompt.inputs)]
    return {name: text_value(values[name]) for name in names if name in values}


def expected_output(test: Test) -> str | None:
    """A reference answer: the test's reference (an accepted groundtruth, or the author's
    output the groundtruth stage took), or else the author's sample output."""
    if test.groundtruth is not None and test.has_reference:
        return test.groundtruth
    if test.origin == "sample" and test.expected_output is not None:
        return text_value(test.expected_output)
    return None


def test_metadata(ctx: Context, test: Test) -> dict[str, Any]:
    """What a test is for: its id, the rule it targets (id and text), scenario, inverse."""
    rule = ctx.rule(test.rule_id)
    return {
        "test_id": test.id,
        "rule_id": test.rule_id,
        "rule": rule.text if rule else None,
        "scenario": test.scenario,
        "inverse": test.inverse,
        "origin": test.origin,
    }


def input_text(ctx: Context, test: Test) -> str:
    """The test's input as judges read it: one input as is, several as a JSON object (the
    run's fixed values included, as promptgen's own judges read them)."""
    values = test_inputs(ctx.prompt, test)
    if len(values) == 1:
        (value,) = values.values()
        return text_value(value)
    return json.dumps(values, ensure_ascii=False, indent=1)


# -- the prompt's messages --------------------------------------------------------------

_TAG = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_LOGIC = re.compile(r"\{%|\{#|\{\{\{|\{\{\s*[&#^/!>]")


def placeholder_messages(
    ctx: Context, placeholder: Callable[[str], str]
) -> list[dict[str, str]] | None:
    """The prompt's messages with each `{{name}}` written as `placeholder(name)`, or None
    when a template holds more than plain substitutions (conditions, loops, filters,
    sections): those prompts are exported rendered, test by test (`rendered_messages`)."""
    known = set(ctx.prompt.inputs)
    engine = ctx.prompt.template_engine
    if engine == "verdict" or ctx.prompt.variants or any(m.to_fill for m in ctx.prompt.messages):
        return None  # expressions, or several calls: exported rendered (or not at all)
    messages = []
    for message in ctx.prompt.messages:
        content = message.content
        if engine == "format":  # LVE's str.format: `{name}`, `{{` a literal brace
            converted = _format_placeholders(content, known, placeholder)
            if converted is None:
                return None
            messages.append({"role": message.role, "content": converted})
            continue
        if _LOGIC.search(content):
            return None
        rest = _TAG.sub("", content)
        if "{{" in rest or "}}" in rest:
            return None  # an expression, a filter, an attribute: not portable
        if any(m.group(1) not in known for m in _TAG.finditer(content)):
            return None
        content = _TAG.sub(lambda m: placeholder(m.group(1)), content)
        messages.append({"role": message.role, "content": content})
    return messages


def _format_placeholders(
    content: str, known: set[str], placeholder: Callable[[str], str]
) -> str | None:
    """A `str.format` template with each `{name}` written as `placeholder(name)`; None
    when a field is more than a plain known name."""
    parts = []
    for literal, name, spec, conversion in string.Formatter().parse(content):
        parts.append(literal)
        if name is None:
            continue
        if spec or conversion or name not in known:
            return None
        parts.append(placeholder(name))
    return "".join(parts)


def rendered_messages(ctx: Context, test: Test) -> list[dict[str, str]]:
    """The prompt rendered for one test, exactly as promptgen sends it (a multi-step
    prompt without the steps its model writes: one call cannot carry them)."""
    values = test_arguments(ctx.prompt, test)
    rendered = render_messages(ctx.prompt, values)
    return [
        {"role": str(m["role"]), "content": str(m["content"])}
        for m, message in zip(rendered, ctx.prompt.messages, strict=True)
        if not message.to_fill
    ]


# -- rules, judges, checks --------------------------------------------------------------


def output_rules(ctx: Context) -> list[Rule]:
    """The rules an output must follow (inverse rules describe inputs, not outputs);
    ungrounded rules are left out when the run dropped them."""
    drop = ctx.options.generation.drop_ungrounded
    return [r for r in ctx.rules if not (drop and r.grounded is False)]


def rules_text(ctx: Context) -> str:
    return numbered([r.text for r in output_rules(ctx)])


@dataclass(frozen=True)
class JudgeWords:
    """The two one-word verdicts an exported judge answers with. Neither contains the
    other, so a platform that matches a choice by substring cannot confuse them."""

    passed: str = "ok"
    failed: str = "err"


# Suffixes of two parts a file stem leaves out (`summarize.prompt.yml` -> `summarize`).
_DOUBLE_SUFFIXES = (".prompt.yml", ".prompt.yaml", ".verdict.md", ".verdict.txt")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(ctx: Context) -> str:
    """What an exported prompt file is named after: the stem of the author's file
    (`classify-sentiment.prompty` -> `classify-sentiment`), or, for a prompt with no
    file (`--prompt TEXT`), the slug of the run's output folder; never the display name.
    At most SLUG_LENGTH characters, like the run's folder: a suffix added to a long stem
    stays within the file system's limit on a name."""
    from promptgen.api import SLUG_LENGTH, slug

    source = ctx.prompt.source
    if not source:
        return slug(ctx.prompt.name)
    name = Path(source).name
    lower = name.lower()
    double = next((s for s in _DOUBLE_SUFFIXES if lower.endswith(s)), None)
    stem = name[: -len(double)] if double else Path(name).stem
    stem = _UNSAFE.sub("-", stem).strip("-.")
    return stem[:SLUG_LENGTH].strip("-.") or "prompt"


def compliance_judge(
    ctx: Context, *, input: str, output: str, words: JudgeWords = JudgeWords()
) -> list[dict[str, str]]:
    """The rules-compliance judge as messages (system, user): the prompt, its rules, the
    `input` and `output` placeholders of the target, answered with one of `words`."""
    messages = stage_messages(
        "export_judge",
        prompt=quoted_prompt(ctx),
        rules=rules_text(ctx),
        input=input,
        output=output,
        passed=words.passed,
        failed=words.failed,
    )
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def quoted_prompt(ctx: Context) -> str:
    """The prompt as a judge reads it inside an exported template: its own template tags
    neutralised (`{{review}}` -> `<review>`, `{%` -> `{ %`), so the platform's template
    engine fills only the placeholders the export put there."""
    text = _TAG.sub(lambda m: f"<{m.group(1)}>", prompt_text(ctx.prompt))
    for tag in ("{{", "}}", "{%", "%}", "{#", "#}"):
        text = text.replace(tag, f"{tag[0]} {tag[1]}")
    return text


def metric_sources(ctx: Context) -> list[MetricInfo]:
    """The metrics the run scored with (or, before any evaluation, would score with);
    the class check only where a test expects a class."""
    if ctx.metrics:
        return ctx.shown_metrics()
    infos = [MetricInfo(name="compliance", kind="compliance")]
    infos += [MetricInfo(name=check_name(s), kind="check") for s in check_specs(ctx)]
    return infos


def not_a_check(info: MetricInfo) -> str:
    """Why a deterministic metric has no check spec to export: it comes from the file's
    own format (an LVE checker, a Promptarchitect test), or it no longer parses."""
    if info.name == CLASS_CHECK:
        return (
            "promptgen's class check reads each test's expected class, which this "
            "target's graders do not; not exported"
        )
    if info.name.startswith(("lve:", "pa:")):
        # The one target that runs it: never the target writing this note (lve skips
        # only Promptarchitect tests, promptarchitect only LVE checkers).
        if info.name.startswith("lve:"):
            kind, target = "the LVE's checker", "lve"
        else:
            kind, target = "a Promptarchitect test", "promptarchitect"
        return f"{kind}; this target has no equivalent (export --to {target})"
    return "it no longer parses"


def native_metrics_skipped(ctx: Context) -> list[str]:
    """The deterministic metrics a file's own format brings (an LVE checker, the
    Promptarchitect tests), for targets that have no place for them."""
    return [
        f"check {info.name!r}: {not_a_check(info)}"
        for info in metric_sources(ctx)
        if info.kind == "check" and info.name.startswith(("lve:", "pa:"))
    ]


def check_specs(ctx: Context) -> list[Any]:
    """Every deterministic check of the run, as written: the frontmatter's, then --check."""
    return [*ctx.prompt.checks, *ctx.options.evaluation.checks]


@dataclass(frozen=True)
class CheckSpec:
    """A deterministic check, parsed: its base name (`contains`), whether `not-` negates
    it, whether it ignores case, and its arguments as written."""

    name: str
    label: str
    base: str
    negated: bool
    ignore_case: bool
    args: Any


def parsed_checks(ctx: Context) -> list[CheckSpec]:
    """The run's checks, parsed (a check that no longer parses is left out: the run
    itself reported it)."""
    specs = []
    for spec in check_specs(ctx):
        try:
            parse_check(spec)
        except BadInputError:
            continue
        specs.append(_parsed(spec))
    return specs


def _parsed(spec: Any) -> CheckSpec:
    label = check_name(spec)
    if isinstance(spec, str):
        key, _, raw = spec.partition("=")
        key = key.strip()
        args: Any = cli_value(key, raw)
    else:
        rest = {k: v for k, v in spec.items() if k != "name"} if len(spec) == 2 else spec
        ((key, args),) = rest.items()
        key = str(key)
    negated = key.startswith("not-")
    base = key.removeprefix("not-")
    ignore_case = base.startswith("i") and base[1:] in CASE_FOLDABLE
    return CheckSpec(
        name=key,
        label=label,
        base=base[1:] if ignore_case else base,
        negated=negated,
        ignore_case=ignore_case,
        args=args,
    )


def check_value(spec: CheckSpec, placeholder: Callable[[str], str]) -> Any:
    """The check's argument with `{{name}}` written for the target (`{{expected}}` is
    the test's reference answer)."""

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _TAG.sub(lambda m: placeholder(m.group(1)), node)
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        return node

    return walk(spec.args)


# -- the model's parameters -------------------------------------------------------------


def sampling(ctx: Context) -> dict[str, Any]:
    """The call parameters the models under test get (the prompt's, then --param), in
    OpenAI spelling: temperature, max_tokens, seed, top_p, response_format, ..."""
    settings = call_settings(ctx.prompt, ctx.options.evaluation)
    params: dict[str, Any] = {}
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        params["max_tokens"] = settings.max_tokens
    if settings.seed is not None:
        params["seed"] = settings.seed
    params.update({k: v for k, v in settings.params.items() if k not in ("store", "metadata")})
    fmt = ctx.prompt.model.parameters.get("response_format") or ctx.prompt.model.response_format
    if fmt is not None:
        params["response_format"] = fmt
    return params


def provider_and_name(model: str) -> tuple[str | None, str]:
    """`openai/gpt-4o-mini` -> ("openai", "gpt-4o-mini"); a bare name has no provider."""
    provider, sep, name = model.partition("/")
    return (provider, name) if sep else (None, model)


def write_text(path: Path, text: str) -> Path:
    """Every export file is written here, scrubbed of every known key value (an answer
    that echoed the key, an input read from a key's variable) as `context.json` is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub(text, shapes=False), encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    return write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    return write_text(path, "".join(f"{line}\n" for line in lines))
