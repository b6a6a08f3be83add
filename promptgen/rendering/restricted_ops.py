"""What an expression of promptgen.rendering.restricted may call, and how big it may get.

The functions and operators here replace Python's own for untrusted expressions: `re`
through the `regex` package with a time bound; `range`, `*`, `**`, `<<`, `+` and `%`,
and the string methods that build text, sized before they run (a refused one raises
ExpressionRefused). promptgen/rendering/restricted.py evaluates with them.
"""

from __future__ import annotations

import ast
import contextvars
import itertools
import math
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import regex
import simpleeval

from promptgen.bounds import (
    METHOD_CHARS,
    REGEX_TIMEOUT_SECONDS,
    joined_size,
    measure,
    percent_size,
)
from promptgen.errors import BadInputError

MAX_RANGE = 100_000
MAX_INT_BITS = 100_000
MAX_STRING = 1_000_000
MAX_BUILT = 10 * MAX_STRING
"""Items and characters all the sized operations of one evaluation may build together."""


class ExpressionRefused(BadInputError):
    """The expression uses something the evaluator does not allow, or goes past a bound."""


class ExpressionFailed(Exception):
    """An allowed expression raised on its data (the message says what)."""


_BUILT: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("built", default=None)


@contextmanager
def spending() -> Iterator[None]:
    """One evaluation: the items and characters its operations build are added up."""
    token = _BUILT.set([0])
    try:
        yield
    finally:
        _BUILT.reset(token)


def build(size: int, what: str) -> None:
    """Refuse `what` of `size` items or characters before it is built, alone (over
    MAX_STRING) or with what the evaluation built before it (over MAX_BUILT)."""
    if size > MAX_STRING:
        raise ExpressionRefused(f"{what} of {size:,} items or characters (at most {MAX_STRING:,})")
    spent = _BUILT.get()
    if spent is not None:
        spent[0] += size
        if spent[0] > MAX_BUILT:
            raise ExpressionRefused(
                f"the expression builds more than {MAX_BUILT:,} items and characters in all"
            )


