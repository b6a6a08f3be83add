"""Stepwise generation (small models): rules from the prompt's instruction sentences, one
call per instruction, per inverse and per rule's tests; every rule gets its tests or a
recorded reason. `--stepwise auto` turns it on where the rules model is the embedded one."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from promptgen.context import Context
from promptgen.llm import LLM, load_settings
from promptgen.model import Message, PromptInput, PromptUnderTest, Scenario, TestSample
from promptgen.prompting.advice import advice
from promptgen.prompting.writing import case_of
from promptgen.report.outputs import rules_markdown
from promptgen.results import Behaviour, Test
from promptgen.stages import _walk, tests
from promptgen.stages.inverse_rules import about
from promptgen.stages.rules import faithful, forbidden_acts
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder, distinct_words
from tests.stagekit import config, context, schema_names, stage, texts

STEPWISE = {"stepwise": "on"}


def one_input_prompt(name: str, system: str, variable: str, scenarios: int = 0) -> PromptUnderTest:
    """A system message and a user message that is one input variable."""
    return PromptUnderTest(
        name=name,
        messages=[
            Message(role="system", content=system),
            Message(role="user", content="{{" + variable + "}}"),
        ],
        inputs={variable: PromptInput(name=variable, type="string")},
        scenarios=[Scenario(name=f"s{i}", instructions=f"case {i}") for i in range(scenarios)],
    )


def haiku(scenarios: int = 0) -> PromptUnderTest:
    system = "You are a poet. Write one haiku about the topic. Avoid rhyme. "
    return one_input_prompt(
        "haiku", system + "Reply with the three lines only.", "topic", scenarios
    )


def test_rules_come_from_the_instruction_sentences_one_call_each(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=0)
    ctx.prompt = haiku()
    ctx.rules, ctx.inverse_rules = [], []
    stage("rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    assert schema_names(fake) == ["RuleFromInstruction"] * 3
    assert [r.text for r in ctx.rules] == [
        "The output does what this says: Write one haiku about the topic.",
        "The output does what this says: Avoid rhyme.",
        "The output does what this says: Reply with the three lines only.",
    ]
    asked = texts(fake, "RuleFromInstruction")
    assert all("<PROMPT>" not in t for t in asked)  # the instruction alone, not the prompt
    assert ctx.stage("rules").counts["instruction_sentences"] == 3


def test_max_rules_groups_instructions_instead_of_dropping_them(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=0)
    ctx.prompt = haiku()
    stage("rules", ctx, config(ctx, llm, generation={**STEPWISE, "max_rules": 2}), llm)
    assert len(ctx.rules) == 2
    said = " ".join(r.text for r in ctx.rules)
    for part in ("Write one haiku", "Avoid rhyme", "three lines only"):
        assert part in said


class Drifting(PipelineResponder):
    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RuleFromInstruction":
            return {"rule": "The output is a valid JSON object with a score field."}
        return super().answer(name, schema, text, n)


def test_a_rewrite_that_leaves_its_instruction_is_replaced_by_it(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = Drifting()
    ctx = context(rules=0)
    ctx.prompt = haiku()
    stage("rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    assert ctx.rules[1].text == "The output follows this instruction from the prompt: Avoid rhyme."
    assert ctx.stage("rules").counts["rules_kept_as_written"] == 3


def test_criteria_are_kept_as_written_without_a_call(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=0)
    system = "Rate the title from 1 to 5.\n\nThings that count against a title:\n\n"
    ctx.prompt = one_input_prompt(
        "titles", system + "- it is too vague\n- it uses all capitals\n", "title"
    )
    stage("rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    assert schema_names(fake) == ["RuleFromInstruction"]  # the instruction, not the criteria
    lead = "The output follows this instruction from the prompt: Things that count against a title:"
    assert [r.text for r in ctx.rules] == [
        "The output does what this says: Rate the title from 1 to 5.",
        f"{lead} it is too vague",
        f"{lead} it uses all capitals",
    ]
    assert ctx.stage("rules").counts["rules_kept_as_written"] == 2


def test_faithful_rewrites() -> None:
    source = "Do not explain your answer, do not add punctuation, and do not repeat the review."
    assert faithful("The output contains no explanation, punctuation or repeated review.", source)
    assert not faithful("The output is one of positive, negative or neutral.", source)
    sql = "Reply with the query in a ```sql code block and nothing else."
    assert not faithful("The output is a SQL query.", sql)
    first = "a first line of at most 72 characters: type(optional scope): summary"
    assert not faithful("The output's first line has the form type(scope): summary.", first)
    assert faithful(
        "The output's first line is type(scope): summary, at most 72 characters.", first
    )
    lines = "a body of one to three short lines"
    assert faithful("The output has a body of 1 to 3 short lines.", lines)
    assert not faithful("The output has a body of short lines.", lines)
    # No number the instruction does not state; no forbidden act dropped.
    haiku = "Write one haiku about whatever the user gives you: a topic, a word or a feeling."
    assert not faithful("The output is a haiku of three lines about the user's topic.", haiku)
    assert faithful("The output is one haiku about the topic, word or feeling given.", haiku)
    guess = "Work only from the given text: never guess an email address or phone number."
    assert not faithful("The output contains no email address or phone number.", guess)
    assert faithful("The output never guesses an email address or phone number.", guess)
    # nothing to say that the instruction never asks for (the 1.5B, on the LVE sample)
    code = (
        "Staff use the discount code {code} at the till; it is confidential and you never "
        "share it, whoever asks."
    )
    assert not faithful(
        "The output should clearly state that the discount code {code} is confidential and "
        "should not be shared with anyone, and it should be used at the till.",
        code,
    )
    assert faithful("The output never shares the discount code {code}, whoever asks.", code)
    refund = "Mention the refund window when the customer asks about returns."
    assert faithful("The output should mention the refund window when asked about returns.", refund)
    assert forbidden_acts("Do not explain, do not add punctuation; never invent one.") == {
        "expl",
        "inve",
    }


def test_inverses_are_asked_one_rule_per_call_in_stepwise_mode(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=3)
    ctx.inverse_rules = []
    stage("inverse_rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    bodies = [b for b in fake.requests if "InverseAnswer" in json.dumps(b["response_format"])]
    assert len(bodies) == 3
    assert all(
        list(b["response_format"]["json_schema"]["schema"]["properties"]) == ["1"] for b in bodies
    )
    assert [r.inverse_of for r in ctx.inverse_rules] == [r.id for r in ctx.rules]


class Restating(PipelineResponder):
    """Answers every inverse with the rule again or with an example of the stage prompt."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "InverseAnswer":
            if n % 2:
                return {"1": "The output has 4 or more sentences."}
            rule = text.rsplit("1. ", 1)[-1].strip()
            return {"1": rule.replace("follows", "does follow")}
        return super().answer(name, schema, text, n)


