"""`${env:VAR}`, `${env:VAR:default}` and `${file:path}` references in frontmatter values.

A prompt file reads only the variables the user allows (`--allow-env NAME`, set with
`allow_env` around the loading); what it reads is registered with the scrubber, so it
is blanked in everything written (docs/formats.md#env-and-file-references).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from promptgen.bounds import MAX_DATA_FILE_BYTES, printable
from promptgen.errors import BadInputError, PromptFormatError
from promptgen.jsonio import check_data, may_hold_surrogates, parse_json, read_limited
from promptgen.secrets import is_secret_name, register
from promptgen.yamlpos import Path_, line_of, load_yaml, yaml_error_line, yaml_error_text

_REF = re.compile(r"^\$\{(env|file):(.*)\}$", re.S)
# Connection and tool settings are the provider's business; promptgen takes credentials from
# its own configuration and calls no tools, so an unset variable there only warns.
_LENIENT_ROOTS = {"model", "tools"}
# The variables `${env:}` may read: only those the user named (--allow-env).
_ALLOWED: ContextVar[frozenset[str]] = ContextVar("allowed_env", default=frozenset())
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ALLOW_FLAG = "--allow-env"


def env_names(values: Iterable[str]) -> list[str]:
    """`--allow-env` values (`"A,B"` or the flag repeated) -> variable names, checked."""
    names = [n.strip() for v in values for n in str(v).split(",") if n.strip()]
    if not names:
        raise BadInputError(f"{ALLOW_FLAG} is empty; give a variable name or drop the flag")
    for name in names:
        if not _NAME.fullmatch(name):
            raise BadInputError(
                f"{ALLOW_FLAG} {printable(name)!r}: not a variable name",
                hint="give names such as PROMPT_INTENT, comma-separated or the flag repeated",
            )
    return list(dict.fromkeys(names))


def set_allowed_env(names: Iterable[str]) -> None:
    """Allow `${env:}` to read `names` from now on in this context (the command line)."""
    _ALLOWED.set(frozenset(names))


@contextmanager
def allow_env(names: Iterable[str]) -> Iterator[None]:
    """Allow `${env:}` to read `names` while a prompt is loaded (the library API)."""
    token = _ALLOWED.set(_ALLOWED.get() | frozenset(names))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


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
        where = ".".join(str(p) for p in path)
        if name not in _ALLOWED.get():
            return self._not_allowed(name, arg, path, where)
        if name in os.environ:
            value = os.environ[name]
            register(value)  # blanked in every file, report and line written
            return value
        if sep:
            return default
        if path and path[0] in _LENIENT_ROOTS:
            self.warnings.append(
                f"{self.file}:{line_of(self.lines, path) or '?'}: environment variable "
                f"'{printable(name)}' (used by '{printable(where)}') is not set; left as is"
            )
            return f"${{env:{arg}}}"
        raise PromptFormatError(
            f"environment variable '{printable(name)}' is not set (used by '{printable(where)}')",
            file=self.file,
            line=line_of(self.lines, path),
            hint=f"set {name} or write ${{env:{name}:default}}",
        )

    def _not_allowed(self, name: str, arg: str, path: Path_, where: str) -> str:
        """A variable the user did not allow: refused, or under `model` or `tools`
        (connection settings promptgen does not use) left unread with a warning."""
        line = line_of(self.lines, path)
        kind = "a credential's name" if is_secret_name(name) else "not allowed"
        if path and path[0] in _LENIENT_ROOTS:
            self.warnings.append(
                f"{self.file}:{line or '?'}: environment variable '{printable(name)}' (used "
                f"by '{printable(where)}') is not read ({kind}); left as is (allow it with "
                f"{ALLOW_FLAG} {printable(name)})"
            )
            return f"${{env:{arg}}}"
        raise PromptFormatError(
            f"environment variable '{printable(name)}' may not be read ({kind}; used by "
            f"'{printable(where)}')",
            file=self.file,
            line=line,
            hint=f"allow it with {ALLOW_FLAG} {printable(name)}; a prompt file cannot allow it",
        )

    def contained_path(self, relative: str, path: Path_, what: str) -> Path:
        """`relative` resolved against the prompt's folder; it may not escape that folder."""
        line = line_of(self.lines, path)
        if "\x00" in relative:
            raise PromptFormatError(
                f"{what} {relative!r} contains a NUL byte",
                file=self.file,
                line=line,
                hint="fix the path",
            )
        root = self.base_dir.resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise PromptFormatError(
                f"{what} '{printable(relative)}' is outside allowed roots (the prompt's folder)",
                file=self.file,
                line=line,
                hint="move the file next to the prompt or into a subfolder",
            )
        try:
            mode = target.stat().st_mode
        except OSError:
            mode = None
        if mode is None or stat.S_ISDIR(mode):
            raise PromptFormatError(
                f"{what} '{printable(relative)}' not found (looked for {printable(target)})",
                file=self.file,
                line=line,
                hint="fix the path; it is relative to the prompt file",
            )
        if not stat.S_ISREG(mode):  # a pipe would block, a device never ends
            raise PromptFormatError(
                f"{what} '{printable(relative)}' is not a regular file",
                file=self.file,
                line=line,
                hint="point it at a regular file",
            )
        return target

    def read_file(self, relative: str, path: Path_) -> Any:
        target = self.contained_path(relative.strip(), path, "${file:} reference")
        return read_data_file(target, self.file, line_of(self.lines, path))


def read_data_file(target: Path, file: str, line: int | None) -> Any:
    """Parse a referenced file by its extension: JSON, JSON Lines, YAML, or plain text.

    Errors are reported at the reference (`file`:`line`) and name the data file."""
    data = read_limited(
        target, MAX_DATA_FILE_BYTES, "data file", PromptFormatError, report_as=file, line=line
    )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise PromptFormatError(
            f"cannot read '{target.name}': not valid UTF-8",
            file=file,
            line=line,
            hint="use a UTF-8 file",
        ) from err
    suffix = target.suffix.lower()
    name = f"'{target.name}'"
    where: dict[str, Any] = {"file": file, "line": line, "error": PromptFormatError}
    if suffix == ".json":
        return parse_json(text, what=name, subject=name, hint=f"fix {target}", **where)
    if suffix == ".jsonl":
        return _json_lines(text, name, f"fix {target}", where)
    if suffix in (".yaml", ".yml"):
        try:
            value = load_yaml(text).data
        except yaml.YAMLError as err:
            at = yaml_error_line(err)
            raise PromptFormatError(
                f"{name} is not valid YAML: {yaml_error_text(err)}"
                + (f" (its line {at})" if at else ""),
                file=file,
                line=line,
                hint=f"fix {target}",
            ) from err
        return value  # load_yaml checked its nesting and strings
    if suffix == ".csv":
        try:
            return list(csv.DictReader(io.StringIO(text)))
        except csv.Error as err:
            raise PromptFormatError(
                f"{name} is not valid CSV: {err}", file=file, line=line, hint=f"fix {target}"
            ) from err
    return text


def _json_lines(text: str, name: str, hint: str, where: dict[str, Any]) -> list[Any]:
    rows = []
    for i, row in enumerate(text.splitlines(), 1):
        if not row.strip():
            continue
        try:
            rows.append(json.loads(row))
        except (ValueError, RecursionError):  # the same row again, for the clear message
            parse_json(row, what=f"{name} line {i}", subject=f"{name} line {i}", hint=hint, **where)
    check_data(rows, what=name, surrogates=may_hold_surrogates(text), **where)
    return rows
