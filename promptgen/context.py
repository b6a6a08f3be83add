"""The saved state of a run: versioned, validated on load, written atomically.

A run can be killed at any moment; the file on disk is always either the previous
complete version or the new complete version, never a truncated mix.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from promptgen import __version__
from promptgen.errors import ContextError
from promptgen.jsonio import read_json
from promptgen.model import PromptUnderTest
from promptgen.results import (
    GroundtruthAttempt,
    MetricInfo,
    MetricResult,
    Rule,
    StageRecord,
    Test,
    TestReview,
    TestRun,
    UsageTotals,
)
from promptgen.secrets import redact

CONTEXT_VERSION = 1


class Context(BaseModel):
    """Everything a run produces, in one JSON document (`context.json`)."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(CONTEXT_VERSION, description="Shape version of this file.")
    promptgen_version: str = __version__
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    prompt: PromptUnderTest
    prompt_hash: str = ""
    options: dict[str, Any] = Field(default_factory=dict, description="Resolved options.")
    option_sources: dict[str, str] = Field(
        default_factory=dict, description="Where each option came from (cli, frontmatter, ...)."
    )
    intent: str | None = None
    input_spec: str | None = None
    rules: list[Rule] = Field(default_factory=list)
    inverse_rules: list[Rule] = Field(default_factory=list)
    tests: list[Test] = Field(default_factory=list)
    test_runs: list[TestRun] = Field(default_factory=list)
    metrics: list[MetricInfo] = Field(
        default_factory=list, description="Every metric the results below were scored with."
    )
    metric_results: list[MetricResult] = Field(default_factory=list)
    groundtruth: list[GroundtruthAttempt] = Field(default_factory=list)
    review: TestReview | None = None
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    _checkpoint: Callable[[], None] | None = PrivateAttr(None)

    def checkpoint(self) -> None:
        """Save now (the pipeline sets the saver); stages call it after every batch."""
        if self._checkpoint is not None:
            self._checkpoint()

    def stage(self, name: str) -> StageRecord:
        record = self.stages.get(name)
        if record is None:
            record = self.stages[name] = StageRecord(name=name)
        return record

    @property
    def all_rules(self) -> list[Rule]:
        return [*self.rules, *self.inverse_rules]

    def rule(self, rule_id: str | None) -> Rule | None:
        return next((r for r in self.all_rules if r.id == rule_id), None)

    def test(self, test_id: str) -> Test | None:
        return next((t for t in self.tests if t.id == test_id), None)

    @property
    def models_run(self) -> list[str]:
        """Models under test with at least one run, in first-run order."""
        return list(dict.fromkeys(r.model for r in self.test_runs))

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        version = data.get("version", CONTEXT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"'version' must be a whole number from 1, not {version!r}")
        if version > CONTEXT_VERSION:
            raise ValueError(
                f"context version {version} is newer than this promptgen understands "
                f"({CONTEXT_VERSION}); upgrade promptgen"
            )
        # Upgrades of older shapes go here, one step per version.
        return data

    @classmethod
    def new(cls, prompt: PromptUnderTest, **fields: Any) -> Context:
        return cls(prompt=prompt, prompt_hash=prompt.content_hash(), **fields)

    def to_json(self) -> str:
        data = self.model_dump(mode="json")
        data["options"] = redact(data["options"])
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def save_context(ctx: Context, path: str | Path) -> Path:
    """Write atomically: temp file in the same folder, fsync, rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = ctx.to_json()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_context(path: str | Path) -> Context:
    """Read and validate a saved context; every failure is one clear ContextError."""
    path = Path(path)
    data = read_json(
        path, "context file", "the file is damaged; re-run from the prompt file", ContextError
    )
    try:
        return Context.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        newer = "newer than this promptgen" in message
        raise ContextError(
            f"not a valid promptgen context: {where + ': ' if where else ''}{message}",
            file=path,
            hint=None
            if newer
            else "re-run from the prompt file (shape: schemas/context.schema.json)",
        ) from err


def context_schema() -> dict[str, Any]:
    schema = Context.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promptgen context"
    return schema
