"""Find the data folders (prompts/, schemas/) from an installed wheel or a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`prompts` or `schemas`: inside the package when installed, at the repo root in a checkout."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"promptgen data folder '{name}' is missing; reinstall promptgen")
