"""OpenAI Evals and Azure OpenAI Evals: an eval create body (`eval.json`), one run create
body per model the platform can run (`runs/<model>.json`) and the items (`items.jsonl`).

The bodies are what `client.evals.create(**body)` and `client.evals.runs.create(eval_id,
**body)` take; `settings.create_eval_runs` sends them (promptgen/export/openai_create.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptgen import __version__
from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    ExportResult,
    ExportSettings,
    exported_tests,
    models_under_test,
    placeholder_messages,
    provider_and_name,
    sampling,
    write_json,
    write_jsonl,
)
from promptgen.export.openai_graders import testing_criteria
from promptgen.export.openai_items import Fields, item_ref, item_schema, make_item
from promptgen.llm.config import ALIASES
from promptgen.results import Test

FALLBACK_GRADER = "gpt-4o-mini"
# Call parameters a completions run takes (the SDK's SamplingParams), besides
# max_tokens (max_completion_tokens there) and response_format.
_SAMPLING = ("temperature", "top_p", "seed", "reasoning_effort")
_FORMATS = ("text", "json_object", "json_schema")


# -- the two platforms ------------------------------------------------------------------


@dataclass(frozen=True)
class Platform:
    """What differs between OpenAI and Azure OpenAI: which models it runs, by what name."""

    target: str
    provider: str | None  # the provider prefix of the models it runs (None: openai or bare)
    kind: str  # "an OpenAI model" / "an Azure OpenAI deployment (azure/<deployment>)"
    create: str  # "openai" or "azure" (openai_create.py)

    def model_name(self, model: str) -> str | None:
        """The model's name on this platform, or None when it cannot run it."""
        provider, name = provider_and_name(model)
        if self.provider is None:
            return name if provider in (None, "openai") and _is_model_name(name) else None
        return name if provider == self.provider and name else None


OPENAI = Platform("openai-evals", None, "an OpenAI model", "openai")
AZURE = Platform("azure-evals", "azure", "an Azure OpenAI deployment (azure/<deployment>)", "azure")


def _is_model_name(name: str) -> bool:
    """A real model id, not a promptgen alias or the `openai/default` of an API base."""
    return bool(name) and name not in (*ALIASES, "default")


