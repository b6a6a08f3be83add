"""`promptgen view [OUT]`: open a run's report.html, or `--serve` an index of every run
over HTTP on 127.0.0.1 (docs/reports.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.api import DEFAULT_OUT
from promptgen.errors import BadInputError
from promptgen.report.view import (
    make_server,
    open_in_browser,
    report_path,
    serve,
    server_url,
)


def view(
    out: Annotated[
        Path | None,
        typer.Argument(
            help="A run folder, its context.json or report.html, or a folder of runs "
            "(default: the newest run under ./promptgen-out/).",
            show_default=False,
        ),
    ] = None,
    serve_runs: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Serve an index of every run (./promptgen-out/ or OUT) on 127.0.0.1 until Ctrl-C.",
        ),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            help="Port for --serve (default: 8000, or any free port when it is taken; "
            "0: any free port).",
            show_default=False,
        ),
    ] = None,
    no_browser: Annotated[
        bool,
        typer.Option("--no-browser", help="Print the path or URL; open no browser."),
    ] = False,
) -> None:
    """Open a run's report.html in the browser ($BROWSER), or serve an index of runs."""
    if serve_runs:
        _serve(out or DEFAULT_OUT, port, no_browser)
        return
    report = report_path(out, DEFAULT_OUT)
    url = report.resolve().as_uri()
    if not no_browser and open_in_browser(url):
        typer.echo(f"promptgen: opened {report}", err=True)
    else:
        typer.echo(str(report))


def _serve(root: Path, port: int | None, no_browser: bool) -> None:
    if not root.is_dir():
        raise BadInputError(
            f"{root}: no such folder", hint="run `promptgen FILE` first, or give a folder of runs"
        )
    server = make_server(root, port)
    url = server_url(server)
    typer.echo(url)
    sys.stdout.flush()
    typer.echo(f"promptgen: serving the runs under {root} at {url} (Ctrl-C stops)", err=True)

    def ready() -> None:
        if not no_browser:
            open_in_browser(url)

    serve(server, ready)
