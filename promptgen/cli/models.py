"""`promptgen models` and `promptgen ask`: see and try the model configuration."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from promptgen.errors import BadInputError, PromptgenError
from promptgen.jsonio import read_json
from promptgen.llm import ALIASES, LLM, Completion, GatewaySettings, load_settings
from promptgen.llm.served import (
    Served,
    ask_for,
    filled,
    listing,
    said,
    served_models,
    unnamed,
)
from promptgen.llm.weights import SPECS, cache_root, status
from promptgen.options import MAX_ANSWER_TOKENS, check_api_base
from promptgen.progress import print_warnings
from promptgen.secrets import shown
from promptgen.words import counted

ApiBase = Annotated[
    str | None,
    typer.Option("--api-base", help="Any OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."),
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")]
CacheDir = Annotated[Path | None, typer.Option("--cache-dir", help="Response cache folder.")]
Config = Annotated[Path | None, typer.Option("--config", help="A promptgen.toml to read.")]


def _llama_version() -> str | None:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def _api_base(value: str | None) -> str | None:
    """`--api-base` checked as the main command checks it: never empty or malformed."""
    if value is None:
        return None
    try:
        return check_api_base(value)
    except ValueError as err:
        raise BadInputError(f"--api-base {shown(value)}: {err}") from err


def models(
    api_base: ApiBase = None,
    config: Config = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show what each model alias resolves to (and why), and the local model's state."""
    settings = load_settings({"api_base": _api_base(api_base), "config": config})
    served = ask_for(settings)  # --api-base and a role with no model: the server's list
    settings = filled(settings, served)
    local: dict[str, dict[str, Any]] = {
        f"local/{name}": {
            "status": status(spec),
            "size": spec.size,
            "sha256": spec.sha256,
            "description": spec.description,
        }
        for name, spec in SPECS.items()
    }
    data: dict[str, Any] = {
        "aliases": {
            a: {"model": settings.models[a], "source": settings.sources[a]} for a in ALIASES
        },
        "models_under_test": settings.models_under_test,
        "api_base": settings.api_base,
        "served_models": _served(served),
        "config_file": str(settings.config_file) if settings.config_file else None,
        "llama_cpp_python": _llama_version(),
        "local_models": local,
        "model_folder": str(cache_root() / "models"),
    }
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    console = Console()
    table = Table(title="Model aliases", title_justify="left")
    for col in ("alias", "model", "from"):
        table.add_column(col)
    # Every text is escaped: names, paths and `promptgen[local]` are not rich markup.
    for alias, row in data["aliases"].items():
        table.add_row(escape(alias), escape(row["model"]), escape(row["source"]))
    under_test = ", ".join(settings.models_under_test) or "(none)"
    table.add_row("under test", escape(under_test), escape(settings.sources["models under test"]))
    console.print(table)
    if settings.api_base:
        line = f"api base: {settings.api_base}{_served_note(served)}"
        console.print(escape(line), soft_wrap=True)
    local_table = Table(title="Embedded local models", title_justify="left")
    for col in ("model", "state", "size", "about"):
        local_table.add_column(col)
    for name, row in local.items():
        size = f"{row['size'] / 1e9:.2f} GB"
        local_table.add_row(escape(name), escape(row["status"]), size, escape(row["description"]))
    console.print(local_table)
    engine = (
        _llama_version() or 'not installed (pip install -e ".[local]" in the promptgen checkout)'
    )
    line = f"llama-cpp-python: {engine}; model files in {data['model_folder']}"
    console.print(escape(line), soft_wrap=True)  # one line, never wrapped: a command in it


def _served(served: Served | None) -> dict[str, Any] | None:
    """What the server's list said, for --json (None: not asked)."""
    if served is None:
        return None
    return {
        "models": list(served.ids),
        "problem": served.problem,
        "reached": not served.unreachable,
    }


