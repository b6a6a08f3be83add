"""Run options, effort presets, and where each resolved value came from.

Precedence, highest first: command-line flag > flags given to the run being resumed >
prompt frontmatter > effort preset > default. Nothing silently overrides an explicit
flag (PromptPex's effort did).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from promptgen.errors import BadInputError

Effort = Literal["min", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("min", "low", "medium", "high")


class Options(BaseModel):
    """Everything that shapes a run. Field aliases are the frontmatter spellings."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    effort: Effort = "low"
    max_rules: int | None = Field(None, alias="maxRules", ge=1, description="None: all rules.")
    tests_per_rule: int = Field(2, alias="testsPerRule", ge=1)
    max_rules_per_test_generation: int = Field(10, alias="maxRulesPerTestGeneration", ge=1)
    split_rules: bool = Field(True, alias="splitRules")
    test_generations: int = Field(1, alias="testGenerations", ge=1)
    test_expansions: int = Field(0, alias="testExpansions", ge=0)
    runs_per_test: int = Field(1, alias="runsPerTest", ge=1)
    max_tests_to_run: int | None = Field(None, alias="maxTestsToRun", ge=1)
    groundedness: bool = True
    validity: bool = True
    baseline_tests: bool = Field(False, alias="baselineTests")
    drop_ungrounded: bool = Field(False, alias="dropUngrounded")
    keep_invalid: bool = Field(False, alias="keepInvalid")
    temperature: float | None = Field(
        None, description="Temperature for the generation stages (None: provider default)."
    )
    # Evaluation (docs/metrics.md).
    evals: bool = Field(True, description="Evaluate when models under test are given.")
    models: list[str] = Field(default_factory=list, description="Models under test.")
    eval_models: list[str] = Field(
        default_factory=list, description="Judges for every metric (empty: the eval alias)."
    )
    groundtruth: bool = Field(False, description="Ask a groundtruth model to answer each test.")
    groundtruth_model: str | None = Field(None, description="None: the groundtruth alias.")
    groundtruth_eval_models: list[str] = Field(
        default_factory=list, description="Judges of groundtruth answers (empty: eval_models)."
    )
    groundtruth_threshold: float = Field(
        80.0, ge=0, le=100, description="Average score a groundtruth answer needs (0-100)."
    )
    groundtruth_retries: int = Field(2, ge=0, description="Fresh answers asked after the first.")
    compliance: bool = Field(True, description="Judge every output against the rules.")
    metric_files: list[str] = Field(default_factory=list, description="Extra *.metric.prompty.")
    custom_metrics: list[str] = Field(default_factory=list, description="Inline metric prompts.")
    checks: list[str] = Field(default_factory=list, description="Checks given as NAME=VALUE.")
    model_params: dict[str, Any] = Field(
        default_factory=dict, description="Call parameters for the models under test."
    )
    test_ids: list[str] = Field(
        default_factory=list, description="Evaluate only these tests (from --tests FILE)."
    )
    rate_tests: bool = Field(False, alias="rateTests")
    filter_tests: int | None = Field(None, alias="filterTests", ge=1)
    instructions: dict[str, str] = Field(
        default_factory=dict, description="Per-stage instructions given on the command line."
    )


# Monotone from min to high: every step asks for at least as much work.
PRESETS: dict[Effort, dict[str, Any]] = {
    "min": {
        "max_rules": 6,
        "tests_per_rule": 1,
        "max_rules_per_test_generation": 100,
        "split_rules": False,
        "test_generations": 1,
        "test_expansions": 0,
        "runs_per_test": 1,
        "max_tests_to_run": 10,
        "groundedness": False,
        "validity": False,
    },
    "low": {
        "max_rules": 10,
        "tests_per_rule": 2,
        "max_rules_per_test_generation": 10,
        "split_rules": True,
        "test_generations": 1,
        "test_expansions": 0,
        "runs_per_test": 1,
        "max_tests_to_run": 30,
        "groundedness": True,
        "validity": True,
    },
    "medium": {
        "max_rules": 20,
        "tests_per_rule": 3,
        "max_rules_per_test_generation": 5,
        "split_rules": True,
        "test_generations": 1,
        "test_expansions": 1,
        "runs_per_test": 2,
        "max_tests_to_run": 100,
        "groundedness": True,
        "validity": True,
    },
    "high": {
        "max_rules": 50,
        "tests_per_rule": 3,
        "max_rules_per_test_generation": 3,
        "split_rules": True,
        "test_generations": 2,
        "test_expansions": 1,
        "runs_per_test": 3,
        "max_tests_to_run": None,
        "groundedness": True,
        "validity": True,
    },
}
PRESET_KEYS = tuple(PRESETS["min"])


def effort_table() -> str:
    """The presets as a Markdown table (docs and --help)."""
    head = "| option | " + " | ".join(EFFORTS) + " |"
    rule = "|---|" + "---|" * len(EFFORTS)
    rows = []
    for key in PRESET_KEYS:
        alias = Options.model_fields[key].alias or key
        cells = ["all" if PRESETS[e][key] is None else str(PRESETS[e][key]) for e in EFFORTS]
        rows.append(
            f"| {alias} | " + " | ".join(cells).replace("True", "on").replace("False", "off") + " |"
        )
    return "\n".join([head, rule, *rows])


def frontmatter_options(run_options: Mapping[str, Any]) -> dict[str, Any]:
    """Run options from a prompt's frontmatter (camelCase keys, already resolved)."""
    names = {info.alias or name: name for name, info in Options.model_fields.items()}
    return {names[k]: v for k, v in run_options.items() if k in names}


def resolve_options(
    cli: Mapping[str, Any],
    frontmatter: Mapping[str, Any] | None = None,
    saved: Mapping[str, Any] | None = None,
) -> tuple[Options, dict[str, str]]:
    """Merge the layers; return the options and the source of every value.

    `saved` (from a resumed context) sits just under the command line.
    """
    cli = {k: v for k, v in cli.items() if v is not None}
    front = frontmatter_options(frontmatter or {})
    saved = dict(saved or {})
    effort = cli.get("effort") or saved.get("effort") or front.get("effort") or "low"
    if effort not in EFFORTS:
        raise BadInputError(f"unknown effort {effort!r}", hint="use min, low, medium or high")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    defaults = Options(effort=effort)
    for name in Options.model_fields:
        for layer, source in (
            (cli, "command line"),
            (saved, "command line (earlier run)"),
            (front, "frontmatter"),
            (PRESETS[effort], f"effort {effort}"),
        ):
            if name in layer:
                values[name], sources[name] = layer[name], source
                break
        else:
            values[name], sources[name] = getattr(defaults, name), "default"
    values["effort"] = effort
    try:
        return Options(**values), sources
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "options"
        raise BadInputError(
            f"option {name} ({sources.get(name, '?')}): {first['msg']}",
            hint="see `promptgen --help` for the accepted values",
        ) from err


def parse_params(items: list[str]) -> dict[str, Any]:
    """`["temperature=0", "stop=[END]"]` -> {"temperature": 0, "stop": ["END"]} (YAML values)."""
    import yaml

    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInputError(
                f"--param {item!r} needs KEY=VALUE", hint="e.g. --param temperature=0"
            )
        try:
            params[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            params[key.strip()] = value
    return params
