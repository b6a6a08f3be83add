"""Exports to eval platforms: one module per target, each a function of the context.

    write_exports(ctx, ["openai-evals", "promptfoo"], Path("out"), ExportSettings())

writes every target into its own folder under `out` and returns what each wrote and
what it could not carry over. No model is called (docs/exports.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.export.common import ExportResult, ExportSettings, Writer
from promptgen.options import Run

__all__ = [
    "TARGETS",
    "ExportResult",
    "ExportSettings",
    "parse_targets",
    "run_exports",
    "write_exports",
]


@dataclass(frozen=True)
class Target:
    """An export target: its name, one line for `--list`, and where its writer lives."""

    name: str
    summary: str
    module: str
    function: str = "write"

    @property
    def writer(self) -> Writer:
        module = importlib.import_module(f"promptgen.export.{self.module}")
        return getattr(module, self.function)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "openai-evals",
            "OpenAI Evals: an eval body, a run body per model, items.jsonl "
            "(--create-eval-runs creates them)",
            "openai_evals",
            "write_openai",
        ),
        Target(
            "azure-evals",
            "Azure OpenAI Evals: the same bodies with deployment names",
            "openai_evals",
            "write_azure",
        ),
        Target(
            "github-models",
            "GitHub Models <prompt>.prompt.yml with testData and evaluators "
            "(round trip of an author's file)",
            "github_models",
        ),
        Target(
            "promptfoo",
            "promptfooconfig.yaml: prompts, providers, tests with vars and assertions",
            "promptfoo",
        ),
        Target(
            "inspect",
            "Inspect AI: dataset.jsonl and a task file scored by a model-graded rubric",
            "inspect_ai",
        ),
        Target(
            "lve",
            "LVE: test.json (prompt, parameters, checker) and instances/promptgen.jsonl per "
            "model (a skeleton where a test was not run)",
            "lve",
        ),
        Target(
            "promptarchitect",
            "Promptarchitect <prompt>.prompt with tests, a system_role file and a sample "
            "file per test",
            "promptarchitect",
        ),
        Target("jsonl", "tests.jsonl: one test per line, every field", "plain", "write_jsonl"),
        Target("csv", "tests.csv: one test per row, flattened columns", "plain", "write_csv"),
    )
}


def parse_targets(values: list[str] | str) -> list[str]:
    """`"openai-evals,promptfoo"` (or a list of such) -> known target names, in order."""
    items = [values] if isinstance(values, str) else list(values)
    names = [n.strip() for item in items for n in str(item).split(",") if n.strip()]
    if not names:
        raise BadInputError("no export target given", hint=f"give one of {', '.join(TARGETS)}")
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise BadInputError(
            f"unknown export target {unknown[0]!r}",
            hint=f"give one or more of {', '.join(TARGETS)} (promptgen export --list)",
        )
    return list(dict.fromkeys(names))


def write_exports(
    ctx: Context, targets: list[str], out: Path, settings: ExportSettings | None = None
) -> list[ExportResult]:
    """Write each target into `out/<target>/`; returns what each wrote. Nothing is
    called but, with `settings.create_eval_runs`, the eval platform's API."""
    settings = settings or ExportSettings()
    results = []
    for name in parse_targets(targets):
        results.append(TARGETS[name].writer(ctx, out / name, settings))
    return results


def run_exports(ctx: Context, run: Run, out: Path) -> list[ExportResult]:
    """The exports a run's `--export` asks for, into `out/exports/<target>/` (none when
    it asks for none): what `promptgen FILE` and each prompt of a batch write."""
    if not run.export:
        return []
    settings = ExportSettings(in_place=run.in_place, create_eval_runs=run.create_eval_runs)
    return write_exports(ctx, run.export, out / "exports", settings)