def nested_items(value: Any, limit: int = MAX_STRING) -> int:
    """Items of a list or tuple, its nested lists' and tuples' items included (a list
    held twice counts twice); counting stops past `limit`."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, (list, tuple, set, frozenset, dict)):
            total += len(item)
            if total <= limit:
                stack.extend(c for c in item if isinstance(c, (list, tuple, set, frozenset, dict)))
    return total


def text_size(value: Any, conversion: str = "s") -> int:
    """Upper bound of `len(str(value))` (`repr`: "r", `ascii`: "a"), without building it."""
    if isinstance(value, str) and conversion == "s":
        return len(value)
    size = measure(value, MAX_STRING)
    return 10 * size if conversion == "a" else size


def _bounded_regex(name: str) -> Callable[..., Any]:
    def call(pattern: str, text: str, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(pattern, str) or not isinstance(text, str):
            raise ExpressionFailed(f"re.{name} needs a pattern and a text")
        try:
            return getattr(regex, name)(
                pattern, text, *args, timeout=REGEX_TIMEOUT_SECONDS, **kwargs
            )
        except TimeoutError:
            raise ExpressionRefused(
                f"re.{name}(/{pattern[:60]}/) ran past {REGEX_TIMEOUT_SECONDS:g} s"
            ) from None
        except regex.error as err:
            raise ExpressionFailed(f"re.{name}: bad pattern {pattern[:60]!r}: {err}") from None

    call.__name__ = name
    return call


class ReModule:
    """What an expression may use of `re` (Python `re` syntax, through `regex`)."""

    NAMES: ClassVar[tuple[str, ...]] = ("match", "search", "fullmatch", "findall", "split", "sub")
    FLAGS: ClassVar[dict[str, int]] = {
        "I": regex.I,
        "IGNORECASE": regex.I,
        "M": regex.M,
        "MULTILINE": regex.M,
        "S": regex.S,
        "DOTALL": regex.S,
        "A": regex.A,
        "ASCII": regex.A,
    }

    def __init__(self) -> None:
        for name in self.NAMES:
            setattr(self, name, _bounded_regex(name))
        for flag, value in self.FLAGS.items():
            setattr(self, flag, int(value))


RE = ReModule()
MATCH_ATTRS = {"group", "groups", "groupdict", "start", "end", "span", "string"}


def _range(*args: int) -> range:
    values = range(*args)
    if len(values) > MAX_RANGE:
        raise ExpressionRefused(f"range of {len(values):,} items (at most {MAX_RANGE:,})")
    return values


def _str(*args: Any, **kwargs: Any) -> str:
    """`str(value)`: the text of a container is sized before it is built."""
    if len(args) == 1 and not kwargs:
        build(text_size(args[0]), "str() of a text")
    return str(*args, **kwargs)


def _sum(items: Any, start: Any = 0) -> Any:
    """`sum`: lists and tuples are sized first and joined in one pass (Python's own sum
    copies the total at each step)."""
    if not isinstance(start, (list, tuple)):
        return sum(items, start)
    parts = list(items)
    for part in parts:
        if not isinstance(part, type(start)):
            kind, other = type(start).__name__, type(part).__name__
            raise TypeError(f'can only concatenate {kind} (not "{other}") to {kind}')
    build(len(start) + sum(len(p) for p in parts), "sum() of a sequence")
    return type(start)(itertools.chain(start, *parts))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "int": int,
    "float": float,
    "str": _str,
    "bool": bool,
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
    "sum": _sum,
    "round": round,
    "sorted": sorted,
    "reversed": lambda xs: list(reversed(xs)),
    "all": all,
    "any": any,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "enumerate": lambda xs, start=0: list(enumerate(xs, start)),
    "zip": lambda *xs: list(zip(*xs, strict=False)),
    "range": _range,
}


def _int_bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _power(a: Any, b: Any) -> Any:
    whole = isinstance(a, int) and isinstance(b, int)
    if whole and b > 0 and abs(a) > 1 and b * math.log2(abs(a)) > MAX_INT_BITS:
        raise ExpressionRefused(f"{a} ** {b} is too large (over {MAX_INT_BITS:,} bits)")
    if (isinstance(a, float) or isinstance(b, float)) and abs(b) > 10_000:
        raise ExpressionRefused(f"exponent {b} is too large")
    return operator.pow(a, b)


def _multiply(a: Any, b: Any) -> Any:
    if _int_bits(a) + _int_bits(b) > MAX_INT_BITS:
        raise ExpressionRefused(f"a product over {MAX_INT_BITS:,} bits")
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
            size = len(seq) if isinstance(seq, str) else nested_items(seq)
            if size * n > MAX_STRING:
                raise ExpressionRefused(f"a sequence of {size * n:,} items")
            build(size * n, "a sequence")
    return operator.mul(a, b)


def _shift(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > MAX_INT_BITS:
        raise ExpressionRefused(f"a shift by {b} bits")
    return operator.lshift(a, b)


def _modulo(a: Any, b: Any) -> Any:
    """`%`: printf-style formatting of a string is sized before it runs."""
    if isinstance(a, str) and percent_size(a, b) > MAX_STRING:
        raise ExpressionRefused(f"'%' formatting that builds over {MAX_STRING:,} characters")
    return operator.mod(a, b)


def _add(a: Any, b: Any) -> Any:
    joined = isinstance(a, (str, list, tuple)) and isinstance(b, type(a))
    if joined and len(a) + len(b) > MAX_STRING:
        raise ExpressionRefused(f"a sequence of {len(a) + len(b):,} items")
    if joined:
        build(len(a) + len(b), "a sequence")
    return operator.add(a, b)


OPERATORS = {
    **simpleeval.DEFAULT_OPERATORS,
    ast.Pow: _power,
    ast.Mult: _multiply,
    ast.LShift: _shift,
    ast.Add: _add,
    ast.Mod: _modulo,
}


def check_method(name: str, text: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    size = 0
    if name in METHOD_CHARS:
        size = METHOD_CHARS[name](text, args, kwargs)
    elif name == "join" and args and isinstance(args[0], (list, tuple, set, frozenset, dict)):
        size = joined_size(text, list(args[0]))
    if size > MAX_STRING:
        raise ExpressionRefused(f"str.{name}() would build {size:,} characters")
    build(size, f"str.{name}()")
