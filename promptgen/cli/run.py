"""The main command, `promptgen FILE [options]`: flags -> Options -> `promptgen.run`.

Its flags are not written here: each comes from an option's declaration in
`promptgen/options.py` (name, type, help, panel), so a new option gets its flag there.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from pydantic import ValidationError

from promptgen import api
from promptgen.bounds import terminal_text
from promptgen.config import COMMAND_LINE, option_problem
from promptgen.context import Context
from promptgen.discover import Plan, find_prompts, is_batch
from promptgen.errors import BadInputError
from promptgen.formats import load_inline
from promptgen.llm.config import split_models
from promptgen.model import PromptUnderTest
from promptgen.options import (
    OPTION_FIELDS,
    OptionField,
    Options,
    bounds,
    effort_table,
    nest,
    shown,
)
from promptgen.progress import make_reporter, print_warnings, results_output

EPILOG = "Effort presets (a flag or the frontmatter overrides any of them):\n\n" + effort_table()
HELP = (
    "Generate tests for FILE and evaluate them (the default command: `promptgen FILE`).\n\n"
    "Several files, folders (searched recursively) or globs run every prompt found, "
    "each into OUT/<prompt>/, with OUT/summary.md and OUT/summary.csv and one exit code "
    "(the highest of the prompts' codes); --prompt TEXT tests a prompt given inline.\n\n"
    "Extracts the intent, input specification, output rules and inverse rules, checks "
    "groundedness, generates, expands and validates tests; with --models, runs them on "
    "the models under test and scores the outputs. Writes context.json, readable files "
    "and reports. Re-running the same command resumes an interrupted run; FILE may be a "
    "saved context.json, e.g. to evaluate its tests on other models.\n\n"
    "Exit codes: 0 ok, 1 quality gate failed (--fail-under, --fail-on-regression), 2 bad "
    "input, 3 provider or "
    "runtime failure (unfinished stages, or failed calls above --fail-on-error), "
    "130 interrupted (Ctrl-C; re-running resumes)."
)
FILE_HELP = (
    "A prompt (.prompty, .prompt.yml, .md, .txt, ...) or a saved context.json; or several "
    "files, folders and globs (quoted globs work): a batch."
)


def _flag_type(field: OptionField) -> Any:
    """The type Typer parses the flag as (None default: "not given"). Paths are read as
    text, so an empty one is an error rather than the working folder."""
    if field.opt.parse is not None:
        return list[str]
    annotation = field.annotation
    for kind in (bool, int, float):
        if annotation is kind or kind in getattr(annotation, "__args__", ()):
            return kind
    return str  # paths, and Literal choices (effort), are checked below and by the model


def _is_path(field: OptionField) -> bool:
    annotation = field.annotation
    return annotation is Path or Path in getattr(annotation, "__args__", ())


def _help(field: OptionField) -> str:
    text = field.opt.help
    if field.path[:2] == ("generation", "instructions"):
        text = f"Extra instructions for the {field.path[-1].replace('_', ' ')} stage."
    if field.opt.presets is not None:
        text += " (effort: " + "/".join(shown(v) for v in field.opt.presets) + ")"
    accepted = bounds(field)
    if accepted and "-" in accepted:
        text += f" Accepted: {accepted}."
    return text


def _switch(field: OptionField) -> bool:
    """A plain switch (`--dry-run`, `--no-cache`), never `--x/--no-x`."""
    return field.path[0] == "run" and _flag_type(field) is bool


def flag_parameter(field: OptionField) -> inspect.Parameter:
    """The command-line parameter of an option, as its declaration says."""
    kind = _flag_type(field)
    assert field.flag is not None
    flag = "--no-cache" if field.name == "cache" else field.flag
    if kind is bool and not _switch(field):
        flag = f"{flag}/--no-{flag.removeprefix('--')}"
    names = [flag, *([field.opt.short] if field.opt.short else [])]
    metavar = {
        "paths": "FILE",
        "list": "MODELS",
        "repeat": "TEXT",
        "params": "KEY=VALUE",
        "vars": "NAME=VALUE",
        "names": "TARGETS",
    }
    info = typer.Option(
        *names,
        help=_help(field),
        rich_help_panel=field.opt.panel,
        metavar="PATH"
        if _is_path(field)
        else "PART"
        if field.name == "regenerate"
        else metavar.get(field.opt.parse or ""),
    )
    annotation: Any = Annotated[kind if _switch(field) else Optional[kind], info]  # noqa: UP045
    default = False if _switch(field) else None
    return inspect.Parameter(
        field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


FLAGGED = [f for f in OPTION_FIELDS if f.flag is not None]


def options_from_flags(values: dict[str, Any]) -> Options:
    """The flags given (None or an unset switch: not given) as an Options; a bad value
    raises BadInputError naming its flag."""
    given: dict[str, Any] = {}
    for field in FLAGGED:
        value = values.get(field.name)
        if value is None or (_switch(field) and value is False):
            continue
        given[field.name] = _flag_value(field, value)
    try:
        return Options.model_validate(nest(given))
    except ValidationError as err:
        raise BadInputError(option_problem(err).message(COMMAND_LINE)) from err


def _flag_value(field: OptionField, value: Any) -> Any:
    """One flag's value as the options model takes it."""
    flag = field.flag
    if field.name == "cache":
        return False  # --no-cache
    if field.opt.parse == "list":
        models = split_models(value)
        if not models:
            raise BadInputError(f"{flag} is empty; give model names or drop the flag")
        return models
    if field.opt.parse == "params":
        return parse_params(value)
    if field.opt.parse == "vars":
        return parse_vars(value)
    if field.name == "allow_env":  # variable names; set before any prompt is read
        from promptgen.formats.refs import env_names, set_allowed_env

        names = env_names(value)
        set_allowed_env(names)
        return names
    if field.name == "regenerate":  # rules,tests or the flag repeated; checked by Options
        return [part.strip() for item in value for part in str(item).split(",") if part.strip()]
    if field.opt.parse == "names":  # export targets, checked before any call
        try:
            from promptgen.export import parse_targets

            return parse_targets(value)
        except BadInputError as err:
            err.message = f"{flag}: {err.message}"
            raise
    if field.opt.parse is not None:  # repeated TEXT or FILE
        if any(not str(item).strip() for item in value):
            raise BadInputError(f"{flag} is empty; give a value or drop the flag")
        if field.opt.parse == "paths":
            for item in value:
                _check_path(flag, item)
        return list(value)
    if _is_path(field):
        _check_path(flag, value)
        return Path(value)
    return value