def _served_note(served: Served | None) -> str:
    """What the server's list said, after the API base in the table view."""
    if served is None or served.unreachable:
        return ""
    if served.problem is not None:
        return f" (lists no models: {served.problem}; roles with no model send `default`)"
    if len(served.ids) > 1:
        return (
            f" (serves {counted(len(served.ids), 'model')}: {listing(served.ids)}; a run "
            "names the one for each role with no model)"
        )
    return f" (serves {served.ids[0]} alone)"


def ask(
    prompt: Annotated[str, typer.Argument(help="The user message to send.")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="A model id or an alias (rules, eval, ...).")
    ] = "rules",
    system: Annotated[str | None, typer.Option("--system", help="A system message.")] = None,
    json_schema: Annotated[
        Path | None,
        typer.Option("--json-schema", help="A JSON Schema file: the answer must validate."),
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest answer, in tokens.")] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds per attempt (default 120).")
    ] = None,
    api_base: ApiBase = None,
    no_cache: NoCache = False,
    cache_dir: CacheDir = None,
    config: Config = None,
) -> None:
    """Send one prompt through the gateway and print the answer (usage goes to stderr)."""
    _check_number("--temperature", temperature, 0, 2)
    _check_number("--max-tokens", max_tokens, 1, MAX_ANSWER_TOKENS)
    _check_number("--timeout", timeout, 0.001, None)
    schema = _read_schema(json_schema) if json_schema else None
    settings = load_settings(
        {
            "api_base": _api_base(api_base),
            "timeout": timeout,
            "cache": not no_cache,
            "cache_dir": cache_dir,
            "config": config,
        }
    )
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": prompt}
    ]
    llm = LLM(_from_server(settings, model))

    async def one_call() -> Completion:
        try:
            return await llm.complete(
                messages,
                model=model,
                output=schema,
                temperature=temperature,
                max_tokens=max_tokens,
                stage="ask",
            )
        finally:
            await llm.aclose()

    result = asyncio.run(one_call())
    print_warnings([r.said() for r in llm.schema_refusals])  # asked another way instead
    if result.fault == "truncated" and schema is None and result.text:
        # A person asking wants what came back, told that it is cut off.
        typer.echo(result.text)
        print(f"promptgen: warning: {result.error}", file=sys.stderr)
        return
    if result.error:
        raise PromptgenError(result.error)
    if schema is not None:
        typer.echo(json.dumps(result.parsed, indent=2, ensure_ascii=False))
    else:
        typer.echo(result.text)
    u = result.usage
    cost = f"${u.cost:.6f}" if u.cost else "$0"
    print(
        f"promptgen: {result.model}: {u.prompt_tokens}+{u.completion_tokens} tokens, {cost}, "
        f"{result.latency_ms:.0f} ms{', cached' if result.cached else ''}",
        file=sys.stderr,
    )


def _from_server(settings: GatewaySettings, model: str) -> GatewaySettings:
    """With --api-base and no model named for the role asked, the one model the server
    serves (said on stderr); several are an error listing them (llm/served.py)."""
    if model not in unnamed(settings) or settings.api_base is None:
        return settings
    served = served_models(settings.api_base, settings.timeout)
    line = said(served, ["--model"])
    if line is not None:
        print(f"promptgen: {line}", file=sys.stderr)
    return filled(settings, served)


def _check_number(flag: str, value: float | None, low: float, high: float | None) -> None:
    """A finite number in range, or an error naming the flag (before any call)."""
    if value is None:
        return
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        accepted = f"{_num(low)}-{_num(high)}" if high is not None else f"at least {_num(low)}"
        raise BadInputError(f"{flag} {value}: must be a finite number, {accepted}")


def _num(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _read_schema(path: Path) -> dict[str, Any]:
    schema = read_json(path, "JSON Schema file", "give a file holding one JSON Schema object")
    if not isinstance(schema, dict):
        raise BadInputError("a JSON Schema must be an object", file=path)
    return schema
