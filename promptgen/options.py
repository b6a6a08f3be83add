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
from urllib.parse import parse_qsl, urlsplit

from annotated_types import Ge, Le
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.fields import FieldInfo

from promptgen.kinds import PromptFormat, ProviderProfile
from promptgen.secrets import is_secret_key

Effort = Literal["min", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("min", "low", "medium", "high")

GEN, EVAL, MODELS, GATE, INSTR, RUN, EXPORT = (
    "Generation",
    "Evaluation",
    "Models",
    "CI gate",
    "Stage instructions",
    "Run",
    "Export",
)


@dataclass(frozen=True)
class Opt:
    """How one option is set and shown.

    key: the frontmatter key (None: not settable in a prompt file).
    presets: the value per effort, min to high (None: not part of the presets).
    flag: the long flag ("" derives --kebab-name from the field; None: no flag).
    parse: how flag values become the field's value: "list" (`"a;b"` or the flag
    repeated), "repeat" (the flag repeated), "params" (KEY=VALUE, repeated; YAML
    values), "vars" (NAME=VALUE, repeated; the value as text), "paths", "names"
    (`"a,b"` or the flag repeated).
    persist: kept in the context, so a resumed run reuses it.
    implies: options a given flag switches on too (--models turns on evaluation).
    """

    help: str = ""
    panel: str = GEN
    key: str | None = None
    presets: tuple[Any, Any, Any, Any] | None = None
    flag: str | None = ""
    short: str | None = None
    parse: Literal["list", "repeat", "params", "vars", "paths", "names"] | None = None
    persist: bool = True
    implies: tuple[tuple[str, Any], ...] = ()


# Calls in flight per model: more than this is a typo, not a plan (docs/options.md).
MAX_CONCURRENCY = 1024
# The largest count each option accepts: past it the run is a typo, not a plan, and would
# grow without bound before any model call (docs/options.md, "Checked before anything runs").
MAX_RULES = 1_000
MAX_TESTS_PER_RULE = 100
MAX_ROUNDS = 100
"""--test-generations and --test-expansions."""
MAX_RUNS_PER_TEST = 1_000
MAX_TESTS = 100_000
"""--max-tests-to-run, --filter-tests and --test-samples-count."""
MAX_RETRIES = 100
"""--groundtruth-retries."""
MAX_ANSWER_TOKENS = 1_000_000
"""`promptgen ask --max-tokens`: longer than any model's context."""
MAX_MUTANTS = 1_000
"""`promptgen mutate --mutants` and `--llm-mutants`."""


def check_api_base(value: str) -> str:
    """An OpenAI-compatible server's URL: http(s), a host, no spaces, no credentials
    (the URL is saved with the run; keys come from the environment)."""
    example = "e.g. http://127.0.0.1:8080/v1"
    if not value.strip():
        raise ValueError(f"empty; give a server URL ({example}) or drop the flag")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"contains spaces or control characters ({example})")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError as err:
        raise ValueError(f"not a URL: {err} ({example})") from err
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"not an http(s) URL ({example})")
    if not parts.hostname:
        raise ValueError(f"no host ({example})")
    if parts.username or parts.password:
        raise ValueError("holds credentials; put the key in OPENAI_API_KEY (or .env)")
    if any(is_secret_key(k) for k, _ in parse_qsl(parts.query)):
        raise ValueError("holds a key; put it in OPENAI_API_KEY (or .env)")
    return value


def check_model_name(value: str) -> str:
    if not value.strip():
        raise ValueError("empty; give a model name or drop the flag")
    return value


ApiBase = Annotated[str, AfterValidator(check_api_base)]
ModelName = Annotated[str, AfterValidator(check_model_name)]


def input_values_as_text(value: Any) -> Any:
    """Fixed input values are text, as `--var` gives them (like `gh models eval --var`);
    a frontmatter scalar (`count: 3`, `formal: true`) is taken as the text it reads as."""
    if not isinstance(value, Mapping):
        return value  # pydantic reports "should be a valid dictionary"
    texts: dict[Any, Any] = {}
    for name, item in value.items():
        if isinstance(item, bool):
            item = "true" if item else "false"
        elif isinstance(item, int | float):
            item = str(item)
        texts[name] = item
    return texts


