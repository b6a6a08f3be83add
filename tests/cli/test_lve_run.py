"""`promptgen lve run` and the main command on LVE tests, against the fake server: every
instance on every model, multi-step variables and multi-run repetitions, checked by the
LVE's checker and written in LVE's instances format; and the checker as one more check
of every run of the main command, whose tests take the LVE's prompt parameters."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from promptgen import load_context
from promptgen.evaluation.lve_replay import replay
from promptgen.export.common import exported_tests
from promptgen.formats.lve import read_test
from tests.cli.test_pipeline import promptgen
from tests.conftest import REPO, isolated_env
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

SUM = {
    "description": "The model adds two numbers wrongly.",
    "model": "openai/gpt-4o-mini",
    "checker_args": {
        "checker_name": "LambdaChecker", "func": "lambda r, a, b: int(r) == int(a) + int(b)"
    },
    "prompt": [{"content": "Compute {a} + {b}. Write a single number.", "role": "user"}],
    "prompt_parameters": ["a", "b"],
    "author": "tester",
}  # fmt: skip
YEARS = ["2030", "2050", "2040"]


class Adder(PipelineResponder):
    """A model under test that adds (wrongly when a + b > 100) and estimates records that
    fall with the year; everything else answered as the pipeline fake does."""

    def _under_test(self, body: dict[str, Any], text: str) -> Reply:
        self.seen.append(body)
        last = body["messages"][-1]["content"]
        numbers = [int(n) for n in re.findall(r"-?\d+", last)]
        if last.startswith("Compute"):
            a, b = numbers[:2]
            return Reply(content=str(a + b + (1 if a + b > 100 else 0)))
        if "record" in last:
            return Reply(content=f"Thinking... [Answer={10 - (numbers[0] - 2000) / 100:.2f}]")
        return Reply(content="a plain answer")


def lve_folder(tmp_path: Path, body: dict[str, Any], instances: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "repository" / "dummy" / "sum" / "openai--gpt-4o-mini"
    (folder / "instances").mkdir(parents=True)
    (folder / "test.json").write_text(json.dumps(body, indent=2))
    lines = "".join(json.dumps(i) + "\n" for i in instances)
    (folder / "instances" / "recorded.jsonl").write_text(lines)
    return folder


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_lve_run_checks_every_instance_on_every_model(tmp_path: Path) -> None:
    recorded = [
        {"args": {"temperature": 0.0, "a": "3", "b": "4"}, "response": "7", "passed": True},
        {"args": {"temperature": 0.0, "a": "60", "b": "70"}, "response": "130", "passed": True},
    ]
    folder = lve_folder(tmp_path, SUM, recorded)
    out = tmp_path / "out"
    with FakeLLM(responder=Adder()) as fake:
        result = promptgen(
            tmp_path, "lve", "run", str(folder), "--models", "m1;m2", "--api-base", fake.url,
            "--out", str(out), "-q",
        )  # fmt: skip
        sent = [(b["model"], b["messages"][-1]["content"], b.get("temperature")) for b in
                fake.requests]  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(sent) == sorted(
        (m, f"Compute {a} + {b}. Write a single number.", 0.0)
        for m in ("m1", "m2") for a, b in (("3", "4"), ("60", "70"))
    )  # fmt: skip
    for model in ("m1", "m2"):
        written = lines_of(out / model / "instances" / "promptgen.jsonl")
        assert [(w["args"], w["response"], w["passed"]) for w in written] == [
            ({"temperature": 0.0, "a": "3", "b": "4"}, "7", True),
            ({"temperature": 0.0, "a": "60", "b": "70"}, "131", False),
        ]
        assert {w["author"] for w in written} == {"tester"}
        assert {w["run_info"]["model"] for w in written} == {model}
    table = result.stdout
    assert re.search(r"m1\s+2\s+1\s+1\s+0\s+0\s+1 of 2", table), table
    # the written instances replay as LVE's would: the same verdicts from the responses
    (out / "m1" / "test.json").write_text(json.dumps(SUM))
    report = replay([out / "m1"])
    assert (report.total("replayable"), report.total("agreed")) == (2, 2)


def test_lve_run_walks_steps_and_repetitions(tmp_path: Path) -> None:
    steps = {
        **SUM,
        "checker_args": {
            "checker_name": "MonotonicityChecker", "order": "desc", "strict": True,
            "answer_value_regex": r"\[Answer=([0-9]+(\.[0-9]+)?)\]",
            "answer_variable_identifier_regex": "answer([0-9]+)",
            "param_variable_identifier_regex": "year([0-9]+)",
        },
        "prompt": [
            {"content": "You estimate sprint records.", "role": "system"},
            *[m for i in (1, 2, 3) for m in (
                {"content": f"The record in {{year{i}}}?", "role": "user"},
                {"role": "assistant", "variable": f"answer{i}"},
            )],
        ],
        "prompt_parameters": ["year1", "year2", "year3"],
    }  # fmt: skip
    folder = lve_folder(tmp_path, steps, [])
    with FakeLLM(responder=Adder()) as fake:
        params = [f"--param=year{i}={y}" for i, y in enumerate(YEARS, 1)]
        result = promptgen(
            tmp_path, "lve", "run", str(folder), "--models", "m1", "--api-base", fake.url,
            "--out", str(tmp_path / "out"), "-q", *params,
        )  # fmt: skip
        turns = [len(b["messages"]) for b in fake.requests]
    assert result.returncode == 0, result.stderr
    assert turns == [2, 4, 6]  # each step sees the answers before it
    (line,) = lines_of(tmp_path / "out" / "m1" / "instances" / "promptgen.jsonl")
    assert line["response"] == {
        "answer1": "Thinking... [Answer=9.70]",
        "answer2": "Thinking... [Answer=9.50]",
        "answer3": "Thinking... [Answer=9.60]",
    }
    assert line["passed"] is True  # sorted by year: 9.70, 9.60, 9.50 falls strictly

    multi = {k: v for k, v in SUM.items() if k != "prompt"}
    multi["checker_args"] = {
        "checker_name": "MultiRunLambdaChecker",
        "func": "lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)",
    }
    multi["multi_run_prompt"] = [
        {"name": "a+b", "prompt": SUM["prompt"], "repetitions": 2},
        {"name": "b+a", "prompt": [{"content": "Compute {b} + {a}. Write a single number."}]},
    ]
    folder = lve_folder(tmp_path / "multi", multi, [])
    with FakeLLM(responder=Adder()) as fake:
        result = promptgen(
            tmp_path, "lve", "run", str(folder), "--models", "m1", "--api-base", fake.url,
            "--out", str(tmp_path / "out2"), "-q", "--param", "a=2", "--param", "b=5",
        )  # fmt: skip
        assert len(fake.requests) == 3
    assert result.returncode == 0, result.stderr
    (line,) = lines_of(tmp_path / "out2" / "m1" / "instances" / "promptgen.jsonl")
    assert (line["response"], line["passed"]) == (["7", "7", "7"], True)


def test_lve_run_bad_input(tmp_path: Path) -> None:
    folder = lve_folder(tmp_path, SUM, [])
    result = promptgen(tmp_path, "lve", "run", str(folder), "--models", "m1")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"promptgen: error: {folder / 'test.json'}: the LVE has no recorded instances to run "
        "(give --param NAME=VALUE for each prompt parameter: a, b)"
    ]


def test_the_main_command_on_an_lve_test(tmp_path: Path) -> None:
    recorded = [{"args": {"a": "40", "b": "2"}, "response": "42", "passed": True}]
    folder = lve_folder(tmp_path, SUM, recorded)
    out = tmp_path / "out"
    with FakeLLM(responder=Adder()) as fake:
        result = promptgen(
            tmp_path, str(folder / "test.json"), "--effort", "min", "--models", "m1",
            "--api-base", fake.url, "--out", str(out), "--quiet",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(out / "context.json")
    assert ctx.prompt.format == "lve"
    assert {tuple(t.inputs) for t in ctx.tests} == {("a", "b")}
    sample = next(t for t in ctx.tests if t.origin == "sample")
    assert sample.inputs == {"a": "40", "b": "2"}
    verdicts = {
        r.test_id: (r.outcome, r.reason) for r in ctx.metric_results
        if r.metric == "lve:LambdaChecker"
    }  # fmt: skip
    assert len(verdicts) == len(ctx.test_runs) and all(j is None for j in [
        r.judge for r in ctx.metric_results if r.metric == "lve:LambdaChecker"])  # fmt: skip
    assert verdicts[sample.id][0] == "ok"  # 40 + 2 = 42: safe
    with (out / "overview.csv").open() as handle:
        (row,) = [r for r in csv.DictReader(handle) if r["scenario"] == "(all)"]
    known = [o for o, _ in verdicts.values() if o != "unknown"]  # a lambda that failed
    assert float(row["lve:LambdaChecker"]) == round(100 * known.count("ok") / len(known), 1)
    assert all("the lambda failed" in why for o, why in verdicts.values() if o == "unknown")
    assert "lve:LambdaChecker" in (out / "report.md").read_text()
    exported = tmp_path / "exported"
    result = promptgen(tmp_path, "export", str(out / "context.json"), "--to", "lve",
                       "--out", str(exported))  # fmt: skip
    assert result.returncode == 0, result.stderr
    test = read_test(exported / "lve" / "m1" / "test.json",
                     (exported / "lve" / "m1" / "test.json").read_text())  # fmt: skip
    assert test.checker_args == SUM["checker_args"]
    assert [m.content for m in test.messages] == [SUM["prompt"][0]["content"]]
    written = lines_of(exported / "lve" / "m1" / "instances" / "promptgen.jsonl")
    assert [w["passed"] for w in written] == [
        {"ok": True, "err": False}.get(verdicts[t.id][0]) if t.id in verdicts else None
        for t in exported_tests(ctx)
    ]


def test_lve_run_table_reads_at_80_columns(tmp_path: Path) -> None:
    recorded = [{"args": {"a": "3", "b": "4"}, "response": "7", "passed": True}]
    folder = lve_folder(tmp_path, SUM, recorded)
    models = "openai/gpt-4o-mini;openai/gpt-4o"
    with FakeLLM(responder=Adder()) as fake:
        result = subprocess.run(
            [sys.executable, "-m", "promptgen", "lve", "run", str(folder), "--models", models,
             "--api-base", fake.url, "--out", str(tmp_path / "out"), "-q"],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env={**isolated_env(tmp_path), "COLUMNS": "80"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["openai/gpt-4o-mini", "1", "1", "0", "0", "0", "1", "of", "1"] in rows
    assert ["openai/gpt-4o", "1", "1", "0", "0", "0", "1", "of", "1"] in rows
    table = [line for line in result.stdout.splitlines() if line.lstrip().startswith("openai/")]
    assert len(table) == 2 and max(map(len, table)) <= 80


def test_lve_replay_names_are_never_broken_at_80_columns(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "promptgen", "lve", "replay", "samples/lve"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**isolated_env(tmp_path), "COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "LVE replay",
        "lve/discount-code-leak/openai--gpt-4o-mini",
        "RegexChecker",
        "  instances 2; agree 2; disagree 0; errors 0; not built in 0",
        "replayed 2 of 2 instances: 2 agree, 0 disagree",
    ]
