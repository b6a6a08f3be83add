"""`promptgen configure`: providers, model aliases and defaults into promptgen.toml, keys
into `.env`, each model checked with one call. See docs/setup.md."""

from promptgen.configure.apply import (
    ModelCheck,
    Written,
    apply,
    check_models,
    config_path,
    environment_overrides,
    existing_env,
    load_env,
)
from promptgen.configure.envfile import mask
from promptgen.configure.plan import (
    AZURE_API_VERSION,
    PROVIDERS,
    ROLES,
    Answers,
    Plan,
    Provider,
    make_plan,
    provider_named,
)

__all__ = [
    "AZURE_API_VERSION",
    "PROVIDERS",
    "ROLES",
    "Answers",
    "ModelCheck",
    "Plan",
    "Provider",
    "Written",
    "apply",
    "check_models",
    "config_path",
    "environment_overrides",
    "existing_env",
    "load_env",
    "make_plan",
    "mask",
    "provider_named",
]
