"""LVE (lve-org/lve): a `test.json` and an instances file per model under test.

`OUT/<model dir>/test.json` holds the prompt with `{name}` placeholders (Python
`str.format`, braces doubled), the inputs as `prompt_parameters`, the call parameters as
`default_model_args`, and a checker: the LVE's own when the run was of an LVE test;
otherwise a LambdaChecker composed of the run's deterministic checks that map exactly
(contains, equals, starts/ends-with, regex, word/line/character counts), or LVE's
`<please fill in>` when none does. `OUT/<model dir>/instances/promptgen.jsonl` holds one
line per test: its arguments, and, where the model ran it, the response and whether the
checker passed it. A test that was not run has `response` and `passed` null: a skeleton
`promptgen lve run` fills in.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from promptgen import __version__
from promptgen.context import Context
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    ExportSettings,
    exported_tests,
    models_under_test,
    native_metrics_skipped,
    parsed_checks,
    placeholder_messages,
    sampling,
    write_json,
    write_jsonl,
)
from promptgen.formats.lve_files import PLACEHOLDER, model_dir
from promptgen.prompting.invoke import test_arguments
from promptgen.results import Test, TestRun
from promptgen.words import counted

TARGET = "lve"
INSTANCES = "promptgen.jsonl"
_SENTINEL = "\x00"


def write(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    result = ExportResult(TARGET)
    messages = lve_messages(ctx)
    if messages is None:
        result.skipped.append(
            "the prompt: its template does more than substitute values (LVE prompts are "
            "str.format templates); nothing written"
        )
        return result
    checker, metrics, skipped = checker_args(ctx)
    result.skipped += skipped
    result.skipped += [n for n in native_metrics_skipped(ctx) if "'pa:" in n]
    source = ctx.prompt.extra.get("lve") or {}
    default = source.get("model") or ctx.prompt.model.id or "promptgen/model"
    models = models_under_test(ctx, settings) or [default]
    tests = exported_tests(ctx)
    for model in models:
        folder = out / model_dir(model)
        body = test_json(ctx, model, messages, checker)
        result.paths.append(write_json(folder / "test.json", body))
        rows = [instance(ctx, test, model, metrics) for test in tests]
        result.paths.append(write_jsonl(folder / "instances" / INSTANCES, rows))
    if ctx.prompt.variants:
        result.notes.append("a multi-run prompt: exported as multi_run_prompt")
    result.notes.append(
        f"{counted(len(tests), 'test')} per model, {counted(len(models), 'model folder')}"
    )
    return result


def lve_messages(ctx: Context) -> list[dict[str, Any]] | None:
    """The prompt's messages as LVE writes them (None: not expressible with str.format)."""
    if ctx.prompt.variants:
        runs = []
        for variant in ctx.prompt.variants:
            one = ctx.prompt.model_copy(update={"messages": variant.messages, "variants": []})
            sub = ctx.model_copy(update={"prompt": one})
            messages = lve_messages(sub)
            if messages is None:
                return None
            runs.append(
                {"name": variant.name, "prompt": messages, "repetitions": variant.repetitions}
            )
        return runs
    steps = {i: m.variable for i, m in enumerate(ctx.prompt.messages) if m.to_fill}
    plain = ctx.prompt.model_copy(
        update={"messages": [m for m in ctx.prompt.messages if not m.to_fill]}
    )
    converted = placeholder_messages(
        ctx.model_copy(update={"prompt": plain}), lambda n: f"{_SENTINEL}{n}{_SENTINEL}"
    )
    if converted is None:
        return None
    lve: list[dict[str, Any]] = []
    for message in converted:
        # LVE formats every message but the assistant's: only there braces stay single
        literal = message["role"] == "assistant"
        text = message["content"]
        text = text if literal else text.replace("{", "{{").replace("}", "}}")
        parts = text.split(_SENTINEL)  # odd parts are the placeholders' names
        content = "".join(f"{{{p}}}" if i % 2 else p for i, p in enumerate(parts))
        lve.append({"role": message["role"], "content": content})
    for position, name in sorted(steps.items()):
        lve.insert(position, {"role": "assistant", "content": None, "variable": name})
    return lve


def test_json(
    ctx: Context, model: str, messages: list[dict[str, Any]], checker: dict[str, Any]
) -> dict[str, Any]:
    prompt = ctx.prompt
    source = prompt.extra.get("lve") or {}
    key = "multi_run_prompt" if prompt.variants else "prompt"
    parameters = list(prompt.inputs)
    body: dict[str, Any] = {
        "description": prompt.description or ctx.intent or f"Tests of {prompt.name}",
        "model": model,
        "checker_args": checker,
        key: messages,
        "prompt_parameters": parameters or None,
        "default_model_args": call_args(ctx),
        "author": source.get("author") or "promptgen",
        "tags": [
            {"name": n, "value": v}
            for n, _, v in (t.partition(":") for t in prompt.tags)
            if n in ("severity", "jailbreak", "paper") and v
        ],
    }
    return body


