"""Build checks from their written form: `{name: arguments}` (YAML/JSON) or `name=value`."""

from __future__ import annotations

import re
from typing import Any, Literal

import yaml

from promptgen.errors import BadInputError
from promptgen.evaluation.checks import (
    Affix,
    Contains,
    ContainsSome,
    Count,
    Equals,
    IsJson,
    Language,
    Levenshtein,
    Not,
    Regex,
)
from promptgen.yamlpos import load_yaml, yaml_error_text

COUNT_UNITS = {
    "word": "words",
    "line": "lines",
    "sentence": "sentences",
    "paragraph": "paragraphs",
    "character": "characters",
}
CASE_FOLDABLE = ("contains", "contains-any", "contains-all", "starts-with", "ends-with")
NAMES = (
    "equals contains icontains contains-any icontains-any contains-all icontains-all "
    "starts-with ends-with istarts-with iends-with regex is-json language levenshtein "
    + " ".join(f"{u}-count" for u in COUNT_UNITS)
).split()


def _kwargs(args: Any, main: str) -> dict[str, Any]:
    """A scalar or list argument is the check's main field; a mapping is its fields."""
    return dict(args) if isinstance(args, dict) else {main: args}


def build(name: str, args: Any) -> Any:
    if name.startswith("not-"):
        return Not(build(name[4:], args))
    ignore = name.startswith("i") and name[1:] in CASE_FOLDABLE
    base = name[1:] if ignore else name
    try:
        if base == "equals":
            return Equals(
                **_kwargs(args, "value")
                if isinstance(args, dict) and "value" in args
                else {"value": args}
            )
        if base == "contains":
            return Contains(**_kwargs(args, "value"), ignore_case=ignore)
        if base in ("contains-any", "contains-all"):
            values = args if isinstance(args, list) else _kwargs(args, "values").get("values")
            mode: Literal["any", "all"] = "any" if base == "contains-any" else "all"
            return ContainsSome(list(values or []), mode=mode, ignore_case=ignore)
        if base in ("starts-with", "ends-with"):
            where: Literal["start", "end"] = "start" if base == "starts-with" else "end"
            return Affix(**_kwargs(args, "value"), where=where, ignore_case=ignore)
        if base == "regex":
            return Regex(**_kwargs(args, "pattern"))
        if base == "is-json":
            return IsJson(schema=args if isinstance(args, dict) and args else None)
        if base == "language":
            return Language(**_kwargs(args, "code"))
        if base == "levenshtein":
            return Levenshtein(**_kwargs(args, "value"))
        if base.endswith("-count") and base[:-6] in COUNT_UNITS:
            bounds = args if isinstance(args, dict) else {"equals": args}
            return Count(unit=COUNT_UNITS[base[:-6]], **bounds)
    except TypeError as err:
        raise BadInputError(f"check {name!r}: wrong arguments {args!r} ({err})") from err
    raise BadInputError(f"unknown check {name!r}", hint="known checks: " + ", ".join(NAMES))


def cli_value(name: str, value: str) -> Any:
    """`{max: 3}` and `[a, b]` are read as YAML, a count as a number; the rest stays text
    (so `regex=^a: b` is a pattern, not a mapping, and `equals={{expected}}` a
    placeholder)."""
    text = value.strip()
    if text.startswith(("{", "[")) and not text.startswith("{{"):
        try:
            return load_yaml(text).data
        except yaml.YAMLError as err:
            raise BadInputError(
                f"check {name}={value!r}: not valid YAML ({yaml_error_text(err)})"
            ) from err
    if name.removeprefix("not-").endswith("-count") and re.fullmatch(r"\d+", text):
        return int(text)
    return value


def parse_check(spec: Any) -> Any:
    """`{"regex": "^a"}`, or `"regex=^a"` from the command line."""
    if isinstance(spec, str):
        name, sep, value = spec.partition("=")
        if not sep:
            raise BadInputError(
                f"check {spec!r} needs a value", hint='write NAME=VALUE, e.g. "contains=Hello"'
            )
        return build(name.strip(), cli_value(name.strip(), value))
    if isinstance(spec, dict):
        rest = {k: v for k, v in spec.items() if k != "name"} if len(spec) == 2 else spec
        if len(rest) == 1:
            ((name, args),) = rest.items()
            return build(str(name), args)
    shown = repr(spec)
    raise BadInputError(
        f"a check is one {{name: arguments}} entry (and optionally a 'name' for reports), "
        f"got {shown if len(shown) <= 80 else shown[:79] + '…'}"
    )


def check_label(spec: Any) -> str | None:
    """The `name` a check was given (`{"regex": "^a", "name": "starts with a"}`), if any."""
    if isinstance(spec, dict) and len(spec) == 2 and isinstance(spec.get("name"), str):
        return spec["name"].strip() or None
    return None
