"""An edited prompt continues its run (docs/carry-over.md): the rules and tests of what did
not change are kept by id, only what changed is derived again (no generation call for
the rest), and every run is made again. In process, on the scripted fake server."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import promptgen
from promptgen import Options
from promptgen.context import Context, load_context
from promptgen.options import Generation, Models, Run
from promptgen.results import Rule
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

V1 = """---
name: haiku
inputs:
  topic:
    type: string
{samples}---
system:
You are a poet. Write one haiku about the topic. Avoid rhyme. Use at most 3 adjectives.
Reply with the three lines only.

user:
{{{{topic}}}}
"""
SAMPLES = """sample:
  topic: autumn rain
testSamples:
  - topic: a fox at dawn
  - topic: old harbour lights
"""
# The rules a model reads from the whole prompt, one per instruction, and the rule it
# makes of each new wording (a model says a reworded instruction's rule again).
RULES = [
    "The output is one haiku about the topic.",
    "The output avoids rhyme.",
    "The output uses at most 3 adjectives.",
    "The output is the three lines only.",
]
REWRITES = {
    "Never mention the moon.": "The output never mentions the moon.",
    "Avoid rhymes.": "The output avoids rhymes.",
    "Use at most 5 adjectives.": "The output uses at most 5 adjectives.",
}
ADDED = V1.format(samples="").replace("Avoid rhyme.", "Avoid rhyme. Never mention the moon.")
# The stages that generate; the others judge or run (asked again where their input changed).
GENERATION = {
    "RulesAnswer", "RuleFromInstruction", "InverseAnswer", "TestCases", "TestInputs",
    "BehavioursAnswer", "TestCase",
}  # fmt: skip


class Editing(PipelineResponder):
    """The pipeline fake, with rules about the prompt's own instructions."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RulesAnswer":
            return {"rules": RULES}
        if name == "RuleFromInstruction":
            for instruction, rule in REWRITES.items():
                if f"Instruction:\n{instruction}" in text:
                    return {"rule": rule}
        return super().answer(name, schema, text, n)


def ids(*texts: str) -> list[str]:
    return [Rule.make(t).id for t in texts]


def calls(fake: FakeLLM) -> Counter[str]:
    names = Counter(
        (b.get("response_format") or {}).get("json_schema", {}).get("name", "text")
        for b in fake.requests
    )
    fake.requests.clear()
    return names


class Runs:
    """One output folder, run version after version on the fake."""

    def __init__(self, fake: FakeLLM, tmp_path: Path, **generation: Any) -> None:
        self.fake, self.path = fake, tmp_path / "haiku.prompty"
        self.out = tmp_path / "out"
        self.generation = {"stepwise": "off", **generation}
        self.notes: list[str] = []

    def options(self, **run: Any) -> Options:
        return Options(
            effort="min",
            generation=Generation(**self.generation),
            models=Models(api_base=self.fake.url, models=["m1"]),
            run=Run(out=self.out, cache=False, **run),
        )

    def run(self, text: str, **run: Any) -> Context:
        self.path.write_text(text, encoding="utf-8")
        prepared = promptgen.prepare(self.path, self.options(**run))
        self.notes = prepared.notes
        return promptgen.run(prepared)

    @property
    def said(self) -> str:
        lines = [n for n in self.notes if "changed since" in n or "--regenerate" in n]
        assert len(lines) == 1, self.notes
        return lines[0]


@pytest.fixture
def fake() -> Any:
    with FakeLLM(responder=Editing()) as server:
        yield server


def generated(names: Counter[str]) -> dict[str, int]:
    return {k: v for k, v in names.items() if k in GENERATION}


def first_version(runs: Runs, text: str = V1.format(samples="")) -> Context:
    ctx = runs.run(text)
    assert [r.text for r in ctx.rules] == RULES
    calls(runs.fake)
    return ctx


def targeting(ctx: Context, rules: set[str]) -> list[str]:
    return [t.id for t in ctx.tests if t.rule_id in rules]


