"""The command line: parse options, call the library, print results. No pipeline logic."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from dotenv import load_dotenv

from promptgen import __version__, cli_llm, cli_run
from promptgen.cli_group import DefaultCommandGroup
from promptgen.errors import BadInputError, PromptgenError
from promptgen.evaluation import check_metrics
from promptgen.formats import load_prompt
from promptgen.inspect_view import inspect_data, print_inspect
from promptgen.options import Options
from promptgen.progress import print_warnings
from promptgen.schemas import SCHEMAS, schema_text, write_schemas


class PromptgenGroup(DefaultCommandGroup):
    default_command = "run"  # `promptgen FILE` is `promptgen run FILE`


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
    file: Annotated[Path, typer.Argument(help="A .prompty, .prompt.yml, .md or .txt file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Show how promptgen reads a prompt file: messages, inputs, scenarios, samples, rendering."""
    prompt = load_prompt(file)
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
    if out is not None:
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


app.command(name="run", epilog=cli_run.EPILOG, help=cli_run.HELP)(cli_run.run)
app.command()(cli_llm.models)
app.command()(cli_llm.ask)


def main() -> None:
    debug = os.environ.get("PROMPTGEN_DEBUG") == "1"
    load_dotenv(Path.cwd() / ".env", override=False)
    try:
        app(prog_name="promptgen")
    except PromptgenError as err:
        if debug:
            raise
        typer.echo(f"promptgen: error: {err.one_line()}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        typer.echo("promptgen: interrupted", err=True)
        sys.exit(130)
    except Exception as err:  # a bug: still one line, the traceback on request
        if debug:
            raise
        typer.echo(
            f"promptgen: internal error: {type(err).__name__}: {err} "
            "(set PROMPTGEN_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(3)
