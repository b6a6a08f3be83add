"""`.env` updated in place (other lines kept), and kept out of git.

Keys live only here: promptgen.toml is often committed, `.env` must never be.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dotenv import dotenv_values

_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
_IGNORED = {".env", "/.env", ".env*", "/.env*", "*.env"}


def read_env(path: Path) -> dict[str, str]:
    """The variables a `.env` sets, as python-dotenv (which promptgen loads it with) reads them."""
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def quote(value: str) -> str:
    """A value python-dotenv reads back unchanged: single quotes take everything literally
    except a single quote, so those values go in double quotes with escapes."""
    if "\n" in value or "\r" in value:
        raise ValueError("a value in .env cannot span lines")
    if "${" in value:  # python-dotenv expands ${NAME} even in quotes; it has no escape
        raise ValueError("a value in .env cannot hold '${'")
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def update_env(path: Path, values: dict[str, str]) -> list[str]:
    """Set `values` in the file (replacing each variable's line, appending new ones) and
    return the names that changed. The file is readable by its owner only."""
    current = read_env(path)
    changed = [k for k, v in values.items() if current.get(k) != v]
    if not changed:
        return []
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    done: set[str] = set()
    out: list[str] = []
    for line in lines:
        match = _ASSIGN.match(line)
        name = match.group(1) if match else None
        if name in values:
            if name not in done:  # a variable set twice keeps one line
                out.append(f"{name}={quote(values[name])}")
                done.add(name)
            continue
        out.append(line)
    out.extend(f"{k}={quote(v)}" for k, v in values.items() if k not in done)
    _write_private(path, "\n".join(out) + "\n")
    return changed


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its mode through O_TRUNC


def git_root(folder: Path) -> Path | None:
    """The working tree `folder` is in (a `.git` folder, or file for worktrees), if any."""
    for candidate in (folder.resolve(), *folder.resolve().parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def ignore_env(folder: Path) -> Path | None:
    """Add `.env` to `folder/.gitignore` once when `folder` is in a git working tree;
    the file changed, or None (not in git, or already ignored there)."""
    if git_root(folder) is None:
        return None
    path = folder / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if any(line.strip() in _IGNORED for line in text.splitlines()):
        return None
    prefix = "" if not text or text.endswith("\n") else "\n"
    path.write_text(f"{text}{prefix}.env\n", encoding="utf-8")
    return path


def mask(secret: str) -> str:
    """Enough of a key to recognise it, never all of it."""
    if len(secret) < 12:
        return "*" * 4
    return f"{secret[:3]}...{secret[-4:]}"
