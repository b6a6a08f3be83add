"""Options are declared once: flags, frontmatter keys, help, docs and the saved form are
derived from that declaration, and resolved once with their sources."""

from __future__ import annotations

import os

import pytest

from promptgen.config import explicit, resolve_options
from promptgen.docsgen import GENERATED, generated_sections
from promptgen.errors import BadInputError
from promptgen.options import OPTION_FIELDS, Generation, Models, Options, effort_table, flat
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


def test_models_turn_evaluation_on_unless_told_otherwise() -> None:
    assert explicit(Options(models=Models(models=["m"])))["evals"] is True
    from promptgen.options import Evaluation

    off = Options(models=Models(models=["m"]), evaluation=Evaluation(evals=False))
    assert explicit(off)["evals"] is False
    assert explicit(Options(models=Models(groundtruth_model="g")))["groundtruth"] is True


def test_a_bad_value_names_the_option_and_its_source() -> None:
    with pytest.raises(BadInputError, match=r"--tests-per-rule \(frontmatter\)"):
        resolve_options(None, frontmatter={"testsPerRule": 0})
    with pytest.raises(BadInputError, match="unknown effort"):
        resolve_options({"effort": "max"})


def test_the_saved_form_leaves_out_this_invocation() -> None:
    options = Options(models=Models(api_base="http://127.0.0.1:1/v1", models=["m"]))
    dumped = options.model_dump()
    assert "run" not in dumped and "api_base" not in dumped["models"]
    assert dumped["models"]["models"] == ["m"]
    assert "out" not in flat(options, persisted_only=True)
