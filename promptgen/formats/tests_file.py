"""Tests files: `tests.json` and `tests.filtered.json` (tests plus the rules they target),
or a plain list of tests (`tests.json` of older runs), which a later run reads back as
its test set (`--tests FILE`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from promptgen.errors import BadInputError
from promptgen.jsonio import read_json
from promptgen.results import Rule, Test

_SHAPES = "an object with a 'tests' list (tests.json, tests.filtered.json) or a JSON list of tests"


class TestsFile(BaseModel):
    """The shape of `tests.json` and `tests.filtered.json`: tests plus the rules they need."""

    __test__ = False
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_ref: str | None = Field(None, alias="$schema", description="Optional schema link.")
    prompt: str | None = Field(None, description="Name of the prompt the tests are for.")
    prompt_hash: str | None = Field(None, description="Content hash of that prompt.")
    tests: list[Test]
    rules: list[Rule] = Field(
        default_factory=list, description="Rules the tests target, and the rules they negate."
    )


def filtered_file_schema() -> dict[str, Any]:
    schema = TestsFile.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promptgen tests file"
    return schema


def load_tests_file(path: str | Path) -> tuple[list[Test], list[Rule]]:
    """Tests (and rules) from `tests.json`, `tests.filtered.json` or a plain list of tests."""
    path = Path(path)
    data = read_json(path, "tests file", f"fix the JSON; the file must be {_SHAPES}")
    try:
        if isinstance(data, list):
            tests, rules = TypeAdapter(list[Test]).validate_python(data), []
        elif isinstance(data, dict) and "tests" in data:
            document = TestsFile.model_validate(data)
            tests, rules = document.tests, document.rules
        else:
            raise BadInputError(f"not a tests file: expected {_SHAPES}", file=path)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInputError(
            f"not a valid tests file: {where + ': ' if where else ''}{first['msg']}",
            file=path,
            hint="write it again with --filter-tests N, or fix that field",
        ) from err
    _check_links(path, tests, rules, isinstance(data, dict))
    return tests, rules


def _check_links(path: Path, tests: list[Test], rules: list[Rule], with_rules: bool) -> None:
    seen: set[str] = set()
    for test in tests:
        if test.id in seen:
            raise BadInputError(f"test id {test.id} appears twice", file=path)
        seen.add(test.id)
    if not with_rules:
        return  # a plain list (an older tests.json) carries no rules; the run supplies them
    known = {r.id for r in rules}
    for test in tests:
        if test.rule_id and test.rule_id not in known:
            raise BadInputError(
                f"test {test.id} targets rule {test.rule_id}, which is not in 'rules'",
                file=path,
                hint="add the rule to 'rules' or write the file again with --filter-tests N",
            )
