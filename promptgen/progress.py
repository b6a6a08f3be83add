"""Progress reporting: rich bars on a terminal, plain lines in CI or with --quiet.

Progress and usage go to stderr; results go to stdout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from promptgen.bounds import terminal_text
from promptgen.secrets import scrub
from promptgen.words import counted

# What the plan says when a resumed run has nothing left (never "about 0 calls").
NOTHING = "nothing left to do: every stage is done, no model call"

if TYPE_CHECKING:  # rich loads with the first bar: a run without a terminal never needs it
    from rich.progress import TaskID

    from promptgen.results import StageRecord, Usage


def _said(warning: str) -> str:
    """A warning as the terminal shows it: keys blanked as in the files (a warning may
    quote a model's answer or a provider's error), control characters made visible."""
    return terminal_text(scrub(warning))


class Reporter(Protocol):
    def start(self, planned: dict[str, int]) -> None: ...

    def update(self, by_stage: dict[str, Usage]) -> None: ...

    def stage_finished(self, record: StageRecord) -> None: ...

    def warn(self, warning: str) -> None: ...

    def close(self) -> None: ...


def print_warnings(warnings: list[str]) -> None:
    for warning in warnings:  # plain lines: never wrapped, easy to grep
        print(f"promptgen: warning: {_said(warning)}", file=sys.stderr)


def silence_stdout() -> None:
    """The reader of stdout went away (`promptgen ... | head -1`): what is still to be
    printed goes to the null device, so nothing fails or complains at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (tests capture it)
        pass


def pipe_closed(err: BaseException) -> bool:
    """Stdout's reader went away: a BrokenPipeError, or rich's exit on one."""
    if isinstance(err, SystemExit):  # rich's Console.on_broken_pipe
        return isinstance(err.__context__, BrokenPipeError)
    return isinstance(err, BrokenPipeError)


@contextmanager
def results_output() -> Iterator[None]:
    """Print results to stdout; a closed pipe ends the printing, not the command."""
    try:
        yield
        sys.stdout.flush()
    except (BrokenPipeError, SystemExit) as err:
        if not pipe_closed(err):
            raise
        silence_stdout()


def usage_text(usage: Usage) -> str:
    cached = f", {usage.cache_hits} cached" if usage.cache_hits else ""
    cost = f", ${usage.cost:.4f}" if usage.cost else ""
    return f"{counted(usage.calls, 'call')}{cached}, {usage.total_tokens:,} tokens{cost}"


class PlainReporter:
    """One line per finished stage, on stderr (quiet: nothing); warnings said during the
    run, even when quiet (`warnings=False`: not at all, as the library's default)."""

    def __init__(self, quiet: bool = False, warnings: bool = True) -> None:
        self.quiet, self.warnings = quiet, warnings

    def start(self, planned: dict[str, int]) -> None:
        if not self.quiet:
            total = sum(planned.values())
            said = f"planned about {counted(total, 'model call')}" if total else NOTHING
            print(f"promptgen: {said}", file=sys.stderr)

    def update(self, by_stage: dict[str, Usage]) -> None:
        pass

    def stage_finished(self, record: StageRecord) -> None:
        if self.quiet:
            return
        took = f", {record.duration_s:.1f} s" if record.duration_s is not None else ""
        error = f" ({terminal_text(record.error)})" if record.error else ""
        print(
            f"promptgen: {record.name}: {record.status}, {usage_text(record.usage)}{took}{error}",
            file=sys.stderr,
            flush=True,
        )

    def warn(self, warning: str) -> None:
        if self.warnings:
            print(f"promptgen: warning: {_said(warning)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class RichReporter:
    """A bar per stage: calls done of planned, with tokens and cost."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[usage]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def start(self, planned: dict[str, int]) -> None:
        for name, total in planned.items():
            self.tasks[name] = self.progress.add_task(_escape(name), total=total, usage="")
        self.progress.start()

    def update(self, by_stage: dict[str, Usage]) -> None:
        for name, usage in by_stage.items():
            if name not in self.tasks:
                self.tasks[name] = self.progress.add_task(_escape(name), total=None, usage="")
            task = self.tasks[name]
            total = self.progress.tasks[task].total
            if total is not None and usage.calls > total:
                self.progress.update(task, total=usage.calls)
            self.progress.update(task, completed=usage.calls, usage=_escape(usage_text(usage)))

    def stage_finished(self, record: StageRecord) -> None:
        task = self.tasks.get(record.name)
        if task is None:
            return
        if record.status in ("done", "skipped"):
            done = self.progress.tasks[task].completed
            self.progress.update(task, total=done or 1, completed=done or 1)
        else:  # failed or interrupted: the bar stays where it stopped, and says so
            self.progress.update(task, description=_escape(f"{record.name} ({record.status})"))

    def warn(self, warning: str) -> None:  # above the bars
        self.progress.console.print(
            f"promptgen: warning: {_said(warning)}", markup=False, highlight=False
        )

    def close(self) -> None:
        self.progress.stop()


def make_reporter(quiet: bool) -> Reporter:
    if not quiet and sys.stderr.isatty():
        return RichReporter()
    return PlainReporter(quiet)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