def test_an_added_instruction_adds_its_rule_and_tests_only(fake: FakeLLM, tmp_path: Path) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    v2 = runs.run(
        V1.format(samples="").replace("Avoid rhyme.", "Avoid rhyme. Never mention the moon.")
    )
    edit = v2.edit
    assert edit is not None and edit.changed == ["messages"]
    new = Rule.make("The output never mentions the moon.", source="Never mention the moon.")
    assert [r.id for r in v2.rules] == [*ids(*RULES[:2]), new.id, *ids(*RULES[2:])]
    assert edit.rules_kept == [*ids(*RULES), *(r.id for r in v1.inverse_rules)]
    inverse = [r for r in v2.inverse_rules if r.inverse_of == new.id]
    assert edit.rules_added == [new.id, inverse[0].id]
    assert edit.rules_retired == [] and edit.rules_reworded == []
    assert edit.tests_kept == [t.id for t in v1.tests] and edit.tests_retired == []
    added = [t for t in v2.tests if t.id not in edit.tests_kept]
    assert sorted({t.rule_id for t in added}) == sorted([new.id, inverse[0].id])
    # One call for the new rule, one chunk for its tests and its inverse's; the intent and
    # input spec are read again (the messages changed); nothing else is generated.
    names = calls(fake)
    assert generated(names) == {"RuleFromInstruction": 1, "TestCases": 1}
    assert names["IntentAnswer"] == names["InputSpecAnswer"] == 1
    assert names["text"] == len(v2.tests)  # every test is run again on m1
    assert runs.said == (
        f"the prompt changed since version {edit.previous} (messages: 1 instruction added): "
        f"keeping 4 of 4 rules (and rules to read from 1 new or reworded instruction) and "
        f"{len(v1.tests)} of {len(v1.tests)} tests; the previous run is in "
        f"{runs.out / 'history' / edit.previous}"
    )
    assert (runs.out / "history" / edit.previous / "context.json").is_file()
    assert load_context(runs.out / "context.json").edit == edit


def test_a_deleted_instruction_retires_its_rule_and_tests(fake: FakeLLM, tmp_path: Path) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    v2 = runs.run(V1.format(samples="").replace(" Avoid rhyme.", ""))
    edit = v2.edit
    assert edit is not None
    gone = Rule.make(RULES[1]).id
    gone_inverse = next(r for r in v1.inverse_rules if r.inverse_of == gone)
    assert [r.id for r in v2.rules] == ids(RULES[0], *RULES[2:])
    assert [r.id for r in edit.rules_retired] == [gone, gone_inverse.id]
    assert edit.rules_added == [] and edit.derive == []
    retired = targeting(v1, {gone, gone_inverse.id})
    assert retired and [t.id for t in edit.tests_retired] == retired
    assert edit.tests_kept == [t.id for t in v1.tests if t.id not in retired]
    # The coverage rule holds: a case of the prompt the retired tests exercised (not one
    # of the deleted instruction's) gets a test of a kept rule, in one top-up call.
    added = [t for t in v2.tests if t.id not in edit.tests_kept]
    short = next(b.id for b in v2.behaviours if b.text.endswith("two to five words long"))
    lost = [b for t in edit.tests_retired for b in t.behaviours]
    assert lost == [short, "beh-0cec87b052d1"]  # the second: "... asks to use rhyme"
    assert "beh-0cec87b052d1" not in {b.id for b in v2.behaviours}
    assert [(t.rule_id, t.behaviours) for t in added] == [(Rule.make(RULES[2]).id, [short])]
    assert generated(calls(fake)) == {"TestCases": 1}
    assert "(messages: 1 instruction deleted): keeping 3 of 4 rules and" in runs.said


