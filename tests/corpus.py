"""Access to the shared conformance corpus (../shared/corpus) and how promptgen fares on it.

Runnable on its own to print the figures: `python -m tests.corpus`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from promptgen.errors import PromptgenError
from promptgen.evaluation.lve_replay import ReplayReport, replay
from promptgen.formats import load_prompt
from promptgen.formats.body import parse_messages
from promptgen.rendering.render import render_template

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
VECTORS = CORPUS / "prompty" / "vectors.json"
LVE_REPOSITORY = CORPUS / "lve" / "repository"

# Vectors for features promptgen leaves out on purpose, each with the reason.
SKIPPED_VECTORS: dict[str, str] = {
    "thread_nonce_expansion": (
        "threads (conversation-history inputs spliced in as messages) are out of scope: "
        "promptgen tests single prompts, and thread inputs are not generated"
    ),
    "thread_nonce_injection": (
        "threads are out of scope (see thread_nonce_expansion); the nonce marker only "
        "exists to splice a thread in"
    ),
}

# Corpus files that must fail, with the deliberate error each one gets.
# Most reference sibling files (`${file:...}`) that were not copied into the flattened
# corpus; the rest use features promptgen rejects clearly.
EXPECTED_FAILURES: dict[str, str] = {
    "evals_action.yml": "not a GitHub Models prompt",  # a GitHub Actions workflow
    "runtime_prompty_tests_mustache_basic.prompty": "mustache partials are not supported",
    "runtime_prompty_tests_prompts_fake.prompty": "template format 'fake' is not supported",
    "runtime_promptycs_Prompty.Core.Tests_prompty_fake.prompty": "template format 'fake'",
    "runtime_promptyjs_tests_prompts_fake.prompty": "template format 'fake' is not supported",
    **{
        name: "template uses {% extends %}"
        for name in (
            "runtime_prompty_tests_prompts_faithfulness.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_faithfulness.prompty",
            "runtime_promptyjs_tests_prompts_faithfulness.prompty",
        )
    },
    **{
        name: "${file:} reference"
        for name in (
            "runtime_csharp_Prompty.Core.Tests_Prompts_file_ref.prompty",
            "runtime_python_prompty_tests_prompts_config_cascade.prompty",
            "runtime_python_prompty_tests_prompts_file_ref.prompty",
            "runtime_prompty_tests_prompts_context.prompty",
            "runtime_prompty_tests_prompts_funcfile.prompty",
            "runtime_prompty_tests_prompts_structured_output.prompty",
            "runtime_promptycs_Prompty.Core.Tests_agents_basic.prompty",
            "runtime_promptycs_Prompty.Core.Tests_agents_openapi.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_basic_with_file.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_basic_with_missing_file.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_context.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_relativeFileReference.prompty",
            "runtime_promptycs_Prompty.Core.Tests_prompty_structured_output.prompty",
            "runtime_promptyjs_tests_prompts_context.prompty",
            "runtime_promptyjs_tests_prompts_funcfile.prompty",
            "runtime_promptyjs_tests_prompts_structured_output.prompty",
        )
    },
}


def available() -> bool:
    return VECTORS.is_file()


@cache
def vectors(stage: str) -> list[dict[str, Any]]:
    data = json.loads(VECTORS.read_text(encoding="utf-8"))
    return [v["vector"] for v in data["vectors"] if v["vector"].get("stage") == stage]


def corpus_files() -> list[Path]:
    files: list[Path] = []
    for folder, patterns in (
        ("prompty", ("*.prompty", "*.md", "*.prompt.yml")),
        ("promptpex/samples", ("*.prompty", "*.md", "*.prompt.yml")),
        ("gh-models", ("*.yml", "*.yaml")),
    ):
        for pattern in patterns:
            files.extend((CORPUS / folder).rglob(pattern))
    return sorted(set(files))


def expected_messages(vector: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for m in vector["expected"]["messages"]:
        text = "".join(part["value"] for part in m["content"] if part["kind"] == "text")
        out.append({"role": m["role"], "content": text, "attributes": m.get("metadata", {})})
    return out


def parsed_messages(vector: dict[str, Any]) -> list[dict[str, Any]]:
    messages = parse_messages(vector["input"]["rendered"], "vector")
    return [m.model_dump(include={"role", "content", "attributes"}) for m in messages]


def rendered(vector: dict[str, Any]) -> str:
    # Prompty's renderer uses Jinja2's default (lenient) undefined; promptgen's default is
    # strict, so vectors run with strict=False, and strictness has its own tests.
    data = vector["input"]
    return render_template(data["template"], data["inputs"], engine=data["engine"], strict=False)


@dataclass
class Figures:
    parse_passed: int = 0
    render_passed: int = 0
    vectors_total: int = 0
    skipped: int = 0
    files_total: int = 0
    files_loaded: int = 0
    files_expected_error: int = 0
    failures: list[str] = field(default_factory=list)
    lve_replay: str | None = None

    def lines(self) -> list[str]:
        passed = self.parse_passed + self.render_passed
        lve = [f"LVE {self.lve_replay}"] if self.lve_replay else []
        return [
            f"prompty vectors: {passed}/{self.vectors_total - self.skipped} passed "
            f"({self.skipped} skipped: threads out of scope) "
            f"[parse {self.parse_passed}, render {self.render_passed}]",
            f"corpus files: {self.files_loaded + self.files_expected_error}/{self.files_total} "
            f"behave as expected ({self.files_loaded} loaded, "
            f"{self.files_expected_error} rejected with their deliberate error)",
            *lve,
            *(f"  FAILED {f}" for f in self.failures),
        ]


def figures() -> Figures:
    fig = Figures()
    for stage, check in (("parse", _parse_ok), ("render", _render_ok)):
        for vector in vectors(stage):
            fig.vectors_total += 1
            if vector["name"] in SKIPPED_VECTORS:
                fig.skipped += 1
            elif check(vector):
                setattr(fig, f"{stage}_passed", getattr(fig, f"{stage}_passed") + 1)
            else:
                fig.failures.append(f"vector {stage}/{vector['name']}")
    for path in corpus_files():
        fig.files_total += 1
        outcome = load_outcome(path)
        if outcome == "loaded" and path.name not in EXPECTED_FAILURES:
            fig.files_loaded += 1
        elif outcome != "loaded" and EXPECTED_FAILURES.get(path.name, "\0") in outcome:
            fig.files_expected_error += 1
        else:
            fig.failures.append(f"{path.name}: {outcome}")
    if LVE_REPOSITORY.is_dir():
        fig.lve_replay = lve_replay().summary()
    return fig


@cache
def lve_replay() -> ReplayReport:
    """Every recorded instance of the corpus' LVEs, checked again (no model call)."""
    return replay([LVE_REPOSITORY])


def load_outcome(path: Path) -> str:
    try:
        load_prompt(path)
    except PromptgenError as err:
        return err.one_line()
    return "loaded"


def _parse_ok(vector: dict[str, Any]) -> bool:
    try:
        return parsed_messages(vector) == expected_messages(vector)
    except PromptgenError:
        return False


def _render_ok(vector: dict[str, Any]) -> bool:
    try:
        return rendered(vector) == vector["expected"]["rendered"]
    except PromptgenError:
        return False


if __name__ == "__main__":
    if not available():
        raise SystemExit(f"corpus not found at {CORPUS}")
    print("\n".join(figures().lines()))
