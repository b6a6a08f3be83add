"""promptgen: generate tests for LLM prompts."""

from __future__ import annotations

__version__ = "0.1.0"

from promptgen.context import Context, load_context, save_context
from promptgen.formats import load_prompt
from promptgen.model import PromptUnderTest
from promptgen.render import render_messages, render_template

__all__ = [
    "Context",
    "PromptUnderTest",
    "__version__",
    "load_context",
    "load_prompt",
    "render_messages",
    "render_template",
    "save_context",
]
