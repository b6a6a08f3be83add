"""The restricted evaluator for the Python expressions that untrusted files carry.

LVE checkers are `lambda` source (`"lambda r, a, b: int(r) == int(a) + int(b)"`) and
Verdict templates evaluate `{...}` placeholders as Python expressions. Neither may ever
reach `eval`: they are parsed with `ast` and walked by `simpleeval`, with

- an allow-list of functions (no `open`, `getattr`, `type`, `__import__` ...) and of
  attributes per type (string methods yes, `format`/`format_map` and anything starting
  with `_` never);
- a `re` namespace backed by the `regex` package, each search bounded in time;
- bounds on what one expression may build: source length and nesting, `range` length,
  comprehension steps, string length, integer size (a huge `**` or `*` is refused
  before it is computed), and a time budget checked at every node.

A refused expression raises `ExpressionRefused` (exit 2, a one-line reason); one that
is allowed but fails on its data (`int("abc")`) raises `ExpressionFailed`. The functions
and sized operators live in promptgen/rendering/restricted_ops.py.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex
import simpleeval

from promptgen.bounds import field_size
from promptgen.rendering.restricted_ops import (
    FUNCTIONS,
    MATCH_ATTRS,
    MAX_STRING,
    OPERATORS,
    RE,
    ExpressionFailed,
    ExpressionRefused,
    ReModule,
    build,
    check_method,
    spending,
    text_size,
)

_PLAIN = frozenset({str, int, float, bool, type(None), bytes, complex})
MAX_SOURCE_CHARS = 10_000
MAX_AST_DEPTH = 100
SECONDS = 1.0


class _AnyPublicName:
    """Attribute allow-list entry for records: every name not starting with `_`."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and not name.startswith("_")


