"""Verdict-style judge templates as metrics: answer schemas from the scale, a rubric step
feeding `previous`, `judges: N` pooled, loading and discovery, and whole runs of the
main command with a Verdict template as the prompt under test and as a metric."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from promptgen.errors import BadInputError
from promptgen.evaluation import make_case
from promptgen.evaluation.loading import load_metrics
from promptgen.evaluation.verdict_judge import VerdictJudge, discover
from promptgen.llm import LLM
from promptgen.options import Evaluation, Options
from tests.cli.test_pipeline import promptgen
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import EVAL, context, make_llm, prompt, schema_names, texts

RUBRIC = ["The label is right.", "The answer is one word."]


class SeededResponder(PipelineResponder):
    """Answers the rubric step with RUBRIC, and judgement k of a case (the request's seed
    is k) with `answers[k]` (`choices[k]` for a categorical judge); `fail_judgement`
    gets HTTP 500."""

    def __init__(
        self,
        answers: list[Any],
        choices: list[str] | None = None,
        fail_judgement: int | None = None,
    ) -> None:
        super().__init__()
        self.answers, self.choices = answers, choices or answers
        self.fail_judgement = fail_judgement

    def __call__(self, body: dict[str, Any]) -> Reply:
        spec = (body.get("response_format") or {}).get("json_schema", {})
        if spec.get("name") == "VerdictRubric":
            return Reply(content=json.dumps({"rubric": RUBRIC}))
        if spec.get("name") != "VerdictJudgement":
            return super().__call__(body)
        k = body.get("seed") or 0
        if k == self.fail_judgement:
            return Reply(status=500)
        props = spec["schema"]["properties"]
        answer = {"choice": self.choices[k]} if "choice" in props else {"score": self.answers[k]}
        if "explanation" in props:
            answer = {"explanation": f"judgement {k}", **answer}
        return Reply(content=json.dumps(answer))


JUDGE = """---
name: {name}
scale: {scale}
judges: {judges}
{extra}
---
@system
    You grade sentiment labels.
@user
    Review: {{source.review}}
    Label given: {{source.output}}
"""

RUBRIC_JUDGE = """---
name: graded
description: Grades a label against criteria written for the review.
scale: 1-5
explanation: true
judges: 3
pool: mean
rubric:
  count: 2
  template: |
    @system
    You write grading criteria.
    @user
    Write two criteria for labelling this review: {source.review}
---
@system
You grade labels against criteria ({unit.scale}).
@user
Criteria:
{"\\n".join(str(i + 1) + ". " + c for i, c in enumerate(previous.rubric))}