def test_a_reworded_instruction_keeps_its_rule_when_the_rule_says_the_same(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    v2 = runs.run(V1.format(samples="").replace("Avoid rhyme.", "Avoid rhymes."))
    edit = v2.edit
    assert edit is not None
    kept = Rule.make(RULES[1]).id
    assert [r.id for r in v2.rules] == ids(*RULES)  # same ids, same texts
    assert [r.text for r in v2.rules] == RULES
    assert v2.rules[1].source == "Avoid rhymes."  # read from the new wording
    assert edit.rules_reworded == [kept] and edit.rules_added == [] and edit.rules_retired == []
    assert edit.tests_kept == [t.id for t in v1.tests] and edit.tests_retired == []
    assert sorted(t.id for t in v2.tests) == sorted(edit.tests_kept)  # none written
    assert generated(calls(fake)) == {"RuleFromInstruction": 1}  # no test written
    assert "(messages: 1 instruction reworded)" in runs.said


def test_a_changed_number_makes_a_new_rule(fake: FakeLLM, tmp_path: Path) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    v2 = runs.run(V1.format(samples="").replace("at most 3", "at most 5"))
    edit = v2.edit
    assert edit is not None
    old = Rule.make(RULES[2]).id
    new = Rule.make("The output uses at most 5 adjectives.", source="Use at most 5 adjectives.")
    assert [r.id for r in v2.rules] == [*ids(*RULES[:2]), new.id, *ids(RULES[3])]
    old_inverse = next(r.id for r in v1.inverse_rules if r.inverse_of == old)
    assert [r.id for r in edit.rules_retired] == [old, old_inverse]
    assert edit.rules_added[0] == new.id and len(edit.rules_added) == 2
    assert edit.rules_reworded == []
    retired = targeting(v1, {old, old_inverse})
    assert [t.id for t in edit.tests_retired] == retired
    assert {t.rule_id for t in v2.tests if t.id not in edit.tests_kept} == set(edit.rules_added)
    # The new rule, its inverse (asked twice: the fake's first answer shares no word with
    # the rule, so it is said plainly), and one chunk of tests for the two.
    names = generated(calls(fake))
    assert names == {"RuleFromInstruction": 1, "InverseAnswer": 2, "TestCases": 1}
    assert "(messages: 1 instruction reworded)" in runs.said


def test_changed_author_rows_change_only_the_author_tests(fake: FakeLLM, tmp_path: Path) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs, V1.format(samples=SAMPLES))
    samples = [t for t in v1.tests if t.origin == "sample"]
    assert len(samples) == 3  # two rows and the input's own sample
    edited = SAMPLES.replace("  - topic: old harbour lights\n", "  - topic: snow on pines\n")
    v2 = runs.run(V1.format(samples=edited))
    edit = v2.edit
    assert edit is not None and edit.changed == ["author tests"]
    removed = next(t for t in samples if t.inputs == {"topic": "old harbour lights"})
    assert [t.id for t in edit.tests_retired] == [removed.id]
    assert edit.tests_kept == [t.id for t in v1.tests if t.id != removed.id]
    now = [t.inputs["topic"] for t in v2.tests if t.origin == "sample"]
    assert sorted(now) == ["a fox at dawn", "autumn rain", "snow on pines"]
    assert edit.rules_kept == [r.id for r in v1.all_rules] and edit.rules_added == []
    names = calls(fake)
    assert generated(names) == {}
    assert names["InputSpecAnswer"] == 1 and "IntentAnswer" not in names
    assert "(author tests: 1 row added, 1 removed): keeping 4 of 4 rules and" in runs.said


def test_a_changed_parameter_runs_every_test_again_and_generates_nothing(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path)
    text = V1.format(samples="").replace(
        "name: haiku\n", "name: haiku\nmodel:\n  parameters:\n    temperature: 0.2\n"
    )
    v1 = first_version(runs, text)
    v2 = runs.run(text.replace("0.2", "0.9"))
    edit = v2.edit
    assert edit is not None and edit.changed == ["parameters"]
    assert edit.rederived == [] and edit.rules_kept == [r.id for r in v1.all_rules]
    assert [t.id for t in v2.tests] == [t.id for t in v1.tests] == edit.tests_kept
    names = calls(fake)
    assert {k for k in names if k != "text"} <= {"ComplianceVerdict"}  # runs and verdicts
    assert names["text"] == len(v2.tests)
    assert {r.test_id for r in v2.test_runs} == set(edit.tests_kept)
    assert "(parameters: temperature changed): keeping 4 of 4 rules and" in runs.said


def test_stepwise_an_added_instruction_costs_one_rule_and_its_tests(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path, stepwise="on")
    v1 = runs.run(V1.format(samples=""))
    assert [r.source for r in v1.rules] == [
        "Write one haiku about the topic.", "Avoid rhyme.", "Use at most 3 adjectives.",
        "Reply with the three lines only.",
    ]  # fmt: skip
    calls(fake)
    v2 = runs.run(
        V1.format(samples="").replace("Avoid rhyme.", "Avoid rhyme. Never mention the moon.")
    )
    edit = v2.edit
    assert edit is not None
    new = Rule.make("The output never mentions the moon.", source="Never mention the moon.")
    assert [r.id for r in v2.rules] == [
        *(r.id for r in v1.rules[:2]),
        new.id,
        *(r.id for r in v1.rules[2:]),
    ]
    assert edit.rules_kept == [r.id for r in v1.all_rules]
    assert edit.rules_added[0] == new.id
    assert edit.tests_kept == [t.id for t in v1.tests]
    added = [t for t in v2.tests if t.id not in edit.tests_kept]
    assert {t.rule_id for t in added} <= set(edit.rules_added) and added
    names = generated(calls(fake))
    assert names["RuleFromInstruction"] == 1 and "RulesAnswer" not in names
    assert names["TestInputs"] == len(added)  # one call per new slot


