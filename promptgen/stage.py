"""What a stage is: a module that declares its work.

A stage module (`promptgen/stages/NAME.py`; the stage's name is the module's name) has:

    requires: tuple[str, ...]   stages that must be finished before it runs
    phase: "generation" | "evaluation"
    todo(ctx, cfg) -> list[WorkItem]      units of work still to do, each with a stable key
    async run(item, scope) -> None        does one unit

and, where the default does not fit:

    after: tuple[str, ...]      stages that must have had their turn, finished or not [()]
    enabled(cfg) -> bool        [always]
    estimate(ctx, cfg, projection) -> int   calls, also while its inputs do not exist yet
                                (dry run) [the calls of its todo]
    rounds(cfg) -> int          dependent call rounds on the critical path [1]

From these alone the pipeline derives the order, completion (nothing left to do),
`--dry-run`'s plan, resume, the progress totals and the gate's "unfinished" test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, Unpack, cast, overload

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.results import Test
from promptgen.secrets import scrub
from promptgen.selection import eval_tests

if TYPE_CHECKING:
    from pydantic import BaseModel

    from promptgen.llm import LLM
    from promptgen.llm.types import CompleteOptions, Completion, M, Messages

Phase = Literal["generation", "evaluation"]
D = TypeVar("D", covariant=True)  # a frozen item only gives its data out
_NO_DATA: Any = None  # `WorkItem.data` when none is given, whatever the item's type


@dataclass(frozen=True)
class WorkItem(Generic[D]):
    """One unit of a stage's work: a key that is stable across runs, what it works on
    (`data`, of the stage's own type; None where the key says it all: `WorkItem[None]`),
    and how many model calls it costs (0 for work without a call)."""

    key: str
    data: D = _NO_DATA
    calls: int = 1


# The stages that make the test set: what the evaluation and the review wait for.
TEST_SET = ("tests", "baseline", "expand", "validity", "screen")


@dataclass
class Projection:
    """What earlier stages are expected to produce, for plans made before they ran."""

    @property
    def test_set_known(self) -> bool:
        """The test set is finished, so stages after it can count instead of estimate."""
        return set(TEST_SET) <= self.complete

    def eval_tests_of(self, ctx: Context, cfg: RunConfig) -> int:
        """Tests the evaluation will run: counted once the test set is finished, else
        projected from the tests expected (capped by maxTestsToRun)."""
        if self.test_set_known:
            return len(eval_tests(ctx, cfg))
        limit = cfg.ev.max_tests_to_run
        return min(self.tests, limit or self.tests)

    complete: set[str] = field(default_factory=set)  # stages with nothing left to do
    rules: int = 0
    generated: int = 0
    tests: int = 0
    eval_tests: int = 0
    cells: int = 0


class Stage(Protocol):
    """What a stage module must declare (the optional parts: see the module docstring)."""

    requires: tuple[str, ...]
    phase: Phase

    def todo(self, ctx: Context, cfg: RunConfig) -> list[WorkItem]: ...

    async def run(self, item: WorkItem, scope: Scope) -> None: ...


@dataclass(frozen=True)
class StageSpec:
    """A stage module with the defaults of what it left out."""

    name: str
    module: ModuleType

    @classmethod
    def of(cls, module: ModuleType) -> StageSpec:
        stage = cast(Stage, module)
        for needed in ("requires", "phase", "todo", "run"):
            if not hasattr(stage, needed):
                raise TypeError(f"stage module {module.__name__} declares no {needed!r}")
        return cls(module.__name__.rsplit(".", 1)[-1], module)

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(self.module.requires)

    @property
    def after(self) -> tuple[str, ...]:
        return tuple(getattr(self.module, "after", ()))

    @property
    def waits_for(self) -> tuple[str, ...]:
        return (*self.requires, *self.after)

    @property
    def phase(self) -> Phase:
        return cast(Phase, self.module.phase)

    def enabled(self, cfg: RunConfig) -> bool:
        declared = getattr(self.module, "enabled", None)
        return bool(declared(cfg)) if declared else True

    def todo(self, ctx: Context, cfg: RunConfig) -> list[WorkItem]:
        return list(self.module.todo(ctx, cfg))

    def estimate(self, ctx: Context, cfg: RunConfig, projection: Projection) -> int:
        declared = getattr(self.module, "estimate", None)
        if declared:
            return int(declared(ctx, cfg, projection))
        return sum(item.calls for item in self.todo(ctx, cfg))

    def rounds(self, cfg: RunConfig) -> int:
        declared = getattr(self.module, "rounds", None)
        return int(declared(cfg)) if declared else 1

    async def run(self, item: WorkItem, scope: Scope) -> None:
        await self.module.run(item, scope)


@dataclass
class Scope:
    """What one unit of a stage may touch besides the context: the gateway, and the
    stage's record through `checkpoint`, `count`, `fail` and `done`. A failure is kept
    under its unit's key, so N failed units show as N failures."""

    ctx: Context
    cfg: RunConfig
    llm: LLM
    stage: str
    key: str = ""
    save: Callable[[], None] = field(default=lambda: None)
    failed: bool = False

    def for_unit(self, key: str) -> Scope:
        return Scope(self.ctx, self.cfg, self.llm, self.stage, key, self.save)

    def checkpoint(self) -> None:
        """Save soon (the pipeline throttles saves); call after each change of state."""
        self.save()

    def count(self, name: str, n: int = 1) -> None:
        if n:
            counts = self.ctx.stage(self.stage).counts
            counts[name] = counts.get(name, 0) + n

    def set_count(self, name: str, value: int) -> None:
        self.ctx.stage(self.stage).counts[name] = value

    def note(self, key: str, text: str | None) -> None:
        """Record why `key` has less than the options ask (None: it no longer does)."""
        notes = self.ctx.stage(self.stage).notes
        if text is None:
            notes.pop(key, None)
        else:
            notes[key] = text

    def fail(self, error: str | None, key: str | None = None) -> None:
        """Record that this unit (or the unit `key`) failed; a re-run does it again."""
        self.failed = True
        self.ctx.stage(self.stage).failures[key or self.key] = scrub(error or "failed")

    def done(self, key: str | None = None) -> None:
        """Mark a unit finished, for stages whose todo cannot be read off the data."""
        record = self.ctx.stage(self.stage)
        key = key or self.key
        if key not in record.done:
            record.done.append(key)

    # `LLM.complete`'s own signature: the answer's type follows `output`.
    @overload
    async def complete(
        self, messages: Messages, *, output: type[M], **options: Unpack[CompleteOptions]
    ) -> Completion[M]: ...

    @overload
    async def complete(
        self, messages: Messages, *, output: None = None, **options: Unpack[CompleteOptions]
    ) -> Completion[None]: ...

    @overload
    async def complete(
        self,
        messages: Messages,
        *,
        output: type[BaseModel] | dict[str, Any] | None,
        **options: Unpack[CompleteOptions],
    ) -> Completion[Any]: ...

    async def complete(
        self,
        messages: Messages,
        *,
        output: type[BaseModel] | dict[str, Any] | None = None,
        **options: Unpack[CompleteOptions],
    ) -> Completion[Any]:
        """A gateway call booked under this stage (under --regenerate, with the variant
        moved so the response cache does not give the earlier answers back)."""
        options.setdefault("stage", self.stage)
        offset = self.ctx.edit.variant_for(self.stage) if self.ctx.edit is not None else 0
        if offset:
            options["variant"] = options.get("variant", 0) + offset
        return await self.llm.complete(messages, output=output, **options)


_ORIGINS = ("sample", "generated", "expanded", "baseline")
TestKey = tuple[int, int, int, int]


def test_key(ctx: Context) -> Callable[[Test], TestKey]:
    """The key that orders tests other than expanded ones: origin, scenario, rule,
    generation (a test of one call ties with the others of that call)."""
    scenarios = {s.name: i for i, s in enumerate(ctx.prompt.scenarios)}
    rules = {r.id: i for i, r in enumerate([*ctx.rules, *ctx.inverse_rules])}

    def key(test: Test) -> TestKey:
        origin = _ORIGINS.index(test.origin) if test.origin in _ORIGINS else len(_ORIGINS)
        scenario = scenarios.get(test.scenario, -1) if test.scenario else -1
        return (origin, scenario, rules.get(test.rule_id or "", len(rules)), test.generation)

    return key


def sort_tests(ctx: Context) -> None:
    """Put `ctx.tests` in an order that does not depend on which call returned first:
    by `test_key`; an expanded test next to its root test's place; ties keep the order
    of their one call."""
    by_id = {t.id: t for t in ctx.tests}
    roots = sorted((t for t in ctx.tests if t.origin != "expanded"), key=test_key(ctx))
    place = {t.id: i for i, t in enumerate(roots)}

    def expanded(test: Test) -> tuple[int, int]:
        depth, node = 0, test
        while node.origin == "expanded" and node.parent_id in by_id and depth < 64:
            node, depth = by_id[node.parent_id], depth + 1
        return (place.get(node.id, len(place)), depth)

    ctx.tests = roots + sorted((t for t in ctx.tests if t.origin == "expanded"), key=expanded)
