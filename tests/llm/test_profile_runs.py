"""Every schema promptgen sends, at every effort, within every provider profile's rules
(promptgen/llm/profiles.py), and whole runs against a server that refuses what each
provider refuses (tests/enforcing.py): none of their requests is refused.

The schemas are collected from the requests the fake server receives: every sample,
and the peer formats and options that bring schemas of their own (a Verdict judge,
Promptarchitect's judged tests, an LVE test, stepwise generation, compiled rules,
groundtruth, baseline tests, the review), at each effort. Each run is made under one
profile (its model named as a user would name it), the profiles in turn; what it sends
is checked against that profile's rules, and shaped from that form to every other
profile and checked there. The two commands that call a model
outside a run (`promptgen import`, `promptgen mutate`) are checked from their models.
bench/profiles.py runs every sample at every effort against each profile's server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import promptgen
from promptgen import Options
from promptgen.api import gateway_settings
from promptgen.importing.named import ImportAnswer
from promptgen.llm import LLM, RetryPolicy
from promptgen.llm.profiles import PROFILES
from promptgen.llm.schema_rules import problems
from promptgen.llm.shaping import shape
from promptgen.llm.structured import output_spec
from promptgen.mutation.mutants import proposals_model
from promptgen.options import Evaluation, Generation, Models, Run
from tests.conftest import OPEN_GATEWAYS, REPO
from tests.enforcing import MODEL_OF
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.test_every_sample import EFFORTS, SAMPLES

SAMPLE_DIR = REPO / "samples"


def roles(profile: str) -> dict[str, Any]:
    """Every role (and the models under test) on the model of `profile`."""
    model, chosen = MODEL_OF[profile]
    given: dict[str, Any] = {"rules_model": model, "eval_model": model, "models": [model]}
    given |= {"baseline_model": model, "groundtruth_model": model}
    return given | ({"provider_profile": chosen} if chosen else {})


# Generation, every schema of which depends on the prompt's inputs and the effort: each
# sample, an LVE test, stepwise generation (in two parts, each a test of its own).
# Evaluation, whose schemas depend on the judges: a Verdict-style judge,
# Promptarchitect's judged tests, and with both the compliance judge, groundtruth, the
# score judge and compiled rules.
PARTS: dict[str, list[tuple[Path, dict[str, Any]]]] = {
    "samples": [(SAMPLE_DIR / s, {"evals": False}) for s in SAMPLES[:5]],
    "more-samples": [
        *((SAMPLE_DIR / s, {"evals": False}) for s in SAMPLES[5:]),
        (SAMPLE_DIR / "lve" / "discount-code-leak" / "openai--gpt-4o-mini" / "test.json",
         {"evals": False}),
        (SAMPLE_DIR / "classify-sentiment.prompty", {"evals": False, "stepwise": "on"}),
    ],
    "judges": [
        (SAMPLE_DIR / "translate-support-reply.prompty",
         {"metric_files": [str(SAMPLE_DIR / "judges" / "reply-tone.verdict.md")]}),
        (SAMPLE_DIR / "promptarchitect" / "answer-from-article.prompt", {}),
    ],
}  # fmt: skip


def _run(fake: FakeLLM, prompt: Path, effort: str, out: Path, **extra: Any) -> Any:
    """One run at `effort` against `fake`, every schema-bearing option on, few tests
    evaluated (the schemas do not depend on how many); `evals=False`: generation only."""
    stepwise = extra.pop("stepwise", "auto")
    models = Models(api_base=fake.url, **_models(extra))
    options = Options(
        effort=effort,
        generation=Generation(
            baseline_tests=True, rate_tests=True, filter_tests=5, stepwise=stepwise
        ),
        evaluation=Evaluation(
            groundtruth=True,
            keep_unsafe=True,
            max_tests_to_run=2,
            runs_per_test=1,
            compile_rules=True,
            **extra,
        ),
        models=models,
        run=Run(out=out, cache=False),
    )
    prepared = promptgen.prepare(prompt, options)
    settings = gateway_settings(options, env={}, cwd=out)
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return promptgen.run(prepared, llm=llm, save=False)


def _models(extra: dict[str, Any]) -> dict[str, Any]:
    names = ("rules_model", "eval_model", "baseline_model", "groundtruth_model", "models")
    return {k: extra.pop(k) for k in (*names, "provider_profile") if k in extra}


def _sent(fake: FakeLLM) -> Iterator[tuple[str, dict[str, Any]]]:
    for body in fake.requests:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            yield fmt["json_schema"]["name"], fmt["json_schema"]["schema"]


Sent = tuple[str, str, dict[str, Any]]  # (profile, format name, schema as sent)


def collect(part: str, effort: str, out: Path) -> dict[str, Sent]:
    """Every distinct json_schema the runs of `part` send at `effort`, by its text. Each
    run is made under one profile, in turn, its model named as a user would (MODEL_OF).
    Ollama's form has its `$defs` inlined, which would count every property once per
    use under another profile: it is met by shaping, and in a whole run below."""
    seen: dict[str, Sent] = {}
    start = EFFORTS.index(effort) * len(PARTS[part])
    profiles = [p for p in PROFILES if not PROFILES[p].inline_refs]
    with FakeLLM(responder=PipelineResponder()) as fake:
        for i, (prompt, extra) in enumerate(PARTS[part]):
            profile = profiles[(start + i) % len(profiles)]
            _run(fake, prompt, effort, out / str(i), **roles(profile), **extra)
            for name, schema in _sent(fake):
                key = json.dumps([profile, name, schema], sort_keys=True)
                seen.setdefault(key, (profile, name, schema))
            fake.reset()
    return seen


def broken(profile: str, name: str, sent: dict[str, Any]) -> list[str]:
    """What `sent` breaks under the profile it was sent for, and shaped from it to every
    other profile, there."""
    found = [f"{profile} {name}: {p.text}" for p in problems(sent, profile, name)]
    for other in PROFILES:
        shaped = shape(sent, other)
        found += [f"{profile}->{other} {name}: {p.text}" for p in problems(shaped, other, name)]
    return found


# The kinds of schema each part sends: the collection misses none.
GENERATION = {
    "BehavioursAnswer", "IntentAnswer", "InputSpecAnswer", "RulesAnswer", "InverseAnswer",
    "TestCases", "Screening", "SafetyAnswer", "ImportanceVerdicts", "CollectionReview",
}  # fmt: skip
KINDS = {
    "samples": GENERATION,
    "more-samples": GENERATION
    | {"ShortInputSpecAnswer", "RuleFromInstruction", "TestInputs", "ClassCheck"},
    "judges": GENERATION
    | {"ComplianceVerdict", "GroundtruthScore", "ScoreVerdict", "RuleCheckProposal",
       "VerdictRubric", "VerdictJudgement", "PaQuestionAnswer", "PaScoreAnswer",
       "FaithfulnessAnswer"},
}  # fmt: skip
# From low effort, groundedness and validity; from medium, the expansion's test case.
FROM = {"low": {"Grounded", "Verdicts"}, "medium": {"TestCase"}}


@pytest.mark.parametrize("part", list(PARTS))
@pytest.mark.parametrize("effort", EFFORTS)
def test_every_schema_sent_at_every_effort_keeps_every_profiles_rules(
    effort: str, part: str, tmp_path: Path
) -> None:
    sent = collect(part, effort, tmp_path)
    names = {name for _, name, _ in sent.values()}
    later = EFFORTS[: EFFORTS.index(effort) + 1]
    expected = KINDS[part].union(*(FROM.get(e, set()) for e in later))
    assert names == expected, sorted(names ^ expected)
    found = [line for sent_for in sent.values() for line in broken(*sent_for)]
    assert found == []


def test_the_schemas_of_import_and_mutate_keep_every_profiles_rules() -> None:
    for model in (ImportAnswer, proposals_model(2, 5), proposals_model(9, 40)):
        spec = output_spec(model)
        for profile in PROFILES:
            shaped = shape(spec.schema, profile)
            assert problems(shaped, profile, spec.name) == [], (profile, spec.name)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_run_against_each_providers_rules_has_no_request_refused(
    profile: str, tmp_path: Path
) -> None:
    """extract-contacts at --effort min: 51 nullable inputs across its test cases, a
    groundtruth score and a score judge bounded 0-100, a baseline."""
    model = MODEL_OF[profile][0]
    with FakeLLM(responder=PipelineResponder(), profile=profile) as fake:
        prompt = SAMPLE_DIR / "extract-contacts.prompty"
        ctx = _run(fake, prompt, "min", tmp_path, **roles(profile))
        assert fake.refused == []
        names = {name for name, _ in _sent(fake)}
        assert {b["model"] for b in fake.requests} == {model}  # every role, one profile
    assert {"TestCases", "GroundtruthScore", "ComplianceVerdict"} <= names
    assert {r.status for r in ctx.stages.values()} <= {"done", "skipped"}
    assert ctx.tests and ctx.test_runs and all(r.error is None for r in ctx.test_runs)
