"""How many LLM calls each stage will make (for --dry-run and progress totals)."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.options import Options

# Before the rules exist, plan with this many (capped by maxRules).
ESTIMATED_RULES = 10


def planned_calls(ctx: Context, options: Options) -> dict[str, int]:
    """Calls per enabled stage; a repair turn or a retry adds to these."""
    from promptgen.stages.generate import plan_chunks

    n_rules = len(ctx.rules) if ctx.stage("rules").status == "done" else ESTIMATED_RULES
    n_rules = min(n_rules, options.max_rules or n_rules)
    scenarios = max(1, len(ctx.prompt.scenarios))
    if ctx.stage("rules").status == "done":
        chunks = len(plan_chunks(ctx, options))
    else:
        size = options.max_rules_per_test_generation
        groups = [n_rules, n_rules] if options.split_rules else [2 * n_rules]
        chunks = scenarios * sum(-(-g // size) for g in groups if g)
    generated = 2 * n_rules * options.tests_per_rule * options.test_generations * scenarios
    plan = {
        "intent": 1,
        "input_spec": 1,
        "rules": 1,
        "inverse_rules": 1 if n_rules else 0,
        "groundedness": n_rules if options.groundedness else 0,
        "tests": chunks * options.test_generations,
        "baseline": scenarios if options.baseline_tests else 0,
        "expand": generated * options.test_expansions,
    }
    total_tests = generated * (1 + options.test_expansions) + (
        generated if options.baseline_tests else 0
    )
    from promptgen.stages.judge import VALIDITY_BATCH

    plan["validity"] = -(-total_tests // VALIDITY_BATCH) if options.validity else 0
    if options.test_ids:  # --tests FILE: nothing is generated
        plan.update(tests=0, baseline=0, expand=0)
        unjudged = sum(t.valid is None for t in ctx.tests)
        plan["validity"] = -(-unjudged // VALIDITY_BATCH) if options.validity else 0
    known = len(ctx.tests) if ctx.stage("tests").status == "done" or options.test_ids else 0
    plan.update(evaluation_calls(ctx, options, known or total_tests))
    return {k: v for k, v in plan.items() if v}


def evaluation_calls(ctx: Context, options: Options, total_tests: int) -> dict[str, int]:
    """Calls of the evaluation stages (the test count is estimated before generation)."""
    from promptgen.checks.metrics import load_metrics
    from promptgen.stages.review import IMPORTANCE_BATCH
    from promptgen.stages.select import eval_tests

    plan: dict[str, int] = {}
    if options.rate_tests or options.filter_tests is not None:
        plan["review"] = 1 + -(-total_tests // IMPORTANCE_BATCH)
    if not (options.evals and options.models):
        return plan
    if ctx.tests:
        n_tests = len(eval_tests(ctx, options))
    else:
        n_tests = min(total_tests, options.max_tests_to_run or total_tests)
    metrics = load_metrics(ctx.prompt, options)
    judged = sum(m.check is None and not m.groundtruth for m in metrics)
    judges = len(options.eval_models) or 1
    cells = n_tests * len(options.models) * options.runs_per_test
    plan["runs"] = cells
    plan["metrics"] = cells * judges * judged
    if options.groundtruth:
        gt_judges = len(options.groundtruth_eval_models or options.eval_models) or 1
        gt_metrics = sum(m.groundtruth for m in metrics) or 1
        plan["groundtruth"] = n_tests * (1 + gt_judges * gt_metrics)
    return plan


def critical_path(options: Options) -> int:
    """Rounds of calls that must happen one after another."""
    depth = 3  # intent|input_spec|rules -> inverse_rules -> tests
    depth += options.test_generations - 1
    depth += options.test_expansions
    if options.validity:
        depth += 1
    if options.evals and options.models:
        # groundtruth (answer, score) beside the runs, then the metrics
        depth += (2 if options.groundtruth else 1) + 1
    return depth
