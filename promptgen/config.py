"""Options resolved once into a frozen run configuration.

`resolve_options` merges the layers (flag > earlier run's flags > frontmatter > effort >
default) and records where every value came from; `build_config` adds what a run needs
besides: model ids with their aliases resolved, the judges, and the metrics, loaded once.
Stages, the pipeline and the reports read the `RunConfig`; nothing re-derives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from promptgen.errors import BadInputError
from promptgen.evaluation import GROUNDTRUTH_JUDGE, Metric, load_metrics
from promptgen.llm import GatewaySettings
from promptgen.model import PromptUnderTest
from promptgen.options import (
    BY_KEY,
    BY_NAME,
    EFFORTS,
    OPTION_FIELDS,
    Effort,
    Evaluation,
    Generation,
    Options,
    flat,
    nest,
    preset,
)

COMMAND_LINE = "command line"
SAVED = "command line (earlier run)"


def explicit(options: Options) -> dict[str, Any]:
    """The flat options that were set explicitly (pydantic's `model_fields_set`)."""
    given: dict[str, Any] = {}
    for fld in OPTION_FIELDS:
        node: BaseModel = options
        for part in fld.path[:-1]:
            if part not in node.model_fields_set:
                break
            node = getattr(node, part)
        else:
            if fld.path[-1] in node.model_fields_set:
                given[fld.name] = getattr(node, fld.path[-1])
    for name in list(given):  # --models turns evaluation on unless --no-evals says otherwise
        for implied, value in BY_NAME[name].opt.implies:
            if given[name] and implied not in given:
                given[implied] = value
    return given


def frontmatter_values(run_options: Mapping[str, Any]) -> dict[str, Any]:
    """A prompt's run options (camelCase keys) as flat option names."""
    return {BY_KEY[k].name: v for k, v in run_options.items() if k in BY_KEY}


def resolve_options(
    given: Options | Mapping[str, Any] | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    saved: Mapping[str, Any] | None = None,
) -> tuple[Options, dict[str, str]]:
    """Merge the layers; return the options and the source of every flat option.

    `given` is an Options (its explicitly set fields count) or flat {name: value};
    `saved` holds the flat options an earlier run of this context got on its command line.
    """
    cli = explicit(given) if isinstance(given, Options) else dict(given or {})
    front = frontmatter_values(frontmatter or {})
    saved = dict(saved or {})
    effort = cli.get("effort") or saved.get("effort") or front.get("effort") or "low"
    if effort not in EFFORTS:
        raise BadInputError(f"unknown effort {effort!r}", hint="use min, low, medium or high")
    layers: list[tuple[Mapping[str, Any], str]] = [
        (cli, COMMAND_LINE),
        (saved, SAVED),
        (front, "frontmatter"),
        (preset(effort), f"effort {effort}"),
    ]
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for fld in OPTION_FIELDS:
        for layer, source in layers:
            if fld.name in layer:
                values[fld.name], sources[fld.name] = layer[fld.name], source
                break
        else:
            sources[fld.name] = "default"
    values["effort"] = effort
    try:
        return Options.model_validate(nest(values)), sources
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][-1]) if first["loc"] else "options"
        shown = BY_NAME[name].flag or name if name in BY_NAME else name
        raise BadInputError(
            f"option {shown} ({sources.get(name, '?')}): {first['msg']}",
            hint="see `promptgen --help` for the accepted values",
        ) from err


def saved_flags(options: Options, sources: Mapping[str, str]) -> dict[str, Any]:
    """What earlier runs got on their command line: it persists when the run resumes."""
    values = flat(options, persisted_only=True)
    return {k: v for k, v in values.items() if sources.get(k, "").startswith(COMMAND_LINE)}


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs to know, resolved once; read by every stage."""

    options: Options
    sources: Mapping[str, str] = field(default_factory=dict)
    settings: GatewaySettings | None = None
    models: tuple[str, ...] = ()
    judges: tuple[str, ...] = ("eval",)
    groundtruth_model: str = "groundtruth"
    groundtruth_judges: tuple[str, ...] = ("eval",)
    metrics: tuple[Metric, ...] = ()

    @property
    def effort(self) -> Effort:
        return self.options.effort

    @property
    def gen(self) -> Generation:
        return self.options.generation

    @property
    def ev(self) -> Evaluation:
        return self.options.evaluation

    @property
    def generating(self) -> bool:
        """`--tests FILE` evaluates the given tests and generates none."""
        return not self.ev.test_ids

    @property
    def evaluating(self) -> bool:
        return self.ev.evals and bool(self.models)

    @property
    def reviewing(self) -> bool:
        return self.gen.reviewing

    @property
    def with_groundtruth(self) -> bool:
        return self.evaluating and self.ev.groundtruth

    @property
    def output_metrics(self) -> tuple[Metric, ...]:
        """Metrics scored on the models' outputs (the rest score groundtruth answers)."""
        return tuple(m for m in self.metrics if not m.scores_groundtruth)

    @property
    def groundtruth_metrics(self) -> tuple[Metric, ...]:
        """Metrics tagged `groundtruth` score the answers; without any, the built-in judge."""
        return tuple(m for m in self.metrics if m.scores_groundtruth) or (GROUNDTRUTH_JUDGE,)


def build_config(
    prompt: PromptUnderTest,
    options: Options,
    sources: Mapping[str, str] | None = None,
    settings: GatewaySettings | None = None,
) -> RunConfig:
    """Resolve model aliases and load the metrics (bad metric input raises here)."""

    def resolve(name: str) -> str:
        return settings.resolve(name) if settings is not None else name

    models = options.models
    judges = tuple(dict.fromkeys(resolve(m) for m in models.eval_models or ["eval"]))
    gt_judges = tuple(dict.fromkeys(resolve(m) for m in models.groundtruth_eval_models))
    return RunConfig(
        options=options,
        sources=dict(sources or {}),
        settings=settings,
        models=tuple(resolve(m) for m in models.models),
        judges=judges,
        groundtruth_model=resolve(models.groundtruth_model or "groundtruth"),
        groundtruth_judges=gt_judges or judges,
        metrics=tuple(load_metrics(prompt, options)),
    )
