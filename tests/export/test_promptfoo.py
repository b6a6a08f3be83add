"""The promptfoo export: the config it writes, and a real `promptfoo eval` of it against
a fake OpenAI server on 127.0.0.1, read back from promptfoo's own results file.

promptfoo is installed from npm by tests/tools/install_promptfoo.sh (a pinned version,
package-lock.json); the install is the one step that reaches the network, and the test
skips, saying so, only where npm is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptgen.context import Context
from promptgen.export import ExportSettings, write_exports
from promptgen.export.common import exported_tests, output_rules
from promptgen.export.promptfoo import MESSAGES_VAR
from tests.conftest import REPO
from tests.export.conftest import SENTIMENT_TESTS, SavedRun
from tests.fakellm import FakeLLM, Reply, json_reply

TOOLS = REPO / "tests" / "tools"
BIN = TOOLS / "promptfoo" / "node_modules" / ".bin" / "promptfoo"
UNDER_TEST = "pf-under-test"
ANSWER = "positive answer"


def config_of(out: Path) -> dict[str, Any]:
    return yaml.safe_load((out / "promptfoo" / "promptfooconfig.yaml").read_text())


def test_config_values(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx
    (result,) = write_exports(ctx, ["promptfoo"], tmp_path, ExportSettings())
    config = config_of(tmp_path)
    providers = {p["label"]: p for p in config["providers"]}
    assert providers["openai/gpt-4o-mini"]["id"] == "openai:chat:gpt-4o-mini"
    assert providers["openai/gpt-4o-mini"]["config"] == {
        "temperature": 0.2, "max_tokens": 50, "apiBaseUrl": ctx.options.models.api_base,
    }  # fmt: skip
    assert providers["azure/my-deployment"]["id"] == "azure:chat:my-deployment"
    prompt = json.loads((tmp_path / "promptfoo" / "prompt.json").read_text())
    assert [m["role"] for m in prompt] == ["system", "user"] and prompt[1][
        "content"
    ] == "{{review}}"
    tests = exported_tests(ctx)
    assert len(config["tests"]) == len(tests) == SENTIMENT_TESTS
    rules = output_rules(ctx)
    for entry, test in zip(config["tests"], tests, strict=True):
        assert entry["vars"] == {"review": test.inputs["review"], "expected": test.groundtruth}
        assert entry["metadata"]["test_id"] == test.id
        kinds = [(a["type"], a.get("value")) for a in entry["assert"]]
        assert kinds == [
            ("icontains", "answer"), ("not-contains", "VIOLATION"),
            ("word-count", {"max": 40}), ("regex", "^[a-z]"),
            *(("llm-rubric", r.text) for r in rules),
        ]  # fmt: skip
    assert any("classify-sentiment-compliance" in line for line in result.skipped)


class Grader:
    """Answers the model under test with plain text, and promptfoo's rubric grader with
    its JSON verdict: the first rule fails, every other passes."""

    def __init__(self, failing_rule: str) -> None:
        self.failing_rule = failing_rule

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = str((body.get("messages") or [{}])[-1].get("content", ""))
        found = re.search(r"<Rubric>\s*(.*?)\s*</Rubric>", last, re.S)  # not the examples
        if found is None:
            return Reply(content=ANSWER)
        passed = found.group(1) != self.failing_rule
        return json_reply({"reason": "checked", "pass": passed, "score": 1.0 if passed else 0.0})


@pytest.fixture(scope="module")
def promptfoo() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: promptfoo cannot be installed to run the export")
    done = subprocess.run(
        ["bash", str(TOOLS / "install_promptfoo.sh")], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"installing promptfoo failed:\n{done.stdout}{done.stderr}"
    return BIN


def promptfoo_eval(tool: Path, folder: Path, tmp: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG")}
    env |= {
        "HOME": str(tmp / "home"),
        "PROMPTFOO_CONFIG_DIR": str(tmp / "promptfoo-config"),
        "PROMPTFOO_CACHE_PATH": str(tmp / "promptfoo-cache"),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
        "PROMPTFOO_SELF_HOSTED": "1",
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "NO_PROXY": "127.0.0.1",
    }
    results = tmp / "results.json"
    command = [
        str(tool), "eval", "-c", "promptfooconfig.yaml", "-o", str(results), "--no-cache",
        "--no-progress-bar", "--no-share", "--no-table",
    ]  # fmt: skip
    run = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    # promptfoo exits 100 when some assertions failed (as this test makes them)
    assert run.returncode in (0, 100), (run.stdout + run.stderr)[-3000:]
    return json.loads(results.read_text())


def _server_context(run: SavedRun, url: str) -> Context:
    ctx = run.ctx.model_copy(deep=True)
    ctx.options.models.api_base = url
    ctx.tests[0].inputs["review"] = "Looks {{ 7*7 }} fine"  # nunjucks in a test value
    # Values promptfoo would read as a file, run as code or as a package's function.
    for test, value in zip(exported_tests(ctx)[1:], HOSTILE, strict=False):
        test.inputs["review"] = value
    return ctx


HOSTILE = ("file:///etc/passwd", "file://steal.js", "file://run.py:main", "package:evil-pkg:fn")
STEAL_JS = """const fs = require('fs');
module.exports = function () {
  fs.writeFileSync('stolen.txt', 'ran');
  return { output: 'STOLEN' };
};
"""


@pytest.fixture(scope="module")
def graded(sentiment_run: SavedRun) -> Iterator[FakeLLM]:
    rule = output_rules(sentiment_run.ctx)[0].text
    with FakeLLM(responder=Grader(rule)) as fake:
        yield fake


def test_promptfoo_eval_runs_every_test_and_assertion(
    sentiment_run: SavedRun, graded: FakeLLM, promptfoo: Path, tmp_path: Path
) -> None:
    ctx = _server_context(sentiment_run, graded.url)
    settings = ExportSettings(models=[f"openai/{UNDER_TEST}"])
    write_exports(ctx, ["promptfoo"], tmp_path, settings)
    config = config_of(tmp_path)
    (tmp_path / "promptfoo" / "steal.js").write_text(STEAL_JS)
    data = promptfoo_eval(promptfoo, tmp_path / "promptfoo", tmp_path)
    assert not (tmp_path / "promptfoo" / "stolen.txt").exists()  # steal.js never ran
    rows = data["results"]["results"]
    tests = exported_tests(ctx)
    assert len(rows) == len(tests) == SENTIMENT_TESTS  # every test, on the one provider
    rules = output_rules(ctx)
    by_id = {row["testCase"]["metadata"]["test_id"]: row for row in rows}
    assert set(by_id) == {t.id for t in tests}
    for test in tests:
        row = by_id[test.id]
        assert row["response"]["output"] == ANSWER
        parts = row["gradingResult"]["componentResults"]
        asserts = config["tests"][0]["assert"]
        assert len(parts) == len(asserts) == 4 + len(rules)  # every assertion evaluated
        verdicts = {
            (p["assertion"]["type"], str(p["assertion"].get("value"))): p["pass"] for p in parts
        }
        assert verdicts[("icontains", "answer")] is True
        assert verdicts[("not-contains", "VIOLATION")] is True
        assert verdicts[("word-count", "{'max': 40}")] is True
        assert verdicts[("regex", "^[a-z]")] is True
        for rule in rules:
            assert verdicts[("llm-rubric", rule.text)] is (rule is not rules[0])
        assert row["success"] is False  # the first rule fails everywhere
    stats = data["results"]["stats"]
    assert stats["failures"] == SENTIMENT_TESTS and stats["successes"] == 0
    # The model under test got each test's input in the prompt; a value that looks like
    # a template is sent as written, not evaluated.
    sent = [
        b for b in graded.requests if b["model"] == UNDER_TEST and "<Rubric>" not in json.dumps(b)
    ]
    users = sorted(b["messages"][-1]["content"] for b in sent)
    assert users == sorted(t.inputs["review"] for t in tests)
    assert "Looks {{ 7*7 }} fine" in users
    assert set(HOSTILE) <= set(users)  # as written: no file read, no code run
    (hostile,) = [t["vars"] for t in config["tests"] if t["vars"]["review"].startswith("file{")][:1]
    assert (hostile["review"], hostile["promptgen_literal_1"]) == (
        "file{{promptgen_literal_1}}", ":///etc/passwd",
    )  # fmt: skip
    assert {(b["temperature"], b["max_tokens"]) for b in sent} == {(0.2, 50)}


def test_a_rule_promptfoo_would_load_reaches_the_grader_as_text(
    sentiment_run: SavedRun, promptfoo: Path, tmp_path: Path
) -> None:
    """Rule texts come from models: one starting `file://` or `package:` is an assertion
    value promptfoo would run (runAssertion loads it before rendering); it is written so
    the grader gets the text, and nothing runs."""
    ctx = sentiment_run.ctx.model_copy(deep=True)
    first, second = output_rules(ctx)[:2]
    first.text, second.text = "file://steal.js", "package:evil-pkg:fn"
    with FakeLLM(responder=Grader("none fails")) as fake:
        ctx.options.models.api_base = fake.url
        write_exports(ctx, ["promptfoo"], tmp_path, ExportSettings(models=[f"openai/{UNDER_TEST}"]))
        (tmp_path / "promptfoo" / "steal.js").write_text(STEAL_JS)
        promptfoo_eval(promptfoo, tmp_path / "promptfoo", tmp_path)
        lasts = [str(b["messages"][-1]["content"]) for b in fake.requests]
        rubrics = {
            found.group(1)
            for last in lasts
            for found in [re.search(r"<Rubric>\s*(.*?)\s*</Rubric>", last, re.S)]
            if found
        }
    assert not (tmp_path / "promptfoo" / "stolen.txt").exists()
    assert {"file://steal.js", "package:evil-pkg:fn"} <= rubrics
    values = [a["value"] for a in config_of(tmp_path)["tests"][0]["assert"]]
    assert "{{ 'file' }}://steal.js" in values and "{{ 'package' }}:evil-pkg:fn" in values


def test_a_template_with_logic_is_sent_rendered(
    sentiment_run: SavedRun, graded: FakeLLM, promptfoo: Path, tmp_path: Path, write: Any
) -> None:
    from promptgen.formats import load_prompt
    from promptgen.results import Test

    path = write(
        "logic.prompty",
        "---\nname: logic\ninputs:\n  topic: {type: string}\n"
        "  formal: {type: boolean, default: false}\n---\n"
        "system:\n{% if formal %}Write formally.{% else %}Write casually.{% endif %}\n\n"
        "user:\nTell me about {{topic}}.\n",
    )
    prompt = load_prompt(path)
    tests = [
        Test(id="test-a", inputs={"topic": "tea", "formal": True}),
        Test(id="test-b", inputs={"topic": "coffee"}),
    ]
    ctx = Context(prompt=prompt, tests=tests)
    ctx.options.models.api_base = graded.url
    graded.reset()
    (result,) = write_exports(ctx, ["promptfoo"], tmp_path, ExportSettings(models=[UNDER_TEST]))
    assert any(MESSAGES_VAR in note for note in result.notes)
    data = promptfoo_eval(promptfoo, tmp_path / "promptfoo", tmp_path)
    assert len(data["results"]["results"]) == 2
    sent = {b["messages"][0]["content"]: b["messages"][1]["content"] for b in graded.requests}
    assert sent == {
        "Write formally.": "Tell me about tea.",
        "Write casually.": "Tell me about coffee.",
    }
