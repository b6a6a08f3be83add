"""Loader for Promptarchitect prompt files: Markdown with YAML frontmatter, one engineered
prompt (`.prompt`, or a `.md`/`.txt` whose frontmatter has Promptarchitect keys).

As a PromptUnderTest (docs/promptarchitect.md):
- messages: a system message (the `system_role` file, else `system_role_text`, else a
  default: Promptarchitect always sends one) and the body as the one user message, a
  Mustache template; ` {{input}}` is appended when the body does not use `input`, as
  Promptarchitect does.
- model: `provider` and `model`; the parameters of `parameters:` (its docs) and the flat
  keys temperature, max_tokens, top_p, presence_penalty, frequency_penalty (its code;
  a flat key wins).
- test_samples: the sample files in `test_path` (pa_samples.py).
- inputs: `input` (a sample's body), every placeholder, every sample property and every
  field a metric test reads.
- extra["promptarchitect"]: the tests, normalised by pa_tests.py, and the metadata.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from promptgen.bounds import MAX_DATA_FILE_BYTES, printable
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats import declared
from promptgen.formats.body import read_frontmatter, split_frontmatter
from promptgen.formats.common import check_parameters, strip_suffix
from promptgen.formats.pa_samples import read_samples
from promptgen.formats.pa_tests import Where, fields_read, read_tests
from promptgen.formats.refs import RefResolver
from promptgen.jsonio import read_limited
from promptgen.model import Message, ModelConfig, PromptInput, PromptUnderTest, TestSample
from promptgen.rendering.render import check_syntax, template_variables

PARAMETERS = ("temperature", "max_tokens", "top_p", "presence_penalty", "frequency_penalty")
METADATA = ("prompt_version", "author", "date_created", "description", "input", "output",
            "output_format")  # fmt: skip
KEYS = ("provider", "model", "parameters", *PARAMETERS, *METADATA, "test_path", "tests",
        "system_role", "system_role_text")  # fmt: skip
DEFAULT_SYSTEM = "You are an assistant. Carry out the request in the user's message carefully."
INPUT = "input"
INPUT_TEXT = "The text the prompt works on (the body of a test sample file)."
_SUFFIXES = (".prompt", ".md", ".markdown", ".txt")


def load(path: Path, text: str) -> PromptUnderTest:
    """A Promptarchitect prompt file as a prompt under test (see the module docstring)."""
    file = str(path)
    split = split_frontmatter(text, file)
    raw, lines = read_frontmatter(split.frontmatter, split.frontmatter_line, file)
    where = Where(file, lines)
    for key in raw:
        if key not in KEYS:
            where.warn(f"unknown Promptarchitect key '{printable(key)}' kept as is", key)
    texts = {
        k: _text(raw, k, where)
        for k in ("provider", "model", *METADATA, "test_path", "system_role", "system_role_text")
    }
    tests = read_tests(raw.get("tests"), where)
    system, system_line = _system(path, texts, where)
    user, user_line = _user(split.body, split.body_line, file)
    samples = read_samples(path, texts["test_path"], where) if texts["test_path"] else []
    messages = [
        Message(role="system", content=system, line=system_line),
        Message(role="user", content=user, line=user_line),
    ]
    metadata = {k: texts[k] for k in METADATA if texts[k] is not None}
    facts = {"tests": tests, "metadata": metadata}
    facts |= {k: texts[k] for k in ("test_path", "system_role") if texts[k] is not None}
    prompt = PromptUnderTest(
        name=strip_suffix(path.name, _SUFFIXES) or "prompt",
        description=texts["description"],
        source=file,
        format="promptarchitect",
        model=ModelConfig(
            id=texts["model"], provider=texts["provider"], parameters=_parameters(raw, where)
        ),
        inputs=_inputs(messages, samples, fields_read(tests)),
        messages=messages,
        test_samples=samples,
        template_engine="mustache",
        frontmatter=raw,
        extra={"promptarchitect": facts, **{k: v for k, v in raw.items() if k not in KEYS}},
        warnings=where.warnings,
    )
    return prompt


def _text(raw: dict[str, Any], key: str, where: Where) -> str | None:
    """A text key; a version may be a number and a date a YAML date (both kept as text)."""
    value = raw.get(key)
    if value is None:
        return None
    if key == "date_created" and isinstance(value, datetime.date):
        return value.isoformat()
    if key == "prompt_version" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise where.error(f"'{printable(key)}' should be text", key)
    return value


def _parameters(raw: dict[str, Any], where: Where) -> dict[str, Any]:
    """`parameters:` (the docs) overlaid by the flat keys (the code reads only those)."""
    block = raw.get("parameters")
    if block is not None and not isinstance(block, dict):
        raise where.error(
            "'parameters' should be a mapping (temperature, max_tokens, ...)", "parameters"
        )
    block = dict(block or {})
    flat = {k: raw[k] for k in PARAMETERS if raw.get(k) is not None}
    common: dict[str, Any] = {"file": where.file, "lines": where.lines, "what": "frontmatter"}
    check_parameters(block, ("parameters",), **common)
    check_parameters(flat, (), **common)
    for key, value in flat.items():
        if key in block and block[key] != value:
            where.warn(
                f"'{key}' is set twice: the top-level {value!r} is used, not "
                f"parameters.{key} {block[key]!r}",
                key,
            )
    params = {**block, **flat}
    for key, said in declared.problems(params):  # the flat keys are all sent
        where.warn(f"model parameter {said}", "parameters", key)
    return params


def _system(path: Path, texts: dict[str, str | None], where: Where) -> tuple[str, int | None]:
    """The system message and its line: the `system_role` file (inside the prompt's
    folder), else `system_role_text`, else promptgen's default."""
    relative = texts["system_role"]
    if relative is None:
        given = texts["system_role_text"]
        line = where.line("system_role_text") if given is not None else None
        content = given.strip() if given and given.strip() else DEFAULT_SYSTEM
        return _checked(content, where.file, line), line
    line = where.line("system_role")
    resolver = RefResolver(path.parent, where.file, where.lines)
    target = resolver.contained_path(relative, ("system_role",), "system_role file")
    data = read_limited(
        target,
        MAX_DATA_FILE_BYTES,
        "system_role file",
        PromptFormatError,
        report_as=where.file,
        line=line,
    )
    try:
        content = data.decode("utf-8-sig").strip()
    except UnicodeDecodeError as err:
        raise where.error(
            f"system_role file '{printable(relative)}' is not UTF-8 text",
            "system_role",
            hint="save it as UTF-8",
        ) from err
    if not content:
        raise where.error(
            f"system_role file '{printable(relative)}' is empty",
            "system_role",
            hint="write the system message into it",
        )
    return _checked(content, where.file, line), line


