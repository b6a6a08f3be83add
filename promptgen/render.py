"""The one template environment: sandboxed Jinja2 (default) or safe Mustache.

Prompt files and test data are untrusted. Jinja2 runs in an immutable sandbox with
strict undefined variables; attribute access to internals raises a security error
(never a silent empty string); `*`/`**` and `range` are bounded so a template cannot
exhaust memory. Nothing is HTML-escaped: prompts are not web pages.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from promptgen import mustache
from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.model import PromptUnderTest

MAX_SEQUENCE = 1_000_000  # characters or items a `*` may produce
MAX_POWER = 10_000
MAX_INT_BITS = 100_000


def _bounded_replace(value: Any, old: str, new: str, count: int | None = None) -> str:
    text = str(value)
    hits = text.count(str(old)) if count is None else min(count, text.count(str(old)))
    if len(text) + hits * max(0, len(str(new)) - len(str(old))) > MAX_SEQUENCE:
        raise TemplateSecurityError(f"template builds a string over {MAX_SEQUENCE:,} characters")
    return text.replace(str(old), str(new), -1 if count is None else count)


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise TemplateSecurityError(
            f"template reaches for '{attribute}' on a {type(obj).__name__}; "
            "templates may only use data, not Python internals"
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_POWER:
                raise TemplateSecurityError(f"exponent {right} is too large for a template")
            ints = isinstance(left, int) and isinstance(right, int) and right > 0
            if ints and left.bit_length() * right > MAX_INT_BITS:
                raise TemplateSecurityError("template builds a number that is too large")
            return left**right
        for seq, count in ((left, right), (right, left)):
            sized = isinstance(seq, (str, list, tuple)) and isinstance(count, int)
            if sized and len(seq) * count > MAX_SEQUENCE:
                raise TemplateSecurityError(
                    f"template builds a sequence of {len(seq) * count:,} items "
                    f"(limit {MAX_SEQUENCE:,})"
                )
        return left * right


def _environment(strict: bool) -> _Sandbox:
    env = _Sandbox(
        undefined=jinja2.StrictUndefined if strict else jinja2.Undefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["replace"] = _bounded_replace
    return env


_ENVIRONMENTS = {True: _environment(True), False: _environment(False)}


@functools.lru_cache(maxsize=512)
def _compile(source: str, strict: bool) -> jinja2.Template:
    return _ENVIRONMENTS[strict].from_string(source)


_OTHER_FILES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def check_syntax(source: str, engine: str = "jinja2") -> None:
    """Raise RenderError for a template that cannot compile (line relative to `source`)."""
    try:
        if engine == "mustache":
            mustache.parse(source)
            return
        _compile(source, True)
        for node in _ENVIRONMENTS[True].parse(source).find_all(_OTHER_FILES):
            tag = type(node).__name__.lower().replace("fromimport", "from ... import")
            raise RenderError(
                f"template uses {{% {tag} %}}: promptgen renders one self-contained file",
                line=node.lineno,
                hint="inline the other template's text",
            )
    except jinja2.TemplateSyntaxError as err:
        raise RenderError(f"template syntax error: {err.message}", line=err.lineno) from err
    except mustache.MustacheSecurityError as err:
        raise TemplateSecurityError(f"unsafe template: {err}", line=err.line) from err
    except mustache.MustacheError as err:
        raise RenderError(f"template syntax error: {err}", line=err.line) from err


def template_variables(source: str, engine: str = "jinja2") -> list[str]:
    """Names a template reads from its inputs, in order of first use."""
    if engine == "mustache":
        return mustache.variables(source)
    env = _ENVIRONMENTS[True]
    ast = env.parse(source)
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

    try:
        if engine == "mustache":
            return mustache.render(source, values, strict=strict)
        return _compile(source, strict).render(**values)
    except TemplateSecurityError as err:
        err.file, err.line = file, err.line or line
        raise
    except (jinja2.exceptions.SecurityError, mustache.MustacheSecurityError) as err:
        raise TemplateSecurityError(
            f"unsafe template: {err}", file=file, line=where(getattr(err, "line", None))
        ) from err
    except mustache.MustacheMissing as err:
        raise _missing(err.name, file, where(err.line)) from err
    except jinja2.UndefinedError as err:
        name = _undefined_name(str(err))
        if name:
            raise _missing(name, file, line) from err
        raise RenderError(f"template error: {err}", file=file, line=line) from err
    except jinja2.TemplateSyntaxError as err:
        raise RenderError(
            f"template syntax error: {err.message}", file=file, line=where(err.lineno)
        ) from err
    except mustache.MustacheError as err:
        raise RenderError(f"template error: {err}", file=file, line=where(err.line)) from err
    except OverflowError as err:  # the sandbox's bound on range(), or a huge number
        raise TemplateSecurityError(f"unsafe template: {err}", file=file, line=line) from err
    except (MemoryError, RecursionError) as err:
        raise TemplateSecurityError(
            f"template exhausted resources ({type(err).__name__})", file=file, line=line
        ) from err
    except (TypeError, ValueError, ArithmeticError, LookupError) as err:
        raise RenderError(f"template failed: {err}", file=file, line=line) from err


def _undefined_name(text: str) -> str | None:
    # jinja2 says "'name' is undefined" for a missing top-level variable.
    if text.endswith("is undefined") and text.startswith("'"):
        return text.split("'")[1]
    return None


def _missing(name: str, file: str | None, line: int | None) -> RenderError:
    return RenderError(
        f"missing input '{name}'",
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