Review: {source.review}
Label: {source.output}
"""


def judge_file(tmp_path: Path, text: str, name: str = "j.verdict.md") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(path: Path) -> VerdictJudge:
    options = Options(evaluation=Evaluation(compliance=False, metric_files=[str(path)]))
    (metric,) = load_metrics(prompt(), options)
    assert isinstance(metric, VerdictJudge)
    return metric


def verdict(metric: VerdictJudge, fake: FakeLLM, tmp_path: Path, output: str = "positive") -> Any:
    ctx = context(rules=2, tests=1)
    llm: LLM = make_llm(fake, tmp_path)
    case = make_case(ctx, ctx.tests[0], output, judge=EVAL, llm=llm, stage="metrics")
    return run(metric.evaluate(case))


@pytest.fixture
def seeded() -> Iterator[tuple[FakeLLM, SeededResponder]]:
    responder = SeededResponder([4, 5, 3])
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def test_rubric_then_three_judgements_pooled_by_mean(
    seeded: tuple[FakeLLM, SeededResponder], tmp_path: Path
) -> None:
    fake, _ = seeded
    metric = load(judge_file(tmp_path, RUBRIC_JUDGE))
    assert (metric.name, metric.info.kind, metric.info.scorer) == ("graded", "custom", True)
    result = verdict(metric, fake, tmp_path)
    # (4 + 5 + 3) / 3 = 4 on 1-5 -> 75; passes at the midpoint 3
    assert (result.score, result.outcome, result.error) == (75.0, "ok", None)
    assert result.reason == "mean of [4, 5, 3]: 4; judgement 0"
    assert schema_names(fake) == ["VerdictRubric", *["VerdictJudgement"] * 3]
    seeds = sorted(b.get("seed") or 0 for b in fake.requests[1:])
    assert seeds == [0, 1, 2]  # three calls, not one answer reused
    rubric_schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert rubric_schema["properties"]["rubric"]["type"] == "array"
    assert "review number 0" in texts(fake, "VerdictRubric")[0]
    judge = fake.requests[1]
    schema = judge["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["explanation", "score"]
    assert (schema["properties"]["score"]["minimum"], schema["properties"]["score"]["maximum"]) == (
        1,
        5,
    )
    assert judge["messages"] == [
        {
            "role": "system",
            "content": "You grade labels against criteria (a whole number from 1 (worst) to 5 "
            "(best)).",
        },
        {
            "role": "user",
            "content": "Criteria:\n1. The label is right.\n2. The answer is one word.\n\n"
            "Review: review number 0\nLabel: positive",
        },
    ]


@pytest.mark.parametrize(
    ("scale", "extra", "answers", "expected"),
    [
        ("1-5", "pool: max", [4, 2, 4], (75.0, "ok", "max of [4, 2, 4]: 4")),
        ("1-5", "pass: 4", [4, 5, 2], (66.67, "err", "mean of [4, 5, 2]: 3.67")),
        ("0-10", "", [7, 7, 8], (73.33, "ok", "mean of [7, 7, 8]: 7.33")),
        ("[good, fair, poor]", "", ["fair", "good", "fair"],
         (0.0, "err", "max of ['fair', 'good', 'fair']: fair")),
        ("[good, fair, poor]", "pass: [good, fair]", ["poor", "fair", "poor"],
         (0.0, "err", "max of ['poor', 'fair', 'poor']: poor")),
        ("[good, fair, poor]", "pass: [good, fair]", ["good", "fair", "poor"],
         (100.0, "ok", "max of ['good', 'fair', 'poor']: good")),  # a tie: the first wins
        ("boolean", "", [True, False, True], (66.67, "ok", "mean of [True, False, True]: 0.67")),
        ("boolean", "pass: false\npool: max", [True, False, True],
         (0.0, "err", "max of [True, False, True]: True")),
    ],
)  # fmt: skip
def test_pooling_per_scale(
    scale: str, extra: str, answers: list[Any], expected: tuple[Any, ...], tmp_path: Path
) -> None:
    text = JUDGE.format(name="lab", scale=scale, judges=3, extra=extra)
    metric = load(judge_file(tmp_path, text))
    with FakeLLM(responder=SeededResponder(answers)) as fake:
        result = verdict(metric, fake, tmp_path)
        schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert (result.score, result.outcome, result.reason) == expected
    if scale.startswith("["):
        assert schema["properties"]["choice"]["enum"] == ["good", "fair", "poor"]
    elif scale == "boolean":
        assert schema["properties"]["score"]["type"] == "boolean"
    assert metric.info.scorer is ("pass: 4" not in extra)


def test_a_failed_judgement_is_left_out_and_said(tmp_path: Path) -> None:
    metric = load(judge_file(tmp_path, JUDGE.format(name="lab", scale="1-5", judges=3, extra="")))
    with FakeLLM(responder=SeededResponder([5, 1, 5], fail_judgement=1)) as fake:
        result = verdict(metric, fake, tmp_path)
    assert (result.score, result.outcome) == (100.0, "ok")
    assert result.reason.startswith("mean of [5, 5]: 5 (1 of 3 judgements failed: ")


def test_a_rubric_longer_than_its_count_is_cut_to_it(tmp_path: Path) -> None:
    # A server that does not keep to the rubric's bound (maxItems 3: left out of the
    # schema sent, or refused) answers six criteria. The first three are the rubric, not
    # a failed verdict ("rubric: List should have at most 3 items after validation").
    metric = load(judge_file(tmp_path, RUBRIC_JUDGE.replace("count: 2", "count: 3")))
    responder = SeededResponder([4, 5, 3])
    six = [f"Criterion {i}." for i in range(1, 7)]
    with FakeLLM(responder=responder) as fake:
        fake.queue(Reply(content=json.dumps({"rubric": six})))
        result = verdict(metric, fake, tmp_path)
    assert (result.score, result.outcome, result.error) == (75.0, "ok", None)
    assert schema_names(fake) == ["VerdictRubric", *["VerdictJudgement"] * 3]  # no repair
    assert fake.requests[1]["messages"][1]["content"] == (
        "Criteria:\n1. Criterion 1.\n2. Criterion 2.\n3. Criterion 3.\n\n"
        "Review: review number 0\nLabel: positive"
    )


def test_a_judge_template_reading_what_is_not_given_is_refused(tmp_path: Path) -> None:
    path = judge_file(tmp_path, "---\nscale: 1-5\n---\n@user\nRate {source.tone}\n")
    with pytest.raises(BadInputError) as info:
        load(path)
    assert info.value.one_line() == (
        f"{path}:5: --metric: the judge reads source.tone, which promptgen does not provide "
        "(a judge reads source.prompt, source.intent, source.inputSpec, source.rules, "
        "source.input, source.output, source.groundtruth and the prompt's inputs)"
    )
    path = judge_file(tmp_path, "---\nscale: 1-5\n---\n@user\n{previous.x} {source.output}\n")
    with pytest.raises(BadInputError, match="reads previous, but the file declares no rubric"):
        load(path)
    plain = judge_file(tmp_path, "@user\nRate {source.output}\n", "plain.verdict.md")
    with pytest.raises(BadInputError, match="declares no scale, so it is not a judge"):
        load(plain)


def test_judge_files_beside_the_prompt(tmp_path: Path) -> None:
    judge = JUDGE.format(name="{name}", scale="1-5", judges=1, extra="")
    for stem in ("greet", "greet.tone", "shared", "other"):
        (tmp_path / f"{stem}.verdict.md").write_text(judge.replace("{name}", stem))
    (tmp_path / "plain.verdict.md").write_text("@user\nNot a judge: {source.output}\n")
    (tmp_path / "greet.prompty").write_text("---\nname: greet\n---\nuser:\nGreet {{review}}\n")
    (tmp_path / "other.prompty").write_text("---\nname: other\n---\nuser:\nSay {{review}}\n")
    found = [p.name for p in discover((tmp_path / "greet.prompty").resolve())]
    assert found == ["greet.tone.verdict.md", "greet.verdict.md", "plain.verdict.md",
                     "shared.verdict.md"]  # fmt: skip
    under_test = prompt().model_copy(update={"source": str(tmp_path / "greet.prompty")})
    loaded = load_metrics(under_test, Options(evaluation=Evaluation(compliance=False)))
    assert [m.name for m in loaded] == ["greet.tone", "greet", "shared"]  # plain: no scale
    # a judge file under test is not its own metric
    assert "shared.verdict.md" not in [
        p.name for p in discover((tmp_path / "shared.verdict.md").resolve())
    ]


# -- whole runs of the main command ------------------------------------------------------------


def _overview(out: Path) -> list[dict[str, str]]:
    with (out / "overview.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_verdict_template_as_the_prompt_under_test(tmp_path: Path) -> None:
    path = tmp_path / "tone.verdict.md"
    path.write_text(
        "---\nname: tone\ndescription: Says whether a reply is polite.\n---\n"
        "@system\n    You check the tone of customer-service replies.\n"
        "    Answer polite or rude, then one reason.\n"
        "@user\n    Reply to check: {source.reply}\n"
    )
    with FakeLLM(responder=PipelineResponder()) as fake:
        result = promptgen(
            tmp_path, str(path), "--effort", "min", "--api-base", fake.url, "--models", "m1",
            "--max-tests-to-run", "2", "--out", str(tmp_path / "out"), "--quiet",
        )  # fmt: skip
        under_test = [b for b in fake.requests if not b.get("response_format")]
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    assert (ctx.prompt.format, ctx.prompt.template_engine) == ("verdict", "verdict")
    assert list(ctx.prompt.inputs) == ["reply"]
    runs = [r for r in ctx.test_runs if r.model == "m1"]
    assert len(runs) == 2 and all(r.ok for r in runs)
    sent = [b["messages"] for b in under_test if b["model"] == "m1"]
    tests = {t.id: t for t in ctx.tests}
    for messages in sent:
        assert messages[0] == {
            "role": "system",
            "content": "You check the tone of customer-service replies.\n"
            "Answer polite or rude, then one reason.",
        }
        assert messages[1]["content"].startswith("Reply to check: ")
        assert "{source." not in messages[1]["content"]
    replies = {f"Reply to check: {tests[r.test_id].inputs['reply']}" for r in runs}
    assert {m[1]["content"] for m in sent} == replies
    (row,) = [r for r in _overview(out) if r["scenario"] == "(all)"]
    assert (row["model"], row["runs"], float(row["compliance"])) == ("m1", "2", 100.0)
    assert "tone" in (out / "report.md").read_text()


def test_judge_metrics_from_the_flag_and_beside_the_prompt(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    prompt_file = folder / "label.prompty"
    prompt_file.write_text(
        "---\nname: label\n---\nsystem:\nLabel the review positive or negative.\n"
        "user:\n{{review}}\n"
    )
    (folder / "label.verdict.md").write_text(RUBRIC_JUDGE)  # found beside the prompt
    flag = tmp_path / "verdicts.verdict.md"
    flag.write_text(JUDGE.format(name="votes", scale="[good, fair, poor]", judges=3, extra=""))
    responder = SeededResponder([4, 5, 3], choices=["good", "poor", "good"])
    with FakeLLM(responder=responder) as fake:
        result = promptgen(
            tmp_path, str(prompt_file), "--effort", "min", "--api-base", fake.url,
            "--models", "m1", "--max-tests-to-run", "2", "--no-compliance",
            "--metric", str(flag), "--out", str(tmp_path / "out"), "--quiet",
        )  # fmt: skip
        names = schema_names(fake)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    assert {m.name: (m.kind, m.source) for m in ctx.metrics} == {
        "graded": ("custom", str((folder / "label.verdict.md").resolve())),
        "votes": ("custom", str(flag.resolve())),
    }
    runs = [r for r in ctx.test_runs if r.model == "m1"]
    assert len(runs) == 2
    # per run: one rubric call and 3 + 3 judgements
    assert names.count("VerdictRubric") == 2 and names.count("VerdictJudgement") == 12
    for run_ in runs:
        graded, votes = run_.metrics["graded"], run_.metrics["votes"]
        assert (graded.score, graded.outcome, graded.judges) == (75.0, "ok", 1)
        assert (votes.score, votes.outcome) == (100.0, "ok")
    reasons = {r.metric: r.reason for r in ctx.metric_results}
    assert reasons == {
        "graded": "mean of [4, 5, 3]: 4; judgement 0",
        "votes": "max of ['good', 'poor', 'good']: good",
    }
    (row,) = [r for r in _overview(out) if r["scenario"] == "(all)"]
    assert {k: float(v) for k, v in row.items() if k in ("graded", "votes")} == {
        "graded": 75.0,
        "votes": 100.0,
    }
