"""The prompt's own instruction sentences (stepwise rules start from them)."""

from __future__ import annotations

from pathlib import Path

from promptgen.formats import load_prompt
from promptgen.prompting.seeds import (
    Seed,
    group,
    group_text,
    instruction_seeds,
    is_instruction,
    seeds_of_text,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def texts(seeds: list[Seed]) -> list[str]:
    return [s.text for s in seeds]


def test_an_instruction_is_known_by_its_form() -> None:
    orders = [
        "Answer with one word.",
        "Never guess an email address.",
        "Always reply in English.",
        "Please keep it short.",
        "If the message is empty, write a haiku about silence.",
        "For every contact report these fields, in this order:",
        "The summary must start with a verb.",
        "Do not add punctuation.",
    ]
    not_orders = [
        "You label the sentiment of customer reviews.",
        "A contact is a person or a shared mailbox.",
        "The review may be long.",
        "When the field is missing.",
    ]
    assert [s for s in orders if not is_instruction(s)] == []
    assert [s for s in not_orders if is_instruction(s)] == []


def test_paragraphs_lists_and_their_lead_in() -> None:
    text = """system:
You review titles. Rate the title from 1 to 5.

Things that count against a title:

- it is too vague
- it uses all capitals

Answer with JSON only:
{"score": 1} Use an empty list when there are no problems.

user:
{{title}}
"""
    seeds = seeds_of_text(text)
    assert texts(seeds) == [
        "Rate the title from 1 to 5.",
        "it is too vague",
        "it uses all capitals",
        'Answer with JSON only: {"score": 1} Use an empty list when there are no problems.',
    ]
    assert seeds[1].context == seeds[2].context == "Things that count against a title:"
    assert seeds[0].context == "" and seeds[1].block == seeds[2].block != seeds[0].block
    # Items under a lead-in that is no instruction are criteria, kept as written.
    assert [s.criterion for s in seeds] == [False, True, True, False]


def test_template_conditions_are_kept_and_tags_dropped() -> None:
    jinja = (
        '{% if fmt == "csv" -%}\nAnswer with CSV only.\n{%- else -%}\nAnswer with JSON only.\n'
        "{%- endif %}\nKeep phone numbers as written."
    )
    assert [(s.text, s.context) for s in seeds_of_text(jinja)] == [
        ("Answer with CSV only.", 'When fmt == "csv":'),
        ("Answer with JSON only.", 'When not fmt == "csv":'),
        ("Keep phone numbers as written.", ""),
    ]
    mustache = (
        "{{#breaking}}\n- start with a warning\n{{/breaking}}\n"
        "{{^breaking}}\n- do not mention upgrades\n{{/breaking}}"
    )
    assert [(s.text, s.context) for s in seeds_of_text(mustache)] == [
        ("start with a warning", "When breaking is set:"),
        ("do not mention upgrades", "When breaking is not set:"),
    ]


def test_placeholders_alone_are_no_instruction() -> None:
    assert seeds_of_text("user:\n{{review}}\n\n- {{field}}\n") == []


def test_the_options_of_an_instruction_are_part_of_it() -> None:
    prompt = load_prompt(SAMPLES / "classify-sentiment.prompty", None)
    assert texts(instruction_seeds(prompt)) == [
        "Read the review and decide how the customer feels about what they bought overall.",
        "Answer with exactly one of these words, in lowercase, and nothing else: positive: the "
        "customer is mostly pleased; negative: the customer is mostly unhappy; neutral: the "
        "review states facts without a clear feeling either way; mixed: the customer gives "
        "strong praise and strong complaints in similar measure",
        "Judge the feelings about the product or service, not about the delivery company, "
        "unless the review talks about nothing else.",
        "Do not explain your answer, do not add punctuation, and do not repeat the review.",
    ]


def test_requirements_listed_under_an_instruction_stay_apart() -> None:
    prompt = load_prompt(SAMPLES / "commit-message.txt", None)
    seeds = instruction_seeds(prompt)
    lead = "Read the diff and write one commit message for it:"
    assert [(s.text[:30], s.context) for s in seeds] == [
        (lead[:30], ""),
        ("a first line of at most 72 cha", lead),
        ("the summary is in the imperati", lead),
        ("then a blank line and a body o", lead),
        ("Reply with the commit message ", ""),
    ]
    assert not any(s.criterion for s in seeds)  # what the instruction asks for, rewritten


def test_grouping_merges_a_list_first_and_loses_no_instruction() -> None:
    prompt = load_prompt(SAMPLES / "rate-product-title.prompty", None)
    seeds = instruction_seeds(prompt)
    assert len(seeds) == 7
    groups = group(seeds, 6)
    assert len(groups) == 6
    assert [s for g in groups for s in g] == seeds  # every seed, in order
    (merged,) = [g for g in groups if len(g) > 1]
    assert {s.context for s in merged} == {"Things that count against a title:"}
    assert group(seeds, 0) == [[s] for s in seeds]
    body, lead = group_text(merged)
    assert body == "it is stuffed with repeated keywords; it is longer than about 150 characters"
    assert lead == "Things that count against a title:"
    assert len(group(seeds, 2)) == 2


def test_every_sample_yields_seeds() -> None:
    for path in [*sorted(SAMPLES.glob("*.prompt*")), SAMPLES / "haiku.md"]:
        if path.name.endswith(".metric.prompty"):
            continue
        prompt = load_prompt(path, None)
        assert len(instruction_seeds(prompt)) >= 3, path.name
