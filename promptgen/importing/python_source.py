"""Prompts in Python source, read with `ast` (never run): string literals, f-strings,
concatenation, `.format(...)`, LangChain templates and messages lists."""

from __future__ import annotations

import ast
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            _value(found, _target(node.targets[0]), node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _value(found, _target(node.target), node.value)
        elif isinstance(node, ast.Expr):
            _value(found, None, node.value)
        elif isinstance(node, ast.keyword) and node.arg:
            if node.arg in TEXT_KEYWORDS or not isinstance(node.value, ast.Constant):
                _value(found, node.arg, node.value)
            else:  # `name="Ann"` in a call: a value for the template, not a prompt
                found.keyword(node.arg, node.value.value)
    return choose(found, "python", file)


def _target(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _value(found: Found, name: str | None, node: ast.expr) -> None:
    if isinstance(node, ast.Constant) and not isinstance(node.value, str):
        if name and isinstance(node.value, int | float | bool):
            found.keyword(name, node.value)
        return
    if isinstance(node, ast.Constant) and name:
        found.keyword(name, node.value)  # a sample when a template reads `name`
        if name in ("model", "role"):
            return
    messages = _messages(node)
    if messages:
        found.message_lists.append(messages)
        return
    if isinstance(node, ast.Call):
        _call(found, name, node)
        return
    pieces = _string(node)
    if pieces is not None and isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp):
        found.strings.append(Candidate(name, pieces, node.lineno))


def _call(found: Found, name: str | None, node: ast.Call) -> None:
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
        messages = _messages(node.args[0])
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


def _messages(node: ast.expr) -> list[Msg] | None:
    """`[{"role": ..., "content": ...}, ...]` or LangChain's `[("system", "..."), ...]`."""
    if not isinstance(node, ast.List | ast.Tuple) or not node.elts:
        return None
    out = []
    for item in node.elts:
        pair = _pair(item)
        if pair is None:
            return None
        role, content = pair
        pieces = _string(content)
        if pieces is None:
            return None
        out.append(Msg(role, pieces))
    return out


def _pair(item: ast.expr) -> tuple[str, ast.expr] | None:
    if isinstance(item, ast.Dict):
        keys: dict[Any, ast.expr] = {
            k.value: v for k, v in zip(item.keys, item.values, strict=True)
            if isinstance(k, ast.Constant)
        }  # fmt: skip
        role, content = keys.get("role"), keys.get("content")
    elif isinstance(item, ast.Tuple) and len(item.elts) == 2:
        role, content = item.elts
    else:
        return None
    if not (isinstance(role, ast.Constant) and isinstance(role.value, str)) or content is None:
        return None
    mapped = role_of(role.value)
    return (mapped, content) if mapped else None
