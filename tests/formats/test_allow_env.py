"""`${env:NAME}` in a prompt file reads only the variables the user allows with
`--allow-env` (a prompt file cannot allow one); a refusal is one line, exit 2, before any
call; what is read is blanked in every output (docs/formats.md#env-and-file-references)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from promptgen import load_prompt
from promptgen.formats.refs import allow_env
from promptgen.secrets import REDACTED, forget, scrub
from tests.conftest import isolated_env
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

KEY = "sk-env-canary-0123456789abcdef"
PROMPT = """---
name: env-default
allowEnv: [OPENAI_API_KEY]
inputs:
  text:
    type: string
    default: ${env:OPENAI_API_KEY}
  tone:
    type: string
    default: ${env:PG_TONE:plain}
---
user:
Summarize {{text}} in a {{tone}} tone.
"""


def cli(tmp: Path, *args: str) -> tuple[int, str, str, int]:
    """`promptgen ARGS` with OPENAI_API_KEY set: exit code, stdout, stderr, calls made."""
    import subprocess
    import sys

    env = {**isolated_env(tmp), "OPENAI_API_KEY": KEY}
    with FakeLLM(responder=PipelineResponder()) as server:
        result = subprocess.run(
            [sys.executable, "-m", "promptgen", *args, "--api-base", server.url,
             "--models", "m1", "--out", str(tmp / "out")],
            capture_output=True, text=True, cwd=tmp, env=env, timeout=120,
        )  # fmt: skip
        return result.returncode, result.stdout, result.stderr, len(server.requests)


def test_a_credential_variable_is_refused_before_any_call_even_if_the_file_allows_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "p.prompty").write_text(PROMPT)
    code, out, err, calls = cli(tmp_path, "p.prompty")
    assert (code, out, calls) == (2, "", 0)
    assert err == (
        "promptgen: error: p.prompty:7: environment variable 'OPENAI_API_KEY' may not be read "
        "(a credential's name; used by 'inputs.text.default') (allow it with --allow-env "
        "OPENAI_API_KEY; a prompt file cannot allow it)\n"
    )
    assert not (tmp_path / "out").exists()


def test_any_other_variable_needs_allowing_too(tmp_path: Path) -> None:
    (tmp_path / "p.prompty").write_text(PROMPT)
    code, _, err, calls = cli(tmp_path, "p.prompty", "--allow-env", "OPENAI_API_KEY")
    assert (code, calls) == (2, 0)
    assert err == (
        "promptgen: error: p.prompty:10: environment variable 'PG_TONE' may not be read "
        "(not allowed; used by 'inputs.tone.default') (allow it with --allow-env PG_TONE; a "
        "prompt file cannot allow it)\n"
    )


def test_an_allowed_variable_is_read_and_registered_with_the_scrubber(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PG_SECRET_FOR_TEST", "value-read-from-the-env-42")
    path = tmp_path / "p.prompty"
    path.write_text(PROMPT.replace("OPENAI_API_KEY", "PG_SECRET_FOR_TEST"))
    try:
        with allow_env(["PG_SECRET_FOR_TEST", "PG_TONE"]):
            prompt = load_prompt(path)
        defaults = [i.default for i in prompt.inputs.values()]
        assert defaults == [os.environ["PG_SECRET_FOR_TEST"], "plain"]
        assert scrub("is value-read-from-the-env-42.", shapes=False) == f"is {REDACTED}."
    finally:
        forget(["value-read-from-the-env-42"])
    with pytest.raises(Exception, match="may not be read"):
        load_prompt(path)  # the allowance ended with the block


def test_a_connection_setting_not_allowed_is_left_unread_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "c.prompty"
    path.write_text("---\nmodel:\n  connection:\n    api_key: ${env:OPENAI_API_KEY}\n---\nhi\n")
    prompt = load_prompt(path)
    assert prompt.model.connection == {"api_key": "${env:OPENAI_API_KEY}"}
    assert prompt.warnings == [
        f"{path}:4: environment variable 'OPENAI_API_KEY' (used by 'model.connection.api_key') "
        "is not read (a credential's name); left as is (allow it with --allow-env "
        "OPENAI_API_KEY)"
    ]
