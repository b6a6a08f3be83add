"""Committed JSON Schemas match the models, and real files validate against them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml

from promptgen import Context, load_prompt, save_context
from promptgen.formats.body import split_frontmatter
from promptgen.schemas import SCHEMAS, schema_text
from tests import corpus
from tests.conftest import REPO, run_cli

SCHEMA_DIR = REPO / "schemas"


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_committed_schema_is_fresh(name: str) -> None:
    committed = (SCHEMA_DIR / name).read_text(encoding="utf-8")
    assert committed == schema_text(name), (
        f"schemas/{name} is stale: run `promptgen schema --out schemas`"
    )


def test_schema_command_prints_and_writes(tmp_path: Path) -> None:
    printed = run_cli("schema", "context")
    assert printed.returncode == 0
    assert json.loads(printed.stdout)["title"] == "promptgen context"
    written = run_cli("schema", "--out", str(tmp_path))
    assert written.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SCHEMAS)


def _frontmatters() -> list[Path]:
    files = sorted(REPO.glob("samples/*.prompty"))
    if corpus.available():
        files += sorted((corpus.CORPUS / "promptpex/samples").rglob("*.prompty"))
    return files


@pytest.mark.parametrize("path", _frontmatters(), ids=lambda p: p.name)
def test_frontmatter_validates_against_prompt_schema(path: Path) -> None:
    schema = json.loads((SCHEMA_DIR / "prompt.schema.json").read_text())
    split = split_frontmatter(path.read_text(encoding="utf-8-sig"), str(path))
    data = yaml.safe_load(split.frontmatter or "") or {}
    jsonschema.validate(data, schema)


def test_prompt_schema_rejects_wrong_types() -> None:
    schema = json.loads((SCHEMA_DIR / "prompt.schema.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"scenarios": "text"}, schema)


def test_saved_context_validates_against_context_schema(
    write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    prompt = load_prompt(write("p.prompty", "---\nname: s\n---\nuser:\n{{q}}\n"))
    path = save_context(Context.new(prompt), tmp_path / "context.json")
    schema = json.loads((SCHEMA_DIR / "context.schema.json").read_text())
    jsonschema.validate(json.loads(path.read_text()), schema)
