"""The Jinja2 sandbox promptgen renders with: immutable, and bounded in size and time.

On top of Jinja's `ImmutableSandboxedEnvironment` (no internals, no mutation):
everything that could build a huge value is checked *before* it is built, against
promptgen.bounds: `*`, `+`, `%`, `~`, `**`, the size arguments of string methods
(`ljust`, `center`, `zfill`, `expandtabs`, `join`, `replace`, `translate`, `split`,
...), format widths and precisions (`'{:>999999999}'.format(x)`, `'%999999999d' % x`),
the filters that take a size (`center`, `indent`, `wordwrap`, `join`, `format`,
`batch`, `slice`, `tojson`, ...), `range()`, `lipsum()`, and the text of any value
printed or turned into a string. A render has a budget of steps (loop iterations,
calls, filters), characters and seconds (promptgen.bounds.Budget), and a rendered
message has a maximum length.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import itertools
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter

from promptgen.bounds import (
    MAX_INT_BITS,
    MAX_POWER,
    MAX_RANGE,
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_ITEMS,
    METHOD_CHARS,
    Budget,
    field_size,
    joined_size,
    measure,
    method_parts,
    percent_size,
)
from promptgen.errors import TemplateSecurityError

BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("budget", default=None)


def budget() -> Budget:
    """The budget of the render in progress (a fresh one outside a render)."""
    return BUDGET.get() or Budget()


def _limit(what: str) -> TemplateSecurityError:
    return TemplateSecurityError(f"template {what}")


def _items(values: Any) -> list[Any]:
    """`values` as a list, refusing more than MAX_TEMPLATE_ITEMS items before listing."""
    spent = budget()
    if hasattr(values, "__len__"):
        spent.items(len(values))
        return list(values)
    listed = []
    for value in values:
        listed.append(value)
        spent.items(len(listed))
    return listed


def bounded_join(values: Iterable[Any]) -> str:
    """The `~` operator: each operand's text sized before it is built, then joined."""
    spent = budget()
    parts, total = [], 0
    for value in values:
        if not isinstance(value, str):
            spent.build(total + measure(value, MAX_TEMPLATE_CHARS - total))
            value = str(value)
        total += len(value)
        parts.append(value)
    spent.build(total)
    return "".join(parts)


def bounded_percent(template: Any, args: Any) -> Any:
    """`template % args` (the `%` operator and the `format` filter), sized first."""
    if isinstance(template, (str, bytes)):
        budget().build(percent_size(template, args), "a %-formatted string")
    return template % args


class _Formatter(SandboxedFormatter):
    """`str.format` in a template: the sandbox's attribute checks, plus field sizes."""

    def __init__(self, env: jinja2.Environment) -> None:
        super().__init__(env)
        self.total = 0

    def format_field(self, value: Any, format_spec: str) -> Any:
        self.total += field_size(value, format_spec, MAX_TEMPLATE_CHARS - self.total)
        budget().build(self.total, "a formatted string")
        return super().format_field(value, format_spec)


