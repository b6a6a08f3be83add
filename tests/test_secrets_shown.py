"""Option values and URLs with credentials are shown masked on every line a user reads:
the resume line that names changed options, and the refusal of a URL with a password
(docs/llm.md#secrets)."""

from __future__ import annotations

from pathlib import Path

from promptgen.secrets import mask_url, shown
from tests.conftest import REPO, promptgen_in
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

KEY = "sk-param-key-0123456789abcdef"


def test_a_key_given_as_a_parameter_is_masked_on_resume(tmp_path: Path) -> None:
    prompt, out = str(REPO / "samples/haiku.md"), str(tmp_path / "out")
    with FakeLLM(responder=PipelineResponder()) as server:
        first = ("--effort", "min", "--api-base", server.url, "--out", out)
        assert promptgen_in(tmp_path, prompt, *first).returncode == 0
        again = (*first, "--param", f"api_key={KEY}", "--param", "temperature=0.5", "--dry-run")
        result = promptgen_in(tmp_path, prompt, *again)
    assert result.returncode == 0, result.stderr
    (line,) = [n for n in result.stderr.splitlines() if "new options override" in n]
    assert line == (
        "promptgen: new options override the saved ones: model_params: {} -> "
        "{api_key: ***, temperature: 0.5} (finished stages are kept; --fresh redoes everything)"
    )
    assert KEY not in result.stderr + result.stdout
    printed = promptgen_in(tmp_path, prompt, *again[:-1], "--print-options")
    (row,) = [r for r in printed.stdout.splitlines() if r.startswith("model_params")]
    assert row.split() == [
        "model_params",
        "{api_key:",
        "***,",
        "temperature:",
        "0.5}",
        "command",
        "line",
    ]


def test_a_url_with_a_password_is_refused_with_the_password_masked(tmp_path: Path) -> None:
    url = "http://user:PASSWORD-1234@127.0.0.1:9/v1"
    for args in ((str(REPO / "samples/haiku.md"), "--dry-run"), ("models",)):
        result = promptgen_in(tmp_path, *args, "--api-base", url)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert result.stderr == (
            "promptgen: error: --api-base 'http://user:***@127.0.0.1:9/v1': holds credentials; "
            "put the key in OPENAI_API_KEY (or .env)\n"
        )


def test_shown_masks_secret_entries_url_passwords_and_nothing_else() -> None:
    assert shown({"api_key": KEY, "top_p": 1, "extra": {"token": "t"}}) == (
        "{api_key: ***, top_p: 1, extra: {token: ***}}"
    )
    assert shown(["m1"]) == "['m1']"
    assert mask_url("see https://u:p@x.org/a and http://x.org") == (
        "see https://u:***@x.org/a and http://x.org"
    )