InputValues = Annotated[dict[str, str], BeforeValidator(input_values_as_text)]


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
        Field(ge=1, le=MAX_RULES),
        Opt("Output rules kept (all: no limit).", key="maxRules", presets=(6, 10, 20, 50)),
    ] = None
    tests_per_rule: Annotated[
        int,
        Field(ge=1, le=MAX_TESTS_PER_RULE),
        Opt("Tests per rule and scenario.", key="testsPerRule", presets=(1, 2, 3, 3)),
    ] = 2
    max_rules_per_test_generation: Annotated[
        int,
        Field(ge=1, le=MAX_RULES),
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
    stepwise: Annotated[
        Literal["auto", "on", "off"],
        Opt(
            "auto, on or off. On: rules from the prompt's own instruction sentences, one "
            "call per rule, inverse rule and rule's tests, for small models (auto: on "
            "where the rules model is the embedded one).",
            key="stepwise",
        ),
    ] = "auto"
    test_generations: Annotated[
        int,
        Field(ge=1, le=MAX_ROUNDS),
        Opt("Generation rounds per chunk of rules.", key="testGenerations", presets=(1, 1, 1, 2)),
    ] = 1
    test_expansions: Annotated[
        int,
        Field(ge=0, le=MAX_ROUNDS),
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
    safety: Annotated[
        bool | None,
        Opt(
            "Have the eval model screen the prompt and the generated test inputs for prompt "
            "injection and harmful content (not set: on, except where the eval model is the "
            "embedded one, too small to judge this; --no-safety: skip).",
            key="safety",
        ),
    ] = None
    behaviours: Annotated[
        bool,
        Opt(
            "Plan tests for the behaviours the prompt names (each output class, condition, "
            "prohibition's temptation, boundary and hostile input), not only for its rules "
            "(--no-behaviours: a test per rule and inverse rule only).",
            key="behaviours",
        ),
    ] = True
    baseline_tests: Annotated[
        bool, Opt("Also write zero-shot baseline tests.", key="baselineTests")
    ] = False
    drop_ungrounded: Annotated[
        bool, Opt("Generate no tests for ungrounded rules.", key="dropUngrounded")
    ] = False
    temperature: Annotated[
        float | None,
        Field(ge=0, le=2, allow_inf_nan=False),
        Opt("Temperature of the generation calls (provider default if unset)."),
    ] = None
    rate_tests: Annotated[
        bool, Opt("Review the test collection (test_review.md).", key="rateTests")
    ] = False
    filter_tests: Annotated[
        int | None,
        Field(ge=1, le=MAX_TESTS),
        Opt("Save the N most important tests as tests.filtered.json.", key="filterTests"),
    ] = None
    vars: Annotated[
        InputValues,
        Opt(
            "Fix an input: NAME=VALUE (repeatable; the value is text). Every test and run "
            "uses it, and generation does not vary it.",
            key="vars",
            flag="--var",
            parse="vars",
        ),
    ] = Field(default_factory=dict)
    test_samples_count: Annotated[
        int,
        Field(ge=0, le=MAX_TESTS),
        Opt(
            "Author's test samples shown to the generation prompts as examples.",
            key="testSamplesCount",
        ),
    ] = 5
    test_samples_shuffle: Annotated[
        bool,
        Opt(
            "Shuffle the test samples (seeded by the prompt) before taking testSamplesCount.",
            key="testSamplesShuffle",
        ),
    ] = False
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
        Field(ge=1, le=MAX_RUNS_PER_TEST),
        Opt("Runs of each test on each model.", EVAL, key="runsPerTest", presets=(1, 1, 2, 3)),
    ] = 1
    max_tests_to_run: Annotated[
        int | None,
        Field(ge=1, le=MAX_TESTS),
        Opt(
            "Tests evaluated (all: no limit).",
            EVAL,
            key="maxTestsToRun",
            presets=(20, 30, 100, None),
        ),
    ] = None
    keep_invalid: Annotated[
        bool, Opt("Also run tests judged invalid.", EVAL, key="keepInvalid")
    ] = False
    keep_unsafe: Annotated[
        bool,
        Opt("Also run tests the safety screen flagged.", EVAL, key="keepUnsafe"),
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
    store_completions: Annotated[
        bool,
        Opt(
            "Store the runs at the provider (OpenAI, Azure OpenAI) with metadata: prompt, "
            "run, test, rule, scenario, train/test split.",
            EXPORT,
            key="storeCompletions",
        ),
    ] = False
    groundtruth: Annotated[bool, Opt("Have a groundtruth model answer every test.", EVAL)] = False
    groundtruth_threshold: Annotated[
        float,
        Field(ge=0, le=100, allow_inf_nan=False),
        Opt("Score (0-100) a groundtruth answer needs.", EVAL),
    ] = 80.0
    groundtruth_retries: Annotated[
        int, Field(ge=0, le=MAX_RETRIES), Opt("Fresh answers asked below the threshold.", EVAL)
    ] = 2
    test_ids: Annotated[
        list[str], Opt("Evaluate only these tests (set by --tests FILE).", flag=None)
    ] = Field(default_factory=list)
    compile_rules: Annotated[
        bool,
        Opt(
            "Have the rules model compile each output rule to a deterministic check; a "
            "check that agrees with the compliance judge runs on every output at no cost "
            "(docs/compiled-rules.md).",
            EVAL,
            key="compileRules",
        ),
    ] = False
    judge_only_when_unsure: Annotated[
        bool,
        Opt(
            "Skip the compliance judge on runs of tests whose rule's compiled check agreed "
            "with it on every run compared; the check's verdict stands in (implies "
            "--compile-rules).",
            EVAL,
            key="judgeOnlyWhenUnsure",
            implies=(("compile_rules", True),),
        ),
    ] = False


class Models(_Group):
    """Which models play which part. Aliases (rules, eval, groundtruth, baseline) are
    resolved by the gateway's settings (docs/llm.md). The server and the models given on
    the command line are saved with the run, so a resumed run calls the same ones."""

    models: Annotated[
        list[ModelName],
        Opt(
            'Models under test: "a;b" or the flag repeated. Evaluates after generating.',
            EVAL,
            parse="list",
            implies=(("evals", True),),
        ),
    ] = Field(default_factory=list)
    eval_models: Annotated[
        list[ModelName],
        Opt('Judges for every metric: "a;b" (default: the eval model).', EVAL, parse="list"),
    ] = Field(default_factory=list)
    groundtruth_model: Annotated[
        ModelName | None,
        Opt("Groundtruth model (implies --groundtruth).", EVAL, implies=(("groundtruth", True),)),
    ] = None
    groundtruth_eval_models: Annotated[
        list[ModelName],
        Opt('Judges of groundtruth answers: "a;b" (default: --eval-models).', EVAL, parse="list"),
    ] = Field(default_factory=list)
    # The gateway's settings (docs/llm.md). Model ids and the server are not secret, and
    # a resumed run must not fall back to another server; keys are never options.
    rules_model: Annotated[ModelName | None, Opt("Model for analysis and generation.", MODELS)] = (
        None
    )
    eval_model: Annotated[
        ModelName | None, Opt("Model for groundedness, validity, safety and the review.", MODELS)
    ] = None
    baseline_model: Annotated[ModelName | None, Opt("Model for baseline tests.", MODELS)] = None
    api_base: Annotated[
        ApiBase | None, Opt("An OpenAI-compatible server (http or https URL).", MODELS)
    ] = None
    provider_profile: Annotated[
        ProviderProfile | None,
        Opt(
            "The structured-output rules of every model's provider: openai, azure, "
            "openai-ft, anthropic, gemini, ollama or compatible (default: each model's, "
            "from its id and the API base).",
            MODELS,
        ),
    ] = None
    concurrency: Annotated[
        int | None,
        Field(ge=1, le=MAX_CONCURRENCY),
        Opt(
            "The most calls in flight per model: the limit starts at 8 and grows while the"
            " provider takes more [256].",
            MODELS,
            persist=False,
        ),
    ] = Field(None, exclude=True)
    strict_output: Annotated[
        bool,
        Opt(
            "Stop the run when a server refuses an answer schema (HTTP 400), rather than "
            "ask for that schema in the prompt on that model (docs/llm.md).",
            MODELS,
            key="strictOutput",
        ),
    ] = False


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
    samples_only: Annotated[
        bool,
        Opt(
            "Evaluate only the prompt's own test samples (testSamples, .prompt.yml testData, "
            "LVE instances, Promptarchitect test_path, the inputs' own samples); generate "
            "no tests.",
            GEN,
            persist=False,
        ),
    ] = False
    format: Annotated[
        PromptFormat | None,
        Opt(
            "Read FILE as this format, not the detected one: prompty, prompt.yml, markdown, "
            "text, lve, lve-prompt, promptarchitect or verdict.",
            GEN,
            persist=False,
        ),
    ] = None
    prompt: Annotated[
        str | None,
        Opt(
            "A prompt given as TEXT instead of prompt files, read as a plain text prompt "
            "(inputs detected as for .txt); its output folder is ./promptgen-out/inline-HASH "
            "(8 hex digits of the text).",
            RUN,
            persist=False,
        ),
    ] = None
    allow_env: Annotated[
        list[str],
        Opt(
            "Let the prompt file's ${env:NAME} references read NAME (repeatable or "
            "NAME,NAME); no other variable is read, and what is read is blanked in every "
            "output. A prompt file cannot allow it.",
            RUN,
            parse="names",
            persist=False,
        ),
    ] = Field(default_factory=list)
    fresh: Annotated[
        bool,
        Opt(
            "Start over: generate everything anew (the run saved in the output folder is kept "
            "in OUT/history/).",
            RUN,
            persist=False,
        ),
    ] = False
    regenerate: Annotated[
        list[Literal["rules", "tests"]],
        Opt(
            "Generate PART anew for this version, keeping the rest: rules (the rules, their "
            "inverses and all tests) or tests (every generated test; the rules kept). The run "
            "before is kept in OUT/history/ (docs/carry-over.md).",
            RUN,
            parse="names",
            persist=False,
        ),
    ] = Field(default_factory=list)
    cache: Annotated[
        bool, Opt("Do not use the response cache (ask every call again).", RUN, persist=False)
    ] = True
    dry_run: Annotated[
        bool, Opt("Print the planned calls per stage; call nothing.", RUN, persist=False)
    ] = False
    include: Annotated[
        list[str],
        Opt(
            "In a batch, run the files found in folders or by globs that GLOB names, "
            "whatever they hold (repeatable; docs/runs.md).",
            RUN,
            parse="repeat",
            persist=False,
        ),
    ] = Field(default_factory=list)
    exclude: Annotated[
        list[str],
        Opt(
            "In a batch, skip the files found in folders or by globs that GLOB names "
            "(repeatable; --include wins; a file named as an argument always runs).",
            RUN,
            parse="repeat",
            persist=False,
        ),
    ] = Field(default_factory=list)
    batch: Annotated[
        bool,
        Opt(
            "Send the runs and judge calls through the provider's Batch API (half price, "
            "answers within 24 h; a killed run resumes polling). Models without one are "
            "called one by one (docs/scale.md).",
            RUN,
            persist=False,
        ),
    ] = False
    print_options: Annotated[
        bool, Opt("Print the resolved options and their sources.", RUN, persist=False)
    ] = False
    quiet: Annotated[bool, Opt("No progress output.", RUN, short="-q", persist=False)] = False
    fail_under: Annotated[
        float | None,
        Field(ge=0, le=100, allow_inf_nan=False),
        Opt("Exit 1 when overall compliance (%) is below PCT.", GATE, persist=False),
    ] = None
    fail_on_error: Annotated[
        float | None,
        Field(ge=0, le=1, allow_inf_nan=False),
        Opt(
            "Exit 3 when more than RATE (0-1) of evaluation calls failed [0].", GATE, persist=False
        ),
    ] = None
    fail_on_regression: Annotated[
        float | None,
        Field(ge=0, le=100, allow_inf_nan=False),
        Opt(
            "Exit 1 when, since the previous version of the prompt, a model's compliance or a "
            "metric average fell by more than PCT points (docs/iterate.md).",
            GATE,
            persist=False,
        ),
    ] = None
    junit: Annotated[
        Path | None, Opt("Write JUnit XML (a testcase per test x model).", GATE, persist=False)
    ] = None
    export: Annotated[
        list[str],
        Opt(
            "Export the tests (and results) to TARGET[,TARGET] in OUT/exports/ after the run: "
            "openai-evals, azure-evals, github-models, promptfoo, inspect, lve, promptarchitect, "
            "jsonl, csv.",
            EXPORT,
            parse="names",
            persist=False,
        ),
    ] = Field(default_factory=list)
    create_eval_runs: Annotated[
        bool,
        Opt(
            "With openai-evals/azure-evals: create the eval and its runs through the API.",
            EXPORT,
            persist=False,
        ),
    ] = False
    in_place: Annotated[
        bool,
        Opt(
            "With github-models: write the new testData rows into the author's .prompt.yml.",
            EXPORT,
            persist=False,
        ),
    ] = False


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
BY_PATH: dict[tuple[str, ...], OptionField] = {f.path: f for f in OPTION_FIELDS}
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


def constraints(field: OptionField) -> list[Any]:
    """The field's validation metadata (bounds, validators), without its `Opt`."""
    return [m for m in field.info.metadata if not isinstance(m, Opt)]


def bounds(field: OptionField) -> str | None:
    """The accepted range, as the docs and --help show it ("1-1024", "at least 1")."""
    low = next((m.ge for m in field.info.metadata if isinstance(m, Ge)), None)
    high = next((m.le for m in field.info.metadata if isinstance(m, Le)), None)
    if low is not None and high is not None:
        return f"{low:g}-{high:g}"
    if low is not None:
        return f"at least {low:g}"
    return None


def frontmatter_fields() -> dict[str, Any]:
    """Pydantic field definitions of the run options a prompt's frontmatter may set, with
    the bounds their declaration gives (a bad value is reported with its line)."""

    def kind(field: OptionField) -> Any:
        extra = constraints(field)
        return Annotated[(field.annotation, *extra)] if extra else field.annotation

    return {
        f.opt.key: (kind(f) | None, Field(None, description=f.opt.help or None))
        for f in OPTION_FIELDS
        if f.opt.key
    }
