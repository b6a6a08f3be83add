"""Resource limits on untrusted input, in one place, and the small checks that apply them.

Prompt files, their data files, saved contexts, tests files, test data and model outputs
are all untrusted: each limit below turns an input that would exhaust memory, time or
the Python stack into one clear BadInputError (exit code 2). docs/formats.md,
docs/rendering.md and docs/context.md list them for users; change them here only.
"""

from __future__ import annotations

import re
import time
from collections import abc
from collections.abc import Iterator, Mapping
from typing import Any

from promptgen.errors import TemplateSecurityError

MB = 1024 * 1024

# Files (checked with stat before a byte is read).
MAX_PROMPT_BYTES = 20 * MB
"""A prompt file (.prompty, .prompt.yml, .md, .txt, *.metric.prompty)."""
MAX_DATA_FILE_BYTES = 20 * MB
"""A file a prompt references: `${file:...}`, `sample:` and `testSamples:` files."""
MAX_JSON_FILE_BYTES = 256 * MB
"""A saved context.json or a tests file (tests.json, tests.filtered.json)."""

# Data (YAML and JSON documents, and what they may hold).
MAX_NESTING = 64
"""Lists and mappings inside each other, in any YAML or JSON document."""
MAX_YAML_ALIASES = 1_000
"""`*alias` uses in one YAML document."""
MAX_YAML_ALIAS_NODES = 100_000
"""Values that aliases add when expanded ("billion laughs" is refused here)."""
MAX_YAML_VALUES = 1_000_000
"""Values (strings, numbers, lists, mappings) in one YAML document; more test data
belongs in a JSON Lines or CSV file (`testSamples`)."""
MAX_INT_DIGITS = 4_300
"""Digits of a whole number in YAML or JSON (Python's own int-to-text limit)."""
MAX_SCENARIOS = 10_000
"""Scenarios in one prompt."""
MAX_TEST_SAMPLES = 100_000
"""Test samples of one prompt (`testSamples`, `testData`, and the rows of their files)."""
MAX_MESSAGES = 10_000
"""Messages in one prompt."""

# Templates (Jinja2 and Mustache, per render).
MAX_TEMPLATE_CHARS = 25_000_000
"""The longest string a template may build with one operation, and the longest rendered
message (large enough for any legal prompt file's own text)."""
MAX_TEMPLATE_ITEMS = 1_000_000
"""The longest list a template may build (`*`, `+`, `batch`, `split`, ...)."""
MAX_TEMPLATE_BUILT = 100_000_000
"""Characters all the operations of one render may build together."""
MAX_TEMPLATE_STEPS = 250_000
"""Loop iterations, calls, filters and sections one render may go through."""
MAX_TEMPLATE_SECONDS = 10.0
"""Wall-clock time one render may take."""
MAX_TEMPLATE_TAGS = 10_000
"""Tags (`{{ }}`, `{% %}`) in one message's template (reading a tag costs time)."""
MAX_TEMPLATE_NESTING = 16
"""Blocks (`{% if %}`, `{% for %}`, Mustache sections, ...) inside each other."""
MAX_EXPRESSION_NESTING = 32
"""Brackets inside each other in one template expression."""
MAX_RANGE = 100_000
"""Items of one `range()` in a template (Jinja's own sandbox limit)."""
MAX_POWER = 10_000
"""Largest exponent of `**` in a template."""
MAX_INT_BITS = 100_000
"""Largest whole number (in bits) a template's `*` or `**` may build."""

# Checks on model outputs.
REGEX_TIMEOUT_SECONDS = 1.0
"""Time one `regex` check may take on one output; past it the check fails (timed out)."""
MAX_OUTPUT_NESTING = 100
"""Nesting of a model's JSON output that `is-json`/`equals` checks still read."""


def too_deep(data: Any, limit: int = MAX_NESTING) -> tuple[Any, ...] | None:
    """The path of the first list or mapping nested deeper than `limit` levels, or None.
    Iterative: deep data cannot exhaust the stack here."""
    if not isinstance(data, (dict, list, tuple)):
        return None
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if len(path) >= limit:
            return path
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            if isinstance(child, (dict, list, tuple)):
                stack.append(((*path, key), child))
    return None


