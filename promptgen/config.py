"""Options resolved once into a frozen run configuration.

`resolve_options` merges the layers (flag > earlier run's flags > frontmatter > effort >
default; for the models under test, the gateway's PROMPTGEN_MODELS and config file just
above the default) and records where every value came from; `build_config` adds what a
run needs besides: model ids with their aliases resolved, the judges, and the metrics,
loaded once. Stages, the pipeline and the reports read the `RunConfig`; nothing
re-derives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from promptgen.errors import BadInputError
from promptgen.evaluation import GROUNDTRUTH_JUDGE, Metric, load_metrics
from promptgen.llm import GatewaySettings
from promptgen.llm.served import SERVED
from promptgen.model import PromptUnderTest
from promptgen.options import (
    BY_KEY,
    BY_NAME,
    BY_PATH,
    EFFORTS,
    OPTION_FIELDS,
    Effort,
    Evaluation,
    Generation,
    OptionField,
    Options,
    bounds,
    flat,
    nest,
    preset,
)
from promptgen.secrets import shown

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
    *,
    prompt_file: str | None = None,
    under_test: Callable[[], tuple[list[str], str]] | None = None,
) -> tuple[Options, dict[str, str]]:
    """Merge the layers; return the options and the source of every flat option.

    `given` is an Options (its explicitly set fields count) or flat {name: value};
    `saved` holds the flat options an earlier run of this context got on its command line;
    `prompt_file` names the file the frontmatter came from, for error messages. Every
    value is checked against its declaration: a bad one raises BadInputError naming the
    flag, or the frontmatter key and file, it came from.

    `under_test` gives the last layer of the models under test, with its source: those
    the gateway's settings name (`llm.config.configured_models`: PROMPTGEN_MODELS, else
    the config file's `under_test`). It is asked only once the layers above are checked
    and name no model under test (an empty list counts as none)."""
    cli = explicit(given) if isinstance(given, Options) else dict(given or {})
    front = frontmatter_values(frontmatter or {})
    saved = dict(saved or {})
    layers: list[tuple[Mapping[str, Any], str]] = [
        (cli, COMMAND_LINE),
        (saved, SAVED),
        (front, "frontmatter"),
    ]
    effort, effort_source = next(
        ((layer["effort"], src) for layer, src in layers if layer.get("effort") is not None),
        ("low", "default"),
    )
    if effort not in EFFORTS:
        raise BadInputError(
            f"{_where(effort_source, 'effort', effort)}: must be one of "
            f"{', '.join(EFFORTS[:-1])} or {EFFORTS[-1]}",
            file=prompt_file if effort_source == "frontmatter" else None,
        )
    layers.append((preset(effort), f"effort {effort}"))
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
        options = Options.model_validate(nest(values))
    except ValidationError as err:
        problem = option_problem(err)
        source = sources.get(problem.field.name, "?") if problem.field else "?"
        raise BadInputError(
            problem.message(source), file=prompt_file if source == "frontmatter" else None
        ) from err
    if under_test is not None and not options.models.models:
        models, source = under_test()
        if models:
            options.models.models = list(models)
            sources["models"] = source
    return options, sources


def _where(source: str, name: str, value: Any) -> str:
    """An option as the user set it: `--flag 'value'` or `frontmatter key k = 'value'`."""
    field, text = BY_NAME[name], shown(value)  # a password or key masked
    if source == "frontmatter" and field.opt.key:
        return f"frontmatter key {field.opt.key} = {text}"
    flag = field.flag or name
    return f"{flag} {text}" if source == COMMAND_LINE else f"{flag} = {text} ({source})"


@dataclass(frozen=True)
class OptionProblem:
    """The first error of an Options validation: which option, its value, what is wrong."""

    field: OptionField | None
    value: Any
    reason: str
    loc: tuple[str | int, ...]

    def message(self, source: str) -> str:
        """One line naming the option as the user set it: its flag, or its
        frontmatter key."""
        value = _shown_value(self.value)
        if self.field is None:
            return f"options {'.'.join(map(str, self.loc))} = {value}: {self.reason}"
        if source == "frontmatter" and self.field.opt.key:
            return f"frontmatter key {self.field.opt.key} = {value}: {self.reason}"
        shown = self.field.flag or self.field.name
        if source == COMMAND_LINE:
            return f"{shown} {value}: {self.reason}"
        return f"option {shown} = {value} ({source}): {self.reason}"


def _shown_value(value: Any) -> str:
    try:
        # a URL's password, a key among the values: masked (`http://user:***@host`)
        text = str(value) if isinstance(value, int | float) else shown(value)
    except ValueError:  # an int too long to print
        return "(a huge number)"
    return text if len(text) <= 60 else text[:57] + "..."


def option_problem(err: ValidationError) -> OptionProblem:
    """The first error of a failed Options validation, in words for one line."""
    first = err.errors()[0]
    loc = tuple(first["loc"])
    path = tuple(map(str, loc))  # a list index never names an option
    field = next((BY_PATH[path[:n]] for n in range(len(loc), 0, -1) if path[:n] in BY_PATH), None)
    ctx = first.get("ctx", {})
    reasons = {
        "greater_than_equal": lambda: f"must be at least {ctx.get('ge'):g}",
        "less_than_equal": lambda: f"must be at most {ctx.get('le'):g}",
        "finite_number": lambda: "must be a finite number",
        "literal_error": lambda: f"must be one of {str(ctx.get('expected')).replace(chr(39), '')}",
    }
    make = reasons.get(first["type"])
    reason = make() if make else str(first["msg"]).removeprefix("Value error, ")
    accepted = bounds(field) if field is not None else None
    if accepted and "-" in accepted and first["type"] in reasons:
        reason = f"{reason} (accepted: {accepted})"
    return OptionProblem(field, first.get("input"), reason, loc)


def saved_flags(options: Options, sources: Mapping[str, str]) -> dict[str, Any]:
    """What earlier runs got on their command line, and the models they took from the
    server's list: it persists when the run resumes."""
    values = flat(options, persisted_only=True)
    kept = (COMMAND_LINE, SERVED)
    return {k: v for k, v in values.items() if sources.get(k, "").startswith(kept)}


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
    def analysing(self) -> bool:
        """Whether the intent, input specification and rules are extracted: to generate
        tests, or because a metric of the run reads them."""
        return self.generating or (self.evaluating and any(m.reads_analysis for m in self.metrics))

    @property
    def evaluating(self) -> bool:
        return self.ev.evals and bool(self.models)

    @property
    def reviewing(self) -> bool:
        return self.gen.reviewing

    @property
    def stepwise(self) -> bool:
        """Whether generation works in one-item calls: asked, or (auto) the rules model
        is small by its backend's policy."""
        if self.gen.stepwise != "auto":
            return self.gen.stepwise == "on"
        return self._small("rules")

    @property
    def safety(self) -> bool:
        """Whether the safety pre-check (stages safety and screen) runs: asked, or (not
        set) where the eval model is not small. The embedded 1.5B judge flagged 12 of 12
        plain contact-extraction inputs and 8 of 10 commit diffs as harmful, so with it
        the check dropped the tests instead of screening them (docs/stages.md)."""
        if self.gen.safety is not None:
            return self.gen.safety
        return not self.small_judge

    @property
    def small_judge(self) -> bool:
        """Whether the eval model is small by its backend's policy (one test a call)."""
        return self._small("eval")

    def _small(self, role: str) -> bool:
        """Whether the model of `role` is small by its backend's policy."""
        from promptgen.llm.routing import backend_type

        api_base = self.settings.api_base if self.settings else None
        name = self.settings.resolve(role) if self.settings else role
        return backend_type(name, api_base).policy.small

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

    return RunConfig(
        options=options,
        sources=dict(sources or {}),
        settings=settings,
        metrics=tuple(load_metrics(prompt, options)),
        **model_fields(options, settings),
    )


def model_fields(options: Options, settings: GatewaySettings | None) -> dict[str, Any]:
    """The RunConfig's models, judges and groundtruth model: aliases resolved by
    `settings` (None: left as aliases)."""

    def resolve(name: str) -> str:
        return settings.resolve(name) if settings is not None else name

    models = options.models
    judges = tuple(dict.fromkeys(resolve(m) for m in models.eval_models or ["eval"]))
    gt_judges = tuple(dict.fromkeys(resolve(m) for m in models.groundtruth_eval_models))
    return {
        "models": tuple(resolve(m) for m in models.models),
        "judges": judges,
        "groundtruth_model": resolve(models.groundtruth_model or "groundtruth"),
        "groundtruth_judges": gt_judges or judges,
    }
