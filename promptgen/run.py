"""One `promptgen FILE` run: prepare (or resume) a context, run the stages, write outputs."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen.context import Context, load_context, save_context
from promptgen.errors import ContextError
from promptgen.formats import load_prompt
from promptgen.llm import LLM, GatewaySettings
from promptgen.options import Options, resolve_options
from promptgen.outputs import write_outputs
from promptgen.pipeline import Runner, failed_stages
from promptgen.plan import critical_path, planned_calls
from promptgen.progress import make_reporter, usage_text
from promptgen.report.files import write_reports
from promptgen.report.overview import overall_compliance
from promptgen.report.review import write_review_files

DEFAULT_OUT = Path("promptgen-out")


@dataclass
class Prepared:
    ctx: Context
    out: Path
    options: Options
    notes: list[str] = field(default_factory=list)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower() or "prompt"


def _saved_cli(ctx: Context) -> dict[str, Any]:
    """Options earlier runs got on their command line (they persist on resume)."""
    return {
        k: v
        for k, v in ctx.options.items()
        if ctx.option_sources.get(k, "").startswith("command line")
    }


def prepare(
    file: Path,
    out: Path | None,
    cli: dict[str, Any],
    fresh: bool,
    tests_file: Path | None = None,
) -> Prepared:
    notes: list[str] = []
    if file.suffix == ".json":
        if fresh:
            raise ContextError(
                "--fresh starts over from a prompt file, not from a saved context",
                file=file,
                hint="pass the prompt file instead",
            )
        ctx = load_context(file)
        folder = out or file.parent
        notes.append(f"resuming the run saved in {file}")
    else:
        prompt = load_prompt(file)
        folder = out or DEFAULT_OUT / slug(prompt.name)
        existing = folder / "context.json"
        ctx = Context.new(prompt)
        if existing.is_file() and not fresh:
            saved = load_context(existing)
            if saved.prompt_hash != ctx.prompt_hash:
                raise ContextError(
                    "this folder holds a run of a different prompt (or the prompt changed)",
                    file=existing,
                    hint="pass --fresh to start over there, or --out to use another folder",
                )
            saved.prompt = ctx.prompt  # same content; frontmatter run options may be new
            ctx = saved
            notes.append(f"resuming the run in {folder}")
    explicit = {k: v for k, v in cli.items() if v is not None}
    if tests_file is not None:
        explicit["test_ids"] = add_tests(ctx, tests_file, notes)
    options, sources = resolve_options(explicit, ctx.prompt.run_options, _saved_cli(ctx))
    changed = [
        f"{k}: {ctx.options[k]!r} -> {v!r}"
        for k, v in options.model_dump().items()
        if ctx.options and k in explicit and ctx.options.get(k) != v
    ]
    if changed:
        notes.append(
            "new options override the saved ones: "
            + "; ".join(changed)
            + " (finished stages are kept; --fresh redoes everything)"
        )
    ctx.options, ctx.option_sources = options.model_dump(), sources
    return Prepared(ctx, folder, options, notes)


def add_tests(ctx: Context, path: Path, notes: list[str]) -> list[str]:
    """Join the tests of a tests file (and the rules they target) into the context."""
    from promptgen.report.review import load_tests_file

    tests, rules = load_tests_file(path)
    have_rules = {r.id for r in ctx.all_rules}
    for rule in rules:
        if rule.id not in have_rules:
            (ctx.inverse_rules if rule.inverse else ctx.rules).append(rule)
    have = {t.id for t in ctx.tests}
    ctx.tests += [t for t in tests if t.id not in have]
    notes.append(f"evaluating the {len(tests)} test(s) of {path}; generating none")
    return [t.id for t in tests]


def use_configured_models(prepared: Prepared, settings: GatewaySettings) -> None:
    """Models under test from PROMPTGEN_MODELS or the config file, when no flag or saved
    run names any."""
    if prepared.options.models or not settings.models_under_test:
        return
    prepared.options.models = list(settings.models_under_test)
    prepared.ctx.options["models"] = prepared.options.models
    prepared.ctx.option_sources["models"] = settings.sources.get("models under test", "config")


def check_evaluation(prepared: Prepared) -> None:
    """Fail on a bad metric file or check before any model is called."""
    from promptgen.checks.metrics import load_metrics

    load_metrics(prepared.ctx.prompt, prepared.options)


def runtime_options(options: Options, llm: LLM) -> Options:
    """Aliases of the evaluation models resolved, so verdicts name real models."""
    resolve = llm.settings.resolve
    return options.model_copy(
        update={
            "models": [resolve(m) for m in options.models],
            "eval_models": list(dict.fromkeys(resolve(m) for m in options.eval_models or ["eval"])),
            "groundtruth_eval_models": [resolve(m) for m in options.groundtruth_eval_models],
        }
    )


def dry_run_table(prepared: Prepared) -> str:
    plan = planned_calls(prepared.ctx, prepared.options)
    lines = ["stage            calls"]
    lines += [f"{name:<16} {count:>5}" for name, count in plan.items()]
    lines.append(f"{'total':<16} {sum(plan.values()):>5}")
    lines.append(
        f"(at least; a repair turn or a retry adds calls; critical path "
        f"{critical_path(prepared.options)} rounds)"
    )
    return "\n".join(lines)


def options_table(prepared: Prepared) -> str:
    rows = [f"{'option':<32} {'value':<14} from"]
    for name, value in prepared.options.model_dump().items():
        shown = value
        if value is None:
            shown = "all" if name.startswith("max_") else "-"
        rows.append(f"{name:<32} {shown!s:<14} {prepared.ctx.option_sources.get(name, '')}")
    return "\n".join(rows)


def execute(prepared: Prepared, settings: GatewaySettings, quiet: bool) -> tuple[Context, float]:
    """Run the stages; the context is saved after every stage and batch."""
    folder = prepared.out
    reporter = make_reporter(quiet)
    started = time.perf_counter()

    async def go() -> Context:
        llm = LLM(settings)
        try:
            options = runtime_options(prepared.options, llm)
            if options.evals:  # a missing key or unknown model fails now, not mid-run
                for model in options.models + options.eval_models:
                    llm.backend_for(model)
            runner = Runner(
                prepared.ctx,
                llm,
                options,
                reporter,
                lambda ctx: save_context(ctx, folder / "context.json"),
            )
            reporter.start(planned_calls(prepared.ctx, options))
            return await runner.run()
        finally:
            reporter.close()
            await llm.aclose()

    ctx = asyncio.run(go())
    write_outputs(ctx, folder)
    write_reports(ctx, folder)
    if prepared.options.rate_tests or prepared.options.filter_tests is not None:
        write_review_files(ctx, folder, prepared.options.filter_tests)
    return ctx, time.perf_counter() - started


def summary(ctx: Context, folder: Path, wall: float) -> str:
    tests = ctx.tests
    by_origin = Counter(t.origin for t in tests)
    by_scenario = Counter(t.scenario or "(none)" for t in tests)
    u = ctx.usage.total
    lines = [
        f"prompt       {ctx.prompt.name}",
        f"intent       {ctx.intent or '(missing)'}",
        f"rules        {len(ctx.rules)} ({sum(r.grounded is False for r in ctx.rules)} ungrounded)",
        f"inverse      {len(ctx.inverse_rules)}",
        f"tests        {len(tests)}: "
        + ", ".join(f"{n} {o}" for o, n in sorted(by_origin.items())),
        "by scenario  " + ", ".join(f"{s}: {n}" for s, n in sorted(by_scenario.items())),
        f"invalid      {sum(t.valid is False for t in tests)}",
        f"model use    {usage_text(u)}",
        f"wall time    {wall:.1f} s",
        f"output       {folder}",
    ]
    if ctx.test_runs:
        lines.insert(-2, evaluation_line(ctx))
    failed = failed_stages(ctx, Options(**ctx.options))
    if failed:
        lines.append(f"unfinished   {', '.join(failed)} (re-run the same command to finish them)")
    return "\n".join(lines)


def evaluation_line(ctx: Context) -> str:
    runs = ctx.test_runs
    failed = sum(r.error is not None for r in runs)
    rate = overall_compliance(ctx)
    shown = "-" if rate is None else f"{rate:.1f}%"
    models = ", ".join(ctx.models_run)
    return f"evaluation   {len(runs)} runs on {models}: compliance {shown}, {failed} failed"
