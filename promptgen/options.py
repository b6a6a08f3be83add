"""Every run option, declared once.

Each field of the groups below carries an `Opt` with its help text, its frontmatter key
(camelCase) where a prompt may set it, its value per effort preset, and how its flag is
spelled. The frontmatter schema, the command-line flags and their help, `--print-options`,
the effort table (in `--help` and docs/options.md) and the context's saved options are all
derived from these declarations, so a new option is added here and nowhere else.

Precedence, highest first: command-line flag > flags given to the run being resumed >
prompt frontmatter > effort preset > default (PromptPex's effort overrode explicit flags).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

Effort = Literal["min", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("min", "low", "medium", "high")

GEN, EVAL, MODELS, GATE, INSTR, RUN = (
    "Generation",
    "Evaluation",
    "Models",
    "CI gate",
    "Stage instructions",
    "Run",
)


@dataclass(frozen=True)
class Opt:
    """How one option is set and shown.

    key: the frontmatter key (None: not settable in a prompt file).
    presets: the value per effort, min to high (None: not part of the presets).
    flag: the long flag ("" derives --kebab-name from the field; None: no flag).
    parse: how flag values become the field's value: "list" (`"a;b"` or the flag
    repeated), "repeat" (the flag repeated), "params" (KEY=VALUE, repeated), "paths".
    persist: kept in the context, so a resumed run reuses it.
    implies: options a given flag switches on too (--models turns on evaluation).
    """

    help: str = ""
    panel: str = GEN
    key: str | None = None
    presets: tuple[Any, Any, Any, Any] | None = None
    flag: str | None = ""
    short: str | None = None
    parse: Literal["list", "repeat", "params", "paths"] | None = None
    persist: bool = True
    implies: tuple[tuple[str, Any], ...] = ()


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Instructions(_Group):
    """Extra instructions for one stage's prompt, appended to the frontmatter's."""

    intent: Annotated[str | None, Opt("", INSTR)] = None
    input_spec: Annotated[str | None, Opt("", INSTR)] = None
    output_rules: Annotated[str | None, Opt("", INSTR)] = None
    inverse_output_rules: Annotated[str | None, Opt("", INSTR)] = None
    tests: Annotated[str | None, Opt("", INSTR)] = None
    test_expansion: Annotated[str | None, Opt("", INSTR)] = None


class Generation(_Group):
    """How rules and tests are generated."""

    max_rules: Annotated[
        int | None,
        Field(ge=1),
        Opt("Output rules kept (all: no limit).", key="maxRules", presets=(6, 10, 20, 50)),
    ] = None
    tests_per_rule: Annotated[
        int,
        Field(ge=1),
        Opt("Tests per rule and scenario.", key="testsPerRule", presets=(1, 2, 3, 3)),
    ] = 2
    max_rules_per_test_generation: Annotated[
        int,
        Field(ge=1),
        Opt(
            "Rules per test-generation call.",
            key="maxRulesPerTestGeneration",
            presets=(100, 10, 5, 3),
        ),
    ] = 10
    split_rules: Annotated[
        bool,
        Opt(
            "Rules and inverse rules in separate calls.",
            key="splitRules",
            presets=(False, True, True, True),
        ),
    ] = True
    test_generations: Annotated[
        int,
        Field(ge=1),
        Opt("Generation rounds per chunk of rules.", key="testGenerations", presets=(1, 1, 1, 2)),
    ] = 1
    test_expansions: Annotated[
        int,
        Field(ge=0),
        Opt("Rounds that make each test harder.", key="testExpansions", presets=(0, 0, 1, 1)),
    ] = 0
    groundedness: Annotated[
        bool,
        Opt(
            "Check that each rule is grounded in the prompt.",
            key="groundedness",
            presets=(False, True, True, True),
        ),
    ] = True
    validity: Annotated[
        bool,
        Opt(
            "Check each test against the input specification.",
            key="validity",
            presets=(False, True, True, True),
        ),
    ] = True
    baseline_tests: Annotated[
        bool, Opt("Also write zero-shot baseline tests.", key="baselineTests")
    ] = False
    drop_ungrounded: Annotated[
        bool, Opt("Generate no tests for ungrounded rules.", key="dropUngrounded")
    ] = False
    temperature: Annotated[
        float | None, Opt("Temperature of the generation calls (provider default if unset).")
    ] = None
    rate_tests: Annotated[
        bool, Opt("Review the test collection (test_review.md).", key="rateTests")
    ] = False
    filter_tests: Annotated[
        int | None,
        Field(ge=1),
        Opt("Save the N most important tests as tests.filtered.json.", key="filterTests"),
    ] = None
    instructions: Instructions = Field(default_factory=Instructions)

    @property
    def reviewing(self) -> bool:
        """The test collection is reviewed (--rate-tests, or --filter-tests N)."""
        return self.rate_tests or self.filter_tests is not None


class Evaluation(_Group):
    """How the tests are run on the models under test and scored."""

    evals: Annotated[
        bool, Opt("Evaluate when models are given; --no-evals generates only.", EVAL)
    ] = True
    runs_per_test: Annotated[
        int,
        Field(ge=1),
        Opt("Runs of each test on each model.", EVAL, key="runsPerTest", presets=(1, 1, 2, 3)),
    ] = 1
    max_tests_to_run: Annotated[
        int | None,
        Field(ge=1),
        Opt(
            "Tests evaluated (all: no limit).",
            EVAL,
            key="maxTestsToRun",
            presets=(10, 30, 100, None),
        ),
    ] = None
    keep_invalid: Annotated[
        bool, Opt("Also run tests judged invalid.", EVAL, key="keepInvalid")
    ] = False
    compliance: Annotated[bool, Opt("Judge every output against the prompt's rules.", EVAL)] = True
    metric_files: Annotated[
        list[str],
        Opt(
            "A *.metric.prompty file (repeatable); those beside the prompt are found.",
            EVAL,
            flag="--metric",
            parse="paths",
        ),
    ] = Field(default_factory=list)
    custom_metrics: Annotated[
        list[str],
        Opt(
            "An inline judge prompt answering OK or ERR (repeatable).",
            EVAL,
            flag="--custom-metric",
            parse="repeat",
        ),
    ] = Field(default_factory=list)
    checks: Annotated[
        list[str],
        Opt(
            'A deterministic check NAME=VALUE, e.g. "icontains=thanks" (repeatable).',
            EVAL,
            flag="--check",
            parse="repeat",
        ),
    ] = Field(default_factory=list)
    model_params: Annotated[
        dict[str, Any],
        Opt(
            "A call parameter KEY=VALUE for the models under test (repeatable).",
            EVAL,
            flag="--param",
            parse="params",
        ),
    ] = Field(default_factory=dict)
    groundtruth: Annotated[bool, Opt("Have a groundtruth model answer every test.", EVAL)] = False
    groundtruth_threshold: Annotated[
        float, Field(ge=0, le=100), Opt("Score (0-100) a groundtruth answer needs.", EVAL)
    ] = 80.0
    groundtruth_retries: Annotated[
        int, Field(ge=0), Opt("Fresh answers asked below the threshold.", EVAL)
    ] = 2
    test_ids: Annotated[
        list[str], Opt("Evaluate only these tests (set by --tests FILE).", flag=None)
    ] = Field(default_factory=list)


class Models(_Group):
    """Which models play which part. Aliases (rules, eval, groundtruth, baseline) are
    resolved by the gateway's settings (docs/llm.md)."""

    models: Annotated[
        list[str],
        Opt(
            'Models under test: "a;b" or the flag repeated. Evaluates after generating.',
            EVAL,
            parse="list",
            implies=(("evals", True),),
        ),
    ] = Field(default_factory=list)
    eval_models: Annotated[
        list[str],
        Opt('Judges for every metric: "a;b" (default: the eval model).', EVAL, parse="list"),
    ] = Field(default_factory=list)
    groundtruth_model: Annotated[
        str | None,
        Opt("Groundtruth model (implies --groundtruth).", EVAL, implies=(("groundtruth", True),)),
    ] = None
    groundtruth_eval_models: Annotated[
        list[str],
        Opt('Judges of groundtruth answers: "a;b" (default: --eval-models).', EVAL, parse="list"),
    ] = Field(default_factory=list)
    # The gateway's own settings for this invocation (not saved: docs/llm.md).
    rules_model: Annotated[
        str | None, Opt("Model for analysis and generation.", MODELS, persist=False)
    ] = Field(None, exclude=True)
    eval_model: Annotated[
        str | None, Opt("Model for groundedness, validity and the review.", MODELS, persist=False)
    ] = Field(None, exclude=True)
    baseline_model: Annotated[
        str | None, Opt("Model for baseline tests.", MODELS, persist=False)
    ] = Field(None, exclude=True)
    api_base: Annotated[str | None, Opt("An OpenAI-compatible server.", MODELS, persist=False)] = (
        Field(None, exclude=True)
    )
    concurrency: Annotated[
        int | None, Field(ge=1), Opt("Calls in flight per model [8].", MODELS, persist=False)
    ] = Field(None, exclude=True)


