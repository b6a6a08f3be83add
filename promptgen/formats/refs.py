"""`${env:VAR}`, `${env:VAR:default}` and `${file:path}` references in frontmatter values."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from promptgen.errors import PromptFormatError
from promptgen.yamlpos import Path_, line_of

_REF = re.compile(r"^\$\{(env|file):(.*)\}$", re.S)
# Connection and tool settings are the provider's business; promptgen takes credentials from
# its own configuration and calls no tools, so an unset variable there only warns.
_LENIENT_ROOTS = {"model", "tools"}


@dataclass
class RefResolver:
    base_dir: Path
    file: str
    lines: dict[Path_, int]
    warnings: list[str] = field(default_factory=list)

    def resolve(self, value: Any, path: Path_ = ()) -> Any:
        if isinstance(value, dict):
            return {k: self.resolve(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, str):
            match = _REF.match(value.strip())
            if match:
                kind, arg = match.groups()
                return self._env(arg, path) if kind == "env" else self.read_file(arg, path)
        return value

    def _env(self, arg: str, path: Path_) -> Any:
        name, sep, default = arg.partition(":")
        if name in os.environ:
            return os.environ[name]
        if sep:
            return default
        where = ".".join(str(p) for p in path)
        if path and path[0] in _LENIENT_ROOTS:
            self.warnings.append(
                f"{self.file}:{line_of(self.lines, path) or '?'}: environment variable "
                f"'{name}' (used by '{where}') is not set; left as is"
            )
            return f"${{env:{arg}}}"
        raise PromptFormatError(
            f"environment variable '{name}' is not set (used by '{where}')",
            file=self.file,
            line=line_of(self.lines, path),
            hint=f"set {name} or write ${{env:{name}:default}}",
        )

    def contained_path(self, relative: str, path: Path_, what: str) -> Path:
        """`relative` resolved against the prompt's folder; it may not escape that folder."""
        root = self.base_dir.resolve()
        target = (root / relative).resolve()
        line = line_of(self.lines, path)
        if target != root and root not in target.parents:
            raise PromptFormatError(
                f"{what} '{relative}' is outside allowed roots (the prompt's folder)",
                file=self.file,
                line=line,
                hint="move the file next to the prompt or into a subfolder",
            )
        if not target.is_file():
            raise PromptFormatError(
                f"{what} '{relative}' not found (looked for {target})",
                file=self.file,
                line=line,
                hint="fix the path; it is relative to the prompt file",
            )
        return target

    def read_file(self, relative: str, path: Path_) -> Any:
        target = self.contained_path(relative.strip(), path, "${file:} reference")
        return read_data_file(target, self.file, line_of(self.lines, path))


def read_data_file(target: Path, file: str, line: int | None) -> Any:
    """Parse a referenced file by its extension: JSON, JSON Lines, YAML, or plain text."""
    try:
        text = target.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise PromptFormatError(
            f"cannot read '{target.name}': {err}", file=file, line=line, hint="use a UTF-8 file"
        ) from err
    suffix = target.suffix.lower()
    try:
        if suffix == ".json":
            return json.loads(text)
        if suffix == ".jsonl":
            return [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        if suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        if suffix == ".csv":
            return list(csv.DictReader(io.StringIO(text)))
    except (json.JSONDecodeError, yaml.YAMLError, csv.Error) as err:
        raise PromptFormatError(
            f"'{target.name}' is not valid {suffix[1:].upper()}: {str(err).splitlines()[0]}",
            file=file,
            line=line,
            hint=f"fix {target}",
        ) from err
    return text