def _check_path(flag: str | None, value: str) -> None:
    if not value.strip():
        raise BadInputError(f"{flag} is empty; give a path or drop the flag")
    if "\x00" in value:
        raise BadInputError(f"{flag} {value!r}: a path cannot hold a NUL character")


def parse_params(items: list[str]) -> dict[str, Any]:
    """`["temperature=0", "stop=[END]"]` -> {"temperature": 0, "stop": ["END"]} (YAML values)."""
    import yaml

    from promptgen.yamlpos import load_yaml

    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInputError(
                f"--param {item!r} needs KEY=VALUE", hint="e.g. --param temperature=0"
            )
        try:
            params[key.strip()] = load_yaml(value).data if value.strip() else ""
        except yaml.YAMLError:
            params[key.strip()] = value
    return params


def parse_vars(items: list[str]) -> dict[str, str]:
    """`["lang=de", "note=a=b"]` -> {"lang": "de", "note": "a=b"}: the text after the
    first `=`, as given (no YAML reading, like `gh models eval --var`)."""
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BadInputError(
                f"--var {item!r} needs NAME=VALUE", hint="e.g. --var language=German"
            )
        if name in values and values[name] != value:
            raise BadInputError(
                f"--var {name} is given twice ({values[name]!r} and {value!r})",
                hint="give each input once",
            )
        values[name] = value
    return values


def run(files: list[str] | None = None, **flags: Any) -> None:
    options = options_from_flags(flags)
    args = list(files or [])
    text = options.run.prompt
    if text is not None:
        if args:
            raise BadInputError(
                f"--prompt TEXT and a prompt file ({args[0]}) both given",
                hint="give prompt files or --prompt TEXT, not both",
            )
        if options.run.format is not None:
            raise BadInputError("--format reads a file; --prompt TEXT is read as plain text")
        execute(load_inline(text), options)
    elif not args:
        raise BadInputError(
            "which prompt?", hint="give a prompt file, a folder or a glob, or --prompt TEXT"
        )
    elif not is_batch(args):
        execute(Path(args[0]), options)
    else:
        code = execute_batch(args, options)
        if code:
            raise typer.Exit(code)


def execute_batch(args: list[str], options: Options) -> int:
    """Many prompts (promptgen/batch.py): list them with --dry-run, else run them all and
    print the summary. Returns the batch's exit code."""
    for given, flag in ((options.run.format, "--format"), (options.run.tests_file, "--tests")):
        if given is not None:
            raise BadInputError(
                f"{flag} applies to one prompt, not to a batch", hint="run that prompt alone"
            )
    from promptgen.batch import batch_out, print_batch_summary, run_batch

    plan = find_prompts(args, batch_out(options), options.run.include, options.run.exclude)
    for gone in plan.gone:  # listed, then gone when read: skipped, not an error
        print(
            terminal_text(f"promptgen: note: skipped {gone.path}: {gone.reason}"), file=sys.stderr
        )
    if not plan.prompts:
        raise BadInputError(
            f"no prompt found in {' '.join(args)} ({len(plan.skipped)} file(s) skipped)",
            hint="see why with --dry-run",
        )
    if options.run.dry_run or options.run.print_options:
        return _plan_only(plan, options)
    quiet = options.run.quiet

    def say(line: str) -> None:
        if not quiet:
            print(terminal_text(f"promptgen: {line}"), file=sys.stderr, flush=True)

    if plan.skipped:
        say(
            f"{len(plan.skipped)} file(s) skipped, not prompts to run (--dry-run lists them "
            "with the reason; --include GLOB runs one)"
        )
    batch = run_batch(plan, options, say)
    for failed in (r for r in batch.runs if r.error is not None):
        print(terminal_text(f"promptgen: error: {failed.name}: {failed.error}"), file=sys.stderr)
    print_warnings([f"{r.name}: {r.nothing}" for r in batch.runs if r.nothing and not r.error])
    with results_output():
        print_batch_summary(batch)
        typer.echo(f"summary: {batch.out / 'summary.md'}, {batch.out / 'summary.csv'}")
    return batch.code