class Run(_Group):
    """This invocation only: where to write, what to print, the CI gate. Never saved."""

    out: Annotated[
        Path | None,
        Opt("Output folder (default: ./promptgen-out/PROMPT-NAME).", RUN, persist=False),
    ] = None
    tests_file: Annotated[
        Path | None,
        Opt(
            "Evaluate the tests in this file (tests.json, tests.filtered.json).",
            GEN,
            flag="--tests",
            persist=False,
        ),
    ] = None
    fresh: Annotated[bool, Opt("Discard a saved run in the output folder.", RUN, persist=False)] = (
        False
    )
    cache: Annotated[
        bool, Opt("Do not use the response cache (ask every call again).", RUN, persist=False)
    ] = True
    dry_run: Annotated[
        bool, Opt("Print the planned calls per stage; call nothing.", RUN, persist=False)
    ] = False
    print_options: Annotated[
        bool, Opt("Print the resolved options and their sources.", RUN, persist=False)
    ] = False
    quiet: Annotated[bool, Opt("No progress output.", RUN, short="-q", persist=False)] = False
    fail_under: Annotated[
        float | None, Opt("Exit 1 when overall compliance (%) is below PCT.", GATE, persist=False)
    ] = None
    fail_on_error: Annotated[
        float | None,
        Field(ge=0, le=1),
        Opt(
            "Exit 3 when more than RATE (0-1) of evaluation calls failed [0].", GATE, persist=False
        ),
    ] = None
    junit: Annotated[
        Path | None, Opt("Write JUnit XML (a testcase per test x model).", GATE, persist=False)
    ] = None


