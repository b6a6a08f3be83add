"""promptgen: generate tests for LLM prompts, run them on models, score the results.

The library API (docs/api.md): `run` (and `run_async`) runs the pipeline on a prompt
file or a saved context and returns the `Context`; `prepare` resolves the options
without calling any model; `Options` is the one declaration of every option.
"""

from __future__ import annotations

__version__ = "0.1.0"

from promptgen.api import Prepared, prepare, run, run_async
from promptgen.config import RunConfig
from promptgen.context import Context, load_context, save_context
from promptgen.export import ExportResult, ExportSettings, write_exports
from promptgen.formats import load_prompt
from promptgen.model import PromptUnderTest
from promptgen.options import Evaluation, Generation, Instructions, Models, Options, Run
from promptgen.render import render_messages, render_template
from promptgen.report.diff import DiffResult, diff_contexts
from promptgen.report.files import write_all as write_reports

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
