"""A small saved run for the report tests, with figures simple enough to check by hand.

Two models, two scenarios (and one test without), two rules and one inverse rule. One
run errored, one has no verdict, one failed only a check, and one output is an XSS
payload that every report must escape. One test is invalid (and was run all the same);
the groundtruth of three tests is accepted, invalid and author-given; one rule is
grounded, the other not.
"""

from __future__ import annotations

from promptgen.context import Context
from promptgen.model import Message, PromptUnderTest
from promptgen.results import (
    MetricInfo,
    MetricResult,
    MetricSummary,
    Rule,
    Test,
    TestRun,
    Usage,
    UsageTotals,
)

XSS = "</script><script>alert(1)</script> <b>bold</b>"
CHECK = "contains=Hello"
MODEL_A, MODEL_B = "model-a", "model-b"
GROUNDTRUTH_MODEL = "gt-model"


def _summary(score: float | None) -> MetricSummary:
    if score is None:
        return MetricSummary(outcome="unknown", errors=1)
    return MetricSummary(score=score, outcome="ok" if score >= 50 else "err", judges=1)


def _run(
    ctx: Context,
    test: str,
    model: str,
    output: str | None,
    scores: tuple[float | None, float | None, float | None] | None,
    *,
    index: int = 0,
    latency: float | None = None,
    tokens: tuple[int, int] = (0, 0),
    cost: float = 0.0,
    reasons: dict[str, str] | None = None,
) -> None:
    """Add a run; `scores` is (compliance, accuracy, check), None for no verdict."""
    metrics = {}
    if scores is not None:
        names = ("compliance", "accuracy", CHECK)
        metrics = {n: _summary(s) for n, s in zip(names, scores, strict=True)}
    ctx.test_runs.append(
        TestRun(
            test_id=test,
            model=model,
            run_index=index,
            output=output,
            error=None if output is not None else "timeout after 30 s",
            usage=Usage(prompt_tokens=tokens[0], completion_tokens=tokens[1], cost=cost, calls=1),
            latency_ms=latency,
            metrics=metrics,
        )
    )
    for judge, reason in (reasons or {}).items():
        metric, judge_name = (CHECK, None) if judge == CHECK else ("compliance", judge)
        ctx.metric_results.append(
            MetricResult(
                test_id=test,
                model=model,
                run_index=index,
                metric=metric,
                judge=judge_name,
                score=0,
                outcome="err",
                reason=reason,
            )
        )


def report_context() -> Context:
    prompt = PromptUnderTest(
        name="greeter",
        description="Greets <b>people</b> by name",
        source="samples/greeter.prompty",
        messages=[
            Message(role="system", content="You greet the user. Always start with Hello."),
            Message(role="user", content="My name is {{name}}"),
        ],
    )
    ctx = Context.new(
        prompt, run_id="example", intent="Greet the user politely.", input_spec="name: a name"
    )
    ctx.rules = [
        Rule(
            id="rule-start",
            text="The output starts with Hello",
            grounded=True,
            grounded_reason="The system message says: Always start with Hello.",
        ),
        Rule(
            id="rule-short",
            text="The output is one sentence | no more",
            grounded=False,
            grounded_reason="The prompt <i>never</i> limits the length",
        ),
    ]
    ctx.inverse_rules = [
        Rule(
            id="inv-start",
            text="The output does not start with Hello",
            inverse=True,
            inverse_of="rule-start",
        )
    ]
    ctx.tests = [
        Test(
            id="t1",
            rule_id="rule-start",
            scenario="formal",
            inputs={"name": "Ada"},
            valid=True,
            groundtruth="Hello Ada, welcome.",
            groundtruth_model=GROUNDTRUTH_MODEL,
            groundtruth_score=250 / 3,
            groundtruth_status="ok",
        ),
        Test(
            id="t2",
            rule_id="rule-short",
            scenario="formal",
            inputs={"name": "Bob | Smith\nJr"},
            valid=True,
            groundtruth="<b>Hi</b> Bob",
            groundtruth_model=GROUNDTRUTH_MODEL,
            groundtruth_score=12.5,
            groundtruth_status="invalid",
        ),
        Test(
            id="t3",
            rule_id="inv-start",
            inverse=True,
            scenario="casual",
            inputs={"name": "Eve"},
            valid=False,
            validity_reason="A name is required; Eve is <not> one",
        ),
        Test(
            id="t4",
            rule_id="rule-short",
            inputs={"name": "Zed"},
            expected_output="Hello Zed.",
            groundtruth="Hello Zed.",
            groundtruth_status="author",
        ),
        Test(id="t5", rule_id="rule-start", scenario="casual", inputs={"name": "Kim"}, valid=True),
    ]
    ctx.metrics = [
        MetricInfo(name="compliance", kind="compliance"),
        MetricInfo(name="accuracy", kind="accuracy", scorer=True),
        MetricInfo(name=CHECK, kind="check"),
    ]
    a, b = MODEL_A, MODEL_B
    _run(ctx, "t1", a, "Hello Ada.", (100, 80, 100), latency=100, tokens=(10, 5), cost=0.001)
    _run(
        ctx,
        "t1",
        a,
        XSS,
        (0, 20, 0),
        index=1,
        latency=300,
        tokens=(12, 8),
        cost=0.002,
        reasons={
            "judge-x": "Does not start with Hello; <script> found",
            "judge-y": "Answer is HTML | not a greeting",
            CHECK: "'Hello' not found",
        },
    )
    _run(ctx, "t2", a, "Hello Bob | Smith.", (100, 90, 100), latency=200, tokens=(10, 5), cost=1e-3)
    _run(
        ctx,
        "t3",
        a,
        "Hi Eve",
        (0, 40, 0),
        latency=400,
        tokens=(10, 5),
        cost=0.001,
        reasons={"judge-x": "Starts with Hi, not Hello", CHECK: "'Hello' not found"},
    )
    _run(ctx, "t4", a, None, None)
    _run(ctx, "t1", b, "Hello Ada!", (100, 100, 100), latency=150, tokens=(20, 10), cost=0.003)
    _run(
        ctx,
        "t2",
        b,
        "Hello Bob.\nNice to meet you.",
        (0, 70, 100),
        latency=250,
        tokens=(20, 10),
        cost=0.003,
        reasons={"judge-x": "Two sentences\nnot one"},
    )
    _run(ctx, "t3", b, "Hello Eve", (100, 60, 100), latency=350, tokens=(20, 10), cost=0.003)
    _run(
        ctx,
        "t4",
        b,
        "Greetings, Zed.",
        (100, 50, 0),
        latency=450,
        tokens=(20, 10),
        cost=0.003,
        reasons={CHECK: "'Hello' not found"},
    )
    _run(ctx, "t4", b, "Hey Zed", (None, None, None), index=1, latency=50, tokens=(20, 10))
    _run(ctx, "t5", b, "Hello Kim", (None, 90, 100), latency=550, tokens=(20, 10))
    total = sum((r.usage for r in ctx.test_runs), Usage())
    ctx.usage = UsageTotals(total=total)
    return ctx


def empty_context() -> Context:
    return Context.new(PromptUnderTest(name="empty", messages=[Message(role="user", content="hi")]))
