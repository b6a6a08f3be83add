"""Prompts in Python source, read with `ast` (never run): string literals, f-strings,
concatenation, `.format(...)`, LangChain templates and messages lists.

A message's content may be a name: bound in the file to a string, it is that string;
bound to nothing (a parameter), it is an input. Anything else stops the import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from promptgen.errors import BadInputError
from promptgen.importing.found import TEXT_KEYWORDS, Candidate, Found, choose
from promptgen.importing.pieces import (
    Imported,
    Msg,
    Piece,
    Var,
    format_pieces,
    merge_text,
    role_of,
    var_name,
)


def read_python(text: str, file: str) -> Imported:
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as err:
        raise BadInputError(
            f"not Python: {err.msg}", file=file, line=err.lineno, hint="or pass --kind text"
        ) from err
    found = Found()
    source = _Source(file, _bindings(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            _value(found, source, _target(node.targets[0]), node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _value(found, source, _target(node.target), node.value)
        elif isinstance(node, ast.Expr):
            _value(found, source, None, node.value)
        elif isinstance(node, ast.keyword) and node.arg:
            if node.arg in TEXT_KEYWORDS or not isinstance(node.value, ast.Constant):
                _value(found, source, node.arg, node.value)
            else:  # `name="Ann"` in a call: a value for the template, not a prompt
                found.keyword(node.arg, node.value.value)
    return choose(found, "python", file)


@dataclass
class _Source:
    file: str
    # name -> what it is bound to, each time it is bound (None: not to a plain value)
    bindings: dict[str, list[ast.expr | None]] = field(default_factory=dict)


def _bindings(tree: ast.Module) -> dict[str, list[ast.expr | None]]:
    """Every name the file binds, with the value where it is a plain `name = value`.
    Function parameters are not bindings: a parameter is what the caller sends."""
    out: dict[str, list[ast.expr | None]] = {}
    plain: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and node.value is None:
            plain.add(id(node.target))  # `name: str`, a declaration only
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
                    plain.add(id(target))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            if id(node) not in plain:
                out.setdefault(node.id, []).append(None)  # a loop, `+=`, unpacking, ...
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                out.setdefault(alias.asname or alias.name.split(".")[0], []).append(None)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(node.name, []).append(None)
    return out


def _target(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _value(found: Found, source: _Source, name: str | None, node: ast.expr) -> None:
    if isinstance(node, ast.Constant) and not isinstance(node.value, str):
        if name and isinstance(node.value, int | float | bool):
            found.keyword(name, node.value)
        return
    if isinstance(node, ast.Constant) and name:
        found.keyword(name, node.value)  # a sample when a template reads `name`
        if name in ("model", "role"):
            return
    messages = _messages(found, source, node)
    if messages:
        found.message_lists.append(messages)
        return
    if isinstance(node, ast.Call):
        _call(found, source, name, node)
        return
    pieces = _string(node)
    if pieces is not None and isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp):
        found.strings.append(Candidate(name, pieces, node.lineno))


def _call(found: Found, source: _Source, name: str | None, node: ast.Call) -> None:
    """`"...".format(a=1)`, `PromptTemplate.from_template("...")`, `X(template="...")`."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "format":
        pieces = _string(func.value)
        if pieces is not None:
            found.strings.append(Candidate(name, pieces, node.lineno))
            for kw in node.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant):
                    found.constants.setdefault(kw.arg, kw.value.value)
        return
    if node.args:
        messages = _messages(found, source, node.args[0])
        pieces = None if messages else _string(node.args[0])
        if messages:
            found.message_lists.append(messages)
        elif pieces is not None:
            found.strings.append(Candidate(name, pieces, node.lineno))


