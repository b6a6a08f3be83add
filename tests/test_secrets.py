from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from promptgen.model import ModelConfig
from promptgen.secrets import (
    REDACTED,
    forget,
    is_secret_key,
    redact,
    register,
    register_environment,
    register_mapping,
    scrub,
)


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "API-KEY",
        "key",
        "Ocp-Apim-Subscription-Key",
        "access_key",
        "private_key",
        "client_secret",
        "password",
        "access_token",
        "Authorization",
        "connection_string",
        "credentials",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["max_tokens", "maxOutputTokens", "prompt_tokens", "tokenizer", "keywords", "name"]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_redact_nested_keeps_env_references() -> None:
    data = {"model": {"connection": {"apiKey": "sk-1", "endpoint": "e"}, "max_tokens": 5}}
    data["list"] = [{"token": "t"}, {"token": "${env:TOKEN}"}]
    assert redact(data) == {
        "model": {"connection": {"apiKey": REDACTED, "endpoint": "e"}, "max_tokens": 5},
        "list": [{"token": REDACTED}, {"token": "${env:TOKEN}"}],
    }


@pytest.fixture
def known() -> Iterator[list[str]]:
    """Values registered during a test, forgotten after it."""
    values: list[str] = []
    yield values
    forget(values)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz.",
            f"Incorrect API key provided: {REDACTED}.",
        ),
        ("Authorization: Bearer abc.def-ghi_jkl", f"Authorization: Bearer {REDACTED}"),
        ("{'api-key': 'short1'}", f"{{'api-key': '{REDACTED}'}}"),
        ('"x-api-key": "0123456789"', f'"x-api-key": "{REDACTED}"'),
        ("GET /v1?key=AIzaSyA0123456789abcdefghijklmnopqrstu&x=1", f"GET /v1?key={REDACTED}&x=1"),
        ("token=ghp_0123456789abcdefghijABCDEFGHIJ", f"token={REDACTED}"),
        ("sent bearer 0123456789abcdef0123", f"sent bearer {REDACTED}"),
        ("client_secret: 'c2VjcmV0LXZhbHVlLWhlcmUK'", f"client_secret: '{REDACTED}'"),
    ],
)
def test_scrub_blanks_what_looks_like_a_key(text: str, expected: str) -> None:
    assert scrub(text) == expected
    assert scrub(expected) == expected  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "basic authentication required",
        '{"max_tokens": 1024, "prompt_tokens": 12345678901234567890}',
        "the model answered: the key point is the sky",
        "code: invalid_api_key, type: invalid_request_error",
        "Bearer abc",
    ],
)
def test_scrub_keeps_ordinary_text(text: str) -> None:
    assert scrub(text) == text


def test_registered_values_are_blanked_anywhere(known: list[str]) -> None:
    known += ["plain-looking-value-42", "another-one-0987654321"]
    for value in known:
        register(value)
    register("short")  # too short to be a key: never blanked
    text = "a plain-looking-value-42 b (another-one-0987654321) c short"
    assert scrub(text) == f"a {REDACTED} b ({REDACTED}) c short"
    assert scrub(text, shapes=False) == f"a {REDACTED} b ({REDACTED}) c short"
    forget(["plain-looking-value-42"])
    assert "plain-looking-value-42" in scrub(text)


def test_register_mapping_and_environment(known: list[str]) -> None:
    known += ["Bearer tok-0123456789", "tok-0123456789", "az-0123456789", "hdr-0123456789"]
    known += ["gh-token-0123456789"]
    register_mapping(
        {"api_key": "${env:OPENAI_API_KEY}", "timeout": "not-a-secret-at-all",
         "extra_headers": {"Authorization": "Bearer tok-0123456789", "api-key": "hdr-0123456789"}}
    )  # fmt: skip
    register_environment(
        {"AZURE_OPENAI_KEY": "az-0123456789", "GITHUB_TOKEN": "gh-token-0123456789",
         "HOME": "/home/someone-0123", "PWD": "/work/project-0123", "OLDPWD": "/work/old-0123"}
    )  # fmt: skip
    text = "tok-0123456789 hdr-0123456789 az-0123456789 gh-token-0123456789 not-a-secret-at-all"
    assert scrub(text, shapes=False) == " ".join([REDACTED] * 4) + " not-a-secret-at-all"
    assert scrub("/home/someone-0123 ${env:OPENAI_API_KEY}") == (
        "/home/someone-0123 ${env:OPENAI_API_KEY}"
    )
    # the shell's working folder is not a password (`pwd`): paths under it stay readable
    assert scrub("/work/project-0123/a.metric.prompty /work/old-0123") == (
        "/work/project-0123/a.metric.prompty /work/old-0123"
    )


def test_register_is_thread_safe(known: list[str]) -> None:
    values = [f"threaded-secret-{i:04d}" for i in range(200)]
    known += values
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(register, values))
        scrubbed = list(pool.map(scrub, values))
    assert scrubbed == [REDACTED] * 200


def test_prompt_parameters_are_used_but_never_written(known: list[str]) -> None:
    key = "sk-frontmatter-0123456789"
    known += [key, f"Bearer {key}"]
    config = ModelConfig(
        parameters={"temperature": 0, "api_key": key,
                    "extra_headers": {"Authorization": f"Bearer {key}", "X-Trace": "t"}},
        connection={"api_key": key, "endpoint": "https://example"},
    )  # fmt: skip
    assert config.parameters["api_key"] == key  # what the call gets
    dumped = config.model_dump(mode="json")
    assert dumped["parameters"] == {
        "temperature": 0,
        "api_key": REDACTED,
        "extra_headers": {"Authorization": REDACTED, "X-Trace": "t"},
    }
    assert dumped["connection"] == {"api_key": REDACTED, "endpoint": "https://example"}
    assert scrub(f"echo {key}", shapes=False) == f"echo {REDACTED}"  # registered on load


def test_a_warning_on_the_terminal_never_shows_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    """Warnings quote models' answers and providers' errors: blanked as in the files."""
    from promptgen.progress import PlainReporter, print_warnings
    from promptgen.secrets import forget, register

    key = "sk-warning-canary-0123456789abcdef"
    register(key)
    try:
        print_warnings([f"the judge answered: use {key} \x1b[2J"])
        PlainReporter().warn(f"provider said {key}")
    finally:
        forget([key])
    err = capsys.readouterr().err
    assert err == (
        "promptgen: warning: the judge answered: use ***redacted*** \\x1b[2J\n"
        "promptgen: warning: provider said ***redacted***\n"
    )
