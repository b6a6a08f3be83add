"""Create an exported eval and its runs through the openai SDK (`--create-eval-runs`):
upload items.jsonl (purpose "evals"), create the eval from eval.json, then one run per
run body, each reading the uploaded file. What was created goes to `created.json` (ids
and report URLs, never a key)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError, PromptgenError
from promptgen.export.common import ExportResult, write_json
from promptgen.secrets import scrub

# The Azure OpenAI API version that serves evals (preview); OPENAI_API_VERSION or
# AZURE_API_VERSION override it.
AZURE_API_VERSION = "2025-04-01-preview"


def _env(*names: str) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def client(kind: str) -> Any:
    """An openai.OpenAI (kind "openai") or openai.AzureOpenAI (kind "azure") client from
    the environment, as the SDK and litellm name the variables."""
    import openai

    if kind == "openai":
        if not os.environ.get("OPENAI_API_KEY"):
            raise BadInputError(
                "--create-eval-runs: OPENAI_API_KEY is not set",
                hint="set it (or put it in .env); OPENAI_BASE_URL picks another server",
            )
        return openai.OpenAI()
    endpoint = _env("AZURE_OPENAI_ENDPOINT", "AZURE_API_BASE")
    key = _env("AZURE_OPENAI_API_KEY", "AZURE_API_KEY")
    if not endpoint or not key:
        missing = "AZURE_OPENAI_ENDPOINT" if not endpoint else "AZURE_OPENAI_API_KEY"
        raise BadInputError(
            f"--create-eval-runs: {missing} is not set",
            hint="set AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY (or put them in .env)",
        )
    version = _env("OPENAI_API_VERSION", "AZURE_API_VERSION") or AZURE_API_VERSION
    return openai.AzureOpenAI(
        azure_endpoint=endpoint,
        api_key=key,
        api_version=version,
        default_headers={"aoai-evals": "preview"},
    )


def create_eval_runs(
    kind: str,
    out: Path,
    eval_body: dict[str, Any],
    runs: dict[str, dict[str, Any]],
    result: ExportResult,
) -> dict[str, Any]:
    """Upload, create the eval and its runs; write `out/created.json`; add notes."""
    import openai

    api = client(kind)
    created: dict[str, Any] = {"target": result.target, "file_id": None, "eval_id": None}
    created["runs"] = []
    step = "uploading items.jsonl"
    try:
        upload = api.files.create(
            file=("items.jsonl", (out / "items.jsonl").read_bytes(), "application/jsonl"),
            purpose="evals",
        )
        created["file_id"] = upload.id
        step = "creating the eval"
        made = api.evals.create(**eval_body)
        created["eval_id"] = made.id
        for filename, body in runs.items():
            model = body["data_source"].get("model")
            step = f"creating the run for {model}"
            source = {"type": "file_id", "id": upload.id}
            data_source = {**body["data_source"], "source": source}
            run = api.evals.runs.create(made.id, **{**body, "data_source": data_source})
            created["runs"].append(
                {
                    "model": model,
                    "run_body": f"runs/{filename}",
                    "run_id": run.id,
                    "status": getattr(run, "status", None),
                    "report_url": getattr(run, "report_url", None),
                }
            )
    except (openai.OpenAIError, OSError) as err:
        _save(out, created, result)
        raise PromptgenError(
            f"--create-eval-runs: {step} failed: {_reason(err)}; {_so_far(created)}",
            hint="see created.json" if created["file_id"] else None,
        ) from err
    _save(out, created, result)
    result.notes.append(f"created eval {created['eval_id']} (items file {created['file_id']})")
    for run in created["runs"]:
        where = f": {run['report_url']}" if run["report_url"] else ""
        result.notes.append(f"created run {run['run_id']} for {run['model']}{where}")
    return created


def _save(out: Path, created: dict[str, Any], result: ExportResult) -> None:
    path = write_json(out / "created.json", created)
    if path not in result.paths:
        result.paths.append(path)


def _so_far(created: dict[str, Any]) -> str:
    made = []
    if created["file_id"]:
        made.append(f"file {created['file_id']}")
    if created["eval_id"]:
        made.append(f"eval {created['eval_id']}")
    made += [f"run {r['run_id']} ({r['model']})" for r in created["runs"]]
    return "created before it: " + (", ".join(made) if made else "nothing")


def _reason(err: Exception) -> str:
    """The API's one-line reason, without anything shaped like a key."""
    status = getattr(err, "status_code", None)
    body = getattr(err, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = str(message or getattr(err, "message", None) or err)
    text = " ".join(scrub(text).split())[:300]
    return f"HTTP {status}: {text}" if status else text