def _user(body: str, body_line: int, file: str) -> tuple[str, int]:
    """The body as the user message, with ` {{input}}` appended when it does not use
    `input` (the sample's body has to go somewhere, as in Promptarchitect)."""
    content = body.strip()
    line = body_line + body[: len(body) - len(body.lstrip())].count("\n")
    _checked(content, file, line)
    if INPUT not in template_variables(content, "mustache"):
        content = f"{content} {{{{{INPUT}}}}}" if content else f"{{{{{INPUT}}}}}"
    return content, line


def _checked(content: str, file: str, line: int | None) -> str:
    try:
        check_syntax(content, "mustache")
    except RenderError as err:
        err.file = file
        err.line = (line or 1) + (err.line or 1) - 1 if line else err.line
        raise
    return content


_KINDS = {bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}


def _inputs(
    messages: list[Message], samples: list[TestSample], fields: dict[str, str]
) -> dict[str, PromptInput]:
    """`input`, the placeholders (in order of use), then the samples' other properties and
    the fields metric tests read. A placeholder a sample leaves out renders empty, as
    chevron renders it in Promptarchitect."""
    used = [n for m in messages for n in template_variables(m.content, "mustache")]
    names = [*used, *(k for s in samples for k in s.inputs), *fields]
    inputs: dict[str, PromptInput] = {}
    for name in dict.fromkeys(names):
        sample = next((s.inputs[name] for s in samples if name in s.inputs), None)
        inputs[name] = PromptInput(
            name=name,
            type=_KINDS.get(type(sample), "string"),
            description=INPUT_TEXT if name == INPUT else fields.get(name),
            default="" if name in used and name != INPUT else None,
            sample=sample,
            detected=name in used,
        )
    return inputs
