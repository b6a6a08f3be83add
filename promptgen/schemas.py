"""JSON Schemas generated from the pydantic models (`promptgen schema`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptgen.context import context_schema
from promptgen.formats.frontmatter import prompt_schema

SCHEMAS: dict[str, Any] = {
    "prompt.schema.json": prompt_schema,
    "context.schema.json": context_schema,
}


def schema_text(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        target = folder / name
        target.write_text(schema_text(name), encoding="utf-8")
        written.append(target)
    return written
