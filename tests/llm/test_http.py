"""The `--api-base` transport (promptgen/llm/http.py): proxies from the environment."""

from __future__ import annotations

import pytest

from promptgen.llm.http import proxy_for


def test_the_environment_names_the_proxy_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost,.internal")
    assert proxy_for("https://api.example.com/v1") == "http://proxy.example:3128"
    assert proxy_for("http://api.example.com/v1") is None  # no HTTP_PROXY given
    assert proxy_for("http://127.0.0.1:8000/v1") is None
    assert proxy_for("https://models.internal/v1") is None
