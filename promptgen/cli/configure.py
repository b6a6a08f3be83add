"""`promptgen configure`: set up providers and models, by flags (--yes) or by questions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.prompt import Confirm, Prompt

from promptgen.cli.models import models as show_models
from promptgen.configure import (
    AZURE_API_VERSION,
    PROVIDERS,
    ROLES,
    Answers,
    Plan,
    Provider,
    Written,
    apply,
    check_models,
    config_path,
    environment_overrides,
    existing_env,
    load_env,
    make_plan,
    mask,
    provider_named,
)
from promptgen.configure.tomlfile import read_toml
from promptgen.errors import BadInputError, PromptgenError

EPILOG = (
    "Examples: promptgen configure (questions) | promptgen configure --provider openai "
    "--model gpt-4o-mini --api-key sk-... --yes | promptgen configure --provider "
    "openai-compatible --api-base http://127.0.0.1:8080/v1 --model m --yes. See docs/setup.md."
)
Opt = typer.Option


def configure(
    provider: Annotated[str | None, Opt(help=f"One of: {', '.join(PROVIDERS)}.")] = None,
    model: Annotated[
        str | None,
        Opt(
            "--model",
            "-m",
            help="Model (Azure: deployment) for every role; a name without "
            "a provider gets the provider's prefix.",
        ),
    ] = None,
    rules_model: Annotated[str | None, Opt(help="Model for analysis and generation.")] = None,
    eval_model: Annotated[str | None, Opt(help="Model for the judges.")] = None,
    groundtruth_model: Annotated[str | None, Opt(help="Model for reference answers.")] = None,
    models: Annotated[str | None, Opt(help='Models under test, "a;b" (default: --model).')] = None,
    api_key: Annotated[str | None, Opt(help="The provider's key; written to .env only.")] = None,
    api_base: Annotated[
        str | None, Opt(help="Server URL (openai-compatible), Azure endpoint or Ollama address.")
    ] = None,
    api_version: Annotated[
        str | None, Opt(help=f"Azure API version ({AZURE_API_VERSION}).")
    ] = None,
    concurrency: Annotated[int | None, Opt(help="The most calls in flight per model.")] = None,
    folder: Annotated[
        Path, Opt("--dir", help="Folder for promptgen.toml and .env.", file_okay=False)
    ] = Path("."),
    yes: Annotated[bool, Opt("--yes", "-y", help="Ask nothing: flags and defaults only.")] = False,
    no_check: Annotated[bool, Opt("--no-check", help="Do not call each model once.")] = False,
) -> None:
    """Set up providers and models: promptgen.toml (models, api_base, defaults) and .env (keys)."""
    answers = Answers(
        provider=provider,
        model=model,
        roles={
            r: v
            for r, v in zip(ROLES, (rules_model, eval_model, groundtruth_model), strict=True)
            if v
        },
        under_test=models,
        api_key=api_key,
        api_base=api_base,
        api_version=api_version,
        concurrency=concurrency,
    )
    err = Console(stderr=True)
    env = existing_env(folder)
    if not yes:
        try:
            _ask(answers, folder, env, err)
        except EOFError as exc:
            raise BadInputError(
                "no answer: the input ended", hint="pass the values as flags with --yes"
            ) from exc
    plan = make_plan(answers, env)
    if not yes and not Confirm.ask(
        f"Write {config_path(folder)} and {folder / '.env'}?", default=True, console=err
    ):
        raise typer.Abort()
    written = apply(plan, folder)
    out = Console()
    _report(plan, written, out)
    load_env(folder)
    failed = 0 if no_check else _check(plan, written.config, out, err)
    out.print()
    show_models(config=written.config)
    if failed:
        raise PromptgenError(
            f"{failed} of {len(plan.to_check)} models failed the check",
            hint="the configuration is written; fix it and run configure again, or --no-check",
        )


def _ask(answers: Answers, folder: Path, env: dict[str, str], console: Console) -> None:
    """Questions for what the flags left open; each default is what is there now."""
    current = read_toml(config_path(folder)).get("models", {})
    if not answers.provider:
        answers.provider = Prompt.ask(
            "Provider", choices=list(PROVIDERS), default="openai", console=console
        )
    provider = provider_named(answers.provider)
    if (provider.base_required or provider.base_var) and not answers.api_base:
        label = {"azure": "Azure OpenAI endpoint", "ollama": "Ollama address"}
        answers.api_base = Prompt.ask(
            label.get(provider.name, "Server URL (e.g. http://127.0.0.1:8080/v1)"),
            default=env.get(provider.base_var or "") or provider.default_base,
            console=console,
        )
    if provider.version_var and not answers.api_version:
        answers.api_version = Prompt.ask(
            "API version", default=env.get(provider.version_var) or AZURE_API_VERSION,
            console=console,
        )  # fmt: skip
    if provider.key_var and answers.api_key is None:
        answers.api_key = _ask_key(provider, env, console)
    what = "Deployment name" if provider.name == "azure" else "Model"
    answers.model = answers.model or Prompt.ask(
        f"{what} for every role", default=provider.default_model, console=console
    )
    for role in ROLES:
        if role not in answers.roles:
            answers.roles[role] = Prompt.ask(
                f"  {role} model", default=answers.model, console=console
            )
    if answers.under_test is None:
        default = ";".join(current.get("under_test") or []) if current else ""
        answers.under_test = Prompt.ask(
            'Models under test ("a;b")', default=default or answers.model, console=console
        )


def _ask_key(provider: Provider, env: dict[str, str], console: Console) -> str | None:
    var = str(provider.key_var)
    if bool(env.get(var)) and Confirm.ask(
        f"Keep {var} from .env ({mask(env[var])})?", default=True, console=console
    ):
        return None
    optional = "" if provider.key_required else " (empty: none)"
    ask = Prompt(
        f"{var}{optional}",
        password=sys.stdin.isatty(),  # typed keys are not echoed; piped ones have no echo
        show_default=False,
        console=console,
    )
    key = ask() if provider.key_required else ask(default="")
    return key.strip() or None


def _report(plan: Plan, written: Written, out: Console) -> None:
    out.print(escape(f"wrote {written.config}"))
    for name in written.env_changed:
        out.print(escape(f"wrote {name}={mask(plan.env[name])} to {written.env}"))
    if written.gitignore is not None:
        out.print(escape(f"added .env to {written.gitignore}"))
    for note in plan.notes:
        out.print(escape(f"note: {note}"))
    overrides = environment_overrides()
    if overrides:
        out.print(
            escape(f"note: set in your environment, wins over the file: {', '.join(overrides)}")
        )


def _check(plan: Plan, config: Path, out: Console, err: Console) -> int:
    models = plan.to_check
    err.print(escape(f"checking {len(models)} model(s) with one call each..."))
    failed = 0
    for result in check_models(config, models):
        state = "[green]ok[/]" if result.ok else "[red]failed[/]"
        failed += not result.ok
        out.print(f"{state} {escape(result.model)}: {escape(result.detail)}", soft_wrap=True)
    return failed