def strings(data: Any) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every string of JSON-like data (mapping keys included) with its path, iteratively."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            for key, child in value.items():
                if isinstance(key, str):
                    yield path, key
                stack.append(((*path, key), child))
        elif isinstance(value, (list, tuple)):
            stack.extend(((*path, i), child) for i, child in enumerate(value))


def printable(text: Any, limit: int = 200) -> str:
    """User text for a one-line message: control characters escaped, long text cut."""
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# C0 controls but newline and tab, DEL, and C1 controls: what a terminal acts on (clear
# the screen, set the window title, move the cursor) instead of showing.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: Any) -> str:
    """Text from a file, a model or a saved run, made safe to print on a terminal: each
    control character but newline and tab shown as its escape (`\\x1b`), never acted on."""
    text = str(text)
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def dotted(path: tuple[Any, ...]) -> str:
    """`('tests', 3, 'inputs')` as `tests[3].inputs`."""
    text = ""
    for part in path:
        name = printable(part, 40)
        text += f"[{part}]" if isinstance(part, int) else (f".{name}" if text else name)
    text = text or "the top level"
    return text if len(text) <= 80 else text[:40] + "…" + text[-39:]


class Budget:
    """What one template render may still spend: steps (loop iterations, calls, sections),
    characters built, and wall-clock time. Past a limit, a TemplateSecurityError."""

    def __init__(self) -> None:
        self.steps = 0
        self.built = 0
        self.deadline = time.monotonic() + MAX_TEMPLATE_SECONDS

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_TEMPLATE_STEPS:
            raise TemplateSecurityError(
                f"template takes more than {MAX_TEMPLATE_STEPS:,} steps "
                "(loop iterations, calls, sections)"
            )
        if self.steps % 64 == 0:
            self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateSecurityError(
                f"template takes more than {MAX_TEMPLATE_SECONDS:g} seconds to render"
            )

    def build(self, size: int, what: str = "a string") -> None:
        """Account for (or refuse, before it is built) `size` characters."""
        if size > MAX_TEMPLATE_CHARS:
            raise TemplateSecurityError(
                f"template builds {what} of {size:,} characters or more "
                f"(limit {MAX_TEMPLATE_CHARS:,})"
            )
        self.built += size
        if self.built > MAX_TEMPLATE_BUILT:
            raise TemplateSecurityError(
                f"template builds more than {MAX_TEMPLATE_BUILT:,} characters in all"
            )

    def items(self, count: int, what: str = "a list") -> None:
        """Refuse, before it is built, a list of more than MAX_TEMPLATE_ITEMS items."""
        if count > MAX_TEMPLATE_ITEMS:
            raise TemplateSecurityError(
                f"template builds {what} of {count:,} items (limit {MAX_TEMPLATE_ITEMS:,})"
            )


_VIEWS = (abc.KeysView, abc.ValuesView, abc.ItemsView)


