"""The issue's acceptance path, end to end: a sample run with
`--export openai-evals,github-models,promptfoo,inspect`, every file then accepted by the
target's own software (the openai SDK's request types, promptgen's `.prompt.yml` loader,
a real `promptfoo eval`, a real `inspect eval`), offline against the local test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai.types.eval_create_params import EvalCreateParams
from openai.types.evals.run_create_params import RunCreateParams

from promptgen import load_context
from promptgen.export.common import exported_tests
from promptgen.formats import load_prompt
from tests.cli.test_pipeline import promptgen
from tests.export.test_inspect import inspect_eval, inspect_tool  # noqa: F401 (fixture)
from tests.export.test_openai_evals import EVAL, RUN, validate
from tests.export.test_promptfoo import promptfoo, promptfoo_eval  # noqa: F401 (fixture)
from tests.fakellm import FakeLLM, Reply, json_reply
from tests.pipeline_fake import PipelineResponder

MODEL = "gpt-4o-mini"  # a name Inspect talks chat completions to


class Everyone(PipelineResponder):
    """The pipeline's answers, plus the graders of the exported files: promptfoo's rubric
    grader (JSON) and the exported compliance judge (one word)."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = str((body.get("messages") or [{}])[-1].get("content", ""))
        if "<Rubric>" in last:
            return json_reply({"reason": "fine", "pass": True, "score": 1.0})
        if "One word: ok or err" in last:
            return Reply(content="ok")
        return super().__call__(body)


def test_sample_run_exports_files_every_target_accepts(
    tmp_path: Path,
    promptfoo: Path,  # noqa: F811
    inspect_tool: Path,  # noqa: F811
) -> None:
    with FakeLLM(responder=Everyone()) as fake:
        out = tmp_path / "out"
        result = promptgen(
            tmp_path, "samples/classify-sentiment.prompty", "--effort", "min",
            "--api-base", fake.url, "--models", MODEL, "--out", str(out), "--quiet",
            "--export", "openai-evals,github-models,promptfoo,inspect",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        ctx = load_context(out / "context.json")
        tests = exported_tests(ctx)
        exports = out / "exports"
        assert sorted(p.name for p in exports.iterdir()) == [
            "github-models", "inspect", "openai-evals", "promptfoo",
        ]  # fmt: skip

        # OpenAI Evals: the SDK's own request types, and one item per test.
        validate(
            EVAL, EvalCreateParams, json.loads((exports / "openai-evals/eval.json").read_text())
        )
        (run_file,) = (exports / "openai-evals/runs").iterdir()
        run_body = json.loads(run_file.read_text())
        validate(RUN, RunCreateParams, run_body)
        assert run_body["data_source"]["model"] == MODEL
        assert len(run_body["data_source"]["source"]["content"]) == len(tests)

        # GitHub Models: promptgen's own loader reads it back, one row per test.
        loaded = load_prompt(exports / "github-models" / "classify-sentiment.prompt.yml")
        assert len(loaded.test_samples) == len(tests)
        assert [s.inputs for s in loaded.test_samples] == [
            {"review": t.inputs["review"]} for t in tests
        ]

        # promptfoo: every test ran and every assertion was evaluated.
        data = promptfoo_eval(promptfoo, exports / "promptfoo", tmp_path)
        rows = data["results"]["results"]
        assert len(rows) == len(tests)
        rules = [r for r in ctx.rules]
        assert all(len(r["gradingResult"]["componentResults"]) == len(rules) for r in rows)
        assert data["results"]["stats"]["successes"] == len(tests)

        # Inspect AI: the log has every sample, each scored by the rubric.
        log = inspect_eval(exports / "inspect", tmp_path, fake)
        assert log.status == "success"
        assert log.samples is not None and len(log.samples) == len(tests)
        assert {s.scores["rules_rubric"].value for s in log.samples} == {"C"}
