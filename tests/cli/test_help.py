"""`--help` reads at 80 columns and in a pipe: every flag name whole, no description cut
(wrapped is fine), and the command list's descriptions not broken mid-sentence."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import pytest
import typer

from tests.conftest import REPO, run_cli

ELLIPSIS = "…"


def _commands() -> list[tuple[list[str], list[str]]]:
    """Every command (its words after `promptgen`) and every flag name it has."""
    from promptgen.cli import app

    found: list[tuple[list[str], list[str]]] = []

    def walk(command: typer.core.TyperCommand | typer.core.TyperGroup, words: list[str]) -> None:
        flags = [
            name
            for param in command.params
            for name in (*param.opts, *param.secondary_opts)
            if name.startswith("-")
        ]
        found.append((words, flags))
        if isinstance(command, typer.core.TyperGroup):
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*words, name])

    walk(typer.main.get_command(app), [])
    return found


def _env(columns: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return env if columns is None else {**env, "COLUMNS": columns}


# Every command's help in one process (a process each would take a minute): the real
# command line, its stdout the pipe the test reads.
HELPS = """
import json, sys
from promptgen.cli import run_app
for words in json.loads(sys.argv[1]):
    print("=== " + " ".join(words), flush=True)
    assert run_app(args=[*words, "--help"]) == 0, words
"""


def _helps(commands: list[list[str]], columns: str | None) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", HELPS, json.dumps(commands)],
        capture_output=True, text=True, cwd=REPO, env=_env(columns), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    parts = re.split(r"^=== (.*)\n", done.stdout, flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


@pytest.mark.parametrize("columns", ["80", None], ids=["COLUMNS=80", "pipe"])
def test_every_flag_of_every_command_is_whole_and_nothing_is_cut(columns: str | None) -> None:
    commands = _commands()
    assert len(commands) >= 16  # the group, its commands, lve's and pa's subcommands
    helps = _helps([words for words, _ in commands], columns)
    for words, flags in commands:
        lines = helps[" ".join(words)].splitlines()
        assert len(lines) > 5, words
        assert max(len(line) for line in lines) <= 80, words
        cut = [line for line in lines if ELLIPSIS in line]
        assert cut == [], (words, cut)
        shown = set(re.findall(r"(?<![\w-])--?[\w][\w-]*", "\n".join(lines)))
        missing = [flag for flag in flags if flag not in shown]
        assert missing == [], (words, missing)


def test_long_flags_of_run_are_whole_at_80_columns() -> None:
    out = run_cli("run", "--help", env=_env("80")).stdout
    for flag in (
        "--max-rules-per-test-generation",
        "--judge-only-when-unsure",
        "--no-judge-only-when-unsure",
        "--instructions-inverse-output-rules",
        "--groundtruth-eval-models",
        "--no-store-completions",
    ):
        assert re.search(rf"│ {flag} ", out), flag
    assert "tests.filtered.json)." in out
    assert "--install-completion" not in out  # no completion flags on a subcommand


def _command_rows(out: str) -> dict[str, list[str]]:
    """The Commands panel: each command's description, line by line as printed."""
    panel = out.split("─ Commands ─", 1)[1].split("╰", 1)[0]
    rows: dict[str, list[str]] = {}
    name = ""
    for line in panel.splitlines()[1:]:
        body = line.strip("│")[1:]
        if body[:1] != " ":
            name, body = body.split(" ", 1)
            rows[name] = []
        rows[name].append(body.strip())
    return rows


def test_command_descriptions_read_as_sentences_at_80_columns() -> None:
    out = run_cli("--help", env=_env("80")).stdout
    rows = _command_rows(out)
    width = max(len(line) for line in out.splitlines() if line.startswith("│ inspect"))
    column = width - len("│ ") - len("inspect    ") - len(" │")
    assert rows["inspect"] == [
        "Show how promptgen reads a prompt file: its detected format,",
        "messages, inputs, scenarios, samples, rendering.",
    ]
    for name, lines in rows.items():
        for line, following in itertools.pairwise(lines):
            # a line ends early only when the next word would not have fit
            assert len(line) + 1 + len(following.split()[0]) > column, (name, line)
