"""Reading a JSON file the user gave: every failure is one clear error with its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError


def read_json(path: Path, what: str, hint: str, error: type[BadInputError] = BadInputError) -> Any:
    """Parse `path`; `what` names the file in messages, `hint` says how to fix bad JSON."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as err:
        raise error(f"{what} not found", file=path, hint="check the path") from err
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"cannot read {what}: {err}", file=path) from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"not valid JSON: {err.msg}", file=path, line=err.lineno, hint=hint) from err
