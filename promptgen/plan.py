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
    return {k: v for k, v in plan.items() if v}


def critical_path(options: Options) -> int:
    """Rounds of calls that must happen one after another."""
    depth = 3  # intent|input_spec|rules -> inverse_rules -> tests
    depth += options.test_generations - 1
    depth += options.test_expansions
    if options.validity:
        depth += 1
    return depth
