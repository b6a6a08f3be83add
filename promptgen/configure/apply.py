"""Writing a plan into the folder, and the one-call check of each configured model."""

from __future__ import annotations

import asyncio
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import load_dotenv

from promptgen.configure.envfile import ignore_env, read_env, update_env
from promptgen.configure.plan import Plan
from promptgen.configure.tomlfile import dumps, merge, read_toml
from promptgen.errors import PromptgenError
from promptgen.llm import LLM, RetryPolicy, load_settings
from promptgen.llm.config import CONFIG_NAMES

CHECK_MESSAGES = [{"role": "user", "content": "Say OK"}]


@dataclass
class Written:
    config: Path
    env: Path
    env_changed: list[str] = field(default_factory=list)  # variable names, never values
    gitignore: Path | None = None


@dataclass
class ModelCheck:
    model: str
    ok: bool
    detail: str  # the answer, or the one-line reason it failed


def config_path(folder: Path) -> Path:
    """The config file promptgen reads in `folder`: an existing one, else promptgen.toml."""
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    return folder / CONFIG_NAMES[0]


def existing_env(folder: Path) -> dict[str, str]:
    return read_env(folder / ".env")


def apply(plan: Plan, folder: Path) -> Written:
    """Merge the plan into the folder's config file and `.env`; keep `.env` out of git."""
    folder.mkdir(parents=True, exist_ok=True)
    path = config_path(folder)
    merged = merge(read_toml(path), plan.toml)
    text = dumps(merged)
    if tomllib.loads(text) != merged:  # a value the small writer cannot say: refuse, keep
        raise PromptgenError(f"could not write {path} faithfully; nothing was changed")
    path.write_text(text, encoding="utf-8")
    env = folder / ".env"
    changed = update_env(env, plan.env) if plan.env else []
    ignored = ignore_env(folder) if env.is_file() else None
    return Written(path, env, changed, ignored)


def load_env(folder: Path) -> None:
    """The folder's `.env` into the environment as `promptgen` loads it: never over a
    variable already set, so the check calls what a later run will call."""
    load_dotenv(folder / ".env", override=False)


def check_models(config: Path, models: list[str], timeout: float = 30.0) -> list[ModelCheck]:
    """One tiny uncached call per model through the gateway; a failure is a result."""
    settings = load_settings({"config": config, "cache": False, "timeout": timeout})
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.2, max_delay=1.0))

    async def all_checks() -> list[ModelCheck]:
        try:
            return list(await asyncio.gather(*(_check(llm, m) for m in models)))
        finally:
            await llm.aclose()

    return asyncio.run(all_checks())


async def _check(llm: LLM, model: str) -> ModelCheck:
    try:
        result = await llm.complete(CHECK_MESSAGES, model=model, max_tokens=4, stage="configure")
    except PromptgenError as err:  # no key, unknown model, missing extra
        return ModelCheck(model, False, err.one_line())
    if result.error and result.fault is None:
        return ModelCheck(model, False, " ".join(result.error.split()))
    # A reply cut off at the tiny token limit, or empty, still proves the model answers.
    answer = " ".join((result.text or "").split())[:40] or "(empty answer)"
    return ModelCheck(model, True, f"answered {answer!r} in {result.latency_ms:.0f} ms")


def environment_overrides() -> list[str]:
    """Variables that win over promptgen.toml for the models, so the user knows."""
    names = ("PROMPTGEN_MODEL", "PROMPTGEN_MODELS", "PROMPTGEN_API_BASE", "PROMPTGEN_CONFIG")
    found = [n for n in names if os.environ.get(n)]
    found += sorted(n for n in os.environ if n.startswith("PROMPTGEN_MODEL_") and os.environ.get(n))
    return found
