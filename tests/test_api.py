"""The library API: the example in docs/api.md runs, and `run` is what the CLI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from promptgen import Options, PromptUnderTest, load_context, prepare, run, save_context
from promptgen.errors import BadInputError
from promptgen.options import Models, Run
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

DOC = REPO / "docs" / "api.md"


def test_the_documented_example_runs(tmp_path: Path) -> None:
    (code, *_) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    code = code.replace('"local/qwen2.5-coder-0.5b"', '"m1"')
    (tmp_path / "samples").symlink_to(REPO / "samples")
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    with FakeLLM(responder=PipelineResponder()) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
        env |= {"PROMPTGEN_API_BASE": fake.url, "PROMPTGEN_CACHE_DIR": str(tmp_path / "c")}
        env["PYTHONPATH"] = str(REPO)
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Transforms the given input" in result.stdout  # the intent
    assert result.stdout.count("m1 ok ") >= 1
    out = tmp_path / "promptgen-out" / "sentiment"
    for name in ("context.json", "tests.json", "overview.csv", "report.md", "report.html"):
        assert (out / name).is_file(), name
    ctx = load_context(out / "context.json")
    assert ctx.options.effort == "min" and ctx.options.models.models == ["m1"]
    assert all(r.metrics["compliance"].outcome == "ok" for r in ctx.test_runs)


def test_prepare_calls_nothing_and_run_takes_its_result(tmp_path: Path) -> None:
    with FakeLLM(responder=PipelineResponder()) as fake:
        options = Options(
            effort="min", models=Models(api_base=fake.url), run=Run(out=tmp_path / "o")
        )
        prepared = prepare(REPO / "samples" / "classify-sentiment.prompty", options)
        assert fake.requests == []
        assert prepared.cfg.gen.tests_per_rule == 1
        assert prepared.cfg.sources["tests_per_rule"] == "effort min"
        ctx = run(prepared, save=False)
        assert ctx.tests and not (tmp_path / "o" / "context.json").exists()


def test_a_resumed_context_keeps_its_server_and_models_and_says_so(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # nothing listens: prepare calls nothing
    first = prepare(
        REPO / "samples" / "classify-sentiment.prompty",
        Options(models=Models(api_base=url, models=["m1"]), run=Run(out=tmp_path)),
    )
    save_context(first.ctx, tmp_path / "context.json")
    resumed = prepare(tmp_path / "context.json", Options())
    assert resumed.cfg.settings is not None and resumed.cfg.settings.api_base == url
    assert resumed.cfg.models == ("m1",)
    assert resumed.cfg.sources["api_base"] == "command line (earlier run)"
    assert f"resuming with --api-base {url} and --models m1 from the saved run" in resumed.notes
    other = prepare(tmp_path / "context.json", Options(models=Models(api_base="http://h:1/v1")))
    assert other.cfg.settings is not None and other.cfg.settings.api_base == "http://h:1/v1"
    assert not any(n.startswith("resuming with --api-base") for n in other.notes)
    assert "--models m1" in next(n for n in other.notes if n.startswith("resuming with"))


def test_prepare_takes_the_models_under_test_from_each_source_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--models, then the saved run's, then PROMPTGEN_MODELS, then the config file."""
    for name in [k for k in os.environ if k.startswith("PROMPTGEN_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PROMPTGEN_MODELS", "env/m")
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "promptgen.toml"
    config.write_text('[models]\nunder_test = ["file/m"]\n', encoding="utf-8")
    sample = REPO / "samples" / "classify-sentiment.prompty"

    def models(source: Path, options: Options) -> tuple[tuple[str, ...], str]:
        prepared = prepare(source, options)
        save_context(prepared.ctx, prepared.out / "context.json")
        return prepared.cfg.models, prepared.cfg.sources["models"]

    given = Options(models=Models(models=["cli/m"]), run=Run(out=tmp_path / "a"))
    assert models(sample, given) == (("cli/m",), "command line")
    resumed = models(tmp_path / "a" / "context.json", Options())
    assert resumed == (("cli/m",), "command line (earlier run)")
    assert models(sample, Options(run=Run(out=tmp_path / "b"))) == (("env/m",), "PROMPTGEN_MODELS")
    monkeypatch.delenv("PROMPTGEN_MODELS")
    fresh = Options(run=Run(out=tmp_path / "b", fresh=True))
    assert models(sample, fresh) == (("file/m",), f"config {config}")
    config.unlink()
    assert models(sample, fresh) == ((), "default")


def test_the_library_gets_the_same_checks(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not an http"):
        Options(models=Models(api_base="file:///etc/passwd"))
    with pytest.raises(ValidationError, match="finite"):
        Options(run=Run(fail_under=float("nan")))
    escaping = PromptUnderTest(name="../../etc", messages=[])
    assert prepare(escaping, Options()).out == Path("promptgen-out") / "etc"
    with pytest.raises(BadInputError, match="is not a folder"):
        prepare(escaping, Options(run=Run(out=Path("/dev/null"))))
