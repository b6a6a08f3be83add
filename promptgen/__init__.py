"""promptgen: generate tests for LLM prompts, run them on models, score the results.

The library API (docs/api.md): `run` (and `run_async`) runs the pipeline on a prompt
file or a saved context and returns the `Context`; `prepare` resolves the options
without calling any model; `Options` is the one declaration of every option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from promptgen.version import __version__

# Loaded on first use (PEP 562): `promptgen --version` and `import promptgen` stay fast,
# and pandas, jinja2 or litellm load only when something needs them (docs/api.md).
_LAZY: dict[str, tuple[str, str]] = {
    "Context": ("promptgen.context", "Context"),
    "DiffResult": ("promptgen.report.diff", "DiffResult"),
    "Evaluation": ("promptgen.options", "Evaluation"),
    "ExportResult": ("promptgen.export", "ExportResult"),
    "ExportSettings": ("promptgen.export", "ExportSettings"),
    "Generation": ("promptgen.options", "Generation"),
    "Instructions": ("promptgen.options", "Instructions"),
    "Models": ("promptgen.options", "Models"),
    "Options": ("promptgen.options", "Options"),
    "Prepared": ("promptgen.api", "Prepared"),
    "PromptUnderTest": ("promptgen.model", "PromptUnderTest"),
    "Run": ("promptgen.options", "Run"),
    "RunConfig": ("promptgen.config", "RunConfig"),
    "diff_contexts": ("promptgen.report.diff", "diff_contexts"),
    "load_context": ("promptgen.context", "load_context"),
    "load_prompt": ("promptgen.formats", "load_prompt"),
    "prepare": ("promptgen.api", "prepare"),
    "render_messages": ("promptgen.rendering.render", "render_messages"),
    "render_template": ("promptgen.rendering.render", "render_template"),
    "run": ("promptgen.api", "run"),
    "run_async": ("promptgen.api", "run_async"),
    "save_context": ("promptgen.context", "save_context"),
    "write_exports": ("promptgen.export", "write_exports"),
    "write_reports": ("promptgen.report.files", "write_all"),
}

if TYPE_CHECKING:
    from promptgen.api import Prepared, prepare, run, run_async
    from promptgen.config import RunConfig
    from promptgen.context import Context, load_context, save_context
    from promptgen.export import ExportResult, ExportSettings, write_exports
    from promptgen.formats import load_prompt
    from promptgen.model import PromptUnderTest
    from promptgen.options import Evaluation, Generation, Instructions, Models, Options, Run
    from promptgen.rendering.render import render_messages, render_template
    from promptgen.report.diff import DiffResult, diff_contexts
    from promptgen.report.files import write_all as write_reports


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'promptgen' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Context",
    "DiffResult",
    "Evaluation",
    "ExportResult",
    "ExportSettings",
    "Generation",
    "Instructions",
    "Models",
    "Options",
    "Prepared",
    "PromptUnderTest",
    "Run",
    "RunConfig",
    "__version__",
    "diff_contexts",
    "load_context",
    "load_prompt",
    "prepare",
    "render_messages",
    "render_template",
    "run",
    "run_async",
    "save_context",
    "write_exports",
    "write_reports",
]
