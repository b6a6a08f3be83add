"""The deterministic operators: what each changes, template syntax untouched, no-ops
and duplicates dropped, the same mutants every time."""

from __future__ import annotations

from collections import Counter

from promptgen.model import Message, PromptUnderTest
from promptgen.mutation.build import choose, deterministic_edits, distinct
from promptgen.mutation.operators import edits_of, keeps_template, template_spans

TEXT = (
    "You are a careful editor. Always answer in JSON with three keys.\n"
    "Do not mention {{ name }} twice.\n"
    "Steps:\n"
    "1. Read the {{text}}.\n"
    "2. Summarise it in 2 sentences.\n"
    "{% if extra %}Mention {{extra}} once.{% endif %}"
)


def changes(operator: str) -> list[str]:
    return [e.description for e in edits_of(0, TEXT) if e.operator == operator]


def test_each_operator_makes_the_edits_expected() -> None:
    assert changes("delete-sentence") == [
        'deleted "You are a careful editor."',
        'deleted "Always answer in JSON with three keys."',
        'deleted "Summarise it in 2 sentences."',
    ]
    assert changes("negate") == ['"Always" -> "Never"', '"Do not" -> "Do"']
    assert changes("number") == ['"2" -> "4"', '"three" -> "five"']
    assert changes("format") == ['"JSON" -> "YAML"']
    assert changes("swap-steps") == [
        'swapped "Read the {{text}}." and "Summarise it in 2 sentences."'
    ]


def test_template_syntax_is_never_touched() -> None:
    pieces = sorted(TEXT[s:e] for s, e in template_spans(TEXT))
    for edit in edits_of(0, TEXT):
        after = edit.apply(TEXT)
        assert sorted(after[s:e] for s, e in template_spans(after)) == pieces, edit
    swapped = next(e for e in edits_of(0, TEXT) if e.operator == "swap-steps").apply(TEXT)
    assert "1. Summarise it in 2 sentences.\n2. Read the {{text}}." in swapped
    # a sentence holding a placeholder or inside a block tag's line is not deleted
    assert not any("Mention" in e.description for e in edits_of(0, TEXT))
    assert not keeps_template("a {{x}} b", "a b")


def test_a_line_that_is_one_sentence_goes_whole() -> None:
    text = "First line here.\nAnswer in uppercase.\nLast line here."
    edit = next(e for e in edits_of(0, text) if "uppercase" in e.description)
    assert edit.apply(text) == "First line here.\nLast line here."


def test_str_format_prompts_keep_their_fields() -> None:
    edits = edits_of(0, "Translate {text} into {language}. Always be brief.", "format")
    assert all("{text}" in e.apply("Translate {text} into {language}. Always be brief.")
               for e in edits)  # fmt: skip
    assert [e.description for e in edits if e.operator == "delete-sentence"] == [
        'deleted "Always be brief."'
    ]


def prompt(*contents: str) -> PromptUnderTest:
    return PromptUnderTest(name="p", messages=[Message(role="system", content=c) for c in contents])


def test_no_ops_and_duplicates_are_dropped_and_ids_are_stable() -> None:
    # "must" appears twice: two edits, two distinct mutants; a format word that only
    # changes case would be a no-op; the same text in two messages gives equal edits
    # but different mutants (they edit different messages).
    p = prompt("You must reply. You must be kind.", "You must reply. You must be kind.")
    dropped: Counter[str] = Counter()
    first = distinct(p, deterministic_edits(p), dropped)
    again = distinct(p, deterministic_edits(p), Counter())
    assert [m.id for m in first] == [m.id for m in again]
    assert len({m.id for m in first}) == len(first)
    # deleting "You must reply." from message 1 differs from deleting it from message 2
    deletes = [m for m in first if m.operator == "delete-sentence"]
    assert len(deletes) == 4 and {m.message for m in deletes} == {0, 1}
    doubled = prompt("Answer  in   JSON.")
    same = distinct(doubled, [*deterministic_edits(doubled)] * 2, dropped)
    assert len(same) == len(deterministic_edits(doubled)) and dropped["duplicate"] >= 1
    noop = distinct(p, [_replace(p, "reply", "reply")], Counter(dropped))
    assert noop == []


def _replace(p: PromptUnderTest, find: str, new: str):  # type: ignore[no-untyped-def]
    from promptgen.mutation.operators import Edit

    start = p.messages[0].content.index(find)
    return Edit("llm", 0, start, start + len(find), new, "same")


def test_each_mutant_has_a_diff_of_its_change() -> None:
    p = prompt("Answer in uppercase. Be brief.")
    (mutant,) = [m for m in distinct(p, deterministic_edits(p), Counter())
                 if m.operator == "format"]  # fmt: skip
    assert mutant.diff.splitlines() == [
        "--- original",
        f"+++ {mutant.id}",
        "@@ -1,2 +1,2 @@",
        " system:",
        "-Answer in uppercase. Be brief.",
        "+Answer in lowercase. Be brief.",
    ]


def test_the_cap_takes_operators_in_turn() -> None:
    p = prompt("Always reply. Never shout. Use three words. Write JSON. Keep it short.")
    mutants = distinct(p, deterministic_edits(p), Counter())
    chosen = choose(mutants, 4)
    assert [m.operator for m in chosen] == ["delete-sentence", "negate", "number", "format"]
    assert [m.id for m in choose(mutants, 4)] == [m.id for m in chosen]


def test_the_kill_rule_measures_noise_on_the_original() -> None:
    from promptgen.mutation.score import kills
    from promptgen.results import MetricSummary

    def run(outcome: str, score: float | None = None) -> dict[str, MetricSummary]:
        metrics = {"compliance": MetricSummary(outcome=outcome, score=100.0 * (outcome == "ok"))}
        if score is not None:
            metrics["accuracy"] = MetricSummary(outcome="ok", score=score)
        return metrics

    steady = [run("ok"), run("ok")]
    assert kills(steady, [run("ok"), run("err")], set()) == "pass rate 100% -> 50% (noise 0%)"
    assert kills(steady, [run("ok"), run("ok")], set()) is None
    noisy = [run("ok"), run("err")]  # the original disagrees with itself: 1 of noise
    assert kills(noisy, [run("err"), run("err")], set()) is None
    scored = [run("ok", 80), run("ok", 90)]  # spread 10 + floor 5
    assert kills(scored, [run("ok", 70), run("ok", 75)], {"accuracy"}) is None
    assert kills(scored, [run("ok", 60), run("ok", 65)], {"accuracy"}) == (
        "accuracy 85 -> 62 (noise 15)"
    )
