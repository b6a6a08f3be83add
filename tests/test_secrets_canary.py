"""No key reaches anything promptgen writes, even from a provider that echoes it.

A canary key goes in (OPENAI_API_KEY, or a prompt's `model.parameters`); a local server
answers the pipeline's own calls, but answers the models under test and the groundtruth
model with 401/400/500 errors that quote the key and the headers it received, and one
generation stage with such an error too. After a whole run, no file under --out or the
cache folder, nor stdout or stderr, holds the canary (docs/llm.md). A model that answers
with the key it was sent ("parrot") leaks it into no file either: the cache, every export,
`lve run` instances and `pa run` reports go through the same scrubber as `context.json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from promptgen.secrets import REDACTED
from tests.conftest import REPO
from tests.pipeline_fake import PipelineResponder

CANARY = "sk-canary-1234567890abcdef"
TAIL = CANARY.removeprefix("sk-canary-")  # a half-scrubbed key still shows this
LEAKY = ("victim", "leaky")  # models the server answers with an echoing error
PARROT = "parrot"  # a model under test whose answers quote the key it was sent
STATUSES = (401, 400, 500)


class EchoServer:
    """Answers the pipeline plausibly; errors that quote the credentials otherwise."""

    def __init__(self) -> None:
        self.responder = PipelineResponder()
        self.seen: list[tuple[str, dict[str, str]]] = []  # (model, headers) of echoed calls
        self.count = 0
        self.parroted = 0  # answers that quoted the key
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> EchoServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        fmt = (body.get("response_format") or {}).get("json_schema") or {}
        if body.get("model") == PARROT:
            with self._lock:
                self.parroted += 1
            key = headers.get("authorization", "").removeprefix("Bearer ")
            message = {"role": "assistant", "content": f"positive. (I was called with {key}.)"}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return 200, {"model": PARROT, "choices": [choice], "usage": {}}
        if body.get("model") not in LEAKY and fmt.get("name") != "Grounded":
            reply = self.responder(body)
            message = {"role": "assistant", "content": reply.content}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            return 200, {"model": body.get("model"), "choices": [choice], "usage": usage}
        with self._lock:
            self.seen.append((str(body.get("model")), headers))
            self.count += 1
            # A 400 to a structured call would make the gateway step down its mode.
            status = STATUSES[self.count % len(STATUSES)] if not fmt else 401
        auth, api_key = headers.get("authorization", ""), headers.get("api-key", "")
        key = auth.removeprefix("Bearer ")
        text = (
            f"Incorrect API key provided: {key}. You sent Authorization: {auth}; "
            f"api-key: {api_key}; url ?key={key}&token={key}\nheaders: {json.dumps(headers)}"
        )
        return status, {"error": {"message": text, "type": "invalid_request_error", "key": key}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, answer = server.answer(body, headers)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


def promptgen(tmp: Path, *args: str, key: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env["PROMPTGEN_CACHE_DIR"] = str(tmp / "cache")
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )  # fmt: skip


def leaks(tmp: Path, result: subprocess.CompletedProcess[str]) -> list[str]:
    """Every written file (and stdout, stderr) that holds the canary or its tail."""
    found = [
        str(path.relative_to(tmp))
        for path in sorted(tmp.rglob("*"))
        if path.is_file() and path.suffix != ".prompty" and TAIL.encode() in path.read_bytes()
    ]
    found += [name for name, text in (("stdout", result.stdout), ("stderr", result.stderr))
              if TAIL in text]  # fmt: skip
    return found


def evaluate(tmp: Path, echo: EchoServer, prompt: str, key: str | None):  # type: ignore[no-untyped-def]
    out = tmp / "out"
    args = [prompt, "--effort", "min", "--api-base", echo.url, "--out", str(out)]
    args += ["--models", "victim;good", "--groundtruth-model", "leaky", "--junit"]
    args += [str(out / "junit.xml"), "--max-tests-to-run", "3", "--groundedness"]
    result = promptgen(tmp, *args, key=key)
    assert result.returncode == 3, result.stderr  # failed calls, and groundedness failed
    return result, load_context(out / "context.json")


def test_a_provider_echoing_the_env_key_leaks_it_nowhere(echo: EchoServer, tmp_path: Path) -> None:
    started = time.monotonic()
    result, ctx = evaluate(tmp_path, echo, "samples/classify-sentiment.prompty", CANARY)
    # The key was sent and echoed back in every error ...
    assert echo.seen and all(h["authorization"] == f"Bearer {CANARY}" for _, h in echo.seen)
    # ... and the errors were recorded, scrubbed, everywhere they are kept.
    victim = [r for r in ctx.test_runs if r.model == "victim"]
    assert len(victim) == 3 and all(r.error and REDACTED in r.error for r in victim)
    assert all(a.error and REDACTED in a.error for a in ctx.groundtruth)
    assert REDACTED in " ".join(ctx.stage("groundedness").failures.values())
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert junit.count('type="run-error"') == 3 and REDACTED in junit
    assert REDACTED in (tmp_path / "out" / "report.html").read_text()
    assert leaks(tmp_path, result) == []
    assert time.monotonic() - started < 30


PROMPT = f"""---
name: leaky-params
model:
  api: chat
  parameters:
    temperature: 0
    api_key: {CANARY}
    extra_headers:
      Authorization: Bearer {CANARY}
      api-key: {CANARY}