def _plan_only(plan: Plan, options: Options) -> int:
    from promptgen.batch import dry_run_listing, plan_batch
    from promptgen.report.console import resolved_options_table

    planned = plan_batch(plan, options)
    with results_output():
        if options.run.dry_run:
            typer.echo(terminal_text(dry_run_listing(plan, planned)))
        for entry in planned if options.run.print_options else []:
            if entry.prepared is not None:
                ctx = entry.prepared.ctx
                typer.echo(terminal_text(f"\n{entry.found.path}:"))
                typer.echo(resolved_options_table(ctx.options, ctx.option_sources))
    return max((e.error.exit_code for e in planned if e.error is not None), default=0)


def execute(
    file: Path | PromptUnderTest,
    options: Options,
    *,
    check: Callable[[api.Prepared], None] | None = None,
) -> Context | None:
    """Everything a run command does once its flags are Options: prepare (and resume),
    print the options or the plan when asked, run, write the reports and exports, apply
    the gate. `check` may refuse the prepared run before any call. Returns the context
    (None when only the options or the plan were printed). Both `promptgen FILE` and
    `promptgen pa run FILE` come through here."""
    prepared = api.prepare(file, options)
    if check is not None:
        check(prepared)
    print_warnings(prepared.ctx.prompt.warnings)
    for note in prepared.notes:
        print(terminal_text(f"promptgen: {note}"), file=sys.stderr)
    if options.run.print_options or options.run.dry_run:
        _print_plan(prepared, options)
        return None
    started = time.perf_counter()
    ctx = api.run(prepared, reporter=make_reporter(options.run.quiet))
    _finish(ctx, prepared, options, time.perf_counter() - started)
    return ctx


def _print_plan(prepared: api.Prepared, options: Options) -> None:
    from promptgen.report.console import dry_run_table, resolved_options_table

    with results_output():
        if options.run.print_options:
            typer.echo(resolved_options_table(prepared.ctx.options, prepared.ctx.option_sources))
        if options.run.dry_run:
            typer.echo(dry_run_table(prepared.ctx, prepared.cfg))


def _finish(ctx: Context, prepared: api.Prepared, options: Options, seconds: float) -> None:
    """Reports, exports, the summary and the gate. Their modules (pandas among them) load
    here, after the run: the first call leaves sooner (docs/performance.md)."""
    from promptgen.cli.export import report_exports
    from promptgen.export import run_exports
    from promptgen.gate import RegressionError, gate, not_evaluated, regression_note
    from promptgen.report.changes import load_changes
    from promptgen.report.console import summary
    from promptgen.report.files import write_all
    from promptgen.report.junit import junit_xml
    from promptgen.report.overview import overview, print_overview
    from promptgen.report.safety import dropped_warning, kept_note, prompt_warning

    said = [prompt_warning(ctx), dropped_warning(ctx), not_evaluated(ctx, prepared.cfg)]
    print_warnings(list(filter(None, said)))
    note = kept_note(ctx)
    if note is not None:
        print(terminal_text(f"promptgen: note: {note}"), file=sys.stderr)
    changes = load_changes(ctx, prepared.out)  # what an edit of the prompt did, if any
    write_all(ctx, prepared.out, changes)
    report_exports(run_exports(ctx, options.run, prepared.out))
    with results_output():  # a reader gone (`| head`) must not skip the JUnit file or gate
        typer.echo(terminal_text(summary(ctx, prepared.cfg, prepared.out, seconds, changes)))
        if ctx.test_runs:  # a result, like the summary: printed even with --quiet
            print_overview(overview(ctx))
    if options.run.junit is not None:
        junit = options.run.junit
        api.write_file(junit, junit_xml(ctx), f"--junit {junit}")
    note = regression_note(ctx, changes, options.run.fail_on_regression)
    if note is not None:
        print(terminal_text(f"promptgen: note: {note}"), file=sys.stderr)
    try:
        gate(ctx, prepared.cfg, changes)
    except RegressionError as err:  # one line per figure that fell, then the error
        for line in err.lines:
            print(terminal_text(f"promptgen: regression: {line}"), file=sys.stderr)
        raise


_FILE = inspect.Parameter(
    "files",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    default=None,
    annotation=Annotated[
        Optional[list[str]],  # noqa: UP045 -- typer reads the annotation
        typer.Argument(help=FILE_HELP, show_default=False, metavar="FILE..."),
    ],
)
run.__signature__ = inspect.Signature([_FILE, *map(flag_parameter, FLAGGED)])  # type: ignore[attr-defined]
run.__annotations__ = {p.name: p.annotation for p in run.__signature__.parameters.values()}  # type: ignore[attr-defined]
run.__doc__ = HELP
