"""`--api-base` and no model named for a role: promptgen asks the server's `GET /models`
once, before the first model call. One model: it is used, said, and saved with the run;
several: exit 2 listing them; no list: the model id `default`, said; a refused
connection: the connection error of the calls, as before."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptgen import load_context
from promptgen.llm.served import MAIN_FIRST
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.mockserver import mockllm
from tests.pipeline_fake import PipelineResponder

KEY = "sk-served-models-test-0123456789abcdef"
SAMPLE = "samples/classify-sentiment.prompty"
ROLES = "--rules-model and --eval-model"


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(responder=PipelineResponder()) as server:
        yield server


def promptgen(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env.update(PROMPTGEN_CACHE_DIR=str(tmp / "cache"), OPENAI_API_KEY=KEY)
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )  # fmt: skip


def chat_models(fake: FakeLLM) -> set[str]:
    return {str(body["model"]) for body in fake.requests}


def test_the_one_model_served_is_used_said_and_kept(fake: FakeLLM, tmp_path: Path) -> None:
    fake.models = ["qwen2.5:7b"]
    out = tmp_path / "out"
    args = [SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(out), "-q"]
    result = promptgen(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"promptgen: using qwen2.5:7b, the one model {fake.url} serves ({ROLES} to choose another)"
    )
    assert fake.requests and chat_models(fake) == {"qwen2.5:7b"}
    # Asked once, with the key in the Authorization header as for chat calls; never shown.
    assert [path for path, _ in fake.model_lookups] == ["/v1/models"]
    assert fake.model_lookups[0][1]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in result.stderr + result.stdout
    # Saved with the run's options, where the choice came from beside it.
    saved = json.loads((out / "context.json").read_text())
    chosen = "openai/qwen2.5:7b"
    models = saved["options"]["models"]
    assert [models[k] for k in ("rules_model", "eval_model", "baseline_model")] == [chosen] * 3
    assert models["groundtruth_model"] == chosen
    served = f"the one model {fake.url} serves"
    assert {saved["option_sources"][k] for k in ("rules_model", "eval_model")} == {served}
    assert load_context(out / "context.json").stage("rules").status == "done"
    # A resumed run (here with models under test) asks the server nothing again.
    fake.reset()
    again = promptgen(tmp_path, str(out / "context.json"), "--models", "m", "-q")
    assert again.returncode == 0, again.stderr
    assert len(fake.model_lookups) == 1
    assert chat_models(fake) == {"m", "qwen2.5:7b"}  # the model under test, its judge
    assert "using qwen2.5:7b" not in again.stderr
    ctx = load_context(out / "context.json")
    assert ctx.option_sources["eval_model"] == served
    assert {r.judge for r in ctx.metric_results if r.judge} == {chosen}


def test_several_models_served_exit_2_listing_them(fake: FakeLLM, tmp_path: Path) -> None:
    fake.models = ["b-model", "a-model", "c-model"]
    args = [SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, *args)
    assert result.returncode == 2
    assert result.stderr == (
        f"promptgen: error: {fake.url} serves 3 models: a-model, b-model, c-model "
        f"(name the one to use with {MAIN_FIRST}{ROLES}, or PROMPTGEN_MODEL for every role)\n"
    )
    assert fake.requests == []  # no chat request made
    # A long list is cut; a role named for every role the run uses needs no choice.
    fake.models = [f"model-{i:02d}" for i in range(14)]
    result = promptgen(tmp_path, *args, "--eval-model", "model-03")
    assert result.returncode == 2
    listed = ", ".join(f"model-{i:02d}" for i in range(10))
    assert result.stderr == (
        f"promptgen: error: {fake.url} serves 14 models: {listed} and 4 more "
        f"(name the one to use with {MAIN_FIRST}--rules-model, or PROMPTGEN_MODEL for every "
        "role)\n"
    )
    named = promptgen(tmp_path, *args, "--rules-model", "model-01", "--eval-model", "model-03")
    assert named.returncode == 0, named.stderr
    assert chat_models(fake) == {"model-01", "model-03"}


def test_several_served_and_a_model_under_test_among_them_is_used_for_the_roles(
    fake: FakeLLM, tmp_path: Path
) -> None:
    """The user chose a model on this server with --models: the unnamed roles use it
    too, said, instead of exit 2 (it was exit 2 before)."""
    fake.models = ["b-model", "a-model", "c-model"]
    args = [SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, *args, "--models", "b-model", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"promptgen: using b-model, the model under test, for {ROLES} too "
        f"({fake.url} serves 3 models; name another with those)"
    )
    assert chat_models(fake) == {"b-model"}


def test_no_model_list_sends_default_and_says_so(fake: FakeLLM, tmp_path: Path) -> None:
    fake.models = None  # 404, as a server without the endpoint answers
    args = [SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, *args, "-q")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f'promptgen: {fake.url} lists no models (HTTP 404); sending the model id "default" '
        f"({ROLES} to name one)"
    )
    assert chat_models(fake) == {"default"}
    fake.models_raw = b"<html>not a list</html>"
    dry = promptgen(tmp_path, *args, "--dry-run", "--fresh")
    assert dry.returncode == 0, dry.stderr
    kept = tmp_path / "o" / "history"
    assert dry.stderr.splitlines()[:2] == [
        "promptgen: starting over (--fresh); the run before would be kept (not on a dry run) "
        f"in {kept}/" + dry.stderr.split(f"{kept}/", 1)[1].split()[0],
        f"promptgen: {fake.url} lists no models (its answer is not JSON); sending the model id "
        f'"default" ({ROLES} to name one)',
    ]
    assert not kept.exists()  # a dry run writes nothing


def test_a_refused_connection_is_the_calls_own_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: connections refused
    url = f"http://127.0.0.1:{port}/v1"
    args = [SAMPLE, "--effort", "min", "--api-base", url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, *args)
    assert result.returncode == 3
    assert "lists no models" not in result.stderr and "using " not in result.stderr
    assert "promptgen: intent: failed, 1 call, 0 tokens" in result.stderr
    assert "(openai/default: connection failed: [Errno 111]" in result.stderr


def test_ask_uses_the_one_model_served(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        check_ask(fake, tmp_path)


def check_ask(fake: FakeLLM, tmp_path: Path) -> None:
    fake.models = ["llama3.2"]
    result = promptgen(tmp_path, "ask", "Say hi", "--api-base", fake.url, "--no-cache")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"
    assert result.stderr.splitlines()[0] == (
        f"promptgen: using llama3.2, the one model {fake.url} serves (--model to choose another)"
    )
    assert chat_models(fake) == {"llama3.2"}
    fake.models = ["llama3.2", "mistral"]
    fake.reset()
    result = promptgen(tmp_path, "ask", "Say hi", "--api-base", fake.url, "--no-cache")
    assert result.returncode == 2
    assert result.stderr == (
        f"promptgen: error: {fake.url} serves 2 models: llama3.2, mistral "
        "(name the one to use with --model, or PROMPTGEN_MODEL for every role)\n"
    )
    assert fake.requests == []


def test_models_shows_what_the_server_serves(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        fake.models = ["qwen2.5:7b"]
        result = promptgen(tmp_path, "models", "--json", "--api-base", fake.url)
        fake.models = ["b", "a"]
        table = promptgen(tmp_path, "models", "--api-base", fake.url)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    served = f"the one model {fake.url} serves"
    assert data["aliases"]["rules"] == {"model": "openai/qwen2.5:7b", "source": served}
    assert data["aliases"]["store"]["model"] == "openai/default"  # no run calls it
    assert data["served_models"] == {"models": ["qwen2.5:7b"], "problem": None, "reached": True}
    assert (
        f"api base: {fake.url} (serves 2 models: a, b; a run names the one for each "
        + ("role with no model)\n")
        in table.stdout
    )


def test_a_batch_asks_once_and_shares_its_gateway(fake: FakeLLM, tmp_path: Path) -> None:
    fake.models = ["qwen2.5:7b"]
    folder = tmp_path / "prompts"
    folder.mkdir()
    for name in ("classify-sentiment.prompty", "summarize.prompt.yml"):
        (folder / name).write_bytes((REPO / "samples" / name).read_bytes())
    args = [str(folder), "--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert len(fake.model_lookups) == 1
    assert chat_models(fake) == {"qwen2.5:7b"}
    assert "gateway of its own" not in result.stderr
    said = f"using qwen2.5:7b, the one model {fake.url} serves ({ROLES} to choose another)"
    assert result.stderr.count(said) == 2  # once per prompt, under its name


def test_the_independent_mock_server_lists_several_and_the_default_is_among_them(
    tmp_path: Path,
) -> None:
    """mockllm serves 5 models, gpt-4o-mini among them: promptgen's default OpenAI model
    is the one the unnamed roles use (said), as it would be against OpenAI itself."""
    with mockllm() as url:
        args = [SAMPLE, "--effort", "min", "--api-base", url, "--out", str(tmp_path / "o")]
        result = promptgen(tmp_path, *args)
        with urllib.request.urlopen(url.removesuffix("/v1") + "/stats") as answer:
            stats = json.load(answer)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"promptgen: using gpt-4o-mini, promptgen's default model, for {ROLES} "
        f"({url} serves 5 models; name another with those)"
    )
    assert stats["requests_total"] > 0
    ctx = load_context(tmp_path / "o" / "context.json")
    assert ctx.options.models.rules_model == ctx.options.models.eval_model == "openai/gpt-4o-mini"


def test_which_of_several_served_the_roles_use() -> None:
    from promptgen.roles import UNDER_TEST, chosen_among

    ids = ("gpt-4o", "gpt-4o-mini", "mock-small")
    assert chosen_among(ids, ("openai/mock-small",), "gpt-4o") == ("mock-small", UNDER_TEST)
    assert chosen_among(ids, (), "gpt-4o") == ("gpt-4o", "the model the prompt names")
    assert chosen_among(ids, (), None) == ("gpt-4o-mini", "promptgen's default model")
    assert chosen_among(("a", "b"), (), "c") is None  # nothing points at one: exit 2