class _CodeGenerator(CodeGenerator):
    """Every `{% for %}` goes through the step budget, and `~` through bounded_join."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        call = nodes.Call(nodes.EnvironmentAttribute("loop_items"), [node.iter], [], None, None)
        node = copy.copy(node)  # leave the parsed tree as it was
        node.iter = call.set_lineno(node.lineno)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _CodeGenerator
    bounded_join = staticmethod(bounded_join)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise TemplateSecurityError(
            f"template reaches for '{attribute}' on a {type(obj).__name__}; "
            "templates may only use data, not Python internals"
        )

    def concat(self, pieces: Iterable[str]) -> str:
        """A rendered message (or macro, or block), refused once it grows too long."""
        parts, total = [], 0
        for piece in pieces:
            total += len(piece)
            if total > MAX_TEMPLATE_CHARS:
                raise _limit(f"renders more than {MAX_TEMPLATE_CHARS:,} characters")
            parts.append(piece)
        return "".join(parts)

    def loop_items(self, iterable: Any) -> Iterator[Any]:
        spent = budget()
        for item in iterable:
            spent.step()
            yield item

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            return _power(left, right)
        if operator == "%":
            return bounded_percent(left, right)
        spent = budget()
        if operator == "+":
            if isinstance(left, (str, bytes)) and isinstance(right, (str, bytes)):
                spent.build(len(left) + len(right))
            elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                spent.items(len(left) + len(right))
            return left + right
        for seq, count in ((left, right), (right, left)):
            if isinstance(count, int) and not isinstance(count, bool):
                if isinstance(seq, (str, bytes)):
                    spent.build(len(seq) * max(count, 0), "a repeated string")
                elif isinstance(seq, (list, tuple)):  # a list held n times is n lists
                    items = _nested_items(seq, MAX_TEMPLATE_ITEMS)
                    spent.items(items * max(count, 0), "a repeated list")
        ints = isinstance(left, int) and isinstance(right, int)
        if ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise _limit("builds a number that is too large")
        return left * right

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        spent = budget()
        spent.step()
        owner = getattr(__obj, "__self__", None)
        if isinstance(__obj, types.BuiltinMethodType) and isinstance(owner, (str, bytes)):
            name = __obj.__name__
            if name == "join" and args:
                args = (_items(args[0]), *args[1:])
                spent.build(joined_size(owner, args[0]), "a joined string")
            elif name in METHOD_CHARS:
                spent.build(METHOD_CHARS[name](owner, args, kwargs), f"a string with {name}()")
            else:
                spent.items(method_parts(name, owner, args, kwargs), f"a list with {name}()")
        elif isinstance(__obj, LoopContext) and args:  # loop(children) in a recursive loop
            args = (__self.loop_items(args[0]), *args[1:])
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, str):
            spent.build(len(result))
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
            return None
        owner = getattr(value, "__self__", None)
        if value.__name__ not in ("format", "format_map") or not isinstance(owner, str):
            return None
        is_map = value.__name__ == "format_map"

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            return str(_Formatter(self).vformat(owner, args, kwargs))

        return functools.update_wrapper(wrapper, value)


def _nested_items(value: Any, limit: int) -> int:
    """Items of `value` and of the lists, tuples and dicts in it, a list held twice counted
    twice (what a sort or a print walks); counting stops soon after `limit`."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        total += len(item)
        stack.extend(c for c in children if isinstance(c, (list, tuple, dict)))
    return total


def _power(left: Any, right: Any) -> Any:
    if isinstance(right, (int, float)) and abs(right) > MAX_POWER:
        raise _limit(f"uses exponent {right}, which is too large for a template")
    ints = isinstance(left, int) and isinstance(right, int) and right > 0
    if ints and left.bit_length() * right > MAX_INT_BITS:
        raise _limit("builds a number that is too large")
    return left**right


def _finalize(value: Any) -> Any:
    """Every `{{ value }}`: its text is sized before `str()` builds it."""
    if not isinstance(value, str):
        budget().build(measure(value), "the text of a value")
    return value


def _range(*args: Any) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise _limit(f"asks for a range of {len(numbers):,} numbers (limit {MAX_RANGE:,})")
    return numbers


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> Any:
    sizes = (n, min, max)
    if not all(isinstance(x, int) for x in sizes) or n > 100 or max > 1000:
        raise _limit("asks lipsum() for more than 100 paragraphs of 1,000 words")
    from jinja2.utils import generate_lorem_ipsum

    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


# --- filters ---------------------------------------------------------------------------

# Filters that turn their input into text first (its size is checked before).
_TEXT_FILTERS = {
    *("capitalize", "center", "e", "escape", "filesizeformat", "forceescape", "format"),
    *("indent", "lower", "pprint", "replace", "safe", "string", "striptags", "title"),
    *("trim", "truncate", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"),
}
# Filters that take a string as a sequence of characters (one item each).
_SEQUENCE_FILTERS = {
    *("batch", "groupby", "list", "map", "reject", "rejectattr", "select", "selectattr"),
    *("slice", "sort", "unique"),
}
_SAME = object()
# Filters whose text may grow with case mapping; those that also split it into words.
_CASE_FILTERS = {"capitalize", "lower", "title", "upper", "wordwrap", "wordcount", "urlize"}
_CASE_FILTERS |= {"striptags", "trim", "truncate"}
# What splits words: Jinja's title() splits at [-\s({[<], textwrap at spaces and hyphens.
_SEPARATORS = "-({[< \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
_SEPARATORS += "".join(chr(c) for c in range(0x2000, 0x200B))


def _separators(text: str) -> int:
    """How many characters of `text` may start a new word (an upper bound, no list)."""
    chars = _SEPARATORS if not text.isascii() else _SEPARATORS[:11]
    return sum(text.count(c) for c in chars)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str) else measure(value)


