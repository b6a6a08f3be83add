"""make_plan: what goes to promptgen.toml and what to .env, for each provider."""

from __future__ import annotations

import re

import pytest

from promptgen.configure import Answers, make_plan
from promptgen.errors import BadInputError


def test_openai_key_goes_to_env_and_names_get_the_prefix() -> None:
    plan = make_plan(
        Answers("openai", "gpt-4o-mini", {"eval": "gpt-4o"}, "gpt-4o-mini;local/x", "sk-1"),
        existing_env={},
        environ={},
    )
    assert plan.toml == {
        "api_base": None,
        "models": {
            "rules": "openai/gpt-4o-mini",
            "eval": "openai/gpt-4o",
            "groundtruth": "openai/gpt-4o-mini",
            "baseline": "openai/gpt-4o-mini",
            "store": "openai/gpt-4o-mini",
            "under_test": ["openai/gpt-4o-mini", "local/x"],
        },
    }
    assert plan.env == {"OPENAI_API_KEY": "sk-1"}
    assert plan.to_check == ["openai/gpt-4o-mini", "openai/gpt-4o", "local/x"]


def test_key_from_environment_is_not_copied() -> None:
    plan = make_plan(Answers("openai"), existing_env={}, environ={"OPENAI_API_KEY": "sk-env"})
    assert plan.env == {}
    assert plan.notes == ["OPENAI_API_KEY: taken from the environment (not written to .env)"]


def test_environment_wins_note() -> None:
    plan = make_plan(
        Answers("openai", api_key="sk-new"), existing_env={}, environ={"OPENAI_API_KEY": "sk-o"}
    )
    assert "OPENAI_API_KEY is also set in your environment, which wins over .env" in plan.notes


def test_local_needs_nothing() -> None:
    plan = make_plan(Answers("local"), existing_env={}, environ={})
    local = "local/qwen2.5-coder-1.5b"
    roles = ("rules", "eval", "groundtruth", "baseline", "store")
    assert plan.models == dict.fromkeys(roles, local)
    assert plan.env == {}


def test_compatible_keeps_names_and_sets_api_base() -> None:
    plan = make_plan(
        Answers("openai-compatible", "meta/llama", api_base="http://127.0.0.1:1/v1"), {}, {}
    )
    assert plan.toml["api_base"] == "http://127.0.0.1:1/v1"
    assert plan.models["rules"] == "meta/llama"


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (Answers("openai-compatible", "m", api_base="ftp://x"), "not an http(s) URL"),
        (Answers("openai-compatible", "m", api_base="http://u:p@h/v1"), "holds credentials"),
        (Answers("openai", "two words", api_key="k"), "without spaces"),
        (Answers("openai", "m", api_key=" "), "empty or holds spaces"),
        (Answers("openai", "m", api_key="a${HOME}"), "or '${'"),
        (Answers("azure", "d", api_key="k"), "which endpoint?"),
        (Answers("azure", api_key="k", api_base="https://r.openai.azure.com"), "which deployment?"),
    ],
)
def test_bad_answers(answers: Answers, message: str) -> None:
    with pytest.raises(BadInputError, match=re.escape(message)):
        make_plan(answers, {}, {})


def test_roles_without_a_flag_take_the_rules_model_when_no_model_is_given() -> None:
    """Azure has no default deployment: each role named, baseline and store follow rules."""
    roles = {"rules": "gen", "eval": "judge", "groundtruth": "ref"}
    answers = Answers("azure", roles=dict(roles), api_key="k", api_base="https://x.example")
    plan = make_plan(answers, existing_env={}, environ={})
    assert plan.models == {
        "rules": "azure/gen", "eval": "azure/judge", "groundtruth": "azure/ref",
        "baseline": "azure/gen", "store": "azure/gen",
    }  # fmt: skip
