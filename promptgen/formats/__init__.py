"""One loader per file format, all producing a PromptUnderTest."""

from __future__ import annotations

import hashlib
from pathlib import Path

from promptgen.bounds import MAX_PROMPT_BYTES
from promptgen.errors import PromptFormatError
from promptgen.formats.detect import CONTEXT, FORMATS, detect, loader
from promptgen.formats.reading import read_text
from promptgen.model import PromptUnderTest

SUFFIXES = (".prompty", ".prompt.yml", ".prompt.yaml", ".md", ".txt", ".prompt")
__all__ = ["FORMATS", "INLINE", "SUFFIXES", "detect", "load_inline", "load_prompt", "read_text"]
INLINE = "inline"  # a prompt given as text is named inline-<hash of the text>


def load_prompt(path: str | Path, format: str | None = None) -> PromptUnderTest:
    """Load any supported prompt file into a PromptUnderTest; `format` (a FORMATS name)
    skips detection."""
    path = Path(path)
    text = read_text(path)
    fmt = format or detect(path, text)
    if fmt == CONTEXT:
        raise PromptFormatError(
            "is a saved promptgen context, not a prompt file",
            file=path,
            hint="run `promptgen CONTEXT.json` to resume it, or pass the prompt file",
        )
    if fmt not in FORMATS:
        raise PromptFormatError(
            f"unknown format {fmt!r}", file=path, hint=f"use one of: {', '.join(FORMATS)}"
        )
    return loader(fmt)(path, text)


def load_inline(text: str) -> PromptUnderTest:
    """A prompt given as text (`--prompt TEXT`), read as a plain text prompt: its inputs are
    detected as for a .txt file. Errors name `--prompt` where a file would be named."""
    if not text.strip():
        raise PromptFormatError("--prompt is empty", hint="give the prompt's text, or a file")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PROMPT_BYTES:
        raise PromptFormatError(
            f"--prompt is over the {MAX_PROMPT_BYTES:,}-byte limit", hint="put it in a file"
        )
    prompt = loader("text")(Path("--prompt"), text)
    # Its own name, so each text has its own output folder: the same text resumes its
    # run, another text starts one beside it (never "a different prompt" refused).
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return prompt.model_copy(update={"name": f"{INLINE}-{digest}"})
