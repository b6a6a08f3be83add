"""The CLI's shape: entry points, inspect output, and room for a default command."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import typer
from typer.testing import CliRunner

from promptgen import __version__
from promptgen.cli.group import DefaultCommandGroup
from tests.conftest import run_cli

Write = Callable[[str, str], Path]


def test_version_via_module() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"promptgen {__version__}"


def test_console_script_is_installed() -> None:
    exe = shutil.which("promptgen")
    assert exe, "the promptgen console script is not on PATH (pip install -e .)"
    result = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == f"promptgen {__version__}"


def test_help_lists_only_built_commands() -> None:
    from promptgen.cli import app

    group = typer.main.get_command(app)
    commands = set(group.list_commands(typer.Context(group)))
    assert commands == {
        "run", "inspect", "schema", "models", "ask", "export", "diff", "history", "view", "pa",
        "lve", "configure", "import", "mutate",
    }  # fmt: skip
    result = run_cli("--help")
    assert result.returncode == 0
    assert "inspect" in result.stdout and "schema" in result.stdout and "export" in result.stdout


def test_inspect_json(write: Write) -> None:
    path = write(
        "p.prompty",
        "---\nname: demo\ninputs:\n  topic: {type: string, sample: tea}\n"
        "scenarios:\n  - name: short\n    parameters: {length: 5}\n"
        "testSamples:\n  - {topic: coffee, length: 3, output: ok}\n"
        "instructions:\n  intent: explain\n---\n"
        "system:\nExplain in {{length}} words.\nuser:\n{{topic}}\n",
    )
    result = run_cli("inspect", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["inputs_declared"] == ["topic"] and data["inputs_detected"] == ["length"]
    assert data["render_value_sources"] == {"topic": "sample", "length": "testSamples[0]"}
    assert data["rendered"] == [
        {"role": "system", "content": "Explain in 3 words."},
        {"role": "user", "content": "tea"},
    ]
    assert data["prompt"]["scenarios"][0]["parameters"] == {"length": 5}
    assert data["prompt"]["instructions"]["intent"] == "explain"


def test_inspect_tables(write: Write) -> None:
    path = write("p.prompty", "---\nname: tables\n---\nuser:\nHello {{who}}\n")
    result = run_cli("inspect", str(path))
    assert result.returncode == 0
    for heading in ("Prompt", "Inputs", "Messages (templates)", "Rendered"):
        assert heading in result.stdout
    assert "Hello <who>" in result.stdout  # placeholder for an input with no value


def test_default_command_routing() -> None:
    """The group routes a free first word to a registered default command."""

    class Group(DefaultCommandGroup):
        default_command = "main"

    app = typer.Typer(cls=Group)

    @app.command()
    def main(file: str, effort: str = "min") -> None:
        typer.echo(f"main {file} {effort}")

    @app.command()
    def other() -> None:
        typer.echo("other")

    runner = CliRunner()
    assert runner.invoke(app, ["x.prompty", "--effort", "high"]).output == "main x.prompty high\n"
    assert runner.invoke(app, ["other"]).output == "other\n"