def call_args(ctx: Context) -> dict[str, Any]:
    """The call parameters LVE knows (model arguments of an instance)."""
    return {k: v for k, v in sampling(ctx).items() if k in ("temperature", "top_p", "max_tokens")}


def checker_args(ctx: Context) -> tuple[dict[str, Any], list[str], list[str]]:
    """The checker, the names of the metrics its verdict is read from, what was left out."""
    source = ctx.prompt.extra.get("lve")
    metrics = [m.name for m in ctx.metrics if m.name.startswith("lve:")]
    if source and source.get("checker_args"):
        return dict(source["checker_args"]), metrics, []
    clauses, used, skipped = [], [], []
    for spec in parsed_checks(ctx):
        clause = _clause(spec)
        if clause is None:
            skipped.append(f"check {spec.label}: no exact LVE lambda for it")
        else:
            clauses.append(clause)
            used.append(spec.label)
    if not clauses:
        skipped.append("checker: no check maps to an LVE checker; left as <please fill in>")
        return {"checker_name": PLACEHOLDER}, [], skipped
    body = " and ".join(clauses)
    func = f"lambda r, **params: {body}".replace("{", "{{").replace("}", "}}")
    return {"checker_name": "LambdaChecker", "func": func}, used, skipped


def _clause(spec: CheckSpec) -> str | None:
    """One check as a Python condition on the response `r` (None: it does not map)."""
    args = spec.args
    if isinstance(args, str) and "{{" in args:
        return None  # filled per test: an LVE checker is one expression for every test
    fold = ".lower()" if spec.ignore_case else ""
    value = args.get("value") if isinstance(args, dict) else args
    text = repr(str(value).lower() if spec.ignore_case else str(value))
    clause: str | None
    if spec.base == "contains" and not isinstance(value, dict | list):
        clause = f"({text} in r{fold})"
    elif spec.base == "equals" and isinstance(value, str | int | float):
        clause = f"(r.strip(){fold} == {text}.strip())"
    elif spec.base in ("starts-with", "ends-with") and isinstance(value, str):
        method = "startswith" if spec.base == "starts-with" else "endswith"
        clause = f"r.strip(){fold}.{method}({text})"
    elif spec.base == "regex":
        clause = _regex(args)
    elif spec.base in ("word-count", "character-count", "line-count"):
        clause = _count(spec.base, args)
    else:
        clause = None
    if clause is None:
        return None
    return f"(not {clause})" if spec.negated else clause


def _regex(args: Any) -> str | None:
    pattern, flags = args, ""
    if isinstance(args, dict):
        pattern, flags = args.get("pattern"), args.get("flags", "")
    names = {"i": "re.I", "m": "re.M", "s": "re.S", "a": "re.A"}
    if not isinstance(pattern, str) or any(f not in names for f in flags):
        return None
    flag = " | ".join(names[f] for f in flags)
    return f"(re.search({pattern!r}, r{', ' + flag if flag else ''}) is not None)"


_COUNTS = {
    "word-count": "len(r.split())",
    "character-count": "len(r)",
    "line-count": "len([x for x in r.split('\\n') if x.strip()])",
}


def _count(name: str, args: Any) -> str | None:
    bounds = args if isinstance(args, dict) else {"equals": args}
    measure = _COUNTS[name]
    parts = []
    for key, op in (("min", ">="), ("max", "<="), ("equals", "==")):
        value = bounds.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"{measure} {op} {value}")
    return f"({' and '.join(parts)})" if parts else None


def instance(ctx: Context, test: Test, model: str, metrics: list[str]) -> dict[str, Any]:
    """One line of LVE's instances format for `test` on `model` (a skeleton when the
    model did not run it)."""
    params = test_arguments(ctx.prompt, test)
    call = call_args(ctx)
    run = next(
        (r for r in ctx.test_runs if r.test_id == test.id and r.model == model and r.ok), None
    )
    line: dict[str, Any] = {
        "args": {**call, **params},
        "response": None if run is None else _response(ctx, run),
        "passed": None if run is None else _passed(run, metrics),
        "author": "promptgen",
        "run_info": {"promptgen": __version__, "timestamp": time.ctime(), "test_id": test.id},
    }
    if run is None:
        line["run_info"]["status"] = "not run"
    return line


def _response(ctx: Context, run: TestRun) -> Any:
    steps = run.steps or {}
    if ctx.prompt.variants:
        return list(steps.values())
    return steps if len(steps) > 1 else run.output


def _passed(run: TestRun, metrics: list[str]) -> bool | None:
    """Safe when every metric the checker stands for passed (None: not all known)."""
    outcomes = [run.metrics[m].outcome for m in metrics if m in run.metrics]
    if not metrics or len(outcomes) != len(metrics) or "unknown" in outcomes:
        return None
    return all(o == "ok" for o in outcomes)
