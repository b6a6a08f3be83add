"""The tests stage after an edit of the prompt (docs/carry-over.md): which behaviours the
kept tests hold to their rules, and what is settled before the new tests are written."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.stages._suite import carried_rules


def kept_pairs(ctx: Context) -> dict[str, str]:
    """After an edit: behaviour id -> the rule a kept test exercises it for."""
    if carried_rules(ctx) is None:
        return {}
    assert ctx.edit is not None
    kept = set(ctx.edit.tests_kept)
    return {
        b: t.rule_id
        for t in ctx.tests
        if t.id in kept and t.origin == "generated" and t.rule_id
        for b in t.behaviours
    }


def after_edit(ctx: Context) -> None:
    """Before an edited prompt's tests are written (its input spec and rules known): the
    kept tests are judged again for validity when the input spec changed, and notes on
    slots of rules or behaviours no longer there are dropped."""
    edit = ctx.edit
    assert edit is not None
    if edit.input_spec_then is not None and ctx.input_spec is not None:
        if ctx.input_spec != edit.input_spec_then:
            kept = set(edit.tests_kept)
            for test in ctx.tests:
                if test.id in kept and test.origin != "sample" and test.valid is not None:
                    test.valid, test.validity_reason = None, None
                    edit.tests_rechecked.append(test.id)
        edit.input_spec_then = None
    record = ctx.stage("tests")
    known = {r.id for r in ctx.all_rules} | {b.id for b in ctx.behaviours}
    record.notes = {k: v for k, v in record.notes.items() if k.split("|", 1)[0] in known}
