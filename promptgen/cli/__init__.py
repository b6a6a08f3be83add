"""The command line: parse options, call the library, print results. No pipeline logic.

Exit codes: 0 ok, 1 quality gate failed, 2 bad input (one line, before any call),
3 runtime or provider failure, 130 interrupted. PROMPTGEN_DEBUG=1 adds the traceback
and keeps the code.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, ClassVar

import typer
from dotenv import load_dotenv

from promptgen import __version__
from promptgen.cli.group import DefaultCommandGroup, LazyCommand
from promptgen.cli.helpfmt import install as install_readable_help
from promptgen.errors import BadInputError, PromptgenError, sole_error
from promptgen.kinds import FORMATS

INTERRUPTED = 130
install_readable_help()


class PromptgenGroup(DefaultCommandGroup):
    default_command = "run"  # `promptgen FILE` is `promptgen run FILE`
    lazy: ClassVar[dict[str, LazyCommand]] = {
        "run": LazyCommand("promptgen.cli.run", "run", {"help": "HELP", "epilog": "EPILOG"}),
        "models": LazyCommand("promptgen.cli.models", "models"),
        "ask": LazyCommand("promptgen.cli.models", "ask"),
        "export": LazyCommand("promptgen.cli.export", "export"),
        "diff": LazyCommand("promptgen.cli.diff", "diff"),
        "history": LazyCommand("promptgen.cli.history", "history"),
        "mutate": LazyCommand("promptgen.cli.mutate", "mutate", {"epilog": "EPILOG"}),
        "view": LazyCommand("promptgen.cli.view", "view"),
        "configure": LazyCommand("promptgen.cli.configure", "configure", {"epilog": "EPILOG"}),
        "import": LazyCommand("promptgen.cli.import_", "import_prompt", {"epilog": "EPILOG"}),
        "pa": LazyCommand("promptgen.cli.pa", "app"),
        "lve": LazyCommand("promptgen.cli.lve", "app"),
    }
    order = ("inspect", "schema", *lazy)


app = typer.Typer(
    cls=PromptgenGroup,
    name="promptgen",
    help="Generate and run tests for LLM prompts (.prompty, .prompt.yml, .md, .txt).",
    epilog="Docs in docs/: runs, options, stages, formats, rendering, llm, context. "
    "PROMPTGEN_DEBUG=1 shows tracebacks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"promptgen {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Generate and run tests for LLM prompts."""


@app.command()
def inspect(
    file: Annotated[
        Path,
        typer.Argument(
            help="A prompt file: .prompty, .prompt.yml, .md, .txt, LVE test.json or .prompt, "
            "Promptarchitect .prompt, Verdict template."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    format: Annotated[
        str | None,
        typer.Option("--format", help=f"Read FILE as this format: {', '.join(FORMATS)}."),
    ] = None,
) -> None:
    """Show how promptgen reads a prompt file: its detected format, messages, inputs,
    scenarios, samples, rendering."""
    from promptgen.cli.inspect_view import inspect_data, print_inspect
    from promptgen.evaluation import check_metrics
    from promptgen.formats import load_prompt
    from promptgen.options import Options
    from promptgen.progress import print_warnings

    prompt = load_prompt(file, format)
    check_metrics(prompt, Options())  # a bad check is reported with its line
    print_warnings(prompt.warnings)
    data = inspect_data(prompt)
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        print_inspect(prompt, data)


@app.command()
def schema(
    name: Annotated[
        str | None, typer.Argument(help="'prompt' (frontmatter) or 'context' (saved runs).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write every schema file into this folder.")
    ] = None,
) -> None:
    """Print or write the JSON Schemas generated from promptgen's models."""
    from promptgen.schemas import SCHEMAS, schema_text, write_schemas

    if out is not None:
        from promptgen.api import check_folder

        check_folder(out, f"--out {out}")
        for path in write_schemas(out):
            typer.echo(str(path))
        return
    files = {n.split(".")[0]: n for n in SCHEMAS}
    if name not in files:
        raise BadInputError(
            f"unknown schema {name!r}" if name else "which schema?",
            hint=f"give one of {', '.join(files)}, or --out DIR to write them all",
        )
    typer.echo(schema_text(files[name]), nl=False)


def main() -> None:
    debug = os.environ.get("PROMPTGEN_DEBUG") == "1"
    load_dotenv(Path.cwd() / ".env", override=False)
    sys.exit(run_app(debug))


def run_app(debug: bool = False, args: list[str] | None = None) -> int:
    """Run the command line; return its exit code. Every failure is one line on stderr
    (plus the traceback with `debug`, which never changes the code)."""
    try:
        code = app(args=args, prog_name="promptgen", standalone_mode=False)
        sys.stdout.flush()
    except (KeyboardInterrupt, typer.Abort):
        code = INTERRUPTED
    except (BrokenPipeError, SystemExit) as err:
        # The reader of stdout went away (`| head -1`): typer and rich turn that into
        # exit code 1, which would read as "quality gate failed". It has what it wanted.
        from promptgen.progress import pipe_closed, silence_stdout

        if not pipe_closed(err):
            raise
        silence_stdout()
        return 0
    except PromptgenError as err:
        return _failed(f"promptgen: error: {err.one_line()}", err.exit_code, debug)
    except Exception as err:
        carried = sole_error(err) if isinstance(err, ExceptionGroup) else err
        if isinstance(carried, PromptgenError):  # a task group's one error, as itself
            return _failed(f"promptgen: error: {carried.one_line()}", carried.exit_code, debug)
        usage = _usage_error(err)
        if usage is not None:
            return _failed(*usage, debug)
        hint = "" if debug else " (set PROMPTGEN_DEBUG=1 for the traceback)"
        message = " ".join(f"{type(err).__name__}: {err}".split())
        return _failed(f"promptgen: internal error: {message}{hint}", 3, debug)
    if code == INTERRUPTED:  # typer's exit code for Ctrl-C
        _echo_err("promptgen: interrupted")
    return code if isinstance(code, int) else 0


def _usage_error(err: Exception) -> tuple[str, int] | None:
    """Click's own errors (no such option, a value that is not a number) as one line and
    their exit code. Typer vendors click, so they are known by their interface."""
    format_message = getattr(err, "format_message", None)
    exit_code = getattr(err, "exit_code", None)
    if not callable(format_message) or not isinstance(exit_code, int):
        return None
    if type(err).__name__ == "NoArgsIsHelpError":  # `promptgen` alone: the help, shown
        return "", exit_code
    ctx = getattr(err, "ctx", None)
    where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    message = " ".join(str(format_message()).split())
    return f"promptgen: error: {message}{where}", exit_code


def _failed(line: str, code: int, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    if line:
        _echo_err(line)
    return code


def _echo_err(line: str) -> None:
    from promptgen.secrets import scrub  # a key an error quotes is blanked, as in the files

    with contextlib.suppress(BrokenPipeError, ValueError):  # stderr closed: the code says it
        print(scrub(line), file=sys.stderr, flush=True)
