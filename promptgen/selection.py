"""Which tests an evaluation runs, and the (test, model, run index) cells."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import zip_longest
from typing import Any

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.prompting.safety import handled, kept_for_purpose
from promptgen.results import Test

Cell = tuple[Test, str, int]


def eval_tests(ctx: Context, cfg: RunConfig) -> list[Test]:
    """Tests to evaluate, bounded by maxTestsToRun.

    Invalid tests are left out unless keepInvalid, and tests the safety screen flagged
    unless keepUnsafe (or --no-safety) or the prompt's own purpose handles what was
    flagged (personal data for a redactor); `--tests FILE` restricts the set. The bound takes
    tests round-robin over (scenario, rule) groups, so a small budget still covers every
    rule instead of the first rule's tests only.
    """
    options = cfg.ev
    wanted = set(options.test_ids)
    drop_unsafe = cfg.safety and not options.keep_unsafe
    handles = handled(ctx) if drop_unsafe and any(t.flagged for t in ctx.tests) else frozenset()
    eligible = [
        t
        for t in ctx.tests
        if (not wanted or t.id in wanted)
        and (options.keep_invalid or t.valid is not False)
        and not (drop_unsafe and t.flagged and not kept_for_purpose(t, handles))
    ]
    if options.max_tests_to_run is None or len(eligible) <= options.max_tests_to_run:
        return eligible
    groups: dict[tuple[str | None, str | None], list[Test]] = defaultdict(list)
    for test in eligible:
        groups[(test.scenario, test.rule_id)].append(test)
    interleaved = [t for row in zip_longest(*groups.values()) for t in row if t is not None]
    chosen = {t.id for t in interleaved[: options.max_tests_to_run]}
    return [t for t in eligible if t.id in chosen]  # collection order


def cells(ctx: Context, cfg: RunConfig) -> list[Cell]:
    """Every (test, model under test, run index) the evaluation needs."""
    tests = eval_tests(ctx, cfg)
    return [
        (test, model, index)
        for model in cfg.models
        for test in tests
        for index in range(cfg.ev.runs_per_test)
    ]


def author_reference(prompt: PromptUnderTest, test: Test) -> str | None:
    """The author's expected output, when it is the test's reference: only a test
    sample's (a generated test's `expected_output` is the generator's guess, never a
    reference), and only while the run's fixed values (`--var`) leave the sample's inputs
    as the author wrote them (else the output was written for another input)."""
    if test.origin != "sample" or test.expected_output is None:
        return None
    for name, value in prompt.fixed_inputs.items():
        given = test.inputs.get(name, value)
        if (given if isinstance(given, str) else json.dumps(given)) != value:
            return None
    return test.expected_output


def sample_tests(prompt: PromptUnderTest) -> list[Test]:
    """The author's test samples as tests (origin `sample`, valid), in their order, each
    input once; then the inputs' own samples together (a Prompty input's `sample`), the
    run the author wrote the prompt for, when they give every input a value."""
    tests: dict[str, Test] = {}
    for sample in prompt.test_samples:
        expected = sample.expected
        if expected is not None and not isinstance(expected, str):
            expected = json.dumps(expected, ensure_ascii=False)
        test = Test(
            id=Test.make_id("sample", None, None, sample.inputs),
            inputs=sample.inputs,
            expected_output=expected,
            origin="sample",
            valid=True,
            validity_reason="supplied by the prompt's author",
        )
        tests.setdefault(test.id, test)
    inputs = inputs_sample(prompt)
    if inputs is not None:
        test = Test(
            id=Test.make_id("sample", None, None, inputs),
            inputs=inputs,
            origin="sample",
            valid=True,
            validity_reason="the prompt's own sample inputs",
        )
        tests.setdefault(test.id, test)
    return list(tests.values())


def inputs_sample(prompt: PromptUnderTest) -> dict[str, Any] | None:
    """Every input's `sample` (its default where it has none), when at least one input
    has a sample and every input has a value; else None."""
    if not any(spec.sample is not None for spec in prompt.inputs.values()):
        return None
    values = {name: spec.example for name, spec in prompt.inputs.items()}
    return values if all(v is not None for v in values.values()) else None
