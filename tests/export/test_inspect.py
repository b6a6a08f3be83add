"""The Inspect AI export: the files it writes, and a real `inspect eval` of them against
the fake OpenAI server, read back from Inspect's own log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen.errors import BadInputError
from promptgen.export import ExportResult, ExportSettings
from promptgen.export.common import (
    expected_output,
    exported_tests,
    input_text,
    rendered_messages,
    rules_text,
)
from promptgen.export.inspect_ai import py_text, task_name, write
from promptgen.results import Test
from tests.conftest import REPO
from tests.export.conftest import SENTIMENT_TESTS, SavedRun
from tests.fakellm import FakeLLM, Reply

UNDER_TEST = "gpt-4o-mini"  # a known OpenAI name: Inspect talks chat completions to it
GRADER = "gpt-4o"
ANSWER = "positive"
UNREADABLE = "I would rather not say."


def rows(out: Path) -> list[dict[str, Any]]:
    lines = (out / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def exported(sentiment_run: SavedRun, tmp_path_factory: pytest.TempPathFactory) -> ExportResult:
    return write(
        sentiment_run.ctx, tmp_path_factory.mktemp("inspect") / "inspect", ExportSettings()
    )


# -- the files ------------------------------------------------------------------------------


def test_dataset_has_one_sample_per_test(sentiment_run: SavedRun, exported: ExportResult) -> None:
    ctx = sentiment_run.ctx
    tests = exported_tests(ctx)
    samples = rows(exported.paths[0].parent)
    assert len(tests) == SENTIMENT_TESTS
    assert [s["id"] for s in samples] == [t.id for t in tests]
    for test, s in zip(tests, samples, strict=True):
        rule = ctx.rule(test.rule_id)
        assert rule is not None or test.origin == "sample"  # the prompt's own sample
        assert s["input"] == rendered_messages(ctx, test)
        assert [m["role"] for m in s["input"]] == ["system", "user"]
        assert s["input"][1]["content"] == test.inputs["review"]
        assert s["target"] == test.groundtruth  # accepted groundtruth answers
        assert s["target"].startswith("gt answer")
        assert s["metadata"] == {
            "test_id": test.id,
            "rule_id": test.rule_id,
            "rule": rule.text if rule else None,
            "scenario": test.scenario,
            "inverse": test.inverse,
            "origin": test.origin,
            "inputs": {"review": test.inputs["review"]},
            "judge_input": test.inputs["review"],
        }
    assert sum(s["metadata"]["inverse"] for s in samples) == 4
    assert [s["metadata"]["origin"] for s in samples].count("sample") == 1


def test_task_file_compiles_and_is_ruff_clean(
    sentiment_run: SavedRun, exported: ExportResult
) -> None:
    task = exported.paths[1]
    text = task.read_text(encoding="utf-8")
    compile(text, str(task), "exec")
    assert "def classify_sentiment(grader: str | None = None) -> Task:" in text
    assert "config=GenerateConfig(temperature=0.2, max_tokens=50)" in text
    assert "scorer=rules_rubric(grader)," in text
    assert rules_text(sentiment_run.ctx) in text  # the rubric the grader reads
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    for command in (["check"], ["format", "--check"]):
        ruff = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--config", str(pyproject), str(task)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert ruff.returncode == 0, ruff.stdout + ruff.stderr


def test_what_is_not_carried_over(exported: ExportResult) -> None:
    skipped = exported.skipped
    assert len(skipped) == 6, skipped
    assert skipped[0].startswith("metric 'accuracy': ")
    assert skipped[1].startswith(
        "metric 'classify-sentiment-compliance' (classify-sentiment.metric.prompty): "
    )
    checks = [line.split("'")[1] for line in skipped[2:]]
    assert checks == ["icontains=answer", "not-contains=VIOLATION", "word-count={max: 40}",
                      "regex=^[a-z]"]  # fmt: skip
    out = exported.paths[1].parent
    assert exported.notes == [
        f"{SENTIMENT_TESTS} samples in {out / 'dataset.jsonl'}",
        f"run: cd {out} && inspect eval task.py --model openai/gpt-4o-mini",
        f"run: cd {out} && inspect eval task.py --model openai/azure/my-deployment",
    ]


def test_contains_expected_becomes_includes(sentiment_run: SavedRun, tmp_path: Path) -> None:
    """`contains={{expected}}` is Inspect's includes() when every target is the author's
    sample output; with groundtruth targets it is skipped."""
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.options.evaluation.checks = []
    ctx.prompt.checks = [{"contains": "{{expected}}"}, {"icontains": "{{ expected }}"}]
    with_groundtruth = write(ctx, tmp_path / "a", ExportSettings())
    assert [line.split("'")[1] for line in with_groundtruth.skipped[2:]] == [
        "contains={{expected}}",
        "icontains={{ expected }}",
    ]
    samples = [
        Test(id=f"s{i}", inputs={"review": f"review {i}"}, origin="sample", expected_output="x")
        for i in range(2)
    ]
    ctx.tests = samples
    result = write(ctx, tmp_path / "b", ExportSettings(models=["openai/o", "local/x"]))
    assert result.skipped[2:] == ["model local/x: no Inspect AI provider known for 'local'; "
                                  "give --model yourself"]  # fmt: skip
    text = (tmp_path / "b" / "task.py").read_text(encoding="utf-8")
    assert (
        "scorer=[rules_rubric(grader), includes(ignore_case=False), includes(ignore_case=True)]"
        in text
    )
    compile(text, "task.py", "exec")
    assert [r["target"] for r in rows(tmp_path / "b")] == ["x", "x"]


@pytest.mark.parametrize(
    "text",
    [
        "plain\ntext",
        'ends with a quote "',
        'three """ quotes and a \\ backslash\tand a tab',
        "a long line " * 20 + "\nand a \\d+ regex " * 12,
    ],
)
def test_judge_text_literals_are_exact(text: str) -> None:
    literal = py_text(text, "        ")
    assert eval(literal) == text
    assert all(len(line) <= 100 for line in literal.splitlines())


