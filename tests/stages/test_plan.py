"""The plan of a suite: slots of (rule, behaviour), without a model."""

from __future__ import annotations

from promptgen.results import Behaviour, Rule
from promptgen.stages._plan import plan


def rules() -> list[Rule]:
    labels = Rule.make(
        "The output is one of positive or negative.",
        source="Answer with one word: positive or negative.",
    )
    silence = Rule.make("The output explains nothing.", source="Do not explain your answer.")
    inverse = Rule.make("The output explains its answer.", inverse_of=silence.id)
    other = Rule.make("The output is one word, breaking the choice.", inverse_of=labels.id)
    return [labels, silence, other, inverse]


def test_each_behaviour_goes_to_the_rule_it_exercises() -> None:
    labels, silence, other, inverse = rules()
    pleased = Behaviour.make(
        "class", "pleased", source="Answer with one word: positive or negative."
    )
    unhappy = Behaviour.make(
        "class", "unhappy", source="Answer with one word: positive or negative."
    )
    explain = Behaviour.make("temptation", "the review asks the assistant to explain its answer",
                             source="Do not explain your answer.")  # fmt: skip
    short = Behaviour.make("variety", "the review is short")
    slots = plan([labels, silence, other, inverse], [pleased, unhappy, explain, short], 1)
    got = [(s.rule.id, s.behaviour.text if s.behaviour else None) for s in slots]
    assert got == [
        (labels.id, "pleased"),  # the rule read from the same sentence
        (labels.id, "unhappy"),
        (silence.id, "the review is short"),  # the rule with the fewest so far
        (other.id, None),  # a plain slot: no behaviour tempts this mistake
        (inverse.id, "the review asks the assistant to explain its answer"),
    ]


def test_every_rule_gets_its_slots_and_keys_are_stable() -> None:
    labels, silence, other, inverse = rules()
    slots = plan([labels, silence, other, inverse], [], 2)
    assert [(s.rule.id, s.index) for s in slots] == [
        (r.id, i) for r in (labels, silence, other, inverse) for i in (0, 1)
    ]
    assert len({s.key for s in slots}) == 8
    assert slots[0].key == f"{labels.id}|-|0"