def write_openai(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    return _write(ctx, out, settings, OPENAI)


def write_azure(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    return _write(ctx, out, settings, AZURE)


def _write(ctx: Context, out: Path, settings: ExportSettings, platform: Platform) -> ExportResult:
    result = ExportResult(target=platform.target)
    tests = exported_tests(ctx)
    fields = Fields.of(ctx, tests)
    template_messages = placeholder_messages(ctx, item_ref)
    items = [make_item(ctx, t, fields, rendered=template_messages is None) for t in tests]
    grader = grader_model(ctx, platform, result)
    body = eval_body(ctx, tests, fields, grader, result, rendered=template_messages is None)
    runs = run_bodies(ctx, settings, platform, fields, items, template_messages, result)
    try:
        result.paths.append(write_json(out / "eval.json", body))
        result.paths.append(write_jsonl(out / "items.jsonl", [{"item": i} for i in items]))
        for stale in sorted((out / "runs").glob("*.json")):
            if stale.name not in runs:  # a model of an earlier export
                stale.unlink()
        for filename, run in runs.items():
            result.paths.append(write_json(out / "runs" / filename, run))
    except OSError as err:
        raise BadInputError(
            f"cannot write the {platform.target} export: {err.strerror or err}",
            file=out,
            hint="give a writable --out folder",
        ) from err
    if not tests:
        result.notes.append("no test to export: items.jsonl is empty")
    if template_messages is None:
        result.notes.append(
            "the prompt's template has logic: each item carries its rendered `messages`"
        )
    if settings.create_eval_runs:
        from promptgen.export.openai_create import create_eval_runs

        create_eval_runs(platform.create, out, body, runs, result)
    return result


# -- the eval ---------------------------------------------------------------------------


def grader_model(ctx: Context, platform: Platform, result: ExportResult) -> str:
    """The run's first eval model when the platform can run it, else a placeholder."""
    models = ctx.options.models
    first = (models.eval_models or [models.eval_model or ""])[0]
    name = platform.model_name(first) if first else None
    if name:
        return name
    given = f"the run's eval model {first} is not {platform.kind}" if first else "no eval model"
    if platform is AZURE:
        result.notes.append(
            f"grader model: {given}; eval.json names the placeholder deployment "
            f"{FALLBACK_GRADER!r}: replace it with a deployment of yours"
        )
    else:
        result.notes.append(f"grader model: {given}; the graders use {FALLBACK_GRADER}")
    return FALLBACK_GRADER


def eval_body(
    ctx: Context,
    tests: list[Test],
    fields: Fields,
    grader: str,
    result: ExportResult,
    *,
    rendered: bool,
) -> dict[str, Any]:
    criteria = testing_criteria(ctx, tests, fields, grader, result)
    return {
        "name": ctx.prompt.name,
        "data_source_config": {
            "type": "custom",
            "item_schema": item_schema(ctx, tests, fields, rendered=rendered),
            "include_sample_schema": True,
        },
        "testing_criteria": criteria,
        "metadata": metadata(ctx),
    }


def metadata(ctx: Context, **extra: str) -> dict[str, str]:
    """OpenAI metadata: at most 16 text values of at most 512 characters."""
    values = {
        "promptgen_run_id": ctx.run_id,
        "promptgen_prompt": ctx.prompt.name,
        "promptgen_version": __version__,
        **extra,
    }
    return {k[:64]: str(v)[:512] for k, v in list(values.items())[:16]}


# -- runs -------------------------------------------------------------------------------


def run_bodies(
    ctx: Context,
    settings: ExportSettings,
    platform: Platform,
    fields: Fields,
    items: list[dict[str, Any]],
    template_messages: list[dict[str, str]] | None,
    result: ExportResult,
) -> dict[str, dict[str, Any]]:
    """`runs/<file name>` -> run create body, one per model the platform can run."""
    if template_messages is None:
        input_messages: dict[str, Any] = {
            "type": "item_reference",
            "item_reference": f"item.{fields['messages']}",
        }
    else:
        input_messages = {"type": "template", "template": template_messages}
    params = sampling_params(ctx, result)
    bodies: dict[str, dict[str, Any]] = {}
    for model in models_under_test(ctx, settings):
        name = platform.model_name(model)
        if name is None:
            result.skipped.append(f"model {model}: not {platform.kind}; {_elsewhere(model)}")
            continue
        data_source: dict[str, Any] = {
            "type": "completions",
            "model": name,
            "input_messages": input_messages,
            "source": {"type": "file_content", "content": [{"item": i} for i in items]},
        }
        if params:
            data_source["sampling_params"] = params
        body = {
            "name": f"{ctx.prompt.name} on {name}",
            "data_source": data_source,
            "metadata": metadata(ctx, promptgen_model=model),
        }
        bodies[_filename(name, bodies)] = body
    if not bodies:
        result.notes.append(f"no model under test is {platform.kind}: no run body written")
    return bodies


def _elsewhere(model: str) -> str:
    """Where a model the platform cannot run can run instead."""
    for other in (OPENAI, AZURE):
        if other.model_name(model) is not None:
            return f"the {other.target} target takes it, or run it with promptgen"
    return "run it with promptgen"


def sampling_params(ctx: Context, result: ExportResult) -> dict[str, Any]:
    """The prompt's call parameters a completions run takes; the others are skipped."""
    params: dict[str, Any] = {}
    for key, value in sampling(ctx).items():
        if key in ("max_tokens", "max_completion_tokens"):
            params["max_completion_tokens"] = value
        elif key in _SAMPLING or (key == "response_format" and _format_ok(value)):
            params[key] = value
        else:
            result.skipped.append(
                f"parameter {key}: an OpenAI Evals completions run does not take it"
            )
    return params


def _format_ok(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _FORMATS


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _filename(model: str, taken: dict[str, Any]) -> str:
    stem = _UNSAFE.sub("_", model).strip("._") or "model"
    name, n = f"{stem}.json", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.json"
    return name
