"""Every `promptgen` command written in README.md and docs/ parses against the command
line as it is: its command exists and every flag and value is one that command takes.
(`python -m tests.doc_commands --out DIR` runs them all for real; see its docstring.)"""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer._click import exceptions as click_errors

from promptgen.cli import app
from tests.doc_commands import Command, commands

PROMPTGEN = [c for c in commands() if c.words()[0] == "promptgen"]


def _parse(words: list[str]) -> list[str]:
    """Parse `words` (after `promptgen`) down to the command that would run; return the
    command path. Raises click's usage errors as the command line would."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("promptgen", list(words), resilient_parsing=False)
    path = ["promptgen"]
    while hasattr(command, "resolve_command"):  # a group (typer's own click)
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            break
        name, command, rest = command.resolve_command(ctx, rest)
        path.append(str(name))
        ctx = command.make_context(str(name), rest, parent=ctx, resilient_parsing=False)
    return path


def test_the_docs_name_enough_commands_to_be_worth_checking() -> None:
    docs = {c.doc for c in PROMPTGEN}
    assert len(PROMPTGEN) >= 120, len(PROMPTGEN)
    assert {"README.md", "docs/runs.md", "docs/setup.md", "docs/lve.md"} <= docs


def test_continued_lines_and_console_prompts_are_read_as_one_command() -> None:
    setup = [c for c in PROMPTGEN if c.doc == "docs/setup.md"]
    azure = next(c for c in setup if "--provider azure" in c.text)
    assert azure.words()[-3:] == ["--api-version", "2024-10-21", "--yes"]
    options = next(c for c in PROMPTGEN if c.doc == "docs/options.md")
    assert options.words() == [
        "promptgen",
        "classify.prompty",
        "--print-options",
        "--max-rules",
        "5",
    ]


@pytest.mark.parametrize("command", PROMPTGEN, ids=[c.where for c in PROMPTGEN])
def test_documented_command_parses(command: Command) -> None:
    words = command.words()[1:]
    try:
        path = _parse(words)
    except typer.Exit:  # --version, --help: a documented early exit
        return
    except click_errors.ClickException as err:
        pytest.fail(f"{command.where}: {command.text}\n  {err.format_message()}")
    assert len(path) >= 2, f"{command.where}: names no command: {command.text}"


def test_a_misspelt_flag_or_a_bad_value_is_caught() -> None:
    with pytest.raises(click_errors.NoSuchOption):
        _parse(["my.prompty", "--max-rule", "5"])
    with pytest.raises(click_errors.BadParameter, match="valid integer"):
        _parse(["mutate", "my.prompty", "--mutants", "many"])
    with pytest.raises(click_errors.UsageError, match="No such command 'replai'"):
        _parse(["lve", "replai", "repository/"])
