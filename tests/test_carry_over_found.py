"""Two edits bench/edits.py found handled wrongly, on the carry-over tests' fake.

- An edit that takes the rules past maxRules (stages/_rederive.py `_cap`): the first
  maxRules in the prompt's order stay, as in a fresh run, and a kept rule pushed past
  the cap by a new instruction before it is retired with its inverse rule and its tests
  (it was dropped from the rules but still listed as kept, and its tests run).
- A number written as a word changed ("three lines" made "two lines") is a new rule, as
  a number in digits is (it kept the old rule, which still said "three").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promptgen.prompting.likeness import near_duplicate, same_rule
from promptgen.results import Rule
from tests.fakellm import FakeLLM
from tests.test_carry_over import RULES, V1, Editing, Runs, calls, fake, generated, ids

__all__ = ["fake"]  # the fixture, used by name


def test_a_kept_rule_pushed_past_max_rules_is_retired_with_its_tests(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path, max_rules=4)
    v1 = runs.run(V1.format(samples=""))
    assert [r.text for r in v1.rules] == RULES
    calls(fake)
    v2 = runs.run(
        V1.format(samples="").replace("Avoid rhyme.", "Avoid rhyme. Never mention the moon.")
    )
    edit = v2.edit
    assert edit is not None
    new = Rule.make("The output never mentions the moon.", source="Never mention the moon.")
    last = Rule.make(RULES[3]).id  # "... the three lines only.": fifth in the prompt now
    last_inverse = next(r.id for r in v1.inverse_rules if r.inverse_of == last)
    assert [r.id for r in v2.rules] == [*ids(*RULES[:2]), new.id, *ids(RULES[2])]
    assert [r.id for r in edit.rules_retired] == [last, last_inverse]
    assert edit.rules_kept == [
        *ids(*RULES[:3]),
        *(r.id for r in v1.inverse_rules if r.id != last_inverse),
    ]
    assert edit.rules_added == [
        new.id,
        next(r.id for r in v2.inverse_rules if r.inverse_of == new.id),
    ]
    gone = [t.id for t in v1.tests if t.rule_id in (last, last_inverse)]
    assert gone and [t.id for t in edit.tests_retired] == gone
    assert edit.tests_kept == [t.id for t in v1.tests if t.id not in gone]
    # No test, run or verdict of a rule the context no longer has.
    rules = {r.id for r in v2.all_rules}
    assert all(t.rule_id in rules for t in v2.tests if t.rule_id is not None)
    assert not {r.test_id for r in v2.test_runs} & set(gone)
    assert v2.stage("rules").counts["over_max_rules"] == 1
    assert generated(calls(fake)) == {"RuleFromInstruction": 1, "TestCases": 1}


class TwoLines(Editing):
    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RuleFromInstruction" and "Instruction:\nReply with the two lines" in text:
            return {"rule": "The output is the two lines only."}
        return super().answer(name, schema, text, n)


def test_a_number_written_as_a_word_changed_makes_a_new_rule(tmp_path: Path) -> None:
    with FakeLLM(responder=TwoLines()) as server:
        runs = Runs(server, tmp_path)
        v1 = runs.run(V1.format(samples=""))
        v2 = runs.run(V1.format(samples="").replace("three lines only", "two lines only"))
    edit = v2.edit
    assert edit is not None
    old, new = Rule.make(RULES[3]), Rule.make("The output is the two lines only.")
    assert edit.rules_reworded == [] and edit.rules_added[0] == new.id
    assert [r.id for r in v2.rules] == [*ids(*RULES[:3]), new.id]
    old_inverse = next(r.id for r in v1.inverse_rules if r.inverse_of == old.id)
    assert [r.id for r in edit.rules_retired] == [old.id, old_inverse]


def test_numbers_in_words_tell_rules_apart() -> None:
    three, two = "The output has at most three sentences.", "The output has at most two sentences."
    assert not near_duplicate(three, two) and not same_rule(three, two)
    assert not near_duplicate("The output has 3 sentences.", "The output has three sentences.")
    # "one" is not counted: "one haiku" and "a haiku" are one rule.
    assert near_duplicate(
        "The output is one haiku about the topic.", "The output is a haiku about the topic."
    )
    assert near_duplicate("The output avoids rhyme.", "The output avoids rhymes.")