def test_task_names() -> None:
    assert task_name("classify-sentiment") == "classify_sentiment"
    assert task_name("3 Little Pigs!") == "prompt_3_little_pigs"
    assert task_name("class") == "class_"
    assert task_name("---") == "prompt"


def test_unwritable_folder_is_bad_input(sentiment_run: SavedRun, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BadInputError, match="cannot write the Inspect AI export"):
        write(sentiment_run.ctx, blocker / "inspect", ExportSettings())


# -- the real run ---------------------------------------------------------------------------


class Grader:
    """Answers the model under test with plain text and the judge with a verdict:
    `err` for the inverse tests' inputs (one of them unreadable), `ok` for the rest."""

    def __init__(self, failing: list[str]) -> None:
        self.failing = failing

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "<ANSWER>" not in text:
            return Reply(content=ANSWER)
        found = re.search(r"<INPUT>\n(.*?)\n</INPUT>", text, re.S)
        judged = found.group(1) if found else ""
        if judged == self.failing[0]:
            return Reply(content=UNREADABLE)
        if judged in self.failing:
            return Reply(content="Rule 2 is broken, so: err")
        return Reply(content="Checked every rule: ok")


@pytest.fixture(scope="module")
def graded(sentiment_run: SavedRun) -> Iterator[tuple[FakeLLM, list[Test]]]:
    inverse = [t for t in exported_tests(sentiment_run.ctx) if t.inverse]
    responder = Grader([input_text(sentiment_run.ctx, t) for t in inverse])
    with FakeLLM(responder=responder) as fake:
        yield fake, inverse


TOOL = REPO / "tests" / "tools" / "inspect" / ".venv" / "bin" / "python"


@pytest.fixture(scope="session")
def inspect_tool() -> Path:
    """Inspect AI in its own environment (tests/tools/install_inspect.sh), as a user runs
    an exported task: its OpenAI provider needs openai 3, which promptgen's litellm does
    not accept yet. Installing it is the one step here that reaches the network (PyPI)."""
    script = REPO / "tests" / "tools" / "install_inspect.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"installing inspect-ai failed:\n{done.stdout}{done.stderr}"
    return TOOL