def _string(node: ast.expr) -> list[Piece] | None:
    """The pieces of a string expression, or None when `node` is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return format_pieces(node.value)  # a template for .format or LangChain
    if isinstance(node, ast.JoinedStr):
        out: list[Piece] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))  # `{{` is already one brace here
            elif isinstance(part, ast.FormattedValue):
                out.append(Var(var_name(ast.unparse(part.value))))
        return merge_text(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _operand(node.left), _operand(node.right)
        if left is not None and right is not None:
            return merge_text([*left, *right])
    return None


def _operand(node: ast.expr) -> list[Piece] | None:
    if isinstance(node, ast.Name):
        return [Var(var_name(node.id))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return _operand(node.args[0]) if len(node.args) == 1 else None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]  # concatenated text is not a template
    return _string(node)


def _messages(found: Found, source: _Source, node: ast.expr) -> list[Msg] | None:
    """`[{"role": ..., "content": ...}, ...]` or LangChain's `[("system", "..."), ...]`.

    A list that holds one such message is a messages list: every item must then be read
    (role, content, order), or the import stops naming the line."""
    if not isinstance(node, ast.List | ast.Tuple) or not any(map(_is_message, node.elts)):
        return None
    out = []
    for item in node.elts:
        role, content = _pair(source, item)
        out.append(Msg(role, _content(found, source, content, role, set())))
    return out


def _is_message(item: ast.expr) -> bool:
    if isinstance(item, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == "role" for k in item.keys)
    return (
        isinstance(item, ast.Tuple)
        and len(item.elts) == 2
        and isinstance(role := item.elts[0], ast.Constant)
        and isinstance(role.value, str)
        and role_of(role.value) is not None
    )


_HINT = "write it as a string literal, an f-string, or a name bound to one in this file"


def _unread(source: _Source, node: ast.AST, what: str) -> BadInputError:
    return BadInputError(
        f"cannot read {what}",
        file=source.file,
        line=getattr(node, "lineno", None),
        hint=_HINT,
    )


def _shown(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _pair(source: _Source, item: ast.expr) -> tuple[str, ast.expr]:
    if isinstance(item, ast.Dict):
        keys: dict[Any, ast.expr] = {
            k.value: v for k, v in zip(item.keys, item.values, strict=True)
            if isinstance(k, ast.Constant)
        }  # fmt: skip
        role, content = keys.get("role"), keys.get("content")
    elif isinstance(item, ast.Tuple) and len(item.elts) == 2:
        role, content = item.elts
    else:
        raise _unread(source, item, f"`{_shown(item)}` in a messages list")
    if not (isinstance(role, ast.Constant) and isinstance(role.value, str)):
        raise _unread(source, item, f"the role of the message `{_shown(item)}`")
    mapped = role_of(role.value)
    if mapped is None:
        raise BadInputError(
            f"a message's role {role.value!r} is not one promptgen knows",
            file=source.file,
            line=item.lineno,
            hint="use system, developer, user or assistant",
        )
    if content is None:
        raise _unread(source, item, f"the {mapped} message `{_shown(item)}`: it has no content")
    return mapped, content


def _content(
    found: Found, source: _Source, node: ast.expr, role: str, seen: set[str]
) -> list[Piece]:
    """A message's content: a string expression; a name bound to one in this file (or
    an input where the file does not bind it); `"...".format(...)` of either."""
    pieces = _string(node)
    if pieces is not None:
        return pieces
    if isinstance(node, ast.Name):
        bound = source.bindings.get(node.id)
        if bound is None:
            return [Var(var_name(node.id))]  # a parameter: what the caller sends
        values = {ast.dump(v) if v is not None else None for v in bound}
        value = bound[0]
        if None in values or value is None or node.id in seen:
            raise _unread(
                source,
                node,
                f"the {role} message: `{node.id}` is not bound to a string in this file",
            )
        if len(values) > 1:
            raise _unread(
                source, node, f"the {role} message: `{node.id}` is bound to {len(bound)} values"
            )
        if _string(value) is None and not isinstance(value, ast.Name) and not _format(value):
            raise _unread(
                source,
                node,
                f"the {role} message: `{node.id}` is `{_shown(value)}` (line {value.lineno}),"
                " not a string",
            )
        return _content(found, source, value, role, seen | {node.id})
    if isinstance(node, ast.Call) and _format(node):
        assert isinstance(node.func, ast.Attribute)
        pieces = _content(found, source, node.func.value, role, seen)
        for kw in node.keywords:
            if kw.arg and isinstance(kw.value, ast.Constant):
                found.constants.setdefault(kw.arg, kw.value.value)
        return pieces
    raise _unread(source, node, f"the {role} message's content `{_shown(node)}`")


def _format(node: ast.expr) -> bool:
    """`"...".format(name=...)` (keywords only)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and not node.args
    )