class Options(BaseModel):
    """Everything that shapes a run, in four groups (plus the effort preset)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    effort: Annotated[Effort, Opt("min, low (default), medium or high.", key="effort")] = "low"
    generation: Generation = Field(default_factory=Generation)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    models: Models = Field(default_factory=Models)
    run: Run = Field(default_factory=Run, exclude=True)

    def __getitem__(self, name: str) -> Any:
        """An option by its flat name, as `--print-options` lists it: `options["max_rules"]`."""
        if name not in BY_NAME:
            raise KeyError(name)
        return get(self, name)


# -- the declarations, walked --------------------------------------------------------


@dataclass(frozen=True)
class OptionField:
    """One leaf option: its dotted path in Options, its name, type and declaration."""

    path: tuple[str, ...]
    info: FieldInfo
    opt: Opt

    @property
    def name(self) -> str:
        """The flat name (`tests_per_rule`; `instructions_intent` for nested groups)."""
        return "_".join(self.path[1:] if self.path[0] != "effort" else self.path)

    @property
    def flag(self) -> str | None:
        if self.opt.flag is None:
            return None
        return self.opt.flag or "--" + self.name.replace("_", "-")

    @property
    def annotation(self) -> Any:
        return self.info.annotation

    @property
    def default(self) -> Any:
        return self.info.get_default(call_default_factory=True)


def _walk(model: type[BaseModel], prefix: tuple[str, ...]) -> Iterator[OptionField]:
    for name, info in model.model_fields.items():
        opt = next((m for m in info.metadata if isinstance(m, Opt)), None)
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _walk(annotation, (*prefix, name))
        elif opt is not None:
            yield OptionField((*prefix, name), info, opt)


OPTION_FIELDS: tuple[OptionField, ...] = tuple(_walk(Options, ()))
BY_NAME: dict[str, OptionField] = {f.name: f for f in OPTION_FIELDS}
BY_KEY: dict[str, OptionField] = {f.opt.key: f for f in OPTION_FIELDS if f.opt.key}
PRESET_FIELDS = tuple(f for f in OPTION_FIELDS if f.opt.presets is not None)


def preset(effort: Effort) -> dict[str, Any]:
    """The flat values an effort preset sets."""
    index = EFFORTS.index(effort)
    return {f.name: f.opt.presets[index] for f in PRESET_FIELDS if f.opt.presets}


def get(options: Options, name: str) -> Any:
    node: Any = options
    for part in BY_NAME[name].path:
        node = getattr(node, part)
    return node


def flat(options: Options, persisted_only: bool = False) -> dict[str, Any]:
    """Options as {flat name: value}."""
    return {
        f.name: get(options, f.name) for f in OPTION_FIELDS if f.opt.persist or not persisted_only
    }


def nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """{flat name: value} -> the nested dict Options validates."""
    tree: dict[str, Any] = {}
    for name, value in values.items():
        path = BY_NAME[name].path
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return tree


def effort_table() -> str:
    """The presets as a Markdown table (docs and --help)."""
    head = "| option | " + " | ".join(EFFORTS) + " |"
    rule = "|---|" + "---|" * len(EFFORTS)
    rows = []
    for field in PRESET_FIELDS:
        assert field.opt.presets is not None
        cells = [shown(v) for v in field.opt.presets]
        rows.append(f"| {field.opt.key} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows])


def shown(value: Any) -> str:
    """A preset or default value as the docs and --help show it."""
    if value is None:
        return "all"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def frontmatter_fields() -> dict[str, Any]:
    """Pydantic field definitions of the run options a prompt's frontmatter may set."""
    return {
        f.opt.key: (f.annotation | None, Field(None, description=f.opt.help or None))
        for f in OPTION_FIELDS
        if f.opt.key
    }
