"""The library API: `promptgen.run(source, config) -> Context` runs the pipeline.

The command line, the benchmarks and users' scripts all come through here:

    import promptgen
    from promptgen import Options

    ctx = promptgen.run("my.prompty", Options(effort="min"))
    print(len(ctx.tests), ctx.intent)

`prepare` resolves the options once (flag > earlier run's flags > frontmatter > effort >
default; config.py says where the models under test come from) into a frozen `RunConfig`,
loads or resumes the context and loads the metrics; `run` then runs the stages and saves
`context.json` after every unit of work.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen import history
from promptgen.carry import continue_run
from promptgen.carry.folder import Earlier, continued, new_or_saved
from promptgen.config import (
    SAVED,
    RunConfig,
    build_config,
    explicit,
    resolve_options,
    saved_flags,
)
from promptgen.context import Context, load_context
from promptgen.errors import BadInputError, ContextError
from promptgen.formats import load_prompt
from promptgen.formats.declared import problems
from promptgen.formats.detect import CONTEXT, json_kind
from promptgen.formats.refs import allow_env
from promptgen.formats.tests_file import load_tests_file
from promptgen.llm import LLM, GatewaySettings, load_settings
from promptgen.llm.config import configured_models
from promptgen.model import PromptUnderTest
from promptgen.options import BY_NAME, Options, Run, flat
from promptgen.pipeline import Runner, models_used
from promptgen.progress import PlainReporter, Reporter
from promptgen.rendering.precheck import check_renders
from promptgen.roles import from_server, kept_sources
from promptgen.saving import Saver
from promptgen.secrets import shown
from promptgen.selection import sample_tests

DEFAULT_OUT = Path("promptgen-out")
CONTEXT_FILE = "context.json"

Source = str | Path | PromptUnderTest | Context


@dataclass
class Prepared:
    """A context ready to run: the resolved configuration, where it is saved, and notes
    for the user (resuming, options that changed)."""

    ctx: Context
    cfg: RunConfig
    out: Path
    notes: list[str] = field(default_factory=list)
    # The run of the version before (an edit, --regenerate, --fresh): kept as
    # OUT/history/<version>/ when this one is run and saved.
    previous: Context | None = None


# Options that say which server and models a run calls: a resumed run keeps the saved
# ones (and says so) rather than falling back to another server or the defaults.
GATEWAY_OPTIONS = (
    "api_base", "provider_profile", "models", "rules_model", "eval_model", "baseline_model"
)  # fmt: skip
SLUG_LENGTH = 80


def slug(name: str) -> str:
    """A prompt's name as one folder name that stays inside the output folder: runs of
    characters other than letters, digits, `.`, `_`, `-` become `-`; dots and dashes are
    trimmed from both ends (never `.` or `..`); at most SLUG_LENGTH characters."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.").lower()
    return text[:SLUG_LENGTH].strip("-.") or "prompt"


def gateway_settings(
    options: Options, env: Mapping[str, str] = os.environ, cwd: Path | None = None
) -> GatewaySettings:
    """The gateway's settings: these options over the environment (`env`) and the config
    file (found from `cwd`)."""
    models = options.models
    given = {
        "rules": models.rules_model,
        "eval": models.eval_model,
        "baseline": models.baseline_model,
        "groundtruth": models.groundtruth_model,
        "api_base": models.api_base,
        "provider_profile": models.provider_profile,
        "concurrency": models.concurrency,
        "cache": options.run.cache,
        "batch": options.run.batch,
        "strict_output": models.strict_output,
    }
    return load_settings(given, env=env, cwd=cwd)


def prepare(
    source: Source,
    config: Options | None = None,
    *,
    settings: GatewaySettings | None = None,
    previous: Context | None = None,
) -> Prepared:
    """Load (or resume) the context of `source` and resolve its run configuration.

    `source` is a prompt file, a saved `context.json`, a PromptUnderTest or a Context.
    `previous`, the run of an earlier version of the prompt, is continued from (as a
    run saved in the output folder is otherwise: docs/carry-over.md).
    Raises BadInputError (exit code 2) on bad input, before any model is called."""
    options = config or Options()
    ctx, out, notes, earlier = _context(source, options, previous)
    check_renders(ctx.prompt)  # a template that can never render: exit 2, before a call
    check_outputs(out, options.run)
    given = explicit(options)
    if options.run.tests_file is not None:
        given["test_ids"] = add_tests(ctx, options.run.tests_file, notes)
    elif options.run.samples_only:
        given["test_ids"] = add_samples(ctx, notes)
    saved = saved_flags(ctx.options, ctx.option_sources) if ctx.option_sources else {}
    resolved, sources = resolve_options(
        given,
        ctx.prompt.run_options,
        saved,
        prompt_file=ctx.prompt.source,
        under_test=configured_models if settings is None else _under_test(settings),
    )
    resolved.run = options.run  # this invocation's own settings
    kept_sources(sources, ctx.option_sources)
    settings = settings or gateway_settings(resolved)
    notes += _changed(ctx, resolved, given, source) + _kept(resolved, sources)
    notes += _unsent(ctx.prompt, resolved.evaluation.model_params)
    ctx.prompt.fixed_inputs = fixed_inputs(ctx.prompt, resolved, sources)
    ctx.options, ctx.option_sources = resolved, sources
    cfg = build_config(ctx.prompt, resolved, sources, settings)
    cfg, said = from_server(ctx, cfg, sources)  # --api-base, and a role with no model
    if earlier is not None and earlier.carry:
        notes.append(continue_run(ctx, earlier.ctx, cfg, out, list(options.run.regenerate)))
    return Prepared(ctx, cfg, out, notes + said, earlier.ctx if earlier else None)


