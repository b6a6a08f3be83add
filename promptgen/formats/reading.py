"""Reading a prompt file's text: what every loader starts from (the package's
`load_prompt`, and the LVE loader for the prompt file a test names)."""

from __future__ import annotations

from pathlib import Path

from promptgen.bounds import MAX_PROMPT_BYTES
from promptgen.errors import PromptFormatError
from promptgen.jsonio import read_limited


def read_text(path: Path) -> str:
    """Read a prompt file as UTF-8 text, with one clear error for each way it can fail.

    Folders, pipes and devices are refused before anything is opened, and files over
    MAX_PROMPT_BYTES before anything is read (promptgen.bounds)."""
    if "\x00" not in str(path) and path.is_dir():
        raise PromptFormatError(
            "is a folder, not a prompt file", file=path, hint="pass a file such as my.prompty"
        )
    data = read_limited(path, MAX_PROMPT_BYTES, "prompt file", PromptFormatError)
    if not data.strip():
        raise PromptFormatError("file is empty", file=path, hint="write a prompt into it")
    if b"\x00" in data[:8192]:
        raise PromptFormatError(
            "looks like a binary file, not a text prompt", file=path, hint="pass a text file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise PromptFormatError(
            "is not valid UTF-8 text", file=path, line=line, hint="save the file as UTF-8"
        ) from err
