"""The names of the file formats, template engines and provider profiles (a base
module: options, model, the loaders and the gateway all refer to them)."""

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

# The provider families whose structured-output rules promptgen knows (llm/profiles.py).
ProviderProfile = Literal[
    "openai", "azure", "openai-ft", "anthropic", "gemini", "ollama", "compatible"
]
PROVIDER_PROFILES: tuple[str, ...] = get_args(ProviderProfile)
# The JSON Schema keyword marking a nested object whose model also takes it written as
# JSON text (prompting/cases.py): the only object shaping may ask as a string
# (llm/shaping.py).
JSON_TEXT = "x-promptgen-json-text"
