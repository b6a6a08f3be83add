"""The one template environment: sandboxed Jinja2 (default) or safe Mustache.

Prompt files and test data are untrusted. Jinja2 runs in promptgen.rendering.sandbox (Jinja's
immutable sandbox, bounded in size and time), with strict undefined variables;
attribute access to internals raises a security error (never a silent empty string).
Templates nested deeper than MAX_TEMPLATE_NESTING blocks or MAX_EXPRESSION_NESTING
brackets are refused with their line, and anything that still exhausts the stack or
memory while compiling or rendering is one clear error: never a traceback. Nothing is
HTML-escaped: prompts are not web pages.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes

from promptgen.bounds import (
    MAX_EXPRESSION_NESTING,
    MAX_TEMPLATE_ITEMS,
    MAX_TEMPLATE_NESTING,
    MAX_TEMPLATE_TAGS,
    Budget,
    printable,
)
from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.model import PromptUnderTest
from promptgen.rendering import mustache, pyformat
from promptgen.rendering.sandbox import BUDGET, Sandbox, environment

MAX_SEQUENCE = MAX_TEMPLATE_ITEMS  # the old name of the limit on `*`
_ENVIRONMENTS = {True: environment(True), False: environment(False)}
_BLOCKS = {"if", "for", "macro", "call", "filter", "with", "block", "autoescape", "trans"}


def _check_nesting(env: Sandbox, source: str) -> None:
    """Refuse, with its line, a template nested too deeply to parse and compile safely
    (Python allows only so many nested blocks, indentation levels and brackets)."""
    blocks = brackets = 0
    tokens = iter(env.lex(source))
    after_begin = False
    for line, kind, value in tokens:
        if kind == "whitespace":
            continue
        if after_begin and kind == "name":
            if value in _BLOCKS or (value == "set" and _set_block(tokens)):
                blocks += 1
            elif value.startswith("end"):
                blocks -= 1
        after_begin = kind == "block_begin"
        if kind == "operator" and value in "([{":
            brackets += 1
        elif kind == "operator" and value in ")]}":
            brackets -= 1
        if blocks > MAX_TEMPLATE_NESTING or brackets > MAX_EXPRESSION_NESTING:
            what = "blocks" if blocks > MAX_TEMPLATE_NESTING else "brackets"
            limit = MAX_TEMPLATE_NESTING if what == "blocks" else MAX_EXPRESSION_NESTING
            raise RenderError(
                f"template nests {what} more than {limit} deep",
                line=line,
                hint="split the template or flatten the expression",
            )


def _set_block(tokens: Iterator[tuple[int, str, str]]) -> bool:
    """After `{% set`: whether it is a block set (`{% set x %}...{% endset %}`). Reads
    the tokens up to the end of the tag."""
    assignment = False
    for _, kind, value in tokens:
        if kind == "block_end":
            return not assignment
        assignment = assignment or (kind == "operator" and value == "=")
    return False


@functools.lru_cache(maxsize=64)
def _parse(source: str) -> nodes.Template:
    """The template's syntax tree, for reading it (compiling parses afresh: Jinja's
    optimizer changes the tree it compiles). Limits are checked first."""
    env = _ENVIRONMENTS[True]
    tags = source.count("{{") + source.count("{%")
    if tags > MAX_TEMPLATE_TAGS:
        raise RenderError(
            f"template has {tags:,} tags ({{{{ }}}} and {{% %}}); promptgen reads at most "
            f"{MAX_TEMPLATE_TAGS:,} in one message",
            hint="split the message, or write literal braces as {{ '{{' }}",
        )
    if source.count("{%") > MAX_TEMPLATE_NESTING or _brackets(source) > MAX_EXPRESSION_NESTING:
        _check_nesting(env, source)
    try:
        return env.parse(source)
    except (RecursionError, MemoryError) as err:
        raise RenderError(
            f"template is nested too deeply to read ({type(err).__name__})",
            hint="simplify the template",
        ) from err


def _brackets(source: str) -> int:
    return sum(source.count(c) for c in "([{") - 2 * source.count("{{") - source.count("{%")


@functools.lru_cache(maxsize=512)
def _compile(source: str, strict: bool) -> jinja2.Template:
    _parse(source)  # the limits, and syntax errors with their lines
    try:
        return _ENVIRONMENTS[strict].from_string(source)
    except (RecursionError, MemoryError, SyntaxError) as err:  # Python's own compile limits
        raise RenderError(
            f"template is nested too deeply to compile ({type(err).__name__}: "
            f"{getattr(err, 'msg', None) or err})",
            hint="split the template into simpler parts",
        ) from err


_OTHER_FILES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def check_syntax(source: str, engine: str = "jinja2") -> None:
    """Raise RenderError for a template that cannot compile (line relative to `source`)."""
    try:
        if engine in ("format", "verdict"):
            _engine(engine).check(source)
            return
        if engine == "mustache":
            mustache.parse(source)
            return
        ast = _parse(source)
        for node in ast.find_all(_OTHER_FILES):
            tag = type(node).__name__.lower().replace("fromimport", "from ... import")
            raise RenderError(
                f"template uses {{% {tag} %}}: promptgen renders one self-contained file",
                line=node.lineno,
                hint="inline the other template's text",
            )
        _compile(source, True)
    except jinja2.TemplateSyntaxError as err:
        raise RenderError(
            f"template syntax error: {printable(err.message)}", line=err.lineno
        ) from err
    except mustache.MustacheSecurityError as err:
        raise TemplateSecurityError(f"unsafe template: {printable(err)}", line=err.line) from err
    except mustache.MustacheError as err:
        raise RenderError(f"template syntax error: {printable(err)}", line=err.line) from err


def template_variables(source: str, engine: str = "jinja2") -> list[str]:
    """Names a template reads from its inputs, in order of first use."""
    if engine in ("format", "verdict"):
        return _engine(engine).variables(source)
    if engine == "mustache":
        return mustache.variables(source)
    ast = _parse(source)
    undeclared = meta.find_undeclared_variables(ast)
    ordered: list[str] = []
    for node in ast.find_all(nodes.Name):
        if node.ctx == "load" and node.name in undeclared and node.name not in ordered:
            ordered.append(node.name)
    return ordered


def render_template(
    source: str,
    values: Mapping[str, Any],
    *,
    engine: str = "jinja2",
    strict: bool = True,
    file: str | None = None,
    line: int | None = None,
) -> str:
    """Render one template. `line` is the file line where `source` starts, for errors."""

    def where(relative: int | None) -> int | None:
        if line is None:
            return relative
        return line + (relative or 1) - 1

    token = BUDGET.set(Budget())
    try:
        if engine in ("format", "verdict"):
            return _engine(engine).render(source, values, strict=strict)
        if engine == "mustache":
            return mustache.render(source, values, strict=strict)
        return _compile(source, strict).render(**values)
    except TemplateSecurityError as err:
        err.file, err.line = file, where(err.line) if err.line else line
        raise
    except RenderError as err:  # nested too deeply to compile
        err.file, err.line = file, where(err.line)
        raise
    except (jinja2.exceptions.SecurityError, mustache.MustacheSecurityError) as err:
        raise TemplateSecurityError(
            f"unsafe template: {printable(err)}", file=file, line=where(getattr(err, "line", None))
        ) from err
    except (mustache.MustacheMissing, pyformat.MissingInput) as err:
        raise _missing(err.name, file, where(err.line)) from err
    except jinja2.UndefinedError as err:
        name = _undefined_name(str(err))
        if name:
            raise _missing(name, file, line) from err
        raise RenderError(f"template error: {printable(err)}", file=file, line=line) from err
    except jinja2.TemplateSyntaxError as err:
        raise RenderError(
            f"template syntax error: {printable(err.message)}", file=file, line=where(err.lineno)
        ) from err
    except mustache.MustacheError as err:
        raise RenderError(
            f"template error: {printable(err)}", file=file, line=where(err.line)
        ) from err
    except OverflowError as err:  # the sandbox's bound on range(), or a huge number
        raise TemplateSecurityError(
            f"unsafe template: {printable(err)}", file=file, line=line
        ) from err
    except (MemoryError, RecursionError) as err:
        raise TemplateSecurityError(
            f"template exhausted resources ({type(err).__name__})", file=file, line=line
        ) from err
    except (TypeError, ValueError, ArithmeticError, LookupError) as err:
        raise RenderError(f"template failed: {printable(err)}", file=file, line=line) from err
    finally:
        BUDGET.reset(token)


def _engine(name: str) -> Any:
    """The module of a non-Jinja engine: `check`, `variables` and `render`."""
    if name == "verdict":
        from promptgen.rendering import verdict_template

        return verdict_template
    return pyformat


def _undefined_name(text: str) -> str | None:
    # jinja2 says "'name' is undefined" for a missing top-level variable.
    if text.endswith("is undefined") and text.startswith("'"):
        return text.split("'")[1]
    return None


def _missing(name: str, file: str | None, line: int | None) -> RenderError:
    return RenderError(
        f"missing input '{printable(name)}'",
        file=file,
        line=line,
        hint=f"declare a default for '{name}' in the frontmatter, or pass a value",
    )


def input_values(
    prompt: PromptUnderTest, values: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Declared defaults, overlaid with the given values."""
    merged = {n: i.default for n, i in prompt.inputs.items() if i.default is not None}
    merged.update(values or {})
    return merged


def render_messages(
    prompt: PromptUnderTest, values: Mapping[str, Any] | None = None, *, strict: bool = True
) -> list[dict[str, Any]]:
    """Render every message of the prompt with defaults overlaid by `values`.

    Messages are split before rendering, so an input value can never forge a role
    boundary (a test input containing "system:" stays inside its message).
    """
    merged = input_values(prompt, values)
    rendered = []
    for message in prompt.messages:
        content = render_template(
            message.content,
            merged,
            engine=prompt.template_engine,
            strict=strict,
            file=prompt.source,
            line=message.line,
        )
        # Attributes (e.g. name) never override the role or the content.
        rendered.append({**message.attributes, "role": message.role, "content": content})
    return rendered
