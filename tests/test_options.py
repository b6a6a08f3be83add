"""Options are declared once: flags, frontmatter keys, help, docs and the saved form are
derived from that declaration, and resolved once with their sources."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from promptgen.config import explicit, resolve_options
from promptgen.docsgen import GENERATED, generated_sections
from promptgen.errors import BadInputError
from promptgen.formats.frontmatter import prompt_schema
from promptgen.llm.config import configured_models
from promptgen.options import (
    BY_NAME,
    MAX_CONCURRENCY,
    OPTION_FIELDS,
    Generation,
    Models,
    Options,
    bounds,
    effort_table,
    flat,
    nest,
)
from tests.conftest import REPO, run_cli


def test_generated_docs_are_fresh() -> None:
    text = (REPO / "docs" / "options.md").read_text(encoding="utf-8")
    sections = generated_sections(text)
    assert set(sections) == set(GENERATED)
    for name, make in GENERATED.items():
        assert sections[name] == make() + "\n", (
            f"docs/options.md's {name} is stale: run `python -m promptgen.docsgen docs/options.md`"
        )


def test_every_flag_is_in_the_help() -> None:
    result = run_cli("run", "--help", env={**os.environ, "COLUMNS": "240"})
    assert result.returncode == 0
    shown = result.stdout
    for field in OPTION_FIELDS:
        if field.flag is not None and field.name != "cache":
            assert field.flag in shown, field.flag
    assert "--no-cache" in shown and "--no-split-rules" in shown
    for line in effort_table().splitlines()[2:]:
        assert line.split("|")[1].strip() in shown


def test_precedence_and_sources() -> None:
    given = Options(effort="high", generation=Generation(max_rules=7))
    options, sources = resolve_options(
        given, frontmatter={"testsPerRule": 5, "maxRules": 2}, saved={"keep_invalid": True}
    )
    assert options.generation.max_rules == 7 and sources["max_rules"] == "command line"
    assert options.generation.tests_per_rule == 5 and sources["tests_per_rule"] == "frontmatter"
    assert options.generation.test_expansions == 1 and sources["test_expansions"] == "effort high"
    assert options.evaluation.keep_invalid is True
    assert sources["keep_invalid"] == "command line (earlier run)"
    assert options.generation.baseline_tests is False and sources["baseline_tests"] == "default"


def test_each_source_of_the_models_under_test_beats_the_next(tmp_path: Path) -> None:
    """--models > the earlier run's --models > PROMPTGEN_MODELS > the config file's
    under_test > none (a prompt's frontmatter names none: `models` is no frontmatter key)."""
    config = tmp_path / "promptgen.toml"
    config.write_text('[models]\nunder_test = ["file/m"]\n', encoding="utf-8")
    quiet = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}  # no user config file

    def models(given: dict, saved: dict, env: dict[str, str]) -> tuple[list[str], str]:
        options, sources = resolve_options(
            given, {"models": ["front/m"]}, saved,
            under_test=lambda: configured_models({**quiet, **env}, tmp_path),
        )  # fmt: skip
        return options.models.models, sources["models"]

    cli, saved = {"models": ["cli/m"]}, {"models": ["saved/m"]}
    env = {"PROMPTGEN_MODELS": "e/1;e/2"}
    assert models(cli, saved, env) == (["cli/m"], "command line")
    assert models({}, saved, env) == (["saved/m"], "command line (earlier run)")
    assert models({}, {}, env) == (["e/1", "e/2"], "PROMPTGEN_MODELS")
    assert models({}, {}, {}) == (["file/m"], f"config {config}")
    config.unlink()
    assert models({}, {}, {}) == ([], "default")
    assert models({"models": []}, {}, env) == (["e/1", "e/2"], "PROMPTGEN_MODELS")


def test_models_turn_evaluation_on_unless_told_otherwise() -> None:
    assert explicit(Options(models=Models(models=["m"])))["evals"] is True
    from promptgen.options import Evaluation

    off = Options(models=Models(models=["m"]), evaluation=Evaluation(evals=False))
    assert explicit(off)["evals"] is False
    assert explicit(Options(models=Models(groundtruth_model="g")))["groundtruth"] is True


def test_a_bad_value_names_the_option_and_its_source() -> None:
    with pytest.raises(
        BadInputError, match=r"^frontmatter key testsPerRule = 0: must be at least 1"
    ):
        resolve_options(None, frontmatter={"testsPerRule": 0})
    with pytest.raises(BadInputError, match=r"^p\.prompty: frontmatter key effort = 'max'"):
        resolve_options(None, frontmatter={"effort": "max"}, prompt_file="p.prompty")
    with pytest.raises(BadInputError, match=r"^--effort 'max': must be one of min, low"):
        resolve_options({"effort": "max"})
    with pytest.raises(BadInputError, match=r"^--effort '': must be one of min, low"):
        resolve_options({"effort": ""})  # empty is not "unset"
    with pytest.raises(BadInputError, match=r"^--concurrency 0: must be at least 1"):
        resolve_options({"concurrency": 0})
    with pytest.raises(
        BadInputError, match=r"^option --runs-per-test = 0 \(command line \(earlier"
    ):
        resolve_options(None, saved={"runs_per_test": 0})


def test_bounds_are_declared_once_and_hold_everywhere() -> None:
    """The same bound in the model (library API), the frontmatter schema and the help."""
    for field, bad in (("fail_under", 101.0), ("temperature", float("nan")), ("concurrency", 0)):
        assert bounds(BY_NAME[field]) is not None
        with pytest.raises(ValidationError):
            Options.model_validate(nest({field: bad}))
    with pytest.raises(ValidationError):
        Options(models=Models(api_base=""))
    assert bounds(BY_NAME["concurrency"]) == f"1-{MAX_CONCURRENCY}"
    schema = prompt_schema()["properties"]["runsPerTest"]["anyOf"][0]
    assert schema == {"minimum": 1, "maximum": 1000, "type": "integer"}


def test_every_count_has_an_upper_bound() -> None:
    """A count without one grew to 4 GB before "internal error" (--runs-per-test 10**12)."""
    counts = {f.name: bounds(f) for f in OPTION_FIELDS if int in _types(f.annotation)}
    assert counts == {
        "max_rules": "1-1000",
        "tests_per_rule": "1-100",
        "max_rules_per_test_generation": "1-1000",
        "test_generations": "1-100",
        "test_expansions": "0-100",
        "filter_tests": "1-100000",
        "test_samples_count": "0-100000",
        "runs_per_test": "1-1000",
        "max_tests_to_run": "1-100000",
        "groundtruth_retries": "0-100",
        "concurrency": f"1-{MAX_CONCURRENCY}",
    }


def _types(annotation: object) -> set[object]:
    return {annotation, *getattr(annotation, "__args__", ())}


def test_the_saved_form_keeps_the_server_and_models_but_not_this_invocation() -> None:
    options = Options(
        models=Models(
            api_base="http://127.0.0.1:1/v1", models=["m"], rules_model="r", concurrency=4
        )
    )
    dumped = options.model_dump()
    assert "run" not in dumped and "concurrency" not in dumped["models"]
    assert dumped["models"]["api_base"] == "http://127.0.0.1:1/v1"
    assert dumped["models"]["models"] == ["m"] and dumped["models"]["rules_model"] == "r"
    persisted = flat(options, persisted_only=True)
    assert "out" not in persisted and "concurrency" not in persisted
    assert persisted["api_base"] == "http://127.0.0.1:1/v1"