class Record(Mapping[str, Any]):
    """A mapping whose keys read as attributes too (`source.reply`, `previous.score`),
    the way Verdict's schemas read."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None, **more: Any) -> None:
        self._data = {**(data or {}), **more}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Any:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Record({self._data!r})"


def _allowed_attrs() -> dict[Any, Any]:
    allowed: dict[Any, Any] = {
        kind: set(names) - {"format", "format_map", "encode", "maketrans", "translate"}
        for kind, names in simpleeval.BASIC_ALLOWED_ATTRS.items()
    }
    allowed[Record] = _AnyPublicName()
    allowed[ReModule] = {*ReModule.NAMES, *ReModule.FLAGS}
    allowed[type(regex.match("", ""))] = MATCH_ATTRS
    return allowed


class _Evaluator(simpleeval.EvalWithCompoundTypes):
    def __init__(self, names: Mapping[str, Any], seconds: float) -> None:
        super().__init__(
            operators=OPERATORS,
            functions=dict(FUNCTIONS),
            names={"re": RE, "True": True, "False": False, "None": None, **names},
            allowed_attrs=_allowed_attrs(),
        )
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.checked: dict[int, Any] = {}

    def _eval(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise ExpressionRefused(f"the expression ran past its {self.seconds:g} s budget")
        return super()._eval(node)

    def _eval_call(self, node: ast.Call) -> Any:
        """A string method that builds text (`zfill`, `center`, `join`, ...) is sized from
        its arguments before it runs."""
        if not isinstance(node.func, ast.Attribute):
            return super()._eval_call(node)
        method = self._eval(node.func)
        args = tuple(self._eval(a) for a in node.args)
        kwargs = dict(self._eval(k) for k in node.keywords)
        owner = getattr(method, "__self__", None)
        if isinstance(owner, str):
            check_method(node.func.attr, owner, args, kwargs)
        return method(*args, **kwargs)

    def _check_disallowed_items(self, item: Any) -> None:
        """simpleeval's check that no forbidden function hides in a result, walking each
        container once per evaluation (a list held a million times is read once; values
        are never changed in place) and within the time budget."""
        stack = [item]
        while stack:
            value = stack.pop()
            if not isinstance(value, (list, tuple, set, frozenset, dict)):
                super()._check_disallowed_items(value)
                continue
            if id(value) in self.checked:
                continue
            self.checked[id(value)] = value  # held, so its id is not reused
            if time.monotonic() > self.deadline:
                raise ExpressionRefused(f"the expression ran past its {self.seconds:g} s budget")
            children = value.values() if isinstance(value, dict) else value
            if not set(map(type, children)) <= _PLAIN:
                stack.extend(c for c in children if type(c) not in _PLAIN)

    def _eval_formattedvalue(self, node: ast.FormattedValue) -> Any:
        """An f-string field (`!r`, `!s`, `!a` applied): its text and width are sized
        before it is formatted."""
        value = self._eval(node.value)
        conversion = chr(node.conversion) if node.conversion > 0 else "s"
        build(text_size(value, conversion), "an f-string field")
        if conversion == "r":
            value = repr(value)
        elif conversion == "a":
            value = ascii(value)
        if node.format_spec is None:
            return str(value)
        spec = str(self._eval(node.format_spec))
        if field_size(value, spec, MAX_STRING) > MAX_STRING:
            raise ExpressionRefused(f"a format width over {MAX_STRING:,} characters")
        return format(value, spec)


def parse(source: str, mode: str = "eval") -> ast.Expression:
    """`source` parsed as one expression, refused when too long or too deep."""
    if not isinstance(source, str):
        raise ExpressionRefused(f"an expression must be text, not {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise ExpressionRefused(
            f"expression of {len(source):,} characters (at most {MAX_SOURCE_CHARS:,})"
        )
    try:
        tree = ast.parse(source.strip(), mode=mode)
    except SyntaxError as err:
        raise ExpressionRefused(f"not a Python expression: {err.msg}: {source[:80]!r}") from None
    except (RecursionError, MemoryError, ValueError) as err:
        raise ExpressionRefused(f"expression too deeply nested ({type(err).__name__})") from None
    depth = _depth(tree)
    if depth > MAX_AST_DEPTH:
        raise ExpressionRefused(f"expression nested {depth} levels deep (at most {MAX_AST_DEPTH})")
    assert isinstance(tree, ast.Expression)
    return tree


def _depth(tree: ast.AST) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_AST_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _run(tree: ast.AST, source: str, names: Mapping[str, Any], seconds: float) -> Any:
    if any(isinstance(n, ast.Lambda) for n in ast.walk(tree)):
        raise ExpressionRefused("a lambda inside an expression is not allowed")
    evaluator = _Evaluator(names, seconds)
    evaluator.expr = source
    try:
        with spending():
            return evaluator._eval(tree)
    except ExpressionRefused:
        raise
    except simpleeval.InvalidExpression as err:
        raise ExpressionRefused(f"{_plain(err)}: {source[:80]!r}") from None
    except RecursionError:
        raise ExpressionRefused("the expression recursed too deeply") from None
    except (MemoryError, OverflowError) as err:
        raise ExpressionRefused(f"the expression is too large ({type(err).__name__})") from None
    except ExpressionFailed:
        raise
    except Exception as err:  # the expression's own failure on its data
        raise ExpressionFailed(f"{type(err).__name__}: {err}"[:300]) from None


def _plain(err: simpleeval.InvalidExpression) -> str:
    """simpleeval's message, in promptgen's words where it has one of its own."""
    if isinstance(err, simpleeval.FunctionNotDefined):
        return f"function {err.func_name!r} is not allowed"
    if isinstance(err, simpleeval.NameNotDefined):
        return f"name {err.name!r} is not defined"
    message = str(err).removeprefix("Sorry, ")
    dunder = regex.search(r"\((_\w*)\)$", message)
    if dunder:
        return f"names starting with _ are not allowed ({dunder.group(1)})"
    return message[0].lower() + message[1:] if message else type(err).__name__


def evaluate(
    source: str, names: Mapping[str, Any] | None = None, *, seconds: float = SECONDS
) -> Any:
    """The value of the expression `source` over `names`."""
    tree = parse(source)
    return _run(tree.body, source, names or {}, seconds)


@dataclass(frozen=True)
class RestrictedLambda:
    """A `lambda` written as text, callable like a function; its body runs restricted."""

    source: str
    params: tuple[str, ...]
    defaults: tuple[Any, ...]
    keywords: str | None
    body: ast.AST
    seconds: float = SECONDS

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(self.params):
            raise ExpressionFailed(
                f"the lambda takes {len(self.params)} argument(s), {len(args)} given"
            )
        bound: dict[str, Any] = dict(zip(self.params, args, strict=False))
        extra: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in bound:
                raise ExpressionFailed(f"the lambda got {key!r} twice")
            if key in self.params:
                bound[key] = value
            elif self.keywords is not None:
                extra[key] = value
            else:
                raise ExpressionFailed(f"the lambda has no parameter {key!r}")
        first_default = len(self.params) - len(self.defaults)
        for i, name in enumerate(self.params):
            if name not in bound:
                if i < first_default:
                    raise ExpressionFailed(f"the lambda's parameter {name!r} got no value")
                bound[name] = self.defaults[i - first_default]
        if self.keywords is not None:
            bound[self.keywords] = extra
        return _run(self.body, self.source, bound, self.seconds)


def compile_lambda(source: str, *, seconds: float = SECONDS) -> RestrictedLambda:
    """`"lambda r, a, b: ..."` as a callable; refused unless it is exactly one lambda
    with plain parameters (defaults and `**kwargs` allowed)."""
    tree = parse(source)
    node = tree.body
    if not isinstance(node, ast.Lambda):
        raise ExpressionRefused(f"expected a lambda, got {source[:80]!r}")
    spec = node.args
    if spec.vararg or spec.kwonlyargs or spec.posonlyargs:
        raise ExpressionRefused("the lambda may only have plain parameters and **kwargs")
    defaults = tuple(_run(d, source, {}, seconds) for d in spec.defaults)
    return RestrictedLambda(
        source=source,
        params=tuple(a.arg for a in spec.args),
        defaults=defaults,
        keywords=spec.kwarg.arg if spec.kwarg else None,
        body=node.body,
        seconds=seconds,
    )


def names_used(source: str) -> list[str]:
    """The free names an expression reads, in first-use order (for input detection)."""
    tree = parse(source)
    bound = {
        n.id
        for comp in ast.walk(tree)
        if isinstance(comp, ast.comprehension)
        for n in ast.walk(comp.target)
        if isinstance(n, ast.Name)
    }
    seen: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in bound and node.id not in seen:
            seen.append(node.id)
    return seen


def attribute_paths(source: str, root: str) -> list[str]:
    """The attribute names read directly off `root` (`source.reply` gives "reply")."""
    found: list[str] = []
    for node in ast.walk(parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == root
            and node.attr not in found
        ):
            found.append(node.attr)
    return found


__all__: Sequence[str] = (
    "ExpressionFailed",
    "ExpressionRefused",
    "Record",
    "RestrictedLambda",
    "attribute_paths",
    "compile_lambda",
    "evaluate",
    "names_used",
)