def _unsent(prompt: PromptUnderTest, given: dict[str, Any]) -> list[str]:
    """A warning for each `--param` the model under test is not sent (the prompt's own are
    said when it is read)."""
    found = problems({**prompt.model.parameters, **given})
    return [f"warning: --param {said}" for name, said in found if name in given]


def _under_test(settings: GatewaySettings) -> Callable[[], tuple[list[str], str]]:
    """The models under test `settings` name, as the last layer of `resolve_options`."""
    return lambda: (
        settings.models_under_test,
        settings.sources.get("models under test", "config"),
    )


def fixed_inputs(
    prompt: PromptUnderTest, options: Options, sources: Mapping[str, str]
) -> dict[str, str]:
    """The input values the run fixes (`--var`, frontmatter `vars`), each checked to name
    an input of the prompt."""
    values = options.generation.vars
    unknown = [name for name in values if name not in prompt.inputs]
    if unknown:
        from_file = sources.get("vars") == "frontmatter"
        where = "frontmatter key vars" if from_file else "--var"
        known = ", ".join(prompt.inputs) or "(none)"
        raise BadInputError(
            f"{where} {unknown[0]}: the prompt has no input {unknown[0]!r}; its inputs: {known}",
            file=prompt.source if from_file else None,
            hint="give one of these names",
        )
    return dict(values)


def check_outputs(out: Path, run: Run) -> None:
    """Where the run writes must be writable as a folder (and --junit as a file), so a
    typo fails now and not after the model calls."""
    label = f"--out {out}" if run.out is not None else f"the output folder {out}"
    _check_path(out, label, folder=True)
    if run.junit is not None:
        _check_path(run.junit, f"--junit {run.junit}", folder=False)


def check_folder(path: Path, label: str) -> None:
    """A folder promptgen writes into (`--out`): one that exists, or can be made, and
    where a file can be created; else one line, exit 2, before any call."""
    _check_path(path, label, folder=True)


def write_file(path: Path, text: str, label: str) -> None:
    """Write a file the user named (`--junit FILE`): one that cannot be written (a full
    device, a read-only place) is one line, exit 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise BadInputError(
            f"{label}: cannot write it: {err.strerror or err}",
            hint="give a path where a file can be written",
        ) from None


def _check_path(path: Path, label: str, *, folder: bool) -> None:
    if "\x00" in str(path):
        raise BadInputError(f"{label}: a path cannot hold a NUL character")
    if not folder and path.is_dir():
        raise BadInputError(f"{label} is a folder", hint="give a file path")
    for node in (path, *path.parents) if folder else path.parents:
        if node.is_dir():
            _writable(node, label)
            return
        if node.exists() or node.is_symlink():
            where = "is not a folder" if node == path else f"is inside {node}, which is a file"
            raise BadInputError(f"{label} {where}", hint="give a folder path")


def _writable(folder: Path, label: str) -> None:
    """Whether a file can be created in `folder` (a probe, removed at once): /proc, a
    read-only mount or a folder without permission fail here, not after the calls."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise BadInputError(
            f"{label}: no file can be created in {folder} ({err.strerror or err})",
            hint="give a folder you can write to",
        ) from None


def _kept(resolved: Options, sources: Mapping[str, str]) -> list[str]:
    """The server and models a resumed run keeps from the run it continues."""
    kept = []
    for name in GATEWAY_OPTIONS:
        value = resolved[name]
        if sources.get(name) == SAVED and value:
            shown = ";".join(value) if isinstance(value, list) else value
            kept.append(f"{BY_NAME[name].flag} {shown}")
    if not kept:
        return []
    return [f"resuming with {' and '.join(kept)} from the saved run"]


def _context(
    source: Source, options: Options, previous: Context | None = None
) -> tuple[Context, Path, list[str], Earlier | None]:
    out, fresh, regenerate = options.run.out, options.run.fresh, bool(options.run.regenerate)
    if isinstance(source, Context):
        folder = out or DEFAULT_OUT / slug(source.prompt.name)
        if regenerate:
            return continued(Context.new(source.prompt), Earlier(source), folder)
        return source, folder, [], None
    if isinstance(source, PromptUnderTest):
        return new_or_saved(source, out or DEFAULT_OUT / slug(source.name), options, previous)
    path = Path(source)
    fmt = options.run.format
    if path.suffix.lower() == ".json" and fmt is None and json_kind(path) == CONTEXT:
        if fresh:
            raise ContextError(
                "--fresh starts over from a prompt file, not from a saved context",
                file=path,
                hint="pass the prompt file instead",
            )
        saved = load_context(path)
        if regenerate:
            return continued(Context.new(saved.prompt), Earlier(saved), out or path.parent)
        return saved, out or path.parent, [f"resuming the run saved in {path}"], None
    with allow_env(options.run.allow_env):
        prompt = load_prompt(path, fmt)
    return new_or_saved(prompt, out or DEFAULT_OUT / slug(prompt.name), options, previous)


