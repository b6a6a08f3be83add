"""Which tests of the previous version an edited prompt keeps.

A generated test is kept with its id while its rule is kept (an expanded test follows
the test it was expanded from); the tests of retired rules are retired. The author's
tests are always the prompt's current ones: a row removed is retired, a row still there
is kept (with the current expected output), a new row is added by the tests stage as in
any run. Baseline tests are kept unless the inputs or scenarios changed (then they are
written again). A test of a scenario the prompt no longer has is retired.

A kept test keeps its groundtruth only while the prompt's messages and response format
are as they were: the groundtruth is the prompt's expected answer, which a change of
wording or output format changes, while a new temperature or an author's row does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promptgen.carry.changes import Changes
from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.results import Test
from promptgen.selection import sample_tests


@dataclass
class TestPlan:
    __test__ = False  # not a pytest class

    kept: list[Test] = field(default_factory=list)
    retired: list[Test] = field(default_factory=list)
    baseline_kept: bool = True


def plan_tests(
    previous: Context,
    prompt: PromptUnderTest,
    retired_rules: set[str],
    changes: Changes,
    regenerate: list[str],
) -> TestPlan:
    anew = "tests" in regenerate or "rules" in regenerate
    plan = TestPlan(baseline_kept=not anew and not changes.has("inputs", "scenarios"))
    scenarios = {s.name for s in prompt.scenarios}
    samples = {t.id: t for t in sample_tests(prompt)}
    keep_reference = not changes.has("messages") and (
        previous.prompt.model.response_format == prompt.model.response_format
    )
    by_id = {t.id: t for t in previous.tests}
    verdicts: dict[str, bool] = {}

    def kept(test: Test, depth: int = 0) -> bool:
        if test.id in verdicts:
            return verdicts[test.id]
        if test.origin == "sample":
            ok = test.id in samples
        elif test.scenario is not None and test.scenario not in scenarios:
            ok = False
        elif test.origin == "expanded":
            parent = by_id.get(test.parent_id or "")
            ok = parent is not None and depth < 64 and kept(parent, depth + 1)
        elif test.origin == "baseline":
            ok = plan.baseline_kept
        else:
            ok = not anew and test.rule_id not in retired_rules
        verdicts[test.id] = ok
        return ok

    for test in previous.tests:
        if not kept(test):
            plan.retired.append(test)
            continue
        if test.origin == "sample":
            plan.kept.append(samples[test.id])  # the author's current row
            continue
        test = test.model_copy(deep=True)
        if not keep_reference:
            test.groundtruth = test.groundtruth_model = test.groundtruth_score = None
            test.groundtruth_status = None
        plan.kept.append(test)
    return plan
