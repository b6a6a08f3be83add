"""A schema a server refuses, end to end: asked another way for that schema on that model
only, said once on stderr, recorded in context.json and the report; an error under
--strict-output (or the frontmatter's strictOutput)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import Options, load_context, prepare
from promptgen.results import SchemaRefusal
from tests.cli.test_pipeline import promptgen
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

SAMPLE = "samples/classify-sentiment.prompty"
REFUSED = "GroundtruthScore"
REASON = "'minimum' is not permitted"
SAID = (
    f"openai/x refused the json_schema of {REFUSED}: {REASON}; asked with the schema in the "
    "prompt instead"
)


class RefusingResponder(PipelineResponder):
    """Every stage answered, but the json_schema of REFUSED is refused (HTTP 400, as
    OpenAI words it); asked in JSON mode, it is answered as REFUSED."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        fmt = body.get("response_format") or {}
        if (fmt.get("json_schema") or {}).get("name") == REFUSED:
            error = {"message": REASON, "type": "invalid_request_error"}
            return Reply(status=400, raw=json.dumps({"error": error}).encode())
        if fmt.get("type") == "json_object":
            text = "\n".join(str(m.get("content", "")) for m in body["messages"])
            answer = self.answer(REFUSED, {}, text, 0)
            return Reply(content=json.dumps(answer))
        return super().__call__(body)


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM(responder=RefusingResponder()) as fake:
        yield fake


def evaluate(tmp: Path, fake: FakeLLM, *args: str):  # type: ignore[no-untyped-def]
    return promptgen(
        tmp, SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(tmp / "out"),
        "--rules-model", "openai/x", "--eval-model", "openai/x", "--models", "m1",
        "--groundtruth-model", "oracle", "--max-tests-to-run", "2", "--concurrency", "1",
        "--quiet", *args,
    )  # fmt: skip


def asked(fake: FakeLLM) -> Counter[tuple[str, str]]:
    """(model, how) per request: the schema's name, json_object, or text."""
    return Counter(
        (
            body["model"],
            ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
            or (body.get("response_format") or {}).get("type", "text"),
        )
        for body in fake.requests
    )


def test_a_refused_schema_is_said_once_recorded_and_reported(
    server: FakeLLM, tmp_path: Path
) -> None:
    result = evaluate(tmp_path, server)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "refused" in line]
    assert warnings == [f"promptgen: warning: {SAID}"]
    counts = asked(server)
    # Two tests judged for their groundtruth, both answered in JSON mode (a call already
    # waiting for its slot when the first was refused was asked in json_schema too, and
    # refused: said once all the same); every other schema on that model as json_schema.
    assert counts[("x", REFUSED)] in (1, 2) and counts[("x", "json_object")] == 2
    assert counts[("x", "ComplianceVerdict")] == 2 and counts[("x", "IntentAnswer")] == 1
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    assert ctx.schema_refusals == [
        SchemaRefusal(
            model="openai/x",
            schema_name=REFUSED,
            mode="json_schema",
            instead="json_object",
            message=REASON,
        )
    ]
    assert [t.groundtruth_status for t in ctx.tests if t.groundtruth_status] == ["ok", "ok"]
    report = (out / "report.md").read_text()
    assert f"- **Schemas refused:** 1\n  - {SAID.replace('_', chr(92) + '_')}\n" in report
    html = (out / "report.html").read_text()
    assert f'<ul class="refusals"><li>{SAID.replace(chr(39), "&#x27;")}</li></ul>' in html


def test_strict_output_stops_the_run_at_the_refusal(server: FakeLLM, tmp_path: Path) -> None:
    result = evaluate(tmp_path, server, "--strict-output")
    assert result.returncode == 3, result.stderr
    line = (
        f"promptgen: error: openai/x refused the json_schema of {REFUSED}: {REASON} "
        "(--strict-output; without it the schema is asked in the prompt instead)"
    )
    assert result.stderr.splitlines()[-1] == line
    assert "warning" not in result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")  # saved: nothing computed is lost
    assert len(ctx.tests) > 2 and ctx.stage("tests").status == "done"
    assert ctx.stage("groundtruth").status == "failed"
    assert ctx.stage("groundtruth").error == line.removeprefix("promptgen: error: ")
    assert [(r.mode, r.instead) for r in ctx.schema_refusals] == [("json_schema", None)]
    assert ctx.options["strict_output"] is True


def test_strict_output_from_the_frontmatter(tmp_path: Path) -> None:
    text = (Path(__file__).parents[2] / SAMPLE).read_text()
    path = tmp_path / "strict.prompty"
    path.write_text(text.replace("version: 1.0\n", "version: 1.0\nstrictOutput: true\n", 1))
    prepared = prepare(path, Options())
    assert prepared.cfg.settings is not None and prepared.cfg.settings.strict_output is True
    assert prepared.ctx.option_sources["strict_output"] == "frontmatter"
