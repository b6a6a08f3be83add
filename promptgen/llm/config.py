"""Which model each role uses: CLI option > environment > config file > default.

Roles (aliases): rules, eval, groundtruth, baseline, store; plus the models under test.
The default is the embedded local model unless a provider is configured.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError
from promptgen.kinds import PROVIDER_PROFILES
from promptgen.llm.batch import BatchLimits
from promptgen.llm.weights import DEFAULT_LOCAL
from promptgen.options import check_api_base

ALIASES = ("rules", "eval", "groundtruth", "baseline", "store")
CONFIG_NAMES = ("promptgen.toml", ".promptgen.toml")
LOCAL_DEFAULT = f"local/{DEFAULT_LOCAL}"
OPENAI_DEFAULT = "openai/gpt-4o-mini"
API_BASE_MODEL = "openai/default"  # no model named, and the server lists none (llm/served.py)
API_BASE_DEFAULT = "default (--api-base given)"


@dataclass
class GatewaySettings:
    models: dict[str, str]
    sources: dict[str, str]
    models_under_test: list[str] = field(default_factory=list)
    api_base: str | None = None
    concurrency: int | None = None
    timeout: float = 120.0
    cache: bool = True
    cache_dir: Path | None = None
    config_file: Path | None = None
    batch: bool = False  # --batch: runs and verdicts through provider Batch APIs
    batch_limits: BatchLimits = field(default_factory=BatchLimits)
    strict_output: bool = False  # --strict-output: a refused schema stops the run
    # --provider-profile: the structured-output rules every model is called under
    # (llm/profiles.py); None: each model's own, from its id and the API base.
    profile: str | None = None

    def resolve(self, name: str) -> str:
        """An alias becomes its model; anything else is already a model id."""
        return self.models.get(name, name)


def split_models(value: str | list[str] | None) -> list[str]:
    """`"a;b"`, `["a;b", "c"]` -> `["a", "b", "c"]`."""
    if not value:
        return []
    items = [value] if isinstance(value, str) else value
    return [m.strip() for item in items for m in item.split(";") if m.strip()]


def find_config(cwd: Path | None = None, env: Mapping[str, str] = os.environ) -> Path | None:
    explicit = env.get("PROMPTGEN_CONFIG")
    if explicit:
        return Path(explicit)
    for name in CONFIG_NAMES:
        candidate = (cwd or Path.cwd()) / name
        if candidate.is_file():
            return candidate
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    user = Path(base) / "promptgen" / "config.toml"
    return user if user.is_file() else None


def read_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise BadInputError("config file not found", file=path) from err
    except tomllib.TOMLDecodeError as err:
        raise BadInputError(f"invalid TOML: {err}", file=path, hint="fix the config file") from err


def default_model(env: Mapping[str, str], api_base: str | None) -> tuple[str, str]:
    if api_base:
        return API_BASE_MODEL, API_BASE_DEFAULT
    if env.get("OPENAI_API_KEY"):
        return OPENAI_DEFAULT, "default (OPENAI_API_KEY is set)"
    return LOCAL_DEFAULT, "default (no provider configured)"


def load_settings(
    cli: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
) -> GatewaySettings:
    """Resolve every setting with its source. `cli` keys: the aliases, `models`,
    `api_base`, `concurrency`, `timeout`, `cache`, `cache_dir`, `config`, `batch`,
    `strict_output`, `provider_profile`."""
    cli = {k: v for k, v in (cli or {}).items() if v is not None}
    path = Path(cli["config"]) if "config" in cli else find_config(cwd, env)
    file = read_config(path)
    file_models = file.get("models", {})
    api_base = cli.get("api_base") or _api_base(env, file, path)
    fallback, fallback_source = default_model(env, api_base)
    generic = env.get("PROMPTGEN_MODEL")
    models: dict[str, str] = {}
    sources: dict[str, str] = {}
    for alias in ALIASES:
        env_name = f"PROMPTGEN_MODEL_{alias.upper()}"
        for value, source in (
            (cli.get(alias), "command line"),
            (env.get(env_name), env_name),
            (generic, "PROMPTGEN_MODEL"),
            (file_models.get(alias), f"config {path}"),
            (fallback, fallback_source),
        ):
            if value:
                models[alias], sources[alias] = str(value), source
                break
    under_test = split_models(cli.get("models"))
    mut_source = "command line"
    if not under_test:
        under_test, mut_source = _configured_models(env, file_models, path)
    sources["models under test"] = mut_source if under_test else "none"
    concurrency = (
        cli.get("concurrency") or env.get("PROMPTGEN_CONCURRENCY") or file.get("concurrency")
    )
    return GatewaySettings(
        models=models,
        sources=sources,
        models_under_test=under_test,
        api_base=api_base,
        concurrency=int(concurrency) if concurrency else None,
        timeout=float(cli.get("timeout") or env.get("PROMPTGEN_TIMEOUT") or 120.0),
        cache=bool(cli.get("cache", True)),
        cache_dir=Path(cli["cache_dir"]) if "cache_dir" in cli else None,
        config_file=path,
        batch=bool(cli.get("batch", False)),
        batch_limits=BatchLimits.from_env(env) if cli.get("batch") else BatchLimits(),
        strict_output=bool(cli.get("strict_output", False)),
        profile=cli.get("provider_profile") or _profile(env, file, path),
    )


def _profile(env: Mapping[str, str], file: dict[str, Any], path: Path | None) -> str | None:
    """PROMPTGEN_PROVIDER_PROFILE, else the config file's `provider_profile`; a name
    promptgen does not know is an error, never a silent fall back to the model's own."""
    for name, value, where in (
        ("PROMPTGEN_PROVIDER_PROFILE", env.get("PROMPTGEN_PROVIDER_PROFILE"), None),
        ("provider_profile", file.get("provider_profile"), path),
    ):
        if value is None or value == "":
            continue
        if value not in PROVIDER_PROFILES:
            raise BadInputError(
                f"{name} {value!r}: no such provider profile",
                file=where,
                hint=f"one of {', '.join(PROVIDER_PROFILES)}",
            )
        return str(value)
    return None