def inspect_eval(out: Path, tmp: Path, server: FakeLLM, *args: str) -> Any:
    """`inspect eval task.py` as a user runs it, in its own process; the log, read back
    with the project's own inspect_ai (the dev extra)."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG")}
    env |= {
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "dummy",
        "INSPECT_DISPLAY": "log",  # no live display; errors still reach stderr
        "NO_PROXY": "127.0.0.1",
    }
    command = [
        str(TOOL), "-m", "inspect_ai", "eval", "task.py", "--model", f"openai/{UNDER_TEST}",
        "--log-dir", str(tmp / "logs"), "--log-format", "json", "--display", "log",
        "--max-retries", "0", "--timeout", "60", *args,
    ]  # fmt: skip
    run = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    (log_info,) = list_eval_logs(str(tmp / "logs"))
    return read_eval_log(log_info)


@pytest.mark.parametrize("grader", [GRADER, None])
def test_inspect_eval_scores_with_the_rubric(
    sentiment_run: SavedRun,
    graded: tuple[FakeLLM, list[Test]],
    tmp_path: Path,
    grader: str | None,
    inspect_tool: Path,
) -> None:
    ctx = sentiment_run.ctx
    server, inverse = graded
    server.reset()
    out = tmp_path / "inspect"
    write(ctx, out, ExportSettings())
    args = ["-T", f"grader=openai/{grader}"] if grader else []
    log = inspect_eval(out, tmp_path, server, *args)

    tests = {t.id: t for t in exported_tests(ctx)}
    assert log.status == "success"
    assert log.eval.task == "classify_sentiment"
    assert log.samples is not None and len(log.samples) == len(tests) == SENTIMENT_TESTS
    expected = {t: "C" for t in tests} | {t.id: "I" for t in inverse} | {inverse[0].id: "N"}
    values = {str(s.id): s.scores["rules_rubric"].value for s in log.samples}
    assert values == expected
    # every test but the 4 inverse ones
    assert list(values.values()).count("C") == SENTIMENT_TESTS - 4 == 11
    assert list(values.values()).count("I") == 3
    (score,) = log.results.scores
    assert score.name == "rules_rubric"
    assert score.metrics["accuracy"].value == pytest.approx(11 / 15)  # C over every sample
    for s in log.samples:
        test = tests[str(s.id)]
        assert s.metadata["rule_id"] == test.rule_id
        assert s.metadata["inverse"] is test.inverse
        assert s.target == expected_output(test)
        assert s.output.completion == ANSWER
        assert s.scores["rules_rubric"].answer == ANSWER

    # The model under test got each test's rendered prompt with the prompt's sampling.
    answered = [r for r in server.requests if "<ANSWER>" not in json.dumps(r["messages"])]
    sent = sorted(json.dumps(r["messages"]) for r in answered)
    assert sent == sorted(json.dumps(rendered_messages(ctx, t)) for t in tests.values())
    assert {(r["model"], r["temperature"], r["max_tokens"]) for r in answered} == {
        (UNDER_TEST, 0.2, 50)
    }
    # The grader (the model under test when none is given) read the rules and the answer.
    judged = [r for r in server.requests if r not in answered]
    assert len(judged) == SENTIMENT_TESTS
    assert {r["model"] for r in judged} == {grader or UNDER_TEST}
    assert {r["temperature"] for r in judged} == {0.0}
    for r in judged:
        user = r["messages"][-1]["content"]
        assert rules_text(ctx) in user
        assert f"<ANSWER>\n{ANSWER}\n</ANSWER>" in user


def test_inspect_reads_the_dataset(sentiment_run: SavedRun, exported: ExportResult) -> None:
    """Inspect's own loader (the dev extra) takes dataset.jsonl as written."""
    from inspect_ai.dataset import json_dataset

    (out,) = {p.parent for p in exported.paths}
    dataset = json_dataset(str(out / "dataset.jsonl"))
    tests = exported_tests(sentiment_run.ctx)
    assert [str(s.id) for s in dataset] == [t.id for t in tests]
    for sample, test in zip(dataset, tests, strict=True):
        assert [m.role for m in sample.input] == ["system", "user"]  # type: ignore[union-attr]
        assert sample.input[-1].text == test.inputs["review"]  # type: ignore[index]
        assert sample.target == (expected_output(test) or "")
