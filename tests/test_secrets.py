from __future__ import annotations

import pytest

from promptgen.secrets import REDACTED, is_secret_key, redact


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