def _size_filter(name: str, value: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Check a sized filter's arguments; return a replacement for `value` (or _SAME)."""
    spent = budget()
    options = dict(zip(_PARAMS.get(name, ()), rest, strict=False)) | kwargs
    if name == "center":
        width = options.get("width", 80)
        spent.build(max(_length(value), width if isinstance(width, int) else 0))
    elif name == "indent":
        width = options.get("width", 4)
        step = width if isinstance(width, int) else len(str(width))
        lines = str(value).count("\n") + 1 if isinstance(value, str) else 1
        spent.build(_length(value) + lines * max(step, 0), "an indented string")
    elif name == "wordwrap":
        wrap = options.get("wrapstring") or "\n"
        width = options.get("width", 79)
        lines = 2 * _length(value) // max(width if isinstance(width, int) else 1, 1) + 2
        spent.build(_length(value) + lines * len(str(wrap)), "a wrapped string")
    elif name == "join":
        items = _items(value)
        spent.build(joined_size(str(options.get("d", "")), items), "a joined string")
        return items
    elif name == "format":
        spent.build(percent_size(str(value), kwargs or rest), "a formatted string")
    elif name == "replace":
        spent.build(METHOD_CHARS["replace"](str(value), rest, kwargs), "a replaced string")
    elif name in _CASE_FILTERS and isinstance(value, str):
        grows = 1 if value.isascii() else 3  # 'ß'.upper() is 'SS', some letters give 3
        spent.build(len(value) * grows, f"a string with {name}")
        if name in ("title", "wordwrap", "wordcount", "urlize", "striptags"):
            spent.items(2 * _separators(value) + 1, f"a list of words with {name}")
    elif name == "urlencode":
        text = value if isinstance(value, str) else None
        size = _length(value) * (3 if text is not None and text.isascii() else 12)
        spent.build(size, "a URL-encoded string")  # %XX per UTF-8 byte
    elif name in ("e", "escape", "forceescape", "xmlattr"):
        spent.build(_length(value) * 6, "an escaped string")  # '&' -> '&amp;'
    elif name == "sum":
        start = options.get("start", 0)
        if isinstance(start, (list, tuple)):
            items = _items(value)
            spent.items(len(start) + sum(len(i) for i in items if hasattr(i, "__len__")))
            if options.get("attribute") is None and all(type(i) is type(start) for i in items):
                return [type(start)(itertools.chain.from_iterable(items))]  # one copy, not n
            return items
    elif name in ("batch", "slice"):
        count = options.get("linecount", options.get("slices", 0))
        if name == "slice" or options.get("fill_with") is not None:
            spent.items(count if isinstance(count, int) else 0, f"a list with {name}")
    elif name in ("tojson", "pprint"):
        indent = options.get("indent") or 0
        step = indent if isinstance(indent, int) else len(str(indent))
        spent.build(measure(value) * (2 + 32 * max(step, 0)), "a JSON text")
    return _SAME


_PARAMS = {
    "center": ("width",),
    "indent": ("width", "first", "blank"),
    "wordwrap": ("width", "break_long_words", "wrapstring", "break_on_hyphens"),
    "join": ("d", "attribute"),
    "batch": ("linecount", "fill_with"),
    "slice": ("slices", "fill_with"),
    "tojson": ("indent",),
    "sum": ("attribute", "start"),
}


def _guard(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)  # keeps jinja_pass_arg, so Jinja passes the same arguments
    def guarded(*args: Any, **kwargs: Any) -> Any:
        spent = budget()
        spent.step()
        value, rest = (args[skip] if len(args) > skip else None), args[skip + 1 :]
        if name in _TEXT_FILTERS and not isinstance(value, str):
            spent.build(measure(value), "the text of a value")
        if name in _SEQUENCE_FILTERS and isinstance(value, (str, bytes)):
            spent.items(len(value), "a list of characters")
        replaced = _size_filter(name, value, rest, kwargs)
        if replaced is not _SAME:
            args = (*args[:skip], replaced, *rest)
        result = func(*args, **kwargs)
        if isinstance(result, str):
            spent.build(len(result))
        elif isinstance(result, list):
            spent.items(len(result))
        return result

    return guarded


def environment(strict: bool) -> Sandbox:
    env = Sandbox(
        undefined=jinja2.StrictUndefined if strict else jinja2.Undefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.globals.update(range=_range, lipsum=_lipsum)
    env.filters = {name: _guard(name, func) for name, func in env.filters.items()}
    return env