inputs:
  review:
    type: string
    sample: The blender is loud but fast.
---
system:
Label the review positive or negative.

user:
{{{{review}}}}
"""


def test_keys_in_the_prompt_parameters_are_used_and_never_written(
    echo: EchoServer, tmp_path: Path
) -> None:
    prompt = tmp_path / "leaky.prompty"
    prompt.write_text(PROMPT, encoding="utf-8")
    result, ctx = evaluate(tmp_path, echo, str(prompt), "sk-other-env-key-000000")
    # The model under test got the prompt's credentials, as headers.
    victim = [h for model, h in echo.seen if model == "victim"]
    assert len(victim) >= 3
    assert all(h["authorization"] == f"Bearer {CANARY}" and h["api-key"] == CANARY for h in victim)
    # They are kept in memory for the call, and written out redacted.
    assert ctx.prompt.model.parameters["api_key"] == REDACTED
    assert ctx.prompt.model.parameters["extra_headers"] == {
        "Authorization": REDACTED, "api-key": REDACTED
    }  # fmt: skip
    assert ctx.prompt.model.parameters["temperature"] == 0
    assert leaks(tmp_path, result) == []


EVERY_TARGET = (
    "openai-evals,azure-evals,github-models,promptfoo,inspect,lve,promptarchitect,jsonl,csv"
)


def test_a_key_the_model_echoes_in_its_answers_reaches_no_file(
    echo: EchoServer, tmp_path: Path
) -> None:
    """The answers under test quote the key: the cache, the exports of every target, the
    JUnit file, `lve run` instances and a `pa run`'s reports hold it nowhere."""
    out, base = tmp_path / "out", ["--api-base", echo.url, "--models", PARROT]
    main = promptgen(
        tmp_path, "samples/classify-sentiment.prompty", "--effort", "min", *base,
        "--out", str(out / "main"), "--max-tests-to-run", "2", "--export", EVERY_TARGET,
        "--junit", str(out / "junit.xml"), key=CANARY,
    )  # fmt: skip
    assert main.returncode in (0, 1), main.stderr
    lve = promptgen(
        tmp_path, "lve", "run", "samples/lve/discount-code-leak/openai--gpt-4o-mini", *base,
        "--out", str(out / "lve"), key=CANARY,
    )  # fmt: skip
    assert lve.returncode == 0, lve.stderr
    pa = promptgen(
        tmp_path, "pa", "run", "samples/promptarchitect/answer-from-article.prompt", *base,
        "--out", str(out / "pa"), "--export", EVERY_TARGET, key=CANARY,
    )  # fmt: skip
    assert pa.returncode in (0, 1), pa.stderr
    # The model was sent the key and answered with it, in every run ...
    assert echo.parroted >= 2 + 1 + 4
    exports = sorted(p.name for p in (out / "main" / "exports").iterdir())
    assert exports == sorted(EVERY_TARGET.split(","))
    assert any((tmp_path / "cache").iterdir())
    # ... and no file, nor any output of the three commands, holds it.
    assert [leaks(tmp_path, r) for r in (main, lve, pa)] == [[], [], []]
    # What was written kept the answer, with the key blanked.
    instances = next((out / "lve").rglob("promptgen.jsonl")).read_text()
    assert f"I was called with {REDACTED}." in instances
    outputs = json.loads((out / "pa" / "context.json").read_text())["test_runs"]
    assert {r["output"] for r in outputs} == {f"positive. (I was called with {REDACTED}.)"}


ENV_PROMPT = """---
name: env-input
inputs:
  review:
    type: string
    default: ${env:OPENAI_API_KEY}
testSamples:
  - review: ${env:OPENAI_API_KEY}
---
system:
Label the review positive or negative.

user:
{{review}}
"""


def test_a_key_read_by_an_allowed_env_reference_is_written_nowhere(
    echo: EchoServer, tmp_path: Path
) -> None:
    """`--allow-env OPENAI_API_KEY` lets an input default read the key: the model under
    test gets it, but no export (github-models, promptarchitect, lve, ...) holds it."""
    prompt = tmp_path / "env-input.prompty"
    prompt.write_text(ENV_PROMPT, encoding="utf-8")
    out = tmp_path / "out"
    result = promptgen(
        tmp_path, str(prompt), "--effort", "min", "--api-base", echo.url, "--models", "good",
        "--out", str(out), "--export", EVERY_TARGET, "--allow-env", "OPENAI_API_KEY", key=CANARY,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    sent = [m["content"] for b in echo.responder.seen for m in b["messages"]]
    assert CANARY in sent  # the author's default, read from the variable, was a test input
    assert leaks(tmp_path, result) == []
    rows = (out / "exports" / "jsonl" / "tests.jsonl").read_text()
    assert f'"review": "{REDACTED}"' in rows
