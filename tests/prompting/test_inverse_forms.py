"""Inverse rules from a rule's form, and the check that an inverse contradicts its rule."""

from __future__ import annotations

import pytest

from promptgen.prompting.inverse_forms import by_form, contradicts
from promptgen.prompting.likeness import AS_WRITTEN


@pytest.mark.parametrize(
    ("source", "inverse"),
    [
        (
            "Do not explain your answer, do not add punctuation, and do not repeat the review.",
            "The output explains its answer, adds punctuation or repeats the review.",
        ),
        (
            "Reply with the three lines only: no title, no quotation marks and no explanation.",
            "The output includes a title, quotation marks or an explanation.",
        ),
        ("Keep answers under 80 words.", "The output has 80 or more words."),
        (
            "Rate the title from 1 (unusable) to 5 (excellent) and list its problems.",
            "The output gives no score, or a score outside 1 to 5.",
        ),
        (
            'Answer with a JSON object and nothing else, in this shape: {"score": 1} Use an '
            "empty list when there are no problems.",
            "The output is not bare JSON: it is wrapped in a code fence or has text around it.",
        ),
        (
            "Write one commit message for it: a first line of at most 72 characters: "
            "type(scope): summary",
            "The output has a first line of more than 72 characters.",
        ),
        ("a body of one to three short lines", "The output has a body of more than 3 lines."),
        ('Start the summary with "Summary:".', 'The output does not start with "Summary:".'),
        (
            "Write exactly one read-only query, starting with SELECT or WITH.",
            "The output does not start with SELECT or WITH.",
        ),
        (
            "If there are no contacts, answer [].",
            "When there are no contacts, the output is something other than [].",
        ),
        (
            "If the user's message is empty, write a haiku about silence.",
            "When the user's message is empty, the output does not do what the prompt asks "
            "then: write a haiku about silence.",
        ),
        (
            "Use only the tables and columns in the schema; never invent one.",
            "The output uses something other than the tables and columns in the schema.",
        ),
        (
            "Answer with exactly one of these words, in lowercase, and nothing else: "
            "positive: pleased; negative: unhappy",
            "The output is not just one of the allowed words: it adds other words around it, "
            "gives a word outside the list or uses capital letters.",
        ),
        (
            "Things that count against a title: it is too vague",
            "The output overlooks this in a title that shows it (Things that count against a "
            "title): it is too vague",
        ),
    ],
)
def test_the_form_gives_the_inverse(source: str, inverse: str) -> None:
    assert by_form(f"{AS_WRITTEN} {source}") == inverse


def test_no_form_no_inverse() -> None:
    assert by_form("The output follows this instruction: Read the review and decide.") is None
    # "what you do not know" states, it does not forbid
    assert by_form("You are warm, direct and honest about what you do not know.") is None


def test_an_inverse_must_contradict_its_rule() -> None:
    rule = f"{AS_WRITTEN} Do not add a title."
    assert not contradicts("The output does not contain a title.", rule)  # the rule again
    assert contradicts("The output adds a title.", rule)
    assert contradicts(
        "The output is written in a language other than French.", "The output is written in French."
    )
    assert contradicts("The output has 4 or more sentences.", "The output has at most 3 sentences.")
    # a number the rule does not have is invented, not a bound turned around (the 1.5B,
    # for the summarize sample)
    concise = "The output should be a concise summary of the input text for a general reader."
    assert not contradicts(
        "The output is a short summary of the input text for a general reader, which is "
        "typically less than 100 words.",
        concise,
    )
    delivery = (
        "The output should reflect the feelings expressed in the review without mentioning the "
        "delivery company unless the review focuses solely on the product or service."
    )
    assert not contradicts(
        "The output does not mention the delivery company unless the review focuses solely on "
        "the product or service.",
        delivery,
    )
    assert not contradicts("The output is written in English.", "Do not add a title.")  # off topic
    # the act a prohibition forbids, asserted; a literal the rule requires, denied
    assert contradicts(
        "The output guesses an email address or phone number.",
        "Work only from the text: never guess an email address or phone number, and never "
        "fill in a detail from general knowledge.",
    )
    assert contradicts(
        "The output includes a heading with no entries.",
        'Group them under "New" and "Fixed" headings, leaving out a heading with no entries',
    )  # "no entries" is said by both: not what turns it around
    assert contradicts(
        "When the schema cannot answer the question, the output does not start with CANNOT_ANSWER.",
        "If the schema cannot answer the question, reply with CANNOT_ANSWER and a one-line "
        "reason instead of a query.",
    )
    assert contradicts("The output has 80 or more words.", "Keep answers under 80 words.")


def test_a_rule_quoting_its_instruction_in_other_words_is_read_for_its_instruction() -> None:
    """A large model's "The output follows the instruction: When ..., ..." is the case
    of its instruction, not a case whose answer is "The output follows the instruction"."""
    rule = (
        "The output follows the instruction: When the article does not cover the question, "
        "say so and offer to pass it on to a colleague."
    )
    assert by_form(rule) == (
        "When the article does not cover the question, the output does not do what the "
        "prompt asks then: say so and offer to pass it on to a colleague."
    )


def test_a_scales_inverse_contradicts_its_rule() -> None:
    rule = "The output follows the instruction: Rate the title from 1 (unusable) to 5 (excellent)."
    assert contradicts("The output gives no score, or a score outside 1 to 5.", rule)
    assert not contradicts("The output gives no score, or a score outside 1 to 10.", rule)