def _redo_hint(source: Source, ctx: Context, options: Options) -> str:
    """How to redo a run's finished stages: --fresh on its prompt file, which a saved
    context (refusing --fresh) names rather than offers."""
    saved = isinstance(source, Context) or (
        isinstance(source, (str, Path))
        and Path(source).suffix.lower() == ".json"
        and options.run.format is None
        and json_kind(Path(source)) == CONTEXT
    )
    if not saved:
        return "--fresh redoes everything"
    prompt = f"the prompt file {ctx.prompt.source}" if ctx.prompt.source else "the prompt file"
    return f"to redo everything, run {prompt} with --fresh"


def _changed(
    ctx: Context, resolved: Options, given: dict[str, object], source: Source
) -> list[str]:
    if not ctx.option_sources:
        return []
    before, after = flat(ctx.options, True), flat(resolved, True)
    changed = [
        f"{k}: {shown(before[k])} -> {shown(after[k])}"
        for k in given
        if before.get(k, after.get(k)) != after.get(k)
    ]
    if not changed:
        return []
    return [
        "new options override the saved ones: "
        + "; ".join(changed)
        + f" (finished stages are kept; {_redo_hint(source, ctx, resolved)})"
    ]


def add_tests(ctx: Context, path: Path, notes: list[str]) -> list[str]:
    """Join the tests of a tests file, and the rules they target, into the context."""
    tests, rules = load_tests_file(path)
    have_rules = {r.id for r in ctx.all_rules}
    for rule in rules:
        if rule.id not in have_rules:
            (ctx.inverse_rules if rule.inverse else ctx.rules).append(rule)
    have = {t.id for t in ctx.tests}
    ctx.tests += [t for t in tests if t.id not in have]
    notes.append(f"evaluating the {len(tests)} test(s) of {path}; generating none")
    return [t.id for t in tests]


def add_samples(ctx: Context, notes: list[str]) -> list[str]:
    """Join the prompt's own test samples into the context as its tests (--samples-only)."""
    tests = sample_tests(ctx.prompt)
    if not tests:
        raise BadInputError(
            "--samples-only: the prompt has no test samples",
            file=ctx.prompt.source,
            hint="add testSamples (or testData, test_path, instances, a sample on each "
            "input), or drop the flag",
        )
    have = {t.id for t in ctx.tests}
    ctx.tests += [t for t in tests if t.id not in have]
    notes.append(f"evaluating the prompt's {len(tests)} test sample(s); generating none")
    return [t.id for t in tests]


async def run_async(
    source: Source | Prepared,
    config: Options | None = None,
    *,
    reporter: Reporter | None = None,
    llm: LLM | None = None,
    save: bool = True,
    previous: Context | None = None,
) -> Context:
    """Run every stage with work left; returns the context (also saved after every unit
    of work to OUT/context.json unless save=False). `llm` replaces the gateway built
    from the configuration (its owner closes it). `previous`, the run of an earlier
    version of the prompt, is continued from: what did not change is kept, what changed
    is derived again, every run is made again (docs/carry-over.md)."""
    prepared = (
        source if isinstance(source, Prepared) else prepare(source, config, previous=previous)
    )
    ctx, cfg = prepared.ctx, prepared.cfg
    gateway = llm or LLM(cfg.settings)
    saver = Saver(prepared.out / CONTEXT_FILE) if save else None
    if saver is not None and prepared.previous is not None:
        # The version before is history, and the new one is on disk before any call: a
        # run killed from here on resumes into this version (same prompt hash).
        history.save(prepared.out, prepared.previous)
        saver.save(ctx)
    try:
        runner = Runner(
            ctx, cfg, gateway, reporter or PlainReporter(quiet=True, warnings=False), saver
        )
        # Every model the run will call: a missing key, engine or unknown model fails
        # now, in one line, not after the calls of the stages before it were spent.
        for model in models_used(ctx, cfg, runner.planned):
            gateway.backend_for(gateway.settings.resolve(model))
        return await runner.run()
    finally:
        if saver is not None:
            saver.close()
        if reporter is not None:
            reporter.close()
        if llm is None:
            await gateway.aclose()


def run(
    source: Source | Prepared,
    config: Options | None = None,
    *,
    reporter: Reporter | None = None,
    llm: LLM | None = None,
    save: bool = True,
    previous: Context | None = None,
) -> Context:
    """The blocking twin of `run_async` (it starts its own event loop)."""
    return asyncio.run(
        run_async(source, config, reporter=reporter, llm=llm, save=save, previous=previous)
    )
