"""What `promptgen configure` writes: the providers it knows and the plan for one set-up.

The plan is pure data (no file touched, nothing asked): the CLI gathers the answers
(flags or prompts), `make_plan` checks them and says what goes where; `apply` writes it.
Keys go to `.env` only; promptgen.toml gets models, `api_base` and defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from promptgen.errors import BadInputError
from promptgen.llm.config import ALIASES, split_models
from promptgen.options import MAX_CONCURRENCY, check_api_base


@dataclass(frozen=True)
class Provider:
    name: str
    about: str
    prefix: str | None  # added to a model name without a "/"; None: names sent as is
    key_var: str | None = None  # where the key goes in .env
    key_required: bool = False
    key_fallback: str | None = None  # a variable whose value may serve as the key
    default_model: str | None = None
    base_var: str | None = None  # .env variable for the endpoint (litellm reads it)
    base_in_toml: bool = False  # the endpoint is promptgen's own `api_base`
    base_required: bool = False
    default_base: str | None = None
    version_var: str | None = None


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "OpenAI (OPENAI_API_KEY)", "openai", "OPENAI_API_KEY", True,
                 default_model="gpt-4o-mini"),
        Provider("azure", "Azure OpenAI (endpoint, API version, deployment names)", "azure",
                 "AZURE_API_KEY", True, "AZURE_OPENAI_API_KEY", base_var="AZURE_API_BASE",
                 base_required=True, version_var="AZURE_API_VERSION"),
        Provider("github", "GitHub Models (a GitHub token)", "github", "GITHUB_API_KEY", True,
                 "GITHUB_TOKEN", default_model="gpt-4o-mini"),
        Provider("ollama", "Ollama on this machine or another", "ollama",
                 default_model="llama3.2", base_var="OLLAMA_API_BASE",
                 default_base="http://localhost:11434"),
        Provider("openai-compatible", "any OpenAI-compatible server (--api-base)", None,
                 "OPENAI_API_KEY", base_in_toml=True, base_required=True),
        Provider("local", "the embedded offline model (no key)", "local",
                 default_model="qwen2.5-coder-1.5b"),
    )
}  # fmt: skip
AZURE_API_VERSION = "2024-10-21"
ROLES = ("rules", "eval", "groundtruth")
# The roles without a flag or question of their own: they take the model for every role
# (else the rules model), so none falls back to a default on another provider.
FOLLOWING_ROLES = tuple(a for a in ALIASES if a not in ROLES)  # baseline, store


@dataclass
class Answers:
    """What the user chose (flags or prompts); None: not given."""

    provider: str | None = None
    model: str | None = None  # every role's model unless one is named below
    roles: dict[str, str | None] = field(default_factory=dict)  # rules / eval / groundtruth
    under_test: str | None = None  # "a;b"
    api_key: str | None = None
    api_base: str | None = None  # the server, the Azure endpoint or Ollama's address
    api_version: str | None = None
    concurrency: int | None = None


@dataclass
class Plan:
    provider: Provider
    models: dict[str, str]  # role -> model id
    under_test: list[str]
    toml: dict[str, object]  # laid over promptgen.toml (None removes a key)
    env: dict[str, str]  # written to .env
    notes: list[str] = field(default_factory=list)

    @property
    def to_check(self) -> list[str]:
        """Every distinct model the set-up names, in the order a user reads them."""
        return list(dict.fromkeys([*self.models.values(), *self.under_test]))


def provider_named(name: str) -> Provider:
    key = {"compatible": "openai-compatible", "github-models": "github"}.get(name.lower(), name)
    provider = PROVIDERS.get(key.lower())
    if provider is None:
        raise BadInputError(f"unknown provider {name!r}", hint=f"use one of {', '.join(PROVIDERS)}")
    return provider


def model_id(provider: Provider, name: str) -> str:
    """`gpt-4o-mini` -> `openai/gpt-4o-mini`; a name with a provider already is kept."""
    name = name.strip()
    if not name or any(c.isspace() for c in name) or ";" in name:
        raise BadInputError(f"model {name!r}: give one model name without spaces or ';'")
    if provider.prefix is None or "/" in name:
        return name
    return f"{provider.prefix}/{name}"


def make_plan(
    answers: Answers, existing_env: Mapping[str, str], environ: Mapping[str, str] = os.environ
) -> Plan:
    """Check the answers and lay out what goes where. A missing required value is a
    BadInputError naming the flag that gives it."""
    if not answers.provider:
        raise BadInputError("which provider?", hint=f"pass --provider ({', '.join(PROVIDERS)})")
    provider = provider_named(answers.provider)
    default = answers.model or provider.default_model
    models: dict[str, str] = {}
    for role in ROLES:
        name = answers.roles.get(role) or default
        if not name:
            what = "deployment" if provider.name == "azure" else "model"
            raise BadInputError(f"{provider.name}: which {what}?", hint="pass --model NAME")
        models[role] = model_id(provider, name)
    for role in FOLLOWING_ROLES:
        models[role] = model_id(provider, default) if default else models["rules"]
    under_test = [model_id(provider, m) for m in split_models(answers.under_test)]
    plan = Plan(provider, models, under_test or [models["rules"]], {}, {})
    _endpoint(plan, answers)
    _key(plan, answers, existing_env, environ)
    if answers.concurrency is not None:
        if not 1 <= answers.concurrency <= MAX_CONCURRENCY:  # as the run's option says it
            side = "at least 1" if answers.concurrency < 1 else f"at most {MAX_CONCURRENCY}"
            raise BadInputError(
                f"--concurrency {answers.concurrency}: must be {side} "
                f"(accepted: 1-{MAX_CONCURRENCY})"
            )
        plan.toml["concurrency"] = answers.concurrency
    plan.toml["models"] = {**models, "under_test": plan.under_test}
    return plan


def _endpoint(plan: Plan, answers: Answers) -> None:
    provider = plan.provider
    base = answers.api_base or provider.default_base
    if provider.base_required and not base:
        raise BadInputError(
            f"{provider.name}: which endpoint?",
            hint="pass --api-base URL"
            + (" (your Azure OpenAI resource's endpoint)" if provider.name == "azure" else ""),
        )
    if base:
        try:
            base = check_api_base(base)
        except ValueError as err:
            raise BadInputError(f"--api-base {base!r}: {err}") from err
    # Only the compatible provider routes through promptgen's api_base; any other
    # provider must not leave one behind, or every call would still go to that server.
    plan.toml["api_base"] = base if provider.base_in_toml else None
    if provider.base_var and base and (answers.api_base or provider.base_required):
        plan.env[provider.base_var] = base
    if provider.version_var:
        plan.env[provider.version_var] = answers.api_version or AZURE_API_VERSION
    elif answers.api_version:
        plan.notes.append(f"--api-version is for azure; ignored for {provider.name}")


def _key(
    plan: Plan, answers: Answers, existing_env: Mapping[str, str], environ: Mapping[str, str]
) -> None:
    provider = plan.provider
    var = provider.key_var
    if var is None:
        if answers.api_key:
            plan.notes.append(f"{provider.name} needs no key; --api-key ignored")
        return
    key = answers.api_key
    if key is None and provider.key_fallback and environ.get(provider.key_fallback):
        key = environ[provider.key_fallback]  # e.g. GITHUB_TOKEN, stored as litellm reads it
        plan.notes.append(f"{var}: the value of {provider.key_fallback}, written to .env")
    if key is not None:
        if not key.strip() or any(c.isspace() for c in key) or "${" in key:
            raise BadInputError(f"the {var} given is empty or holds spaces or '${{'")
        plan.env[var] = key
    elif existing_env.get(var):
        plan.notes.append(f"{var}: kept as it is in .env")
    elif environ.get(var):
        plan.notes.append(f"{var}: taken from the environment (not written to .env)")
    elif provider.key_required:
        raise BadInputError(
            f"{provider.name}: no API key",
            hint=f"pass --api-key, or set {var} in the environment or .env",
        )
    if var in environ and var in plan.env and environ[var] != plan.env[var]:
        plan.notes.append(f"{var} is also set in your environment, which wins over .env")
