"""The saved state of a run: versioned, validated on load, written atomically.

A run can be killed at any moment; the file on disk is always either the previous
complete version or the new complete version, never a truncated mix.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

from promptgen.errors import ContextError
from promptgen.jsonio import dump_text, read_json
from promptgen.model import PromptUnderTest
from promptgen.options import BY_NAME, Options, nest
from promptgen.results import (
    CLASS_CHECK,
    BatchJob,
    Behaviour,
    CompiledRule,
    EditRecord,
    GroundtruthAttempt,
    MetricInfo,
    MetricResult,
    MetricSummary,
    MutationResults,
    Outcome,
    Rule,
    SafetyVerdict,
    SchemaRefusal,
    StageRecord,
    Test,
    TestReview,
    TestRun,
    UsageTotals,
)
from promptgen.secrets import redact, scrub
from promptgen.version import __version__

CONTEXT_VERSION = 2
RunKey = tuple[str, str, int]
VerdictKey = tuple[str, str, int, str, str | None]
# A scored metric's run passes at this average (as in OpenAI Evals' score_model exports).
PASS_SCORE = 50


class Context(BaseModel):
    """Everything a run produces, in one JSON document (`context.json`)."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(CONTEXT_VERSION, description="Shape version of this file.")
    promptgen_version: str = __version__
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    prompt: PromptUnderTest
    prompt_hash: str = ""
    options: Options = Field(default_factory=Options, description="Resolved options.")
    option_sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where each option (flat name) came from (command line, frontmatter, ...).",
    )
    intent: str | None = None
    input_spec: str | None = None
    rules: list[Rule] = Field(default_factory=list)
    inverse_rules: list[Rule] = Field(default_factory=list)
    behaviours: list[Behaviour] = Field(
        default_factory=list, description="What the suite must exercise (stage behaviours)."
    )
    tests: list[Test] = Field(default_factory=list)
    test_runs: list[TestRun] = Field(default_factory=list)
    metrics: list[MetricInfo] = Field(
        default_factory=list, description="Every metric the results below were scored with."
    )
    metric_results: list[MetricResult] = Field(default_factory=list)
    groundtruth: list[GroundtruthAttempt] = Field(default_factory=list)
    review: TestReview | None = None
    safety: SafetyVerdict | None = Field(
        None, description="The safety judge's verdict on the prompt under test."
    )
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    compiled_rules: list[CompiledRule] = Field(
        default_factory=list,
        description="Output rules compiled to deterministic checks (--compile-rules).",
    )
    judge_calls_saved: int = Field(
        0,
        description="Compliance judge calls skipped because a compiled check stood in "
        "(--judge-only-when-unsure).",
    )
    mutation: MutationResults | None = Field(
        None, description="`promptgen mutate`: mutants, their runs, the mutation score."
    )
    batches: list[BatchJob] = Field(
        default_factory=list, description="Provider batches of --batch (docs/scale.md)."
    )
    schema_refusals: list[SchemaRefusal] = Field(
        default_factory=list,
        description="Answer schemas a server refused in a structured-output mode (HTTP 400), "
        "and the mode each was asked in instead (docs/llm.md#refused-schemas).",
    )
    edit: EditRecord | None = Field(
        None,
        description="Set when this run continued the run of an earlier version of the prompt "
        "(the prompt was edited): what changed and what was kept (docs/iterate.md).",
    )
    _checkpoint: Callable[[], None] | None = PrivateAttr(None)
    _load_warnings: list[str] = PrivateAttr(default_factory=list)
    # The verdicts by key and by (run, metric), kept up to date as verdicts are recorded
    # (results, not positions: a reorder leaves them valid); rebuilt only when the list
    # was replaced or grown from outside. Positions are looked up only to replace one.
    _index: dict[VerdictKey, MetricResult] | None = PrivateAttr(None)
    _groups: dict[tuple[RunKey, str], dict[str | None, MetricResult]] = PrivateAttr(
        default_factory=dict
    )
    _indexed: tuple[int, int] = PrivateAttr((0, -1))  # (id, length) of the list indexed
    _positions: dict[VerdictKey, int] | None = PrivateAttr(None)

    def __repr__(self) -> str:
        # Short: asyncio builds the repr of a finished task's result whenever it formats
        # the task (on Python 3.11, `asyncio.run` does at exit, for its Ctrl-C handler),
        # and pydantic's full repr of a large context took ~0.2 s of CPU each time.
        return (
            f"Context(run_id={self.run_id!r}, prompt={self.prompt.name!r}, "
            f"rules={len(self.rules)}, tests={len(self.tests)}, test_runs={len(self.test_runs)}, "
            f"metric_results={len(self.metric_results)})"
        )

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
    def batch_fallbacks(self) -> list[str]:
        """With --batch: why a model's calls went one by one (no Batch API, a batch
        refused), one line per model, from the stages' notes (`batch|MODEL`)."""
        found: dict[str, str] = {}
        for record in self.stages.values():
            for key, note in record.notes.items():
                if key.startswith("batch|"):
                    found.setdefault(key.removeprefix("batch|"), note)
        return sorted(found.values())

    @property
    def models_run(self) -> list[str]:
        """Models under test with at least one run, in first-run order."""
        return list(dict.fromkeys(r.model for r in self.test_runs))

    def use_metrics(self, infos: list[MetricInfo]) -> None:
        """Record the metrics this run scores with (earlier runs' metrics are kept)."""
        known = {m.name: m for m in self.metrics}
        self.metrics = list({**known, **{m.name: m for m in infos}}.values())

    def shown_metrics(self) -> list[MetricInfo]:
        """The metrics reports and exports show: the class check only where a test expects
        a class (it is declared on every run with the compliance judge)."""
        classed = any(t.expected_class for t in self.tests)
        return [m for m in self.metrics if m.name != CLASS_CHECK or classed]

    def record_verdicts(self, results: list[MetricResult], run: TestRun | None = None) -> None:
        """Add verdicts (replacing any with the same key) and bring the summaries of their
        runs up to date: a run's summary never lags behind its verdicts. `run`, when
        given, is the run the verdicts are about (saves looking it up). Each verdict
        costs the same however many there are (no scan of the list)."""
        index, groups = self._verdict_index()
        touched: set[tuple[tuple[str, str, int], str]] = set()
        for result in results:
            if result.key in index:
                self.metric_results[self._position(result.key)] = result
            else:
                if self._positions is not None:
                    self._positions[result.key] = len(self.metric_results)
                self.metric_results.append(result)
            index[result.key] = result
            group = (result.key[:3], result.metric)
            groups.setdefault(group, {})[result.judge] = result
            touched.add(group)
        self._indexed = (id(self.metric_results), len(self.metric_results))
        runs = {run.key: run} if run is not None else {}
        if any(key not in runs for key, _ in touched):
            runs.update({r.key: r for r in self.test_runs})
        scorers = {m.name for m in self.metrics if m.scorer}
        for run_key, metric in touched:
            target = runs.get(run_key)
            if target is not None:
                mine = list(groups[(run_key, metric)].values())
                target.metrics[metric] = summary(mine, metric in scorers)

    def reorder_verdicts(self, key: Callable[[MetricResult], Any]) -> None:
        """Sort the verdicts by `key` (the index holds results, so it stays valid)."""
        self.metric_results.sort(key=key)
        self._positions = None

    def _position(self, key: VerdictKey) -> int:
        """Where the verdict with `key` is in the list (mapped again after a reorder)."""
        if self._positions is None:
            self._positions = {r.key: i for i, r in enumerate(self.metric_results)}
        return self._positions[key]

    def _verdict_index(
        self,
    ) -> tuple[
        dict[VerdictKey, MetricResult], dict[tuple[RunKey, str], dict[str | None, MetricResult]]
    ]:
        """Verdict key -> verdict, and (run, metric) -> {judge: verdict}; rebuilt when the
        list was replaced or changed in length from outside."""
        if self._index is None or self._indexed != (
            id(self.metric_results),
            len(self.metric_results),
        ):
            self._index, self._groups, self._positions = {}, {}, None
            for r in self.metric_results:
                self._index[r.key] = r
                self._groups.setdefault((r.key[:3], r.metric), {})[r.judge] = r
            self._indexed = (id(self.metric_results), len(self.metric_results))
        return self._index, self._groups

    def summarise(self, runs: set[tuple[str, str, int]] | None = None) -> None:
        """Recompute the per-metric summary of `runs` (all runs when None)."""
        scorers = {m.name for m in self.metrics if m.scorer}
        grouped: dict[tuple[str, str, int], dict[str, list[MetricResult]]] = {}
        for result in self.metric_results:
            key = (result.test_id, result.model, result.run_index)
            if runs is None or key in runs:
                grouped.setdefault(key, {}).setdefault(result.metric, []).append(result)
        for run in self.test_runs:
            if runs is None or run.key in runs:
                run.metrics = {
                    name: summary(results, name in scorers)
                    for name, results in grouped.get(run.key, {}).items()
                }

    @model_validator(mode="after")
    def _derived(self) -> Context:
        """Summaries are derived data: recomputed on load, so none is ever stale."""
        if self.metric_results:
            self.summarise()
        return self

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
        for step in range(version, CONTEXT_VERSION):
            data = UPGRADES[step](data)
        return data

    @classmethod
    def new(cls, prompt: PromptUnderTest, **fields: Any) -> Context:
        return cls(prompt=prompt, prompt_hash=prompt.content_hash(), **fields)

    def warn_on_load(self, message: str) -> None:
        """A warning about how this file was read: shown with the prompt's warnings for
        this run (the CLI prints them), never written back to the file."""
        self._load_warnings.append(message)
        self.prompt.warnings.append(message)

    def to_json(self, *, compact: bool = False) -> str:
        """The file's text: indented, or `compact` (one line; the pipeline's checkpoints
        use it). Both are written by pydantic's Rust encoder, byte for byte what
        `json.dumps(indent=2, ensure_ascii=False)` writes but for the spelling of tiny
        floats (`0.00001` for `1e-05`), and several times faster on a large run (at
        8,000 runs: 0.08 s against 0.5 s for the indented file)."""
        with _gc_paused():  # the dump makes millions of short-lived containers, no cycles
            data = self.model_dump(mode="json")
            data["options"] = redact(data["options"])
            transient = set(self._load_warnings)
            prompt = data["prompt"]
            prompt["warnings"] = [w for w in prompt["warnings"] if w not in transient]
            text = dump_text(data, indent=None if compact else 2)
        # Errors are scrubbed as they are recorded; this also blanks a configured key that
        # a model under test echoed into its output.
        return scrub(text + "\n", shapes=False)


