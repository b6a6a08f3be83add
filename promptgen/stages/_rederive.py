"""After an edit of the prompt: the rules of its new and reworded instructions only.

The carry-over (promptgen/carry/) kept the rules whose instruction is unchanged and
retired the others; what is left to derive is in `ctx.edit.derive` (the units' sources,
`prompting/units.py`). Each such unit is rewritten as a rule in a call of its own, as
the stepwise mode does (a criterion is kept as written, without a call), whatever the
mode: a second reading of the whole prompt would reword the rules that did not change.
A new rule that says what a retired one said (`likeness.near_duplicate`: the same words
in any order, the same numbers and negations) brings the retired rule back under its id
and text, with its inverse rule and its tests (listed in `rules_reworded`); any other is
a new rule (`rules_added`), and the retired one stays retired. So "at most 3" made
"at most 5" is a new rule, and "Avoid rhyme" made "Avoid rhymes" keeps its rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting.likeness import near_duplicate
from promptgen.prompting.seeds import instruction_seeds
from promptgen.prompting.units import Unit, attributed, seed_source, units
from promptgen.results import EditRecord, Rule, Test
from promptgen.stage import Scope, sort_tests


def _todo(ctx: Context, cfg: RunConfig) -> list[Unit]:
    wanted = set(ctx.edit.derive) if ctx.edit is not None else set()
    found = units(ctx.prompt, cfg.gen.max_rules or 0, cfg.stepwise)
    return [u for u in found if u.source in wanted]


def calls(ctx: Context, cfg: RunConfig) -> int:
    """One call per unit to derive (a criterion is kept as written, without one)."""
    return sum(not u.criterion for u in _todo(ctx, cfg))


# How the rules stage rewrites (instruction, lead-in) pairs as rules: `rules.rewrite_all`.
Rewrite = Callable[..., Awaitable[list[tuple[str, str | None]] | None]]


async def rederive(scope: Scope, rewrite_all: Rewrite) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    edit = ctx.edit
    assert edit is not None
    todo = _todo(ctx, cfg)
    found = await rewrite_all(
        scope,
        [(u.body, u.lead) for u in todo],
        [u.criterion for u in todo],
        said=[r.text for r in ctx.rules],
    )
    if found is None:
        return  # a call failed: the unit is asked again by a re-run
    have = {r.id for r in ctx.all_rules}
    for text, source in found:
        old = _said_again(text, edit)
        if old is not None:
            restore(ctx, edit, old, source, reworded=True, tests=True)
            continue
        rule = Rule.make(text, source=source)
        if rule.id not in have:
            have.add(rule.id)
            ctx.rules.append(rule)
            edit.rules_added.append(rule.id)
    in_prompt_order(ctx, cfg)
    _cap(scope, edit)
    edit.derive = []
    _sorted(ctx, edit)
    scope.set_count("rules", len(ctx.rules))
    scope.set_count("rules_derived", len(found))
    scope.set_count("rules_reworded", len(edit.rules_reworded))


def in_prompt_order(ctx: Context, cfg: RunConfig) -> None:
    """The rules in the order of the instructions they come from (a rule read from the
    whole prompt: of the sentence it is attributed to), as a fresh run has them; a rule
    about the prompt as a whole keeps its place after those before it."""
    found = units(ctx.prompt, cfg.gen.max_rules or 0, cfg.stepwise)
    order = {u.source: i for i, u in enumerate(found)}
    seeds = instruction_seeds(ctx.prompt)
    place = len(order)
    keys: list[int] = []
    for rule in ctx.rules:
        source = rule.source
        if source is None:
            seed = attributed(rule.text, seeds)
            source = seed_source(seed) if seed is not None else None
        place = order.get(source or "", place)
        keys.append(place)
    ranked = sorted(zip(keys, range(len(keys)), ctx.rules, strict=True))
    ctx.rules = [rule for _, _, rule in ranked]


def _said_again(text: str, edit: EditRecord) -> Rule | None:
    """The retired rule `text` says again, if any."""
    return next(
        (r for r in edit.rules_retired if not r.inverse and near_duplicate(text, r.text)), None
    )


def _cap(scope: Scope, edit: EditRecord) -> None:
    """At most maxRules rules, the first in the prompt's order, as in a fresh run: a new
    rule past the cap is dropped; a kept one (a new instruction came before its own) is
    retired, with its inverse rules and tests."""
    limit = scope.cfg.gen.max_rules
    ctx = scope.ctx
    if limit and len(ctx.rules) > limit:
        over = ctx.rules[limit:]
        dropped = {r.id for r in over}
        ctx.rules = ctx.rules[:limit]
        edit.rules_added = [i for i in edit.rules_added if i not in dropped]
        _retire(ctx, edit, [r for r in over if r.id in {*edit.rules_kept, *edit.rules_reworded}])
        scope.set_count("over_max_rules", len(dropped))


def _retire(ctx: Context, edit: EditRecord, rules: list[Rule]) -> None:
    """Retire kept `rules` (no longer in `ctx.rules`), their inverse rules and tests."""
    if not rules:
        return
    targets = {r.id for r in rules}
    inverses = [r for r in ctx.inverse_rules if r.inverse_of in targets]
    ids = targets | {r.id for r in inverses}
    ctx.inverse_rules = [r for r in ctx.inverse_rules if r.id not in ids]
    edit.rules_kept = [i for i in edit.rules_kept if i not in ids]
    edit.rules_reworded = [i for i in edit.rules_reworded if i not in ids]
    edit.rules_retired.extend([*rules, *inverses])
    gone = {t.id for t in _tests_of(ctx.tests, ids)}
    edit.tests_retired.extend(t for t in ctx.tests if t.id in gone)
    edit.tests_kept = [i for i in edit.tests_kept if i not in gone]
    ctx.tests = [t for t in ctx.tests if t.id not in gone]


def restore(
    ctx: Context,
    edit: EditRecord,
    rule: Rule,
    source: str | None,
    *,
    reworded: bool,
    tests: bool,
) -> None:
    """Bring a retired rule back under its id and text (listed as `reworded`, or as
    kept: read again word for word), and, when `tests`, its inverse rules, its tests and
    the tests expanded from them (else the inverse stage and the tests stage write them
    anew: --regenerate)."""
    edit.rules_retired = [r for r in edit.rules_retired if r.id != rule.id]
    ctx.rules.append(rule.model_copy(update={"source": source or rule.source}))
    (edit.rules_reworded if reworded else edit.rules_kept).append(rule.id)
    inverses = [r for r in edit.rules_retired if r.inverse_of == rule.id]
    if tests:
        for inverse in inverses:
            edit.rules_retired.remove(inverse)
            ctx.inverse_rules.append(inverse)
            edit.rules_kept.append(inverse.id)
    if not tests:
        return
    ids = {rule.id, *(r.id for r in inverses)}
    back = _tests_of(edit.tests_retired, ids)
    taken = {t.id for t in back}
    edit.tests_retired = [t for t in edit.tests_retired if t.id not in taken]
    for test in back:
        if "messages" in edit.changed:  # its groundtruth was the old wording's answer
            test.groundtruth = test.groundtruth_model = test.groundtruth_score = None
            test.groundtruth_status = None
    ctx.tests.extend(back)
    edit.tests_kept.extend(t.id for t in back)


def _tests_of(retired: list[Test], rules: set[str]) -> list[Test]:
    """The tests of `rules` among `retired`, and those expanded from them (any depth)."""
    chosen = {t.id for t in retired if t.rule_id in rules and t.origin != "expanded"}
    grew = True
    while grew:
        more = {t.id for t in retired if t.parent_id in chosen and t.id not in chosen}
        chosen |= more
        grew = bool(more)
    return [t.model_copy(deep=True) for t in retired if t.id in chosen]


def settle(ctx: Context, edit: EditRecord) -> None:
    """After the rules were derived anew (--regenerate rules, or nothing was kept): a
    rule read again word for word keeps its place among the kept ones (under
    --regenerate its tests are written anew all the same); another that says what a
    retired one said brings it back with its tests (not under --regenerate)."""
    anew = "rules" in edit.regenerated
    derived, ctx.rules = ctx.rules, []
    for rule in derived:
        same = next((r for r in edit.rules_retired if r.id == rule.id), None)
        old = same or (None if anew else _said_again(rule.text, edit))
        if old is None:
            ctx.rules.append(rule)
            edit.rules_added.append(rule.id)
        else:
            restore(ctx, edit, old, rule.source, reworded=same is None, tests=not anew)
    _sorted(ctx, edit)


def _sorted(ctx: Context, edit: EditRecord) -> None:
    """The tests in their order, and the kept ones listed in it (tests brought back
    with their rule sit where a straight run has them); the inverse rules in the order
    of their rules."""
    order = {r.id: i for i, r in enumerate(ctx.rules)}
    ctx.inverse_rules.sort(key=lambda r: order.get(r.inverse_of or "", len(order)))
    sort_tests(ctx)
    place = {t.id: i for i, t in enumerate(ctx.tests)}
    edit.tests_kept.sort(key=lambda i: place.get(i, len(place)))