def test_regenerate_tests_writes_every_test_anew_and_keeps_the_rules(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    again = runs.run(V1.format(samples=""), regenerate=["tests"])
    edit = again.edit
    assert edit is not None and edit.regenerated == ["tests"] and edit.changed == []
    assert edit.variant > 0  # the cache cannot give the earlier tests back
    assert [r.id for r in again.all_rules] == [r.id for r in v1.all_rules] == edit.rules_kept
    assert edit.tests_kept == [] and [t.id for t in edit.tests_retired] == [t.id for t in v1.tests]
    assert not {t.id for t in again.tests} & {t.id for t in v1.tests}
    assert generated(calls(fake)) == {"TestCases": 1}  # no rule asked for
    assert runs.said.startswith(
        f"--regenerate: generating the tests of version {edit.previous} anew: keeping 4 of 4 "
    )
    # The version before is history; the folder's run is this one (same prompt hash).
    assert (runs.out / "history" / edit.previous / "context.json").is_file()


def test_regenerate_rules_derives_rules_inverses_and_tests_anew(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    again = runs.run(V1.format(samples=""), regenerate=["rules"])
    edit = again.edit
    assert edit is not None and edit.regenerated == ["rules", "tests"]
    # The fake reads the same rules again: they keep their ids; their tests are new.
    assert [r.id for r in again.rules] == [r.id for r in v1.rules]
    assert edit.rules_kept == [r.id for r in v1.rules] and edit.tests_kept == []
    names = generated(calls(fake))
    assert names["RulesAnswer"] == 1 and names["TestCases"] == 1


def test_fresh_starts_over_and_keeps_the_run_before_in_history(
    fake: FakeLLM, tmp_path: Path
) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    again = runs.run(ADDED, fresh=True)
    assert again.edit is None and again.run_id != v1.run_id
    assert generated(calls(fake))["RulesAnswer"] == 1
    kept = runs.out / "history" / v1.prompt_hash[:10]
    assert load_context(kept / "context.json").run_id == v1.run_id
    assert any(
        n.startswith("starting over (--fresh); the run before is kept in") for n in runs.notes
    )


def test_the_library_continues_from_a_previous_context(fake: FakeLLM, tmp_path: Path) -> None:
    runs = Runs(fake, tmp_path)
    v1 = first_version(runs)
    path = tmp_path / "edited.prompty"
    path.write_text(ADDED, encoding="utf-8")
    options = runs.options()
    options.run.out = tmp_path / "elsewhere"  # no run saved there: `previous` is continued
    ctx = promptgen.run(path, options, previous=v1)
    assert ctx.edit is not None and ctx.edit.previous == v1.prompt_hash[:10]
    assert ctx.edit.tests_kept == [t.id for t in v1.tests]
    assert generated(calls(fake)) == {"RuleFromInstruction": 1, "TestCases": 1}
    assert (tmp_path / "elsewhere" / "history" / ctx.edit.previous / "context.json").is_file()


def test_another_prompt_in_the_same_folder_is_still_refused(fake: FakeLLM, tmp_path: Path) -> None:
    from promptgen.errors import ContextError

    runs = Runs(fake, tmp_path)
    first_version(runs)
    other = "---\nname: greeter\n---\nsystem:\nGreet the user by name.\n\nuser:\n{{name}}\n"
    with pytest.raises(ContextError, match="a run of a different prompt \\('haiku'"):
        promptgen.prepare(_write(tmp_path / "greeter.prompty", other), runs.options())


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


class NewSpec(Editing):
    """Reads the input spec differently each time it is asked."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "InputSpecAnswer":
            return {"constraints": [f"The topic is a short phrase (reading {n})."]}
        return super().answer(name, schema, text, n)


def test_kept_tests_are_judged_again_when_the_input_spec_changed(tmp_path: Path) -> None:
    with FakeLLM(responder=NewSpec()) as fake:
        runs = Runs(fake, tmp_path)
        runs.generation["validity"] = True
        v1 = first_version(runs)
        judged = [t.id for t in v1.tests if t.valid is not None and t.origin != "sample"]
        assert judged
        v2 = runs.run(V1.format(samples="").replace("Avoid rhyme.", "Avoid rhymes."))
        names = calls(fake)
    edit = v2.edit
    assert edit is not None and v2.input_spec != v1.input_spec
    assert edit.tests_rechecked == [i for i in edit.tests_kept if i in judged]
    failed = {t.id for t in v2.tests if t.valid is False}
    assert edit.tests_flagged == [i for i in edit.tests_rechecked if i in failed]
    assert names["Verdicts"] >= 1  # the kept tests were judged again
    assert not {r.test_id for r in v2.test_runs} & set(edit.tests_flagged)  # not run
