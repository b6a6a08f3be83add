"""Reading files and JSON the user gave: every failure is one clear error with its line.

A file is stat-ed before it is read (no folders, pipes or devices; a size limit), and
parsed JSON is checked against promptgen.bounds: nesting depth, digits of a number,
and lone surrogates (`"\\ud800"`, which no UTF-8 file or model API accepts).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pydantic_core

from promptgen.bounds import MAX_INT_DIGITS, MAX_JSON_FILE_BYTES, MAX_NESTING, MB, dotted, too_deep
from promptgen.bounds import strings as data_strings
from promptgen.errors import BadInputError

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# The files read inside a `recording_reads()` block: a batch learns which files a prompt
# uses (its system role, samples, prompt file) without knowing each format's keys.
_READS: ContextVar[set[Path] | None] = ContextVar("promptgen_reads", default=None)


@contextmanager
def recording_reads() -> Iterator[set[Path]]:
    """Collect the resolved path of every file `read_limited` reads in this block."""
    reads: set[Path] = set()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def human_bytes(size: int) -> str:
    return f"{size / MB:,.0f} MB" if size >= MB else f"{size:,} bytes"


def _file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_limited(
    path: Path,
    limit: int,
    what: str,
    error: type[BadInputError] = BadInputError,
    *,
    report_as: str | Path | None = None,
    line: int | None = None,
) -> bytes:
    """The bytes of `path`, refusing (before reading anything) a folder, pipe, device or
    socket, and a file over `limit` bytes. A FIFO never blocks: it is refused on its stat,
    and the file is opened non-blocking and checked again. `report_as`/`line` say where
    the error is reported (default: the file itself)."""
    where: dict[str, Any] = {"file": report_as if report_as is not None else path, "line": line}
    name = "" if report_as is None else f" '{path}'"
    if "\x00" in str(path):
        raise error(f"{what}{name}: the path contains a NUL byte", hint="fix the path", **where)
    try:
        info = os.stat(path)
    except FileNotFoundError as err:
        raise error(f"{what}{name} not found", hint="check the path", **where) from err
    except (OSError, ValueError) as err:
        raise error(f"cannot read {what}{name}: {_reason(err)}", **where) from err
    _check_stat(info, limit, what, name, error, where)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise error(f"cannot read {what}{name}: {_reason(err)}", **where) from err
    try:
        _check_stat(os.fstat(fd), limit, what, name, error, where)  # replaced meanwhile?
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(8 * MB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise error(f"cannot read {what}{name}: {_reason(err)}", **where) from err
    finally:
        os.close(fd)
    if size > limit:  # grew after the stat
        raise error(_too_big(what, name, size, limit), hint=_SIZE_HINT, **where)
    reads = _READS.get()
    if reads is not None:
        reads.add(Path(path).resolve())
    return b"".join(chunks)


_SIZE_HINT = "split it, or trim what it holds"


def _too_big(what: str, name: str, size: int, limit: int) -> str:
    return f"{what}{name} is {human_bytes(size)}, over the {human_bytes(limit)} limit"


def _check_stat(
    info: os.stat_result,
    limit: int,
    what: str,
    name: str,
    error: type[BadInputError],
    where: dict[str, Any],
) -> None:
    kind = _file_kind(info.st_mode)
    if kind is not None:
        raise error(
            f"{what}{name} is {kind}, not a regular file", hint="pass a regular file", **where
        )
    if info.st_size > limit:
        raise error(_too_big(what, name, info.st_size, limit), hint=_SIZE_HINT, **where)


def _reason(err: BaseException) -> str:
    return getattr(err, "strerror", None) or str(err)


def may_hold_surrogates(text: str) -> bool:
    """Whether JSON text escapes a surrogate (only then are its strings searched)."""
    return bool(_ESCAPED_SURROGATE.search(text))


def check_data(
    data: Any,
    *,
    what: str,
    file: str | Path | None,
    line: int | None = None,
    error: type[BadInputError] = BadInputError,
    surrogates: bool = True,
) -> None:
    """Refuse data nested deeper than MAX_NESTING, or holding a lone surrogate."""
    path = too_deep(data)
    if path is not None:
        raise error(
            f"{what} nests lists and objects more than {MAX_NESTING} levels deep "
            f"(at {dotted(path)})",
            file=file,
            line=line,
            hint="flatten the data",
        )
    if surrogates:
        for where, text in data_strings(data):
            if LONE_SURROGATE.search(text):
                raise error(
                    f"{what} holds a lone surrogate (an unpaired \\ud800-\\udfff escape, "
                    f"not valid Unicode) at {dotted(where)}",
                    file=file,
                    line=line,
                    hint="remove the escape or pair it",
                )


def parse_json(
    text: str,
    *,
    what: str,
    file: str | Path | None,
    hint: str,
    error: type[BadInputError] = BadInputError,
    line: int | None = None,
    subject: str | None = None,
) -> Any:
    """Parse JSON text. `line` (when given) is where errors are reported instead of the
    line inside `text`, and `subject` names the text in messages (for a file that another
    file references); `what` names the data in limit messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(
            (f"{subject} is not valid JSON" if subject else "not valid JSON")
            + f": {err.msg}"
            + (f" (its line {err.lineno})" if line is not None else ""),
            file=file,
            line=line if line is not None else err.lineno,
            hint=hint,
        ) from err
    except RecursionError as err:
        raise error(
            f"{what} nests lists and objects more than {MAX_NESTING} levels deep",
            file=file,
            line=line,
            hint="flatten the data",
        ) from err
    except ValueError as err:  # a number past Python's int-to-text limit
        raise error(
            f"{what} holds a number with more than {MAX_INT_DIGITS:,} digits",
            file=file,
            line=line,
            hint="write it as a string",
        ) from err
    surrogates = may_hold_surrogates(text)
    try:
        check_data(data, what=what, file=file, line=line, error=error, surrogates=surrogates)
    except BadInputError as err:
        if line is None and "surrogate" in err.message:
            found = _LONE_ESCAPE.search(text)
            err.line = text.count("\n", 0, found.start()) + 1 if found else None
        raise
    return data


def dump_text(data: Any, indent: int | None = None) -> str:
    """`data` (plain JSON values) as JSON text, non-ASCII kept: indented by `indent`, or
    compact without spaces. pydantic_core's encoder, falling back to the standard one
    for what it refuses (a lone surrogate: the same error the file write would raise)."""
    try:
        return pydantic_core.to_json(data, indent=indent).decode("utf-8")
    except pydantic_core.PydanticSerializationError:
        separators = (",", ":") if indent is None else None
        return json.dumps(data, indent=indent, separators=separators, ensure_ascii=False)


def read_json(
    path: Path,
    what: str,
    hint: str,
    error: type[BadInputError] = BadInputError,
    *,
    limit: int = MAX_JSON_FILE_BYTES,
) -> Any:
    """Parse `path`; `what` names the file in messages, `hint` says how to fix bad JSON."""
    data = read_limited(path, limit, what, error)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise error(
            f"{what} is not valid UTF-8 text", file=path, line=line, hint="save it as UTF-8"
        ) from err
    return parse_json(text, what=what, file=path, hint=hint, error=error)
