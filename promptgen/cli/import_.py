"""`promptgen import FILE|-`: a prompt that is not a prompt file yet, as a `.prompty`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.cli.models import ApiBase, Config, _api_base
from promptgen.errors import BadInputError
from promptgen.importing import (
    KINDS,
    Imported,
    detect_kind,
    finish,
    name_inputs,
    read_source,
    slug,
    to_prompty,
    verify,
)
from promptgen.llm import LLM, load_settings
from promptgen.progress import print_warnings

EPILOG = (
    "Examples: promptgen import prompt.txt (writes prompt.prompty) | promptgen import "
    "app.py --out prompts/app.prompty | pbpaste | promptgen import - --name triage "
    "(prints it). See docs/setup.md."
)
MAX_BYTES = 1_000_000


def import_prompt(
    source: Annotated[str, typer.Argument(help="A file, or - for standard input.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Where to write (default: beside FILE as .prompty; stdout for -). '-' prints.",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="The prompt's name.")] = None,
    kind: Annotated[
        str | None,
        typer.Option(help=f"Read the source as: {', '.join(KINDS)} (default: detected)."),
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Never ask the rules model to name the inputs.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    model: Annotated[str, typer.Option(help="Model that names inputs (an alias or id).")] = "rules",
    api_base: ApiBase = None,
    config: Config = None,
) -> None:
    """Turn plain text, a Python/JavaScript string, OpenAI messages JSON or a LangChain
    template into a .prompty (inputs with types, system:/user: sections)."""
    text, label, suffix = _read(source)
    target = _target(source, out, force)
    imported = read_source(text, label, kind or detect_kind(text, suffix))
    print_warnings(imported.warnings)
    if not imported.variables and not no_llm:
        _name_with_model(imported, model, api_base, config)
    finish(imported)
    stem = Path(source).stem if source != "-" else ""
    final = slug(name or imported.name or stem)
    result = to_prompty(imported, final, label)
    prompt = verify(result, final)
    if target is None:
        typer.echo(result, nl=False)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(result, encoding="utf-8")
        typer.echo(str(target))
    inputs = ", ".join(f"{n} ({i.type})" for n, i in prompt.inputs.items())
    print(f"promptgen: {imported.kind}: {len(prompt.messages)} messages; inputs: {inputs}",
          file=sys.stderr)  # fmt: skip


def _read(source: str) -> tuple[str, str, str]:
    if source == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        label, suffix = "<stdin>", ""
    else:
        path = Path(source)
        if path.suffix.lower() == ".prompty":
            raise BadInputError("already a .prompty file", file=path, hint="promptgen inspect it")
        if not path.is_file():
            raise BadInputError("no such file", file=path, hint="give a file, or - for stdin")
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        label, suffix = str(path), path.suffix
    if len(data) > MAX_BYTES:
        raise BadInputError(f"larger than {MAX_BYTES:,} bytes", file=label)
    try:
        return data.decode("utf-8-sig"), label, suffix
    except UnicodeDecodeError as err:
        raise BadInputError("not UTF-8 text", file=label) from err


def _target(source: str, out: Path | None, force: bool) -> Path | None:
    """None: print. The default is beside the source; never over a file without --force."""
    if out is not None and str(out) == "-":
        return None
    if out is None:
        if source == "-":
            return None
        out = Path(source).with_suffix(".prompty")
    if out.exists() and not force:
        raise BadInputError("already exists", file=out, hint="pass --force to overwrite it")
    return out


def _name_with_model(
    imported: Imported, model: str, api_base: str | None, config: Path | None
) -> None:
    settings = load_settings({"api_base": _api_base(api_base), "config": config})
    llm = LLM(settings)
    print("promptgen: no placeholders found; asking the rules model to name the inputs",
          file=sys.stderr)  # fmt: skip

    async def ask() -> None:
        try:
            await name_inputs(imported, llm, model)
        finally:
            await llm.aclose()

    asyncio.run(ask())
