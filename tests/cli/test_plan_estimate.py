"""The plan is honest: the dry run's total, made before any call, against the calls the
same run then makes on the fake server, at min, low (the default) and high effort.

Before any call the plan counts one rule per instruction sentence of the prompt (4
here, and the fake writes 4 rules), the author's samples as tests, the effort's tests
per rule and runs per test, and a judge call per run and judged metric. It used to
count on 10 rules whatever the prompt: 118 planned for 69 made at low effort (+71 %),
2364 for 833 at high (+184 %)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.conftest import promptgen_in as promptgen
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = REPO / "samples" / "classify-sentiment.prompty"
TOLERANCE = 0.35  # the dry run's total is within 35 % of the calls made


@pytest.mark.parametrize("effort", ["min", "low", "high"])
def test_the_dry_run_total_is_near_the_calls_made(tmp_path: Path, effort: str) -> None:
    with FakeLLM(responder=PipelineResponder()) as fake:
        args = ("--effort", effort, "--api-base", fake.url, "--models", "m1", "--quiet")
        args += ("--out", str(tmp_path / "out"))
        plan = promptgen(tmp_path, str(SAMPLE), *args, "--dry-run")
        assert plan.returncode == 0, plan.stderr
        total = next(line.split() for line in plan.stdout.splitlines() if line.startswith("total"))
        planned = int(total[1])
        assert fake.requests == []
        result = promptgen(tmp_path, str(SAMPLE), *args)
        assert result.returncode == 0, result.stderr
        made = len(fake.requests)
    assert abs(planned - made) <= TOLERANCE * made, (effort, planned, made)
