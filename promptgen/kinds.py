"""The names of the file formats and template engines (a base module: options, model
and the loaders all refer to them)."""

from __future__ import annotations

from typing import Literal, get_args

PromptFormat = Literal[
    "prompty", "markdown", "text", "prompt.yml", "lve", "lve-prompt", "promptarchitect", "verdict"
]
# "format": Python str.format placeholders (LVE); "verdict": `{expression}` placeholders
# evaluated by promptgen.rendering.restricted (Verdict-style templates).
TemplateEngine = Literal["jinja2", "mustache", "format", "verdict"]
PROMPT_FORMATS: tuple[str, ...] = get_args(PromptFormat)
# name -> one line for `--format` help, `promptgen inspect` and docs/formats.md
FORMATS: dict[str, str] = {
    "prompty": "Prompty (.prompty, v1 and v2, PromptPex extensions)",
    "prompt.yml": "GitHub Models prompt (.prompt.yml / .prompt.yaml)",
    "markdown": "Markdown prompt (.md, optional frontmatter, role markers)",
    "text": "plain text prompt (.txt): one user message",
    "lve": "LVE test.json (prompt, prompt_file or multi_run_prompt, checker_args)",
    "lve-prompt": "LVE .prompt file (JSONL messages or plain text)",
    "promptarchitect": "Promptarchitect .prompt (Markdown + frontmatter with tests)",
    "verdict": "Verdict-style judge template (@system / @user sections, {source.x})",
}