def summary(results: list[MetricResult], scorer: bool) -> MetricSummary:
    """One metric on one run, over its judges. A scored metric passes at PASS_SCORE; an
    ok/err metric is ok only when every judge that answered says ok, so a split verdict
    shows up as err for a person to look at."""
    answered = [r for r in results if r.error is None and r.outcome != "unknown"]
    scores = [r.score for r in answered if r.score is not None]
    average = sum(scores) / len(scores) if scores else None
    outcome: Outcome = "unknown"
    if answered:
        if scorer:
            outcome = "ok" if average is not None and average >= PASS_SCORE else "err"
        else:
            outcome = "ok" if all(r.outcome == "ok" for r in answered) else "err"
    return MetricSummary(
        score=average,
        outcome=outcome,
        judges=len(answered),
        errors=sum(r.error is not None for r in results),
    )


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """v1 kept the options flat (`{"tests_per_rule": 2, "instructions": {...}}`)."""
    old = dict(data.get("options") or {})
    flat: dict[str, Any] = {}
    for name, value in old.items():
        if name == "instructions" and isinstance(value, dict):
            flat.update({f"instructions_{k}": v for k, v in value.items()})
        elif name in BY_NAME:
            flat[name] = value
    sources = dict(data.get("option_sources") or {})
    if "instructions" in sources:
        source = sources.pop("instructions")
        sources.update({n: source for n in flat if n.startswith("instructions_")})
    return {**data, "version": 2, "options": nest(flat), "option_sources": sources}


