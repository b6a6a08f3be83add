"""The parts of an LVE (lve-org/lve) that are not `test.json`: its messages, its `.prompt`
files and its recorded instances (`instances/*.jsonl`).

A message is `{"content", "role", "variable", "image_url"}`; `role` is user (the
default), system or assistant. An assistant message with `content: null` is written by
the model under test (multi-step prompts), named by its `variable`.

A `.prompt` file is read as LVE reads it: `<please fill in>` is no prompt yet; text whose
every (non-blank) line is a JSON object is one message per line; one JSON object over
several lines is one message (LVE's own code means to accept it but refuses it by a
bug); anything else is the text of one user message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptgen.bounds import MAX_DATA_FILE_BYTES, MAX_MESSAGES, printable
from promptgen.errors import PromptFormatError
from promptgen.jsonio import check_data, read_limited

LVE_ROLES = ("user", "system", "assistant")
MESSAGE_KEYS = ("content", "role", "variable", "image_url")
PLACEHOLDER = "<please fill in>"
MAX_INSTANCES = 100_000


@dataclass(frozen=True)
class LveMessage:
    content: str | None
    role: str = "user"
    variable: str | None = None
    image_url: str | None = None
    line: int | None = None

    @property
    def to_fill(self) -> bool:
        return self.role == "assistant" and self.content is None


def read_message(value: Any, file: str, line: int | None, where: str) -> LveMessage:
    """One message object, checked."""
    if not isinstance(value, dict):
        raise PromptFormatError(
            f"{where}: a message is an object with content and role, got {type(value).__name__}",
            file=file,
            line=line,
            hint='write {"content": "...", "role": "user"}',
        )
    unknown = [k for k in value if k not in MESSAGE_KEYS]
    if unknown:
        raise PromptFormatError(
            f"{where}: unknown message key '{printable(unknown[0])}'",
            file=file,
            line=line,
            hint="a message has " + ", ".join(MESSAGE_KEYS),
        )
    role = value.get("role", "user")
    if role not in LVE_ROLES:
        raise PromptFormatError(
            f"{where}: role '{printable(role)}' is not one of {', '.join(LVE_ROLES)}",
            file=file,
            line=line,
            hint="LVE prompts have user, system and assistant messages",
        )
    content, variable, image = (value.get(k) for k in ("content", "variable", "image_url"))
    for key, item in (("content", content), ("variable", variable), ("image_url", image)):
        if item is not None and not isinstance(item, str):
            raise PromptFormatError(
                f"{where}: '{key}' should be text, got {type(item).__name__}",
                file=file,
                line=line,
                hint="write it as a JSON string",
            )
    if content is None and role != "assistant":
        raise PromptFormatError(
            f"{where}: a {role} message needs content",
            file=file,
            line=line,
            hint="only an assistant message may have content null (the model writes it)",
        )
    if variable is not None and not variable.strip():
        raise PromptFormatError(f"{where}: 'variable' is empty", file=file, line=line)
    return LveMessage(content, role, variable, image, line)


def check_messages(messages: list[LveMessage], file: str, line: int | None, where: str) -> None:
    """LVE's rules for a whole prompt: at most MAX_MESSAGES, and with more than one
    assistant message, every assistant message names its variable (distinct names)."""
    if not messages:
        raise PromptFormatError(f"{where}: the prompt has no messages", file=file, line=line)
    if len(messages) > MAX_MESSAGES:
        raise PromptFormatError(
            f"{where}: {len(messages):,} messages; promptgen takes at most {MAX_MESSAGES:,}",
            file=file,
            line=line,
        )
    assistants = [m for m in messages if m.role == "assistant"]
    if len(assistants) > 1 and any(m.variable is None for m in assistants):
        unnamed = next(m for m in assistants if m.variable is None)
        raise PromptFormatError(
            f"{where}: with several assistant messages, each needs a 'variable' name",
            file=file,
            line=unnamed.line or line,
            hint='e.g. {"role": "assistant", "variable": "answer1"}',
        )
    names = [m.variable for m in assistants if m.variable is not None]
    repeated = next((n for n in names if names.count(n) > 1), None)
    if repeated is not None:
        raise PromptFormatError(
            f"{where}: two assistant messages are named '{printable(repeated)}'",
            file=file,
            line=line,
            hint="give each step its own variable name",
        )


def read_prompt_text(text: str, file: str) -> list[LveMessage] | None:
    """The messages of a `.prompt` file (None: `<please fill in>`)."""
    if text.strip() == PLACEHOLDER:
        return None
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    parsed = _json_lines(lines)
    if parsed is not None:
        messages = [read_message(value, file, number, f"line {number}") for number, value in parsed]
    else:
        whole = _json(text)
        if isinstance(whole, dict):
            messages = [read_message(whole, file, 1, "the message")]
        else:
            messages = [LveMessage(content=text, role="user", line=1)]
    check_messages(messages, file, 1, "the prompt")
    return messages


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _json_lines(lines: list[tuple[int, str]]) -> list[tuple[int, Any]] | None:
    """Each line as JSON, or None when a line is not a JSON object."""
    parsed = []
    for number, line in lines:
        value = _json(line)
        if not isinstance(value, dict):
            return None
        parsed.append((number, value))
    return parsed or None


@dataclass(frozen=True)
class Instance:
    """One recorded run of an LVE: its arguments (prompt parameters and model
    arguments together), the response (text; variables for a multi-step prompt; a list
    for a multi-run one) and whether it was safe (`passed`; missing means passed, as in
    LVE; null: not checked, e.g. a skeleton line promptgen exported before any run)."""

    args: dict[str, Any]
    response: Any
    passed: bool | None
    author: str | None
    file: Path
    line: int


def read_instances(folder: Path, gone: list[Path] | None = None) -> list[Instance]:
    """Every instance of `folder/instances/*` (JSON lines), in file then line order. A
    file listed but gone when read (deleted meanwhile, a dangling link) is skipped and
    added to `gone`."""
    found: list[Instance] = []
    root = folder / "instances"
    if not root.is_dir():
        return found
    try:
        listed = sorted(
            p
            for p in root.iterdir()
            if (p.is_file() or p.is_symlink()) and not p.name.startswith(".")
        )
    except FileNotFoundError:  # the folder itself went away after is_dir()
        return found
    for path in listed:
        try:
            data = read_limited(path, MAX_DATA_FILE_BYTES, "instances file", PromptFormatError)
        except PromptFormatError:
            if path.exists():
                raise
            if gone is not None:
                gone.append(path)
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if line.strip():
                found.append(_instance(line, path, number))
            if len(found) > MAX_INSTANCES:
                raise PromptFormatError(
                    f"more than {MAX_INSTANCES:,} instances", file=path, line=number
                )
    return found


def _instance(line: str, path: Path, number: int) -> Instance:
    hint = 'each line is {"args": {...}, "response": ..., "passed": true|false}'
    value = _json(line)
    if not isinstance(value, dict):
        raise PromptFormatError("not a JSON object", file=path, line=number, hint=hint)
    check_data(value, what="the instance", file=path, line=number, error=PromptFormatError)
    args, passed = value.get("args", {}), value.get("passed", True)
    if not isinstance(args, dict) or "response" not in value or not isinstance(passed, bool | None):
        raise PromptFormatError(
            "an instance needs 'args' (an object), a 'response' and a true/false 'passed'",
            file=path,
            line=number,
            hint=hint,
        )
    author = value.get("author")
    return Instance(args, value["response"], passed, author if isinstance(author, str) else None,
                    path, number)  # fmt: skip


def split_args(
    args: dict[str, Any], parameters: list[str] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An instance's arguments as (prompt parameters, model arguments), as LVE splits
    them: null values dropped; with no declared parameters, every argument is a model's."""
    params, model_args = {}, {}
    for key, value in args.items():
        if value is None:
            continue
        if parameters is not None and key in parameters:
            params[key] = value
        else:
            model_args[key] = value
    return params, model_args


_MODEL_DIR = re.compile(r"^[A-Za-z0-9._-]+--[A-Za-z0-9._-]+$")


def lve_names(folder: Path) -> tuple[str | None, str]:
    """(category, name) of the LVE in `folder`: under a `repository/` folder, the first
    folder after it and the folder above the model folder (`openai--gpt-4`)."""
    parts = folder.resolve().parts
    after = parts[parts.index("repository") + 1 :] if "repository" in parts else ()
    category = after[0] if after else None
    model_dir = bool(_MODEL_DIR.match(folder.name))
    name = folder.parent.name if model_dir and len(parts) > 1 else folder.name
    return category, name


def model_dir(model: str) -> str:
    """LVE's folder name for a model (`openai/gpt-4` -> `openai--gpt-4`): `/` becomes
    `--`, other characters but letters, digits, `-`, `_` and `.` are dropped."""
    return "".join(c for c in model.replace("/", "--") if c.isalnum() or c in "-_.") or "model"
