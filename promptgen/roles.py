"""The roles a run calls that no model is named for, when `--api-base` names a server.

The server's list (`llm/served.py`) decides: its one model is used for every such role,
said in one line and saved in the run's options (so a resumed run asks nothing again);
several models are an error (exit 2) listing them, before any call, unless the run
points at one of them: a model under test, else the model the prompt file names, else
promptgen's default OpenAI model (gpt-4o-mini), which the roles then use (said); no list keeps
the model id `default`, said. A role the run does not call never stops it.
"""

from __future__ import annotations

from dataclasses import replace

from promptgen.config import SAVED, RunConfig, model_fields
from promptgen.context import Context
from promptgen.llm.config import OPENAI_DEFAULT
from promptgen.llm.served import SERVED, ask_for, filled, said, unnamed
from promptgen.options import BY_NAME
from promptgen.pipeline import models_used, plan

ROLE_OPTIONS = {
    "rules": "rules_model",
    "eval": "eval_model",
    "baseline": "baseline_model",
    "groundtruth": "groundtruth_model",
}


def from_server(
    ctx: Context, cfg: RunConfig, sources: dict[str, str]
) -> tuple[RunConfig, list[str]]:
    """`cfg` with the unnamed roles on the one model the server serves (its options and
    `sources` updated in place: they are the context's), and the line to say; raises
    BadInputError when the server serves several and the run calls an unnamed role."""
    settings = cfg.settings
    served = ask_for(settings) if settings is not None else None
    if settings is None or served is None or served.unreachable:
        return cfg, []  # every role named, or no server: its calls will say so
    empty = unnamed(settings)
    used = [role for role in empty if role in _called(ctx, cfg)]
    flags = [BY_NAME[ROLE_OPTIONS[role]].flag or role for role in used]
    several = used and len(served.ids) > 1
    chosen = chosen_among(served.ids, cfg.models, ctx.prompt.model.id) if several else None
    if chosen is not None:
        # A model on this server the run already points at: the unnamed roles use it.
        model, why = chosen
        line: str | None = (
            f"using {model}, {why}, for {_joined(flags)}{' too' if why == UNDER_TEST else ''} "
            f"({settings.api_base} serves {len(served.ids)} models; name another with those)"
        )
        served = replace(served, ids=(model,))
    else:
        line = said(served, flags, main=True) if used else None  # several: BadInputError
    if len(served.ids) == 1:
        settings = filled(settings, served)
        for role in empty:
            name = ROLE_OPTIONS[role]
            if cfg.options[name] is None:
                setattr(cfg.options.models, name, settings.models[role])
                sources[name] = settings.sources[role]
        fields = model_fields(cfg.options, settings)
        cfg = replace(cfg, settings=settings, sources=dict(sources), **fields)
    return cfg, [line] if line else []


UNDER_TEST = "the model under test"


def chosen_among(
    ids: tuple[str, ...], models: tuple[str, ...], named: str | None
) -> tuple[str, str] | None:
    """The model of several served that the unnamed roles use, and why: the first model
    under test the server serves (`openai/x` or `x`), else the model the prompt file
    names, else promptgen's default OpenAI model; None: nothing points at one of them."""
    tested = next((b for m in models if (b := m.removeprefix("openai/")) in ids), None)
    if tested is not None:
        return tested, UNDER_TEST
    prompts = (named or "").removeprefix("openai/")
    if prompts in ids:
        return prompts, "the model the prompt names"
    default = OPENAI_DEFAULT.removeprefix("openai/")
    if default in ids:
        return default, "promptgen's default model"
    return None


def _joined(flags: list[str]) -> str:
    return ", ".join(flags[:-1]) + " and " + flags[-1] if len(flags) > 1 else "".join(flags)


def kept_sources(sources: dict[str, str], before: dict[str, str]) -> None:
    """A resumed run's models taken from the server's list keep saying so (the saved
    layer would call them the earlier run's command line)."""
    for name, source in before.items():
        if source.startswith(SERVED) and sources.get(name) == SAVED:
            sources[name] = source


def _called(ctx: Context, cfg: RunConfig) -> set[str]:
    """The models the run will call, aliases left as aliases."""
    bare = replace(cfg, **model_fields(cfg.options, None))
    return set(models_used(ctx, bare, plan(ctx, bare)))
