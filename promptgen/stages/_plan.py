"""Which tests a suite gets: slots of (rule, behaviour), planned without a model.

Every behaviour (`prompting/behaviours.py`) is paired with the rule it exercises: a
temptation with the inverse rule of the prohibition it tempts, a class, condition or
criterion with the rule whose instruction names it, a variety case with the rule that has
the fewest tests so far. Each rule and inverse rule then gets at least `per_rule` slots:
its behaviours first, then plain ones ("an input where this rule matters", or for an
inverse "an input that tempts this mistake"). So a classifier's four labels are four
tests of its labelling rule, and no behaviour is left without a test it can be planned
for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from promptgen.prompting.seeds import content_words
from promptgen.results import Behaviour, Rule


@dataclass(frozen=True)
class Slot:
    """One test to write: for `rule`, exercising `behaviour` (None: the rule alone); the
    `index`-th of its kind."""

    rule: Rule
    behaviour: Behaviour | None = None
    index: int = 0

    @property
    def key(self) -> str:
        return f"{self.rule.id}|{self.behaviour.id if self.behaviour else '-'}|{self.index}"


def _about(rule: Rule) -> set[str]:
    return content_words(f"{rule.source or ''} {rule.text}")


def _overlap(behaviour: Behaviour, rule: Rule) -> int:
    words = content_words(f"{behaviour.source or ''} {behaviour.text}")
    return len(words & _about(rule))


def _from_source(behaviour: Behaviour, rule: Rule) -> bool:
    """The rule was read from the sentence the behaviour was read from."""
    return bool(behaviour.source and rule.source and behaviour.source in rule.source)


def pair(
    behaviour: Behaviour, rules: list[Rule], inverses: dict[str, Rule], load: dict[str, int]
) -> Rule | None:
    """The rule (or inverse rule) a behaviour's test targets."""
    plain = [r for r in rules if not r.inverse]
    if not plain:
        return None
    if behaviour.kind == "temptation":
        parents = [r for r in plain if r.id in inverses]
        if parents:
            inverse_load = {p.id: load.get(inverses[p.id].id, 0) for p in parents}
            parent = _best(behaviour, parents, inverse_load)
            return inverses[parent.id]
    if behaviour.kind == "variety":
        return _least_loaded(plain, load)
    return _best(behaviour, plain, load)


def _least_loaded(rules: list[Rule], load: dict[str, int]) -> Rule:
    return min(rules, key=lambda r: (load.get(r.id, 0), rules.index(r)))


def _best(behaviour: Behaviour, rules: list[Rule], load: dict[str, int]) -> Rule:
    """The rule read from the behaviour's sentence, else the one sharing most words with
    it, else (nothing shared) the one with the fewest behaviours so far."""
    exact = [r for r in rules if _from_source(behaviour, r)]
    if exact:
        return exact[0]
    best = max(rules, key=lambda r: (_overlap(behaviour, r), -rules.index(r)))
    return best if _overlap(behaviour, best) else _least_loaded(rules, load)


def plan(
    rules: list[Rule],
    behaviours: list[Behaviour],
    per_rule: int,
    paired: Mapping[str, str] | None = None,
) -> list[Slot]:
    """Slots for `rules` (rules and their inverses, in order) and `behaviours`: each
    behaviour once, each rule at least `per_rule` times. In rule order, a rule's
    behaviours first. `paired` (behaviour id -> rule id) holds pairs already made: an
    edited prompt's kept tests keep exercising their behaviours for their rules, so a
    new rule does not draw a behaviour (and a new test) away from a kept one."""
    inverses = {r.inverse_of: r for r in rules if r.inverse and r.inverse_of}
    by_id = {r.id: r for r in rules}
    by_rule: dict[str, list[Behaviour]] = {r.id: [] for r in rules}
    load: dict[str, int] = {}
    for behaviour in behaviours:
        rule = by_id.get((paired or {}).get(behaviour.id, "")) or pair(
            behaviour, rules, inverses, load
        )
        if rule is None:
            continue
        by_rule[rule.id].append(behaviour)
        load[rule.id] = load.get(rule.id, 0) + 1
    slots: list[Slot] = []
    for rule in rules:
        mine = by_rule[rule.id]
        slots += [Slot(rule, b) for b in mine]
        slots += [Slot(rule, None, i) for i in range(max(0, per_rule - len(mine)))]
    return slots
