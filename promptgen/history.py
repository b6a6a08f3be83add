"""The versions of a prompt's run kept in its output folder (docs/iterate.md).

When the prompt of a run has been edited, the run of the version before is kept as
`OUT/history/<version>/context.json`, beside `prompt.txt` (the prompt as that version
had it, in the readable form diffs are made of), and the run continues in
`OUT/context.json`. A version is the short content hash of the prompt
(`PromptUnderTest.content_hash`): what changes what is generated from it.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from promptgen.context import Context, load_context, save_context, write_atomic
from promptgen.errors import BadInputError
from promptgen.model import PromptUnderTest
from promptgen.secrets import redact

HISTORY = "history"
CONTEXT_FILE = "context.json"
PROMPT_TEXT = "prompt.txt"
VERSION_LENGTH = 10
CURRENT = "current"  # OUT@current: the run in OUT itself


def version_of(ctx: Context) -> str:
    """The version a run is of: the short content hash of its prompt."""
    return (ctx.prompt_hash or ctx.prompt.content_hash())[:VERSION_LENGTH]


def prompt_text(prompt: PromptUnderTest) -> str:
    """The prompt as a diff shows it: each message under its role, then what else a
    version can change (inputs, model parameters, scenarios, instructions, the author's
    test rows), one sorted JSON line each."""
    lines: list[str] = []
    variants = prompt.variants or []
    groups = [(v.name, v.messages) for v in variants] or [("", prompt.messages)]
    for name, messages in groups:
        if name:
            lines.append(f"=== {name}")
        for message in messages:
            label = message.role + (f" ({message.variable})" if message.variable else "")
            lines.append(f"--- {label}")
            lines.extend(message.content.splitlines() or [""])
    inputs = {k: v.model_dump(mode="json", exclude_defaults=True) for k, v in prompt.inputs.items()}
    extras = {
        "inputs": inputs,
        "parameters": redact(prompt.model.parameters),
        "response_format": prompt.model.response_format,
        "scenarios": [s.model_dump(mode="json", exclude_defaults=True) for s in prompt.scenarios],
        "instructions": prompt.instructions.model_dump(mode="json", exclude_none=True),
    }
    for key, value in extras.items():
        if value:
            lines.append(f"--- {key}")
            lines.append(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))
    if prompt.test_samples:
        lines.append("--- author tests")
        for sample in prompt.test_samples:
            row = sample.model_dump(mode="json", exclude={"source"}, exclude_none=True)
            lines.append(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str))
    return "\n".join(lines) + "\n"


def prompt_diff(then: PromptUnderTest, now: PromptUnderTest, *, labels: tuple[str, str]) -> str:
    """A unified diff of two versions' prompt text ('' when they read the same)."""
    return "".join(
        difflib.unified_diff(
            prompt_text(then).splitlines(keepends=True),
            prompt_text(now).splitlines(keepends=True),
            fromfile=labels[0],
            tofile=labels[1],
        )
    )


def save(out: Path, ctx: Context) -> Path:
    """Keep `ctx` (a finished or partial run) as its version's history; returns the
    folder. A version already kept is written again (the later run of it wins)."""
    folder = out / HISTORY / version_of(ctx)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(prompt_text(ctx.prompt), folder / PROMPT_TEXT)
    save_context(ctx, folder / CONTEXT_FILE)
    return folder


@dataclass(frozen=True)
class Version:
    """One version of the run in an output folder."""

    version: str
    path: Path  # its context.json
    current: bool  # OUT/context.json itself, not a copy in history/


def finished_at(ctx: Context) -> datetime | None:
    """When the run last finished a stage (None: no stage finished)."""
    times = [r.finished_at for r in ctx.stages.values() if r.finished_at is not None]
    return max(times) if times else None


def versions(out: Path) -> list[tuple[Version, Context]]:
    """Every version in `out` with its run, oldest first, the current one last."""
    found: list[tuple[Version, Context]] = []
    history = out / HISTORY
    if history.is_dir():
        for folder in sorted(p for p in history.iterdir() if (p / CONTEXT_FILE).is_file()):
            ctx = load_context(folder / CONTEXT_FILE)
            found.append((Version(folder.name, folder / CONTEXT_FILE, False), ctx))
    found.sort(key=lambda pair: (finished_at(pair[1]) is None, finished_at(pair[1]) or 0))
    current = out / CONTEXT_FILE
    if current.is_file():
        ctx = load_context(current)
        mine = version_of(ctx)
        found = [pair for pair in found if pair[0].version != mine]
        found.append((Version(mine, current, True), ctx))
    return found


def find(out: Path, version: str) -> Path:
    """The context.json of `version` in `out` (a prefix of its hash is enough; `current`
    is the run in `out` itself). An unknown or ambiguous version is bad input that lists
    the versions there are."""
    history = out / HISTORY
    current = out / CONTEXT_FILE
    names = []
    if history.is_dir():
        names = sorted(p.name for p in history.iterdir() if (p / CONTEXT_FILE).is_file())
    mine = version_of(load_context(current)) if current.is_file() else None
    if version == CURRENT or (mine is not None and version and mine.startswith(version)):
        if mine is None:
            raise BadInputError(f"{out}: no current run (no {CONTEXT_FILE})")
        return current
    matches = [n for n in names if version and n.startswith(version)]
    if len(matches) == 1:
        return history / matches[0] / CONTEXT_FILE
    known = [*(n for n in names if n != mine), *([f"{mine} (current)"] if mine else [])]
    if not matches:
        raise BadInputError(
            f"{out}: no version {version!r} (versions: {', '.join(known) or 'none'})",
            hint=f"run `promptgen history {out}` to list them",
        )
    raise BadInputError(
        f"{out}: version {version!r} is ambiguous ({', '.join(matches)})",
        hint="give more of its hash",
    )