def measure(value: Any, limit: int = MAX_TEMPLATE_CHARS) -> int:
    """An upper bound of `len(str(value))`, computed without building the text; counting
    stops soon after `limit`. Containers print their items' repr (a string with
    unprintable characters may grow tenfold), so they are walked, iteratively."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack: list[Any] = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2 if item.isprintable() else 10 * len(item) + 2
        elif isinstance(item, (bytes, bytearray)):
            total += 4 * len(item) + 3
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        elif isinstance(item, float):
            total += 25
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            if total <= limit:
                for key, child in item.items():
                    stack.extend((key, child))
        elif isinstance(item, (list, tuple, set, frozenset, *_VIEWS)):
            total += 16 + 2 * len(item)
            if total <= limit:
                stack.extend(item)
        else:  # never getattr: an undefined value raises on any attribute
            total += 200
            if type(item).__name__ == "Namespace":  # jinja2's namespace(): its values
                stack.append(object.__getattribute__(item, "_Namespace__attrs"))
    return total


# Sizes of Python string operations, computed before the operation runs.

_SPEC = re.compile(
    r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d+)?[,_]?(?:\.(?P<precision>\d+))?[bcdeEfFgGnosxX%]?"
)
_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?"
    r"[hlL]?(?P<conv>[\s\S]?)"
)


def _number(text: str | None) -> int:
    """A width or precision written in a format spec (a huge one needs no int())."""
    if not text:
        return 0
    return MAX_TEMPLATE_CHARS + 1 if len(text) > 9 else int(text)


def field_size(value: Any, spec: str, room: int = MAX_TEMPLATE_CHARS) -> int:
    """Upper bound of `len(format(value, spec))`."""
    found = _SPEC.fullmatch(spec)
    if found is None:  # a type's own mini-language (dates): the output follows the spec
        return measure(value, room) + 10 * len(spec)
    width, precision = _number(found["width"]), _number(found["precision"])
    return max(width, measure(value, room) + precision + 8)


def percent_size(template: str | bytes, args: Any) -> int:
    """Upper bound of `len(template % args)`; counting stops past MAX_TEMPLATE_CHARS."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    positional = args if isinstance(args, tuple) else (args,)
    total, index = len(text), 0
    for spec in _PERCENT.finditer(text):
        if spec["conv"] == "%":
            continue
        sizes = []
        for part in (spec["width"], spec["precision"]):
            if part == "*":
                given = positional[index] if index < len(positional) else 0
                index += 1
                sizes.append(given if isinstance(given, int) else 0)
            else:
                sizes.append(_number(part))
        if spec["key"] is not None and isinstance(args, Mapping):
            value = args.get(spec["key"])
        else:
            value = positional[index] if index < len(positional) else None
            index += 1
        total += max(sizes[0], measure(value, MAX_TEMPLATE_CHARS - total) + sizes[1] + 8)
        if total > MAX_TEMPLATE_CHARS:
            break
    return total


def joined_size(separator: Any, items: list[Any]) -> int:
    """Upper bound of `len(separator.join(map(str, items)))`."""
    total = len(separator) * max(0, len(items) - 1)
    for item in items:
        if total > MAX_TEMPLATE_CHARS:
            break
        total += measure(item, MAX_TEMPLATE_CHARS - total)
    return total


def _width(text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    width = args[0] if args else 0
    return max(len(text), width) if isinstance(width, int) else len(text)


def _expandtabs(text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    size = args[0] if args else kwargs.get("tabsize", 8)
    tab = "\t" if isinstance(text, str) else b"\t"
    return len(text) + text.count(tab) * (size if isinstance(size, int) else 8)


def _replace(text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    old, new = (*args, None, None)[:2]
    if not isinstance(old, (str, bytes)) or not isinstance(new, (str, bytes)):
        return len(text)
    count = args[2] if len(args) > 2 else kwargs.get("count", -1)
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def _translate(text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    table = args[0] if args else None
    longest = 1
    if isinstance(table, dict):
        longest = max([len(v) for v in table.values() if isinstance(v, str)] + [1])
    return len(text) * longest


_LINE_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _parts(text: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lines: bool) -> int:
    if lines:
        breaks: Any = _LINE_BREAKS if isinstance(text, str) else (b"\n", b"\r")
        return sum(text.count(b) for b in breaks) + 1
    sep = args[0] if args else kwargs.get("sep")
    limit = args[1] if len(args) > 1 else kwargs.get("maxsplit", -1)
    parts = text.count(sep) + 1 if isinstance(sep, (str, bytes)) and sep else len(text) // 2 + 1
    return min(parts, limit + 1) if isinstance(limit, int) and limit >= 0 else parts


METHOD_CHARS = {
    "ljust": _width,
    "rjust": _width,
    "center": _width,
    "zfill": _width,
    "expandtabs": _expandtabs,
    "replace": _replace,
    "translate": _translate,
}
"""str/bytes methods -> upper bound of their result's length, from their arguments."""


def method_parts(name: str, text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Upper bound of the number of items `split`/`rsplit`/`splitlines` return (0: other)."""
    if name in ("split", "rsplit", "splitlines"):
        return _parts(text, args, kwargs, name == "splitlines")
    return 0


def cut_text(value: str, limit: int) -> str:
    """`value` cut to `limit` characters, at a word boundary when one is near (how an answer
    over a `maxLength` is cut: `llm.fit`, `prompting.bounded`)."""
    if len(value) <= limit:
        return value
    cut = value[:limit]
    space = cut.rfind(" ")
    if space >= limit * 0.8:
        cut = cut[:space]
    return cut.rstrip()
