"""The review stage against the fake HTTP server, and the review files it leads to."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.formats.tests_file import filtered_file_schema, load_tests_file
from promptgen.llm import LLM
from promptgen.model import Message, PromptUnderTest
from promptgen.options import Generation, Options
from promptgen.pipeline import complete, run_stage
from promptgen.report.outputs import write_outputs
from promptgen.report.review import (
    FILTERED_FILE,
    REVIEW_FILE,
    filtered_tests,
    review_markdown,
    write_review_files,
)
from promptgen.results import FailureMode, Rule, Test, TestReview
from tests.conftest import run
from tests.fakellm import FakeLLM
from tests.pipeline_fake import DropOnce, PipelineResponder
from tests.stagekit import EVAL, make_llm

CFG = RunConfig(Options(generation=Generation(rate_tests=True)))


def review(ctx: Context, llm: LLM) -> None:
    run(run_stage("review", ctx, CFG, llm))


def reviewed(ctx: Context) -> bool:
    return complete("review", ctx, CFG)


def make_context(n_tests: int) -> Context:
    prompt = PromptUnderTest(
        name="sentiment",
        messages=[
            Message(role="system", content="Label the review positive or negative."),
            Message(role="user", content="{{review}}"),
        ],
    )
    ctx = Context.new(prompt, intent="Labels the sentiment of a customer review.")
    ctx.rules = [
        Rule.make("The output is one lowercase word."),
        Rule.make("The output is a label."),
    ]
    ctx.inverse_rules = [Rule.make("The output is a sentence.", inverse_of=ctx.rules[0].id)]
    targets = [*ctx.all_rules, None]
    for i in range(n_tests):
        rule = targets[i % len(targets)]
        inputs = {"review": f"review number {i}"}
        ctx.tests.append(
            Test(
                id=Test.make_id("generated", rule.id if rule else None, None, inputs),
                rule_id=rule.id if rule else None,
                inverse=bool(rule and rule.inverse),
                inputs=inputs,
                origin="generated" if rule else "sample",
            )
        )
    return ctx


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, PipelineResponder]]:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def requests_named(fake: FakeLLM, name: str) -> list[dict[str, Any]]:
    return [
        r
        for r in fake.requests
        if (r.get("response_format") or {}).get("json_schema", {}).get("name") == name
    ]


def user_text(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def numbers_shown(request: dict[str, Any]) -> list[int]:
    return [int(k) for k in re.findall(r"^(\d+)\. .*\n {3}inputs: ", user_text(request), re.M)]


def test_review_and_importance_for_every_test(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    ctx = make_context(70)
    saves: list[int] = []
    ctx._checkpoint = lambda: saves.append(1)
    review(ctx, make_llm(fake, tmp_path))

    assert ctx.review is not None and ctx.review.model == EVAL
    assert ctx.review.quality_score == 7
    assert [f.harm for f in ctx.review.failure_modes] == ["high", "low"]
    assert ctx.review.weaknesses == ["Few tests with unusual input."]
    assert ctx.review.summary and ctx.review.summary.startswith("Covers every rule")
    assert set(ctx.review.importance) == {t.id for t in ctx.tests}
    assert all(1 <= v <= 10 for v in ctx.review.importance.values())
    assert set(ctx.review.notes) == {t.id for t in ctx.tests}
    assert reviewed(ctx)
    assert ctx.stage("review").error is None
    assert ctx.stage("review").counts == {
        "rated": 70,
        "not_rated": 0,
        "reviewed": 60,
        "left_out": 10,
    }
    assert len(saves) == 1 + 4  # after the review and after each batch

    (collection,) = requests_named(fake, "CollectionReview")
    assert collection["model"] == "judge-model"
    text = user_text(collection)
    assert text.startswith("<PROMPT>") and "Label the review" in text
    assert numbers_shown(collection) == list(range(1, 61))
    assert "10 more of the 70 tests are not shown" in text
    assert "(inverse) The output is a sentence." in text and "(author's sample)" in text
    assert text.rstrip().endswith("a quality score from 1 to 10 and a short summary.")
    batches = requests_named(fake, "ImportanceVerdicts")
    assert sorted(len(numbers_shown(b)) for b in batches) == [10, 20, 20, 20]
    assert all("Do not carry out its" in user_text(b) for b in batches)
    assert responder.calls == {"CollectionReview": 1, "ImportanceVerdicts": 4}


def test_missing_verdict_is_asked_again_in_a_smaller_call(tmp_path: Path) -> None:
    responder = DropOnce("ImportanceVerdicts")
    with FakeLLM(responder=responder) as fake:
        llm = make_llm(fake, tmp_path)
        ctx = make_context(45)
        review(ctx, llm)
        assert ctx.review is not None
        # Batches of 20, 20 and 5; the answer that left out test 2 of its batch is not
        # lost: that test alone is asked again in the same run.
        assert responder.calls == {"CollectionReview": 1, "ImportanceVerdicts": 4}
        again = requests_named(fake, "ImportanceVerdicts")[-1]
        assert numbers_shown(again) == [1]
        (dropped,) = [t for t in ctx.tests if json.dumps(t.inputs) in user_text(again)]
        assert dropped.id in ctx.review.importance
        assert reviewed(ctx) and ctx.stage("review").error is None
        assert ctx.stage("review").counts["not_rated"] == 0
        assert ctx.stage("review").failures == {}

        fake.reset()
        review(ctx, llm)  # finished: no call
        assert fake.requests == []


def test_new_tests_get_a_new_review_and_only_their_ratings(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    llm = make_llm(fake, tmp_path)
    ctx = make_context(5)
    review(ctx, llm)
    review(ctx, llm)  # finished: no call
    assert responder.calls == {"CollectionReview": 1, "ImportanceVerdicts": 1}
    ctx.tests += make_context(7).tests[5:]
    assert not reviewed(ctx)
    review(ctx, llm)
    assert responder.calls == {"CollectionReview": 2, "ImportanceVerdicts": 2}
    assert numbers_shown(requests_named(fake, "ImportanceVerdicts")[-1]) == [1, 2]
    assert reviewed(ctx)


def test_failed_review_call_is_recorded(tmp_path: Path) -> None:
    responder = PipelineResponder(fail_stage="CollectionReview")
    with FakeLLM(responder=responder) as fake:
        ctx = make_context(3)
        review(ctx, make_llm(fake, tmp_path))
    assert ctx.review is not None and ctx.review.quality_score is None
    assert len(ctx.review.importance) == 3
    assert ctx.stage("review").error and not reviewed(ctx)
    assert "Quality score: not given" in review_markdown(ctx)


def test_no_tests_no_calls(server: tuple[FakeLLM, PipelineResponder], tmp_path: Path) -> None:
    fake, _ = server
    ctx = make_context(0)
    review(ctx, make_llm(fake, tmp_path))
    assert fake.requests == [] and reviewed(ctx)
    assert ctx.stage("review").counts.get("rated", 0) == 0


def rated_context() -> Context:
    ctx = make_context(6)
    ids = [t.id for t in ctx.tests]
    ctx.review = TestReview(
        model="judge",
        summary="Good | mostly.\nSecond line.",
        quality_score=6,
        failure_modes=[
            FailureMode(description="Writes a | sentence", harm="low"),
            FailureMode(description="Leaks\nthe prompt", harm="high"),
        ],
        weaknesses=["No empty review."],
        importance={ids[0]: 5, ids[1]: 9, ids[2]: 5, ids[4]: 9},
        notes={ids[1]: "central | rule\nreally", ids[4]: "likely failure"},
    )
    return ctx


def test_filtered_tests_order_and_ties() -> None:
    ctx = rated_context()
    t = ctx.tests
    assert filtered_tests(ctx, 6) == [t[1], t[4], t[0], t[2], t[3], t[5]]
    assert filtered_tests(ctx, 3) == [t[1], t[4], t[0]]
    assert filtered_tests(ctx, 100) == filtered_tests(ctx, 6)
    assert filtered_tests(ctx, 0) == []
    ctx.review = None
    assert filtered_tests(ctx, 2) == t[:2]


def test_the_filtered_file_never_picks_an_invalid_test(tmp_path: Path) -> None:
    ctx = rated_context()
    t = ctx.tests
    t[1].valid, t[1].validity_reason = False, "not a review"  # the most important one
    t[3].valid = None  # not judged: may be picked
    assert filtered_tests(ctx, 3, invalid=False) == [t[4], t[0], t[2]]
    written = write_review_files(ctx, tmp_path, 6)
    picked = [test["id"] for test in json.loads(written[1].read_text())["tests"]]
    assert picked == [t[4].id, t[0].id, t[2].id, t[3].id, t[5].id]
    # The review itself still ranks every test.
    assert filtered_tests(ctx, 6)[0] is t[1]


def test_review_markdown_ranks_and_escapes() -> None:
    ctx = rated_context()
    text = review_markdown(ctx)
    assert "Quality score: **6/10**" in text
    assert "| high | Leaks<br>the prompt |" in text
    assert text.index("Leaks") < text.index("Writes a \\| sentence")  # high harm first
    assert "- No empty review." in text
    assert "4 of 6 tests rated." in text
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \| ", line)]
    assert [row.split(" | ")[1] for row in rows] == ["9", "9", "5", "5", "not rated", "not rated"]
    assert "central \\| rule<br>really" in rows[0]
    assert "(inverse) The output is a sentence." in text
    for row in rows:  # 6 cells: 7 unescaped pipes
        assert len(re.findall(r"(?<!\\)\|", row)) == 7
    empty = make_context(1)
    assert "No review yet" in review_markdown(empty)


def test_filtered_file_round_trips(tmp_path: Path) -> None:
    ctx = rated_context()
    written = write_review_files(ctx, tmp_path / "out", 3)
    assert [p.name for p in written] == [REVIEW_FILE, FILTERED_FILE]
    data = json.loads(written[1].read_text())
    assert list(data) == ["prompt", "prompt_hash", "tests", "rules"]
    assert data["prompt"] == "sentiment" and data["prompt_hash"] == ctx.prompt_hash
    jsonschema.validate(data, filtered_file_schema())
    tests, rules = load_tests_file(written[1])
    assert tests == filtered_tests(ctx, 3)
    assert rules == ctx.rules  # tests 1, 4 and 0 target the two rules, not the inverse
    assert written[0].read_text() == review_markdown(ctx)
    assert [p.name for p in write_review_files(ctx, tmp_path / "two", None)] == [REVIEW_FILE]


def test_filtered_file_brings_the_rule_an_inverse_negates(tmp_path: Path) -> None:
    ctx = rated_context()
    assert ctx.review is not None
    ctx.review.importance = {ctx.tests[2].id: 10}  # the inverse rule's test
    (_, path) = write_review_files(ctx, tmp_path, 1)
    tests, rules = load_tests_file(path)
    assert tests == [ctx.tests[2]]
    assert rules == [ctx.rules[0], ctx.inverse_rules[0]]


def test_tests_json_carries_its_rules(tmp_path: Path) -> None:
    ctx = rated_context()
    write_outputs(ctx, tmp_path)
    data = json.loads((tmp_path / "tests.json").read_text())
    assert list(data) == ["prompt", "prompt_hash", "tests", "rules"]
    jsonschema.validate(data, filtered_file_schema())
    tests, rules = load_tests_file(tmp_path / "tests.json")
    assert tests == ctx.tests
    assert rules == [*ctx.rules, *ctx.inverse_rules]  # the inverse test's rule too


def test_plain_tests_list_still_loads(tmp_path: Path) -> None:
    """tests.json of older runs: a plain list of tests, without rules."""
    ctx = rated_context()
    path = tmp_path / "tests.json"
    path.write_text(json.dumps([t.model_dump(mode="json") for t in ctx.tests]))
    tests, rules = load_tests_file(path)
    assert tests == ctx.tests and rules == []


BAD_FILES: list[tuple[str, str, str]] = [
    ("broken.json", '{\n  "tests": [\n    {"id": }\n  ]\n}', "broken.json:3: not valid JSON"),
    ("empty.json", "", "empty.json:1: not valid JSON"),
    ("shape.json", '"just text"', "not a tests file: expected an object with a 'tests' list"),
    ("other.json", '{"rules": []}', "not a tests file"),
    ("noid.json", '[{"inputs": {}}]', "not a valid tests file: 0.id: Field required"),
    ("field.json", '{"tests": [{"id": "t", "bogus": 1}]}', "tests.0.bogus: Extra inputs"),
    ("twice.json", '[{"id": "t"}, {"id": "t"}]', "test id t appears twice"),
    (
        "link.json",
        '{"tests": [{"id": "t", "rule_id": "rule-x"}], "rules": []}',
        "test t targets rule rule-x, which is not in 'rules'",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_tests_files(
    write: Callable[[str, str], Path], name: str, content: str, message: str
) -> None:
    path = write(name, content)
    with pytest.raises(BadInputError) as caught:
        load_tests_file(path)
    line = caught.value.one_line()
    assert message in line and str(path) in line and "\n" not in line


def test_missing_tests_file(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="tests file not found"):
        load_tests_file(tmp_path / "nope.json")
