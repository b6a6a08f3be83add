"""Which rules of the previous version an edited prompt keeps, and what is left to derive.

A rule keeps its id and text while the instruction it was read from is still in the
prompt as it was. Stepwise rules name that instruction (`Rule.source`, compared with the
prompt's units, `prompting/units.py`); rules read from the whole prompt at once name
none, so each is attributed to the instruction sentence it shares most content words
with. That keeps unchanged rules stable whatever a model would say on a second reading
of the whole prompt (re-deriving every rule and matching the answers would turn each
rewording of the model's into a new rule). A rule no sentence accounts for (about the
prompt as a whole) is kept. The others are retired for now: the rules stage derives the
rules of the new and reworded instructions only, and a retired rule that one of them
says again (`likeness.near_duplicate`) is brought back under its id (stages/rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.prompting.seeds import instruction_seeds
from promptgen.prompting.units import attributed, seed_source, units
from promptgen.results import Rule


@dataclass
class RulePlan:
    kept: list[Rule] = field(default_factory=list)
    inverse: list[Rule] = field(default_factory=list)
    retired: list[Rule] = field(default_factory=list)  # rules and inverse rules
    derive: list[str] = field(default_factory=list)  # sources of the units to derive


def source_of_rule(rule: Rule, previous: PromptUnderTest) -> str | None:
    """The instruction a rule was read from: its own source, else the sentence of the
    previous prompt it is attributed to (None: about the prompt as a whole)."""
    if rule.source is not None:
        return rule.source
    seed = attributed(rule.text, instruction_seeds(previous))
    return seed_source(seed) if seed is not None else None


def plan_rules(
    previous: Context, prompt: PromptUnderTest, cfg: RunConfig, regenerate: list[str]
) -> RulePlan:
    """The rules (and inverse rules) kept, retired, and the units to derive rules from."""
    if "rules" in regenerate or not previous.rules:
        # Derived anew (or never derived): the rules stage reads the whole prompt again.
        return RulePlan(retired=list(previous.all_rules))
    cap = cfg.gen.max_rules or 0
    now = units(prompt, cap, cfg.stepwise)
    sources_now = {u.source for u in now}
    plan = RulePlan()
    for rule in previous.rules:
        source = source_of_rule(rule, previous.prompt)
        (plan.kept if source is None or source in sources_now else plan.retired).append(rule)
    kept = {r.id for r in plan.kept}
    for inverse in previous.inverse_rules:
        (plan.inverse if inverse.inverse_of in kept else plan.retired).append(inverse)
    then = {u.source for u in units(previous.prompt, cap, cfg.stepwise)}
    then |= {r.source for r in previous.rules if r.source}
    plan.derive = [u.source for u in now if u.source not in then]
    return plan