def configured_models(
    env: Mapping[str, str] = os.environ, cwd: Path | None = None
) -> tuple[list[str], str]:
    """The models under test the environment or the config file (found from `cwd`) name,
    and which one: PROMPTGEN_MODELS, else the file's `[models] under_test` (([], "none"):
    neither). A run's options come first: this is the last layer of the models under test
    in `promptgen.config.resolve_options`."""
    path = find_config(cwd, env)
    return _configured_models(env, read_config(path).get("models", {}), path)


def _configured_models(
    env: Mapping[str, str], file_models: Mapping[str, Any], path: Path | None
) -> tuple[list[str], str]:
    under_test = split_models(env.get("PROMPTGEN_MODELS"))
    if under_test:
        return under_test, "PROMPTGEN_MODELS"
    under_test = split_models(file_models.get("under_test"))
    return (under_test, f"config {path}") if under_test else ([], "none")


def _api_base(env: Mapping[str, str], file: dict[str, Any], path: Path | None) -> str | None:
    """PROMPTGEN_API_BASE, else the config file's `api_base`; set but empty or malformed
    is an error, never a silent fall back to the providers' network endpoints."""
    for name, value, where in (
        ("PROMPTGEN_API_BASE", env.get("PROMPTGEN_API_BASE"), None),
        ("api_base", file.get("api_base"), path),
    ):
        if value is None:
            continue
        try:
            return check_api_base(str(value))
        except ValueError as err:
            problem = str(err).replace("drop the flag", f"remove {name}")
            raise BadInputError(f"{name} {str(value)!r}: {problem}", file=where) from err
    return None
