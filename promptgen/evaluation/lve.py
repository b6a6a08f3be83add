"""The checker of an LVE test as a metric: a test.json's `checker_args` judge every
output of a run on the test, as LVE would (safe = ok), without a model call.

The checker sees the instance arguments LVE would pass: the test's arguments and the
prompt's model parameters; the last answer is the response, a multi-step prompt's
answers are its variables and a multi-run prompt's answers its list of responses. A
checker that is not built in (custom code, an ML checker without its extra) gives
"unknown", never ok. A checker that cannot work at all is refused when the metrics are
loaded, before any model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptgen.errors import BadInputError
from promptgen.evaluation.lve_checkers import (
    Observation,
    built_in,
    check,
    checker_name,
    placeholders,
    validate,
)
from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.results import MetricInfo

LOAD_ORDER = 3


@dataclass
class LveMetric(MetricBase):
    checker_args: Mapping[str, Any]
    prompt_parameters: list[str] | None
    model_parameters: Mapping[str, Any]
    multi_run: bool = False

    def __post_init__(self) -> None:
        self.judged = False  # a checker asks no model

    def observation(self, case: Case) -> Observation:
        steps = dict(case.steps)
        if self.multi_run:
            return Observation(response=case.output, responses=list(steps.values()))
        return Observation(response=case.output, variables=steps or {"response": case.output})

    async def evaluate(self, case: Case) -> Verdict:
        args = {**self.model_parameters, **case.arguments}
        try:
            outcome = check(self.checker_args, args, self.prompt_parameters, self.observation(case))
        except BadInputError as err:  # e.g. a value of this test that makes a bad regex
            return Verdict(outcome="unknown", reason=f"for this test: {err.message}")
        if outcome.safe is None:
            return Verdict(outcome="unknown", reason=outcome.reason)
        return Verdict.of("ok" if outcome.safe else "err", outcome.reason)


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    facts = prompt.extra.get("lve") if prompt.format == "lve" else None
    if not isinstance(facts, dict) or not isinstance(facts.get("checker_args"), dict):
        return []
    checker_args: dict[str, Any] = facts["checker_args"]
    multi_run = bool(facts.get("multi_run"))
    try:
        name = checker_name(checker_args)
        validate(checker_args, multi_run=multi_run)
        if built_in(name):  # a custom checker's arguments are its own business
            _check_names(checker_args, prompt)
    except BadInputError as err:
        err.file = err.file or prompt.source
        raise
    info = MetricInfo(
        name=f"lve:{name}",
        kind="check",
        description=f"the LVE's checker {name} (ok: safe)",
        source=prompt.source,
    )
    metric = LveMetric(
        info,
        checker_args=checker_args,
        prompt_parameters=facts.get("prompt_parameters"),
        model_parameters=dict(prompt.model.parameters),
        multi_run=multi_run,
    )
    return [metric]


def _check_names(checker_args: Mapping[str, Any], prompt: PromptUnderTest) -> None:
    """Every `{name}` in a checker argument is an input or a model parameter (else no
    test of the run could give it)."""
    known = {*prompt.inputs, *prompt.model.parameters}
    for key, names in placeholders(checker_args).items():
        unknown = [n for n in names if n not in known]
        if unknown:
            raise BadInputError(
                f"{checker_name(checker_args)}: '{key}' uses {{{unknown[0]}}}, which is "
                "neither a prompt parameter nor a model argument",
                hint="add it to prompt_parameters, or write a literal brace as {{ or }}",
            )
