"""The GitHub Actions workflow of docs/ci.md: valid YAML with the steps it describes, and
its `promptgen` commands, run as written through a shell against the fake server."""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

DOC = REPO / "docs" / "ci.md"
GOOD = "---\nname: {name}\n---\nsystem:\nRewrite {{{{text}}}} in upper case.{extra}\n"


def workflow() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/ci.md holds one workflow"
    data = yaml.safe_load(blocks[0])
    assert isinstance(data, dict)
    return data


def steps() -> list[dict[str, Any]]:
    return workflow()["jobs"]["prompt-tests"]["steps"]


def commands() -> list[str]:
    """The `promptgen` lines of the workflow's `run:` steps, as written."""
    lines = (ln.strip() for s in steps() if "run" in s for ln in str(s["run"]).splitlines())
    return [ln for ln in lines if ln.startswith("promptgen ")]


def test_the_workflow_has_the_steps_it_describes() -> None:
    data = workflow()
    assert set(data) >= {"name", "jobs"} and (data.get("on") or data.get(True))
    job = data["jobs"]["prompt-tests"]
    assert job["runs-on"] == "ubuntu-latest"
    assert job["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"  # never a value
    uses = {s["uses"].split("@")[0]: s for s in job["steps"] if "uses" in s}
    assert {"actions/checkout", "actions/setup-python", "actions/cache"} <= set(uses)
    cache = uses["actions/cache"]["with"]["path"]
    assert cache == f"{job['env']['PROMPTGEN_CACHE_DIR']}/responses"  # where promptgen writes
    (command,) = commands()
    args = shlex.split(command)
    junit = args[args.index("--junit") + 1]
    assert "--fail-under" in args and args[1].endswith("/")  # a folder: every prompt
    assert uses["mikepenz/action-junit-report"]["with"]["report_paths"] == junit
    assert uses["actions/upload-artifact"]["with"]["path"].rstrip("/") == "promptgen-out"
    for name in ("mikepenz/action-junit-report", "actions/upload-artifact"):
        assert uses[name]["if"] == "always()"  # results are kept when the gate fails
    runs = [s for s in job["steps"] if "run" in s]
    assert steps().index(uses["actions/cache"]) < steps().index(runs[-1])


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as server:
        yield server


def run_recipe(tmp: Path, fake: FakeLLM) -> list[subprocess.CompletedProcess[str]]:
    """Each `promptgen` command of the workflow in a shell, in a checkout-like folder, with
    the job's plain env values and the test server in place of the provider."""
    job_env = workflow()["jobs"]["prompt-tests"]["env"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env |= {k: str(v) for k, v in job_env.items() if "${{" not in str(v)}
    env |= {"OPENAI_API_KEY": "sk-test-not-a-real-key", "PROMPTGEN_API_BASE": fake.url}
    env["PYTHONPATH"] = str(REPO)
    bin_dir = tmp / "bin"  # `promptgen` on PATH: this checkout's
    bin_dir.mkdir(exist_ok=True)
    launcher = bin_dir / "promptgen"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m promptgen "$@"\n')
    launcher.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return [
        subprocess.run(
            command, shell=True, cwd=tmp, env=env, capture_output=True, text=True, timeout=300
        )
        for command in commands()
    ]


def checkout(tmp: Path, flawed: bool) -> None:
    folder = tmp / "prompts"
    folder.mkdir()
    (folder / "shout.prompty").write_text(GOOD.format(name="shout", extra=""))
    # The fake judge finds every output non-compliant when the prompt holds VIOLATION.
    extra = " VIOLATION" if flawed else ""
    (folder / "yell.md").write_text(GOOD.format(name="yell", extra=extra))
    (folder / "README.md").write_text("# Prompts\n")


def summary(tmp: Path) -> dict[str, dict[str, str]]:
    with (tmp / "promptgen-out" / "summary.csv").open(newline="") as handle:
        return {r["prompt"]: r for r in csv.DictReader(handle)}


def suites(tmp: Path) -> dict[str, ET.Element]:
    return {s.get("name", ""): s for s in ET.parse(tmp / "promptgen-out" / "junit.xml").getroot()}


def test_the_recipe_passes_good_prompts(fake: FakeLLM, tmp_path: Path) -> None:
    checkout(tmp_path, flawed=False)
    (result,) = run_recipe(tmp_path, fake)
    assert result.returncode == 0, result.stderr
    table = summary(tmp_path)
    assert set(table) == {"shout", "yell"}  # README.md skipped
    assert {(r["model"], r["compliance"], r["exit_code"]) for r in table.values()} == {
        ("openai/gpt-4o-mini", "100", "0")
    }
    junit = suites(tmp_path)
    assert set(junit) == {"shout", "yell"}
    for name, suite in junit.items():
        assert suite.get("tests") == table[name]["runs"] != "0"
        assert suite.get("failures") == suite.get("errors") == "0"
    cache = tmp_path / ".promptgen-cache" / "responses"  # the folder actions/cache keeps
    assert cache.is_dir() and any(cache.iterdir())
    asked = len(fake.requests)
    (again,) = run_recipe(tmp_path, fake)  # the next workflow run: nothing to ask
    assert again.returncode == 0 and len(fake.requests) == asked


def test_the_recipe_fails_a_prompt_below_the_bar(fake: FakeLLM, tmp_path: Path) -> None:
    checkout(tmp_path, flawed=True)
    (result,) = run_recipe(tmp_path, fake)
    assert result.returncode == 1, result.stderr
    table = summary(tmp_path)
    assert (table["shout"]["compliance"], table["shout"]["exit_code"]) == ("100", "0")
    assert (table["yell"]["compliance"], table["yell"]["exit_code"]) == ("0", "1")
    assert table["yell"]["status"] == "below --fail-under"
    yell = suites(tmp_path)["yell"]
    assert yell.get("failures") == str(int(table["yell"]["runs"]) + 1)  # + the gate's case
    gate = yell.find("testcase[@name='promptgen']/failure")
    assert gate is not None and "below --fail-under 80%" in gate.get("message", "")
