"""The names of the file formats and template engines (a base module: options, model
and the loaders all refer to them)."""

from __future__ import annotations

from typing import Literal, get_args

PromptFormat = Literal[
    "prompty", "markdown", "text", "prompt.yml", "lve", "lve-prompt", "promptarchitect", "verdict"
]
# "format": Python str.format placeholders (LVE); "verdict": `{expression}` placeholders
# evaluated by promptgen.restricted (Verdict-style templates).
TemplateEngine = Literal["jinja2", "mustache", "format", "verdict"]
PROMPT_FORMATS: tuple[str, ...] = get_args(PromptFormat)