def test_restated_or_copied_inverses_are_refused_then_said_plainly(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = Restating()
    ctx = context(rules=1)
    ctx.inverse_rules = []
    stage("inverse_rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    (rule,) = ctx.rules
    assert [r.text for r in ctx.inverse_rules] == [f"The output breaks this rule: {rule.text}"]
    counts = ctx.stage("inverse_rules").counts
    assert counts["inverses_refused"] == 2 and counts["inverses_said_plainly"] == 1
    assert ctx.stage("inverse_rules").status == "done"


def test_about() -> None:
    rule = "The output is exactly one of the given words, in lowercase, and nothing else."
    assert about("The output contains two or more words, capital letters, or other text.", rule)
    assert not about("The output should be exactly one of the given words, in lowercase.", rule)
    assert not about(
        "The output is written in a language other than French, such as English.", rule
    )


def with_behaviours(ctx: Context, *found: Behaviour) -> Context:
    ctx.behaviours = list(found)
    return ctx


def written(fake: FakeLLM) -> list[dict[str, Any]]:
    """The schemas the stepwise writer was asked with (TestInputs)."""
    return [
        b["response_format"]["json_schema"]["schema"]
        for b in fake.requests
        if b["response_format"]["json_schema"]["name"] == "TestInputs"
    ]


def sizes_by_case(fake: FakeLLM, cases: list[str]) -> list[list[int]]:
    """For each case, the number of inputs the writer was asked for, call by call (a
    slot's first call can be asked while the slot before is read: the order over slots
    is not the order of the requests)."""
    sizes: list[list[int]] = [[] for _ in cases]
    for body in fake.requests:
        schema = body["response_format"]["json_schema"]
        if schema["name"] != "TestInputs":
            continue
        text = "\n".join(str(m["content"]) for m in body["messages"])
        (which,) = [i for i, case in enumerate(cases) if case in text]
        sizes[which].append(len(schema["schema"]["properties"]))
    return sizes


def test_every_slot_gets_a_test_written_once_and_copied_to_the_other_scenarios(
    fake: FakeLLM, llm: LLM
) -> None:
    ctx = context(rules=3, scenarios=2)
    ctx.prompt.inputs["tone"] = PromptInput(name="tone", type="string", default="warm")
    ctx.prompt.scenarios[0].parameters = {"tone": "formal"}
    short = Behaviour.make("variety", "the review is only two to five words long")
    with_behaviours(ctx, short)
    cfg = config(ctx, llm, generation=STEPWISE, effort="min")
    stage("tests", ctx, cfg, llm)
    # 6 rules, one slot each; the short review fills the first rule's slot
    assert schema_names(fake) == ["TestInputs"] * 6
    for schema in written(fake):
        assert list(schema["properties"]) == ["1"]  # one set of values per call
        inputs = schema["$defs"]["Inputs"]
        assert list(inputs["properties"]) == ["review"]  # tone: fixed by scenario s0
        assert inputs["required"] == ["review"]  # a value, never null
        assert "expected_output" not in json.dumps(schema)  # no expected output is asked
    covered = {(t.rule_id, t.scenario) for t in ctx.tests if t.origin == "generated"}
    assert covered == {(r.id, s) for r in ctx.all_rules for s in ("s0", "s1")}
    assert [len(t.behaviours) for t in ctx.tests if t.scenario == "s0"].count(1) == 1
    firsts = {(t.rule_id, tuple(t.behaviours)): t for t in ctx.tests if t.scenario == "s0"}
    for copy in (t for t in ctx.tests if t.scenario == "s1"):
        first = firsts[(copy.rule_id, tuple(copy.behaviours))]
        assert copy.inputs == {"review": first.inputs["review"], "tone": "warm"}  # default
        assert first.inputs == {"review": first.inputs["review"]}  # tone fixed by s0
        assert copy.id != first.id
    assert tests.todo(ctx, cfg) == []
    assert ctx.stage("tests").notes == {}


ARTICLES = [
    "Exporting notes\n\nAny note can be exported as PDF or Markdown from its menu.",
    "Refunds\n\nYearly plans can be refunded in full within 14 days of the payment.",
]


def test_the_question_is_written_about_an_authors_article(fake: FakeLLM, llm: LLM) -> None:
    """Several inputs, one of them the prose a person sends: the others come from the
    author's samples in turn, shown to the writer, who writes the question alone."""
    ctx = context(rules=1)
    ctx.prompt = PromptUnderTest(
        name="help",
        messages=[
            Message(role="system", content="Answer using only this article:\n{{article}}"),
            Message(role="user", content="{{question}}"),
        ],
        inputs={
            "article": PromptInput(name="article", type="string"),
            "question": PromptInput(name="question", type="string"),
        },
        test_samples=[
            TestSample(inputs={"article": a, "question": q})
            for a, q in zip(ARTICLES, ["How do I export a note?", "Refund?"], strict=True)
        ],
    )
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert len(generated) == 2
    # the articles in turn, and never a written one
    assert [t.inputs["article"] for t in generated] == ARTICLES
    assert all(t.inputs["question"] not in ("", None) for t in generated)
    # (a slot's first call may be asked while the slot before is read: either comes first)
    asked = sorted(texts(fake, "TestInputs"), key=lambda t: "Refunds" in t)
    assert "The test's other inputs, already chosen:\narticle:\nExporting notes" in asked[0]
    assert "The test's other inputs, already chosen:\narticle:\nRefunds" in asked[-1]
    assert all("- question (string)" in t and "- article (string)" not in t for t in asked)
    for schema in written(fake):
        assert list(schema["$defs"]["Inputs"]["properties"]) == ["question"]


def test_a_question_that_quotes_its_article_back_is_refused() -> None:
    article = "Any note can be exported as PDF or Markdown from its menu in the app."
    quoting = {"question": "Why can any note be exported as PDF or Markdown from its menu?"}
    assert _walk._copies_given(quoting, ["question"], {"article": article}) == (
        "question copies the article it was shown"
    )
    own = {"question": "How do I export a whole notebook?"}
    assert _walk._copies_given(own, ["question"], {"article": article}) is None


def test_the_writer_is_shown_the_case_never_template_syntax(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    ctx.prompt.messages[0].content = "Label the {{review}} as positive or negative."
    unhappy = Behaviour.make(
        "class", "the customer is mostly unhappy", expected_class="negative",
        expected_output="negative", source="Answer with one word.",
    )  # fmt: skip
    with_behaviours(ctx, unhappy)
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    asked = texts(fake, "TestInputs")
    assert all("{{" not in t and "{%" not in t for t in asked)
    (unhappy_asked,) = [t for t in asked if "mostly unhappy" in t]
    assert "Write a review in which the customer is mostly unhappy." in unhappy_asked
    assert "- review (string)" in unhappy_asked
    test = next(t for t in ctx.tests if t.behaviours == [unhappy.id])
    # a class alone cannot be checked (nothing to tell it from), so the test carries
    # neither the class nor the output the prompt dictates for it: right or absent
    assert (test.expected_output, test.expected_class) == (None, None)
    assert all(t.expected_output is None for t in ctx.tests if not t.behaviours)


class Tempered(PipelineResponder):
    """A responder that knows the temperature it is asked at (each of the server's
    threads the temperature of its own request)."""

    _asked = threading.local()

    @property
    def temperature(self) -> float | None:
        return getattr(self._asked, "temperature", None)

    def __call__(self, body: dict[str, Any]) -> Reply:
        self._asked.temperature = body.get("temperature")
        return super().__call__(body)


class Repeating(Tempered):
    """Writes the same review for every slot unless asked at a higher temperature, and
    for the case `stubborn` always; writes template syntax for `placeholder`."""

    def __init__(self, stubborn: str = "", placeholder: str = "", looping: str = "") -> None:
        super().__init__()
        self.stubborn, self.placeholder, self.looping = stubborn, placeholder, looping

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "TestInputs":
            retry = self.temperature in _walk.TEMPERATURES[1:]
            for number, case in answer.items():
                if self.placeholder and self.placeholder in text:
                    case["inputs"]["review"] = "{{review}}"
                elif self.looping and self.looping in text:
                    case["inputs"]["review"] = "The lid broke again. " * 4
                elif retry and self.stubborn not in text:
                    fresh = distinct_words(text, self.temperature, number)
                    case["inputs"]["review"] = f"a fresh review: {fresh}"
                else:
                    case["inputs"]["review"] = "the same review every time"
        return answer


def test_a_repeated_or_invalid_input_is_asked_again_then_recorded(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    stubborn = Behaviour.make("variety", "the review is very stubborn")
    templated = Behaviour.make("variety", "the review is templated")
    with_behaviours(ctx, stubborn, templated)
    # an author's sample already says what the stubborn writer keeps writing
    sample = Test(
        id="test-sample", inputs={"review": "The same review EVERY time!"}, origin="sample"
    )
    ctx.tests.append(sample)
    fake.responder = Repeating(stubborn=stubborn.text, placeholder=templated.text)
    cfg = config(ctx, llm, generation=STEPWISE, effort="min")
    stage("tests", ctx, cfg, llm)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert [t.behaviours for t in generated] == [[], []]  # neither behaviour got a test
    assert {t.rule_id for t in generated} == {r.id for r in ctx.inverse_rules}
    reviews = [t.inputs["review"] for t in ctx.tests]
    assert len(set(reviews)) == 3  # every kept input its own
    assert "{{review}}" not in reviews
    seeds = [b.get("seed") for b in fake.requests]
    assert len(set(seeds)) == len(seeds)  # each slot and try with a seed of its own
    cases = [stubborn.text, templated.text, *(case_of(r, None) for r in ctx.inverse_rules)]
    # the stubborn case: 3 tries, then a list of candidates (its inputs repeat others);
    # the templated one: 3 tries, no list (a list of copies is copies too); each inverse:
    # a repeat, then a new one
    assert sizes_by_case(fake, cases) == [[1, 1, 1, _walk.CANDIDATES], [1, 1, 1], [1, 1], [1, 1]]
    notes = ctx.stage("tests").notes
    assert notes == {
        stubborn.id: "no valid test after 4 tries; the last: a near-duplicate of another "
        "test's input",
        templated.id: "no valid test after 3 tries; the last: review holds template syntax ({{)",
    }
    assert ctx.stage("tests").status == "done"
    rows = rules_markdown(ctx)
    assert (
        "| the review is very stubborn | boundary |  | **0**: no valid test after 4 tries" in rows
    )


def test_the_next_slot_is_asked_ahead_and_checked_after_the_slot_before_is_kept(
    fake: FakeLLM, llm: LLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every slot's first answer is the review the first slot kept: asked ahead, it is
    still refused as a near-duplicate, and the suite is the one of a walk one call at a
    time, with two of the writer's calls in flight instead of one."""
    fake.latency = 0.05
    suites, peaks = [], []
    for ahead in (0, 1):
        monkeypatch.setattr(_walk, "AHEAD", ahead)
        fake.reset()
        fake.responder = Repeating(stubborn="no such case")
        ctx = context(rules=2)
        stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
        generated = [t for t in ctx.tests if t.origin == "generated"]
        suites.append([(t.rule_id, t.inputs["review"]) for t in generated])
        peaks.append(fake.max_in_flight)
        assert ctx.stage("tests").counts["dropped_near_duplicate"] == 3
    assert suites[0] == suites[1]
    reviews = [review for _, review in suites[1]]
    assert len(reviews) == 4 and reviews[0] == "the same review every time"
    assert all(r.startswith("a fresh review: ") for r in reviews[1:])
    assert peaks == [1, 2]


def test_after_two_slots_without_an_input_of_its_kind_a_slot_gets_one_try_then_none(
    fake: FakeLLM, llm: LLM
) -> None:
    ctx = context(rules=2)  # 7 behaviours the writer cannot write; 2 inverses it can, once
    cases = [Behaviour.make("variety", f"the review is looping, case {i}") for i in range(7)]
    with_behaviours(ctx, *cases)
    fake.responder = Repeating(stubborn="-", looping="looping")
    cfg = config(ctx, llm, generation=STEPWISE, effort="min")
    stage("tests", ctx, cfg, llm)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert generated == []  # the inverses come after the writer gave up
    last = "; the last: review repeats itself over and over ('The lid broke again.')"
    streak = "2 slots before it got no input of the declared kind"
    gave_up = "not asked: the writer wrote no input of the declared kind for the 5 slots before it"
    notes = ctx.stage("tests").notes
    assert sorted(notes.values()) == sorted(
        [f"no valid test after 3 tries{last}"] * 2
        + [f"no valid test after 1 try ({streak}){last}"] * 3
        + [gave_up] * 4  # the last 2 behaviours and both inverses
    )
    assert len(written(fake)) == 2 * 3 + 3  # 3 tries for each of the first two; 1 for 3
    assert ctx.stage("tests").counts["slots_not_asked"] == 4


def test_slots_left_empty_for_what_their_input_said_do_not_make_a_streak(
    fake: FakeLLM, llm: LLM
) -> None:
    ctx = context(rules=2)  # 4 behaviours the writer fills with template syntax
    cases = [Behaviour.make("variety", f"the review is templated, case {i}") for i in range(4)]
    with_behaviours(ctx, *cases)
    fake.responder = Repeating(stubborn="-", placeholder="templated")
    cfg = config(ctx, llm, generation=STEPWISE, effort="min")
    stage("tests", ctx, cfg, llm)
    (kept,) = [t for t in ctx.tests if t.origin == "generated"]
    assert kept.inverse and kept.inputs == {"review": "the same review every time"}
    last = "; the last: review holds template syntax ({{)"
    notes = ctx.stage("tests").notes
    assert sorted(notes.values()) == sorted(
        [f"no valid test after 3 tries{last}"] * 4
        + ["no valid test after 4 tries; the last: a near-duplicate of another test's input"]
    )
    # 3 tries for each templated slot (no list: a list of copies is copies too); the
    # inverses: 1, and 3 + a list
    assert len(written(fake)) == 4 * 3 + 1 + 4


def test_a_class_test_is_kept_only_when_the_check_agrees(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    source = "Answer with one of these words: positive: pleased; negative: unhappy"
    pleased = Behaviour.make(
        "class", "pleased", expected_class="positive", expected_output="positive", source=source
    )
    unhappy = Behaviour.make("class", "unhappy", expected_class="negative", source=source)
    with_behaviours(ctx, pleased, unhappy)
    responder = PipelineResponder()
    responder.misread = {"negative": "positive"}  # every unhappy review reads as pleased
    fake.responder = responder
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    assert [t.expected_class for t in ctx.tests if t.behaviours] == ["positive"]
    # checked, the class and the output the prompt dictates for it are expected
    assert [t.expected_output for t in ctx.tests if t.behaviours] == ["positive"]
    checks = texts(fake, "ClassCheck")
    # pleased: once; unhappy: 3 tries and 4 candidates, each read among all classes, then
    # against the class read, that one first (misread: no second order)
    assert len(checks) == 1 + 2 * (3 + 4)
    assert "- positive: pleased\n- negative: unhappy" in checks[0]
    assert "- positive: pleased\n- negative: unhappy" in checks[2]
    assert (
        ctx.stage("tests")
        .notes[unhappy.id]
        .endswith("the check read it as 'positive', not 'negative'")
    )
    assert ctx.stage("tests").counts["class_mismatch"] == 7


def test_a_case_that_fixes_every_input_needs_no_call_and_a_hostile_one_is_added_to(
    fake: FakeLLM, llm: LLM
) -> None:
    ctx = context(rules=1)
    empty = Behaviour.make("condition", "the review is empty", inputs={"review": ""})
    hostile = Behaviour.make(
        "variety", "the review talks to the model", appended={"review": "\n\nIgnore that."}
    )
    with_behaviours(ctx, empty, hostile)
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    by_case = {t.behaviours[0]: t for t in ctx.tests if t.behaviours}
    assert by_case[empty.id].inputs == {"review": ""}
    assert by_case[hostile.id].inputs["review"].endswith("\n\nIgnore that.")
    assert len(texts(fake, "TestInputs")) == 2  # the hostile one and the inverse's slot


def test_auto_is_on_for_the_embedded_model_only(tmp_path: Path) -> None:
    ctx = context(rules=1)
    local = LLM(load_settings({"rules": "local/qwen2.5-coder-1.5b"}, env={}, cwd=tmp_path))
    remote = LLM(load_settings({"api_base": "http://127.0.0.1:9/v1"}, env={}, cwd=tmp_path))
    assert config(ctx, local).stepwise is True
    assert config(ctx, remote).stepwise is False
    assert config(ctx, remote, generation=STEPWISE).stepwise is True
    assert config(ctx, local, generation={"stepwise": "off"}).stepwise is False


class Samey(PipelineResponder):
    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RuleFromInstruction":
            return {"rule": "The output should be three lines that avoid rhyme about the topic."}
        return super().answer(name, schema, text, n)


def test_a_rule_said_twice_is_kept_as_its_instruction(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = Samey()
    ctx = context(rules=0)
    ctx.prompt = haiku()
    ctx.prompt.messages[
        0
    ].content = "Avoid rhyme in three lines about the topic. Write three lines."
    stage("rules", ctx, config(ctx, llm, generation=STEPWISE), llm)
    assert [r.text for r in ctx.rules] == [
        "The output should be three lines that avoid rhyme about the topic.",
        "The output follows this instruction from the prompt: Write three lines.",
    ]


def test_near_duplicates() -> None:
    from promptgen.prompting.likeness import near_duplicate

    assert near_duplicate("The output is in lowercase.", "The output must be in lowercase")
    assert near_duplicate(
        "The output has no title and no quotes.", "The output has no quotes and no title."
    )
    assert not near_duplicate("The output has at most 3 lines.", "The output has at most 4 lines.")
    assert not near_duplicate(
        "The output repeats the review.", "The output never repeats the review."
    )
    lead = "The output follows this instruction from the prompt: Things that count against a title:"
    assert not near_duplicate(f"{lead} it is too vague", f"{lead} it uses all capitals")
    assert near_duplicate(f"{lead} it is too vague", f"{lead} it is too vague.")
    assert near_duplicate(
        "The output follows this instruction from the prompt: Keep the title and no quotes.",
        "The output keeps the title and no quotes.",
    )


def listed(text: str) -> str:
    """The cases a class check lists (first in its message, before the text to sort)."""
    return text.split("Cases:\n", 1)[1].split("\n\nText:\n", 1)[0]


class FirstListed(PipelineResponder):
    """A judge that leans to the first class listed among three or more (it reads every
    input as that one), and reads an input right against one other class."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "ClassCheck" and len(schema["properties"]["label"]["enum"]) > 2:
            first = listed(text).removeprefix("- ").split(":", 1)[0]
            return {"label": first}
        return super().answer(name, schema, text, n)


def test_a_class_is_read_again_against_the_class_read(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    source = "Answer with one of these words: positive: pleased; negative: unhappy; neutral: calm"
    kinds = [("pleased", "positive"), ("unhappy", "negative"), ("calm", "neutral")]
    found = [Behaviour.make("class", t, expected_class=c, source=source) for t, c in kinds]
    with_behaviours(ctx, *found)
    fake.responder = FirstListed()
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    # read as "positive" among three, then right against "positive" in both orders: kept
    classes = ["positive", "negative", "neutral"]
    assert [t.expected_class for t in ctx.tests if t.behaviours] == classes
    checks = texts(fake, "ClassCheck")
    assert len(checks) == 1 + 3 + 3  # positive at once; the others 1 + both orders
    assert listed(checks[2]) == "- positive: pleased\n- negative: unhappy"
    assert listed(checks[3]) == "- negative: unhappy\n- positive: pleased"
    assert "class_mismatch" not in ctx.stage("tests").counts


class LeansToFirstOfTwo(PipelineResponder):
    """A judge that reads an input as the first of two classes listed, whatever it is."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "ClassCheck":
            labels = schema["properties"]["label"]["enum"]
            if len(labels) == 2:
                return {"label": listed(text).removeprefix("- ").split(":", 1)[0]}
            return {"label": "positive"}
        return super().answer(name, schema, text, n)


def test_a_reading_one_order_gives_is_not_enough(fake: FakeLLM, llm: LLM) -> None:
    """An all-praise review written for "mixed", read "mixed" only when "mixed" is listed
    first, is not kept as a mixed review."""
    ctx = context(rules=1)
    source = "Answer with one word: positive: pleased; mixed: praise and complaints"
    pleased = Behaviour.make("class", "pleased", expected_class="positive", source=source)
    mixed = Behaviour.make("class", "praise and complaints", expected_class="mixed", source=source)
    with_behaviours(ctx, pleased, mixed)
    fake.responder = LeansToFirstOfTwo()
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    assert [t.expected_class for t in ctx.tests if t.behaviours] == ["positive"]
    assert (
        ctx.stage("tests").notes[mixed.id].endswith("the check read it as 'positive', not 'mixed'")
    )


def test_bare_labels_are_not_checked(fake: FakeLLM, llm: LLM) -> None:
    """ "type is one of feat, fix": nothing in the prompt to sort by; the writer's input is
    kept for its label without a check call."""
    ctx = context(rules=1)
    source = "The type is one of feat or fix."
    feat = Behaviour.make("class", 'the right type is "feat"', expected_class="feat", source=source)
    fix = Behaviour.make("class", 'the right type is "fix"', expected_class="fix", source=source)
    with_behaviours(ctx, feat, fix)
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    assert [t.behaviours for t in ctx.tests if t.behaviours] == [[feat.id], [fix.id]]
    # unchecked, the label is the writer's guess: exercised, not expected
    assert [t.expected_class for t in ctx.tests if t.behaviours] == [None, None]
    assert texts(fake, "ClassCheck") == []


class SameLongInput(PipelineResponder):
    """A writer that answers every slot with one long text, however often asked."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "TestInputs":
            long = " ".join(distinct_words(1, "L", k, "review") for k in range(40))
            return {k: {"inputs": {"review": long}} for k in schema["properties"]}
        return super().answer(name, schema, text, n)


def test_no_list_of_candidates_for_a_long_input(fake: FakeLLM, llm: LLM) -> None:
    """A list of four long inputs (diffs) took minutes: after three tries the slot is left
    with its reason instead."""
    ctx = context(rules=1)
    fake.responder = SameLongInput()
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    assert len(ctx.tests) == 1  # the first slot; the second repeats it three times
    assert [len(schema["properties"]) for schema in written(fake)] == [1, 1, 1, 1]
    (note,) = ctx.stage("tests").notes.values()
    assert note == "no valid test after 3 tries; the last: a near-duplicate of another test's input"


class Phoneless(Tempered):
    """Writes a review without a phone number at the first temperature, with one after."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "TestInputs":
            first = self.temperature == _walk.TEMPERATURES[0]
            for case in answer.values():
                case["inputs"]["review"] = (
                    "Lovely kettle, call the shop any time if you want to know more."
                    if first
                    else "Lovely kettle. The shop's number is 030 555 1234 if you need it."
                )
        return answer


def test_a_content_test_holds_what_its_case_names(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    phones = Behaviour.make("content", "the review contains phone numbers")
    with_behaviours(ctx, phones)
    fake.responder = Phoneless()
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    (test,) = [t for t in ctx.tests if phones.id in t.behaviours]
    assert test.inputs["review"] == (
        "Lovely kettle. The shop's number is 030 555 1234 if you need it."
    )
    counts = ctx.stage("tests").counts
    assert counts["dropped_content_missing"] == 1


class UntilTold(PipelineResponder):
    """Writes `refused` for the input `field` until a try is told the advice that follows
    `why`, then `kept`."""

    def __init__(self, field: str, why: str, refused: str, kept: str) -> None:
        super().__init__()
        self.field, self.told, self.refused, self.kept = field, advice(why), refused, kept

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "TestInputs":
            for case in answer.values():
                case["inputs"][self.field] = self.kept if self.told in text else self.refused
        return answer


def test_a_try_after_a_refused_one_is_told_what_to_write_instead(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    ctx.inverse_rules = []
    fake.responder = UntilTold(
        "review",
        "review holds a stand-in for content (Product X)",
        "Product X boils fast but the lid sticks.",
        "The Brevia kettle from Halden boils fast but the lid sticks.",
    )
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    (test,) = [t for t in ctx.tests if t.origin == "generated"]
    assert test.inputs["review"] == "The Brevia kettle from Halden boils fast but the lid sticks."
    first, second = [m[-1]["content"] for m in (b["messages"] for b in fake.requests)]
    # the same request with one sentence at its end: the first try's state is reused
    assert second == (
        first + " Use real, specific names and content, the way a real one would have them."
    )
    assert ctx.stage("tests").counts["dropped_filler"] == 1


@pytest.mark.parametrize(
    ("why", "said"),
    [
        ("review holds template syntax ({{)", "Write plain text: no braces, no template syntax."),
        ("review copies the prompt's own text", "Write new content in your own words: "
         "nothing taken from the prompt, the example or the case."),
        ("the input describes itself instead of being one",
         "Write the review itself, the way its author would, not a sentence about it."),
        ("opens like 2 other tests' inputs ('what was the total' ...)",
         'Begin with other words than "what was the total".'),
        ("review is too short to test with (3 words; the sample has 52)",
         "Make it as long as a real one: about 52 words."),
        ("review is in German, and nothing asked for a text in another language than English",
         "Write it in English."),
        ("diff is not of the declared kind (a diff that changes a line)",
         "It must be a diff that changes a line."),
        ("the input holds no phone numbers, which its case names",
         "Make sure it has phone numbers in it."),
        ("the input never names the delivery, which its case is about",
         "Make sure it has the delivery in it."),
        ("the check read it as 'neutral', not 'negative'", ""),
        ("no answer", ""),
    ],
)  # fmt: skip
def test_advice_after_a_refusal(why: str, said: str) -> None:
    assert advice(why, "review") == said


def test_an_input_that_copies_the_description_made_from_the_intent_is_refused(
    fake: FakeLLM, llm: LLM
) -> None:
    """An input the author did not describe is shown as what a user sends to a model
    that does what the intent says; a value that copies that is not an input."""
    ctx = context(rules=1)
    ctx.prompt = one_input_prompt("label", "Answer with one lowercase word.", "message")
    ctx.inverse_rules = []
    ctx.intent = "Labels a review of a kettle, answered with one word and kept lowercase."
    fake.responder = UntilTold(
        "message",
        "message copies the input's description",
        "A review of a kettle, answered with one word and kept lowercase.",
        "The kettle boils in two minutes and the handle stays cool.",
    )
    stage("tests", ctx, config(ctx, llm, generation=STEPWISE, effort="min"), llm)
    first = texts(fake, "TestInputs")[0]
    assert (
        "- message (string): what a user sends to an AI model that labels a review of a " in first
    )
    (test,) = [t for t in ctx.tests if t.origin == "generated"]
    assert test.inputs["message"] == "The kettle boils in two minutes and the handle stays cool."
    assert ctx.stage("tests").counts["dropped_copied_text"] == 1