UPGRADES = {1: _upgrade_v1}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cycle collector off for a block that allocates much and frees it all (each
    collection would walk every container made so far, a cost growing with the run)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def save_context(ctx: Context, path: str | Path) -> Path:
    """Write atomically: temp file in the same folder, fsync, rename over the target."""
    return write_atomic(ctx.to_json(), Path(path))


def write_atomic(text: str, path: Path) -> Path:
    """`text` to `path`: a temp file in the same folder, fsync, rename over the target
    (safe to call from a background thread: it touches no context)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The saving process's id in the name: a load tells a killed save's file from a live one.
    prefix = f".{path.name}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
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


STALE_AFTER = 60.0  # seconds: a save takes well under this; a younger temp file is left
ABANDONED_AFTER = 3600.0  # seconds: older than this, a temp file is stale whatever its pid


def remove_stale_saves(path: Path) -> list[Path]:
    """Remove the temp files a killed save of `path` left (`.NAME.PID.XXXX.tmp`, or
    `.NAME.XXXX.tmp` from before the pid was named): only ones older than STALE_AFTER
    whose process is gone, or older than ABANDONED_AFTER; never another process's live
    save. Returns those removed."""
    import re
    import time

    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:(\d+)\.)?[A-Za-z0-9_]{{6,}}\.tmp")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - info.st_mtime
            pid = int(match.group(1)) if match.group(1) else None
            if age < STALE_AFTER or (age < ABANDONED_AFTER and _alive(pid)):
                continue
            os.unlink(entry.path)
        except OSError:  # gone meanwhile, or not ours to remove
            continue
        removed.append(Path(entry.path))
    return removed


def _alive(pid: int | None) -> bool:
    """Whether a process of that id runs (None, unknown: taken as alive)."""
    if pid is None:
        return True
    if pid == os.getpid():
        return True  # this process is saving it now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or an id this system cannot hold
    return True


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
    """Read and validate a saved context; every failure is one clear ContextError.

    The file is checked against promptgen.bounds first (size, nesting, lone surrogates,
    numbers), then its shape; tests or rules saved twice with the same id are kept once
    (with a warning) when identical, and refused when they differ."""
    path = Path(path)
    remove_stale_saves(path)
    data = read_json(
        path, "context file", "the file is damaged; re-run from the prompt file", ContextError
    )
    _check_checks(data, path)
    try:
        ctx = Context.model_validate(data)
    except ValidationError as err:
        raise _invalid(err, path) from err
    for warning in _deduplicate(ctx, path):
        ctx.warn_on_load(warning)
    return ctx


def _invalid(err: ValidationError, path: Path) -> ContextError:
    first = err.errors()[0]
    loc = tuple(first["loc"])
    where = ".".join(str(p) for p in loc)
    if first["type"] == "extra_forbidden" and loc[:1] == ("options",) and len(loc) > 1:
        group: Any = Options().model_dump(mode="json")
        for part in loc[1:-1]:
            group = group.get(part) if isinstance(group, dict) else None
        known = ", ".join(sorted(group)) if isinstance(group, dict) else "none"
        return ContextError(
            f"unknown option '{'.'.join(str(p) for p in loc[1:])}' in the saved options",
            file=path,
            hint=f"the known ones there are: {known}; remove the key, "
            "or run from the prompt file instead of this context",
        )
    message = first["msg"].removeprefix("Value error, ")
    newer = "newer than this promptgen" in message
    return ContextError(
        f"not a valid promptgen context: {where + ': ' if where else ''}{message}",
        file=path,
        hint=None if newer else "re-run from the prompt file (shape: schemas/context.schema.json)",
    )


def _check_checks(data: Any, path: Path) -> None:
    """`prompt.checks` entries are `NAME=VALUE` text or `{name: arguments}` (plus an
    optional 'name'); what a check means is checked when the run builds it."""
    prompt = data.get("prompt") if isinstance(data, dict) else None
    checks = prompt.get("checks") if isinstance(prompt, dict) else None
    if not isinstance(checks, list):
        return  # missing, or the shape check below reports it
    for i, spec in enumerate(checks):
        ok = isinstance(spec, str) and "=" in spec
        if isinstance(spec, dict):
            named = len(spec) == 2 and isinstance(spec.get("name"), str)
            keys = [k for k in spec if k != "name"] if named else list(spec)
            ok = len(keys) == 1 and isinstance(keys[0], str)
        if not ok:
            shown = json.dumps(spec, ensure_ascii=False, default=str)
            raise ContextError(
                f"prompt.checks[{i}] is not a check: "
                f"{shown if len(shown) <= 60 else shown[:59] + '…'}",
                file=path,
                hint="write NAME=VALUE or {NAME: ARGUMENTS} (docs/metrics.md), "
                "or re-run from the prompt file",
            )


def _deduplicate(ctx: Context, path: Path) -> list[str]:
    warnings = []
    for field in ("tests", "rules", "inverse_rules"):
        kept: dict[str, Any] = {}
        for item in getattr(ctx, field):
            earlier = kept.setdefault(item.id, item)
            if earlier is not item and earlier != item:
                raise ContextError(
                    f"{field}: id {item.id} appears twice, with different content",
                    file=path,
                    hint="remove one of them, or re-run from the prompt file",
                )
        dropped = len(getattr(ctx, field)) - len(kept)
        if dropped:
            setattr(ctx, field, list(kept.values()))
            noun = {"tests": "test", "rules": "rule", "inverse_rules": "inverse rule"}[field]
            warnings.append(
                f"{path}: {dropped} {noun}(s) saved twice with the same id and content; "
                "each is kept once"
            )
    return warnings


def context_schema() -> dict[str, Any]:
    schema = Context.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promptgen context"
    return schema
