"""Loader for Verdict-style templates (`*.verdict.md`, `*.verdict.txt`, or a .md/.txt
whose body has `@system` / `@user` / `@no_format` lines): optional YAML frontmatter and a
body read by promptgen.rendering.verdict_template.

As a prompt under test: `name`, `description`, `model`, `inputs` and `tags` are read;
the inputs the placeholders read off `source`/`input` are added. The judge keys (`scale`,
`explanation`, `judges`, `pool`, `pass`, `rubric`) are checked here, with their lines,
and kept normalised in `extra["verdict"]`; evaluation/verdict_judge.py runs them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from promptgen.bounds import printable
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats.body import read_frontmatter, split_frontmatter
from promptgen.formats.common import detect_inputs, model_config, strip_suffix
from promptgen.formats.frontmatter import Frontmatter
from promptgen.formats.prompty import _inputs
from promptgen.formats.refs import RefResolver
from promptgen.formats.validate import validate_section
from promptgen.model import Message, PromptUnderTest
from promptgen.rendering.verdict_template import check, parse_template
from promptgen.yamlpos import Path_, line_of

FORMAT_KEYS = ("name", "description", "model", "inputs", "tags")
JUDGE_KEYS = ("scale", "explanation", "judges", "pool", "pass", "rubric")
MAX_JUDGES = 10
MAX_CATEGORIES = 50
MAX_SCALE_POINTS = 1_000  # a discrete scale's whole numbers, listed as {unit.choices}
FIELD_TYPES = ("string", "list", "integer", "number", "boolean")
_SUFFIXES = (".verdict.md", ".verdict.txt", ".md", ".txt", ".prompt")
_RANGE = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")
_BLOCK = re.compile(r":\s*[|>][-+0-9]*\s*(#.*)?$")


class _Where:
    """File, key lines and frontmatter text, for errors that name their line."""

    def __init__(self, file: str, lines: dict[Path_, int], front: str | None, first: int) -> None:
        self.file, self.lines = file, lines
        self.text = (front or "").splitlines()
        self.first = first

    def line(self, *path: str | int) -> int | None:
        return line_of(self.lines, tuple(path))

    def error(self, message: str, *path: str | int, hint: str) -> PromptFormatError:
        return PromptFormatError(
            f"frontmatter: {message}", file=self.file, line=self.line(*path), hint=hint
        )

    def text_line(self, *path: str | int) -> int:
        """The file line where a text value starts (the next line for a `|` block)."""
        line = self.line(*path) or self.first
        index = line - self.first
        own = self.text[index] if 0 <= index < len(self.text) else ""
        return line + 1 if _BLOCK.search(own) else line


def load(path: Path, text: str) -> PromptUnderTest:
    file = str(path)
    split = split_frontmatter(text, file)
    raw, lines = read_frontmatter(split.frontmatter, split.frontmatter_line, file)
    where = _Where(file, lines, split.frontmatter, split.frontmatter_line)
    known = {k: v for k, v in raw.items() if k in FORMAT_KEYS}
    front: Any = validate_section(Frontmatter, known, file=file, lines=lines, what="frontmatter")
    judge = judge_spec(raw, where)
    other = {k: v for k, v in raw.items() if k not in FORMAT_KEYS and k not in JUDGE_KEYS}
    warnings = [
        f"{file}:{where.line(k) or '?'}: frontmatter key '{printable(k)}' is not read in a "
        "Verdict template; kept as is"
        for k in other
    ]
    messages, notes = template_messages(split.body, split.body_line, file)
    warnings += notes
    prompt = PromptUnderTest(
        name=front.name or strip_suffix(path.name, _SUFFIXES),
        description=front.description,
        source=file,
        format="verdict",
        model=model_config(front.model),
        inputs=_inputs(front, known.get("inputs"), RefResolver(path.parent, file, lines)),
        messages=messages,
        tags=front.tags or [],
        template_engine="verdict",
        frontmatter=raw,
        extra={**other, **({"verdict": judge} if judge else {})},
        warnings=warnings,
    )
    detect_inputs(prompt)
    return prompt


def template_messages(body: str, first_line: int, file: str) -> tuple[list[Message], list[str]]:
    """The messages of a Verdict body (checked), and the warnings about it."""
    try:
        template = parse_template(body, first_line)
        for section in template.sections:
            try:
                check(section.content)
            except RenderError as err:
                err.line = section.line + (err.line or 1) - 1
                raise
    except RenderError as err:
        err.file = file
        raise
    warnings = [f"{file}:{w.removeprefix('line ')}" for w in template.warnings]
    messages = []
    for section in template.sections:
        for brace in ("{{", "}}"):
            if brace in section.content:
                line = section.line + section.content.split(brace)[0].count("\n")
                warnings.append(
                    f"{file}:{line}: '{brace}' is sent as written (Verdict has no brace "
                    "escapes; a placeholder inside it is not evaluated)"
                )
        messages.append(Message(role=section.role, content=section.content, line=section.line))
    return messages, warnings


# -- the judge keys --------------------------------------------------------------------


def judge_spec(raw: dict[str, Any], where: _Where) -> dict[str, Any] | None:
    """The judge keys, checked and normalised (None when the file declares no scale)."""
    present = [k for k in JUDGE_KEYS if k in raw]
    if not present:
        return None
    if "scale" not in raw:
        raise where.error(
            f"'{present[0]}' needs a 'scale'",
            present[0],
            hint="a judge template declares scale: 1-5, scale: [a, b, c] or scale: boolean",
        )
    scale = _scale(raw["scale"], where)
    judges = raw.get("judges", 1)
    if isinstance(judges, bool) or not isinstance(judges, int) or not 1 <= judges <= MAX_JUDGES:
        raise where.error(
            f"'judges' should be a whole number from 1 to {MAX_JUDGES}, got {judges!r}",
            "judges",
            hint="judges: 3 asks for three independent judgements",
        )
    default_pool = "max" if scale["kind"] == "categories" else "mean"
    pool = raw.get("pool", default_pool)
    if pool not in ("mean", "max"):
        raise where.error(f"'pool' should be mean or max, got {pool!r}", "pool", hint="see above")
    if pool == "mean" and scale["kind"] == "categories":
        raise where.error(
            "'pool: mean' cannot average categories",
            "pool",
            hint="use pool: max (the most frequent category)",
        )
    explanation = raw.get("explanation", False)
    if not isinstance(explanation, bool):
        raise where.error("'explanation' should be true or false", "explanation", hint="")
    return {
        "scale": scale,
        "explanation": explanation,
        "judges": judges,
        "pool": pool,
        "pass": _pass(raw.get("pass"), scale, where),
        "rubric": _rubric(raw["rubric"], where) if "rubric" in raw else None,
    }


def _scale(value: Any, where: _Where) -> dict[str, Any]:
    hint = "write scale: 1-5, scale: [good, fair, poor] or scale: boolean"
    if value == "boolean" or value is bool:
        return {"kind": "boolean"}
    if isinstance(value, str) and (match := _RANGE.match(value)):
        if max(len(match.group(1)), len(match.group(2))) > 12:
            raise where.error(f"scale {printable(value)} is out of range", "scale", hint=hint)
        low, high = int(match.group(1)), int(match.group(2))
        if low >= high:
            raise where.error(f"scale {value!r} runs from high to low", "scale", hint=hint)
        return _discrete(low, high, where)
    if isinstance(value, dict) and set(value) == {"min", "max"}:
        low, high = value["min"], value["max"]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) and low < high:
            return _discrete(low, high, where)
    if isinstance(value, list) and 2 <= len(value) <= MAX_CATEGORIES:
        names = [str(v) for v in value if isinstance(v, str | int | float) and str(v).strip()]
        if len(names) == len(value) and len(set(names)) == len(names):
            return {"kind": "categories", "values": names}
    raise where.error(f"cannot read scale {value!r}", "scale", hint=hint)


def _discrete(low: int, high: int, where: _Where) -> dict[str, Any]:
    """A scale of the whole numbers from `low` to `high`, at most MAX_SCALE_POINTS."""
    if high - low + 1 > MAX_SCALE_POINTS:
        raise where.error(
            f"scale {low}-{high} has {high - low + 1:,} points, more than {MAX_SCALE_POINTS:,}",
            "scale",
            hint="a judge grades on a short scale, such as 1-5 or 0-100",
        )
    return {"kind": "discrete", "min": low, "max": high}


def _pass(value: Any, scale: dict[str, Any], where: _Where) -> Any:
    """What passes: a lowest score, the passing categories, or the passing boolean."""
    kind = scale["kind"]
    if kind == "discrete":
        if value is None:
            return (scale["min"] + scale["max"]) / 2
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and scale["min"] <= value <= scale["max"]:
            return value
        raise where.error(
            f"'pass' should be a score from {scale['min']} to {scale['max']}, got {value!r}",
            "pass",
            hint="pass: 4 passes a score of 4 or more",
        )
    if kind == "boolean":
        if value is None or isinstance(value, bool):
            return True if value is None else value
        raise where.error("'pass' should be true or false", "pass", hint="")
    given = [value] if isinstance(value, str | int | float) else value
    if given is None:
        return scale["values"][:1]
    names = [str(v) for v in given] if isinstance(given, list) else []
    if not names or any(n not in scale["values"] for n in names):
        raise where.error(
            f"'pass' should name categories of the scale, got {value!r}",
            "pass",
            hint="e.g. pass: " + scale["values"][0],
        )
    return names


def _field_name(name: Any) -> bool:
    """A name `{previous.NAME}` can read (a record's own methods would shadow these)."""
    return str(name).isidentifier() and name not in ("keys", "items", "values", "get")


def _rubric(value: Any, where: _Where) -> dict[str, Any]:
    """`rubric: TEMPLATE` or `rubric: {template: ..., name: rubric, count: 3, fields:
    {name: type}}`: a step before the judge whose answer the judge reads as previous."""
    spec = {"template": value} if isinstance(value, str) else value
    hint = "write rubric: followed by an @system / @user template (see docs/formats.md)"
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), str):
        raise where.error("'rubric' needs a template", "rubric", hint=hint)
    unknown = set(spec) - {"template", "name", "count", "fields"}
    if unknown:
        raise where.error(f"'rubric' has unknown key {sorted(unknown)[0]!r}", "rubric", hint=hint)
    name = spec.get("name", "rubric")
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise where.error(f"'rubric.name' should be a plain name, got {name!r}", "rubric", hint="")
    count = spec.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise where.error("'rubric.count' should be a whole number ≥ 1", "rubric", hint="")
    fields = spec.get("fields", {"rubric": "list"})
    if (
        not isinstance(fields, dict)
        or not fields
        or any(not _field_name(k) or v not in FIELD_TYPES for k, v in fields.items())
    ):
        raise where.error(
            "'rubric.fields' should map field names to " + ", ".join(FIELD_TYPES),
            "rubric",
            hint="fields: {rubric: list} (the default)",
        )
    path: tuple[str, ...] = ("rubric",) if isinstance(value, str) else ("rubric", "template")
    line = where.text_line(*path)
    messages, _ = template_messages(spec["template"], line, where.file)
    return {
        "name": name,
        "count": count,
        "fields": {str(k): v for k, v in fields.items()},
        "messages": [m.model_dump(mode="json", exclude={"variable"}) for m in messages],
    }
