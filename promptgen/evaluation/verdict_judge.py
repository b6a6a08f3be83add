"""Verdict-style judge templates as metrics: a `*.verdict.md` (or `.verdict.txt`) file
whose frontmatter declares a `scale` (formats/verdict.py reads and checks it).

One verdict per eval model: an optional rubric step first (its answer is `previous`),
then `judges` independent judgements of the same messages, pooled as Verdict's
MeanPoolUnit (`pool: mean`, the average) or MaxPoolUnit (`pool: max`, the most frequent
answer, the first one given on a tie). The pooled answer is scored 0-100:
a discrete scale linearly (lowest 0, highest 100), a boolean or categorical one as the
share of judgements (mean) or the pooled answer (max) that passes.

Files beside the prompt are found as custom.py finds `*.metric.prompty`: `NAME.verdict.md`
and `NAME.*.verdict.md` belong to the prompt `NAME.*` only, other judge files apply to
every prompt in the folder. A template without a `scale` is not a metric; neither is the
prompt under test itself.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from promptgen.errors import BadInputError, RenderError
from promptgen.evaluation.judges import ANALYSIS_VALUES
from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.formats import SUFFIXES, load_prompt
from promptgen.formats.common import strip_suffix
from promptgen.llm import Completion
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.prompting.bounded import Text
from promptgen.rendering.pyformat import MissingInput
from promptgen.rendering.verdict_template import previous_of, render, roots, variables
from promptgen.results import MetricInfo

LOAD_ORDER = 2  # after custom.py (same order, name after it), before the checks
JUDGE_SUFFIXES = (".verdict.md", ".verdict.txt")
RESERVED = ("compliance", "accuracy")
# What a judge template reads off `source` (and `input`), plus the prompt's inputs.
JUDGE_VALUES = ("prompt", "intent", "inputSpec", "rules", "input", "output", "groundtruth")
_TYPES: dict[str, Any] = {"string": str, "list": list[str], "integer": int, "number": float}


def is_judge_file(path: str | Path) -> bool:
    return str(path).lower().endswith(JUDGE_SUFFIXES)


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    own = Path(prompt.source).resolve() if prompt.source else None
    paths = discover(own) if own is not None and own.is_file() else []
    given = [_given(f) for f in options.evaluation.metric_files if is_judge_file(f)]
    found: list[Metric] = []
    for path in dict.fromkeys([*paths, *given]):
        try:
            metric = from_file(path, prompt)
        except BadInputError as err:
            if path in given:
                err.message = f"--metric: {err.message}"
            raise
        if metric is not None:
            found.append(metric)
        elif path in given:
            raise BadInputError(
                "--metric: the Verdict template declares no scale, so it is not a judge",
                file=path,
                hint="add scale: 1-5 (or [a, b] or boolean) to its frontmatter",
            )
    return found


def discover(prompt_file: Path) -> list[Path]:
    """Judge files beside the prompt that apply to it (see the module docstring)."""
    folder = prompt_file.parent
    stems = {
        strip_suffix(p.name, SUFFIXES)
        for p in folder.iterdir()
        if p.is_file() and p.name.endswith(SUFFIXES) and not is_judge_file(p)
    }
    stem = strip_suffix(prompt_file.name, (*JUDGE_SUFFIXES, *SUFFIXES))
    found = []
    for path in sorted(p for p in folder.iterdir() if is_judge_file(p) and p.is_file()):
        owner = path.name.split(".")[0]
        if path.resolve() != prompt_file and (owner == stem or owner not in stems):
            found.append(path.resolve())
    return found


def _given(file: str) -> Path:
    path = Path(file)
    if not path.is_file():
        raise BadInputError("--metric file not found", file=path, hint="check the path")
    return path.resolve()


def from_file(path: Path, prompt: PromptUnderTest) -> VerdictJudge | None:
    """The judge a file declares (None: a template without a scale)."""
    template = load_prompt(path, "verdict")
    spec = template.extra.get("verdict")
    if spec is None:
        return None
    _check_names(template, spec, prompt, str(path))
    name = template.name
    if name in RESERVED:
        raise BadInputError(
            f"a custom metric is named {name!r}, like a built-in one",
            file=path,
            hint="give it another name",
        )
    info = MetricInfo(
        name=name,
        kind="custom",
        scorer=_scorer(spec),
        description=template.description,
        source=str(path),
    )
    return VerdictJudge(info, template=template, spec=spec)


def _scorer(spec: dict[str, Any]) -> bool:
    """Scored (a run passes when its average over eval models is ≥ 50) unless a discrete
    scale passes elsewhere than its midpoint: then every eval model's verdict must pass."""
    scale = spec["scale"]
    if scale["kind"] != "discrete":
        return True
    return spec["pass"] == (scale["min"] + scale["max"]) / 2


def _check_names(
    template: PromptUnderTest, spec: dict[str, Any], prompt: PromptUnderTest, where: str
) -> None:
    allowed = {*JUDGE_VALUES, *prompt.inputs}
    rubric = spec.get("rubric")
    steps = [("judge", m["content"], m["line"]) for m in template.model_dump()["messages"]]
    steps += [("rubric", m["content"], m["line"]) for m in (rubric or {}).get("messages", [])]
    for step, content, line in steps:
        for name in variables(content):
            if name not in allowed:
                raise BadInputError(
                    f"the judge reads source.{name}, which promptgen does not provide",
                    file=where,
                    line=line,
                    hint="a judge reads source."
                    + ", source.".join(JUDGE_VALUES)
                    + " and the prompt's inputs",
                )
        if step == "judge" and rubric is None and "previous" in roots(content):
            raise BadInputError(
                "the judge reads previous, but the file declares no rubric step",
                file=where,
                line=line,
                hint="add a rubric: template, or remove {previous...}",
            )


def unit_values(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """What `{unit.x}` reads in a judge template."""
    scale = spec["scale"]
    if scale["kind"] == "discrete":
        values: list[Any] = list(range(scale["min"], scale["max"] + 1))
        words = f"a whole number from {scale['min']} (worst) to {scale['max']} (best)"
    elif scale["kind"] == "boolean":
        values, words = [True, False], "true or false"
    else:
        values, words = scale["values"], "one of: " + ", ".join(scale["values"])
    return {
        "name": name,
        "scale": words,
        "choices": values,
        "explanation": spec["explanation"],
        "judges": spec["judges"],
    }


def preview(template: PromptUnderTest, values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The judge's messages rendered with `values` and a stand-in rubric answer (what
    `promptgen inspect` shows of a judge template)."""
    spec = template.extra["verdict"]
    rubric = spec.get("rubric")
    previous = None
    if rubric:
        stand_in: dict[str, Any] = {}
        for name, kind in rubric["fields"].items():
            count = rubric["count"] or 2
            items = [f"<{name} {i}>" for i in range(1, count + 1)]
            stand_in[name] = items if kind == "list" else f"<{name}>"
        previous = previous_of([(rubric["name"], stand_in)])
    unit = unit_values(template.name, spec)
    return [
        {"role": m.role, "content": render(m.content, values, previous=previous, unit=unit)}
        for m in template.messages
    ]


def answer_model(spec: dict[str, Any]) -> type[BaseModel]:
    """The judge's answer: an explanation first when asked, then a value of the scale."""
    scale = spec["scale"]
    fields: dict[str, Any] = {}
    if spec["explanation"]:
        fields["explanation"] = (Text(600, description="Why this value."), ...)
    if scale["kind"] == "discrete":
        fields["score"] = (int, Field(ge=scale["min"], le=scale["max"]))
    elif scale["kind"] == "boolean":
        fields["score"] = (bool, ...)
    else:
        fields["choice"] = (Literal[tuple(scale["values"])], ...)
    return create_model("VerdictJudgement", **fields)


def rubric_model(rubric: dict[str, Any]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, kind in rubric["fields"].items():
        if kind == "list" and rubric["count"]:
            count = rubric["count"]
            fields[name] = (list[str], Field(min_length=count, max_length=count))
        else:
            fields[name] = (_TYPES.get(kind, bool), ...)
    return create_model("VerdictRubric", **fields)


@dataclass
class VerdictJudge(MetricBase):
    template: PromptUnderTest
    spec: dict[str, Any]
    _answer: type[BaseModel] = field(init=False, repr=False)
    _rubric: type[BaseModel] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._answer = answer_model(self.spec)
        rubric = self.spec.get("rubric")
        self._rubric = rubric_model(rubric) if rubric else None
        texts = [m.content for m in self.template.messages]
        texts += [m["content"] for m in (rubric or {}).get("messages", [])]
        read = {name for text in texts for name in variables(text)}
        self.reads_analysis = bool(read & set(ANALYSIS_VALUES))

    @property
    def calls(self) -> int:
        """Calls one verdict makes (scoring.Needed counts 1 per judged metric today)."""
        return self.spec["judges"] + (1 if self.spec.get("rubric") else 0)

    async def evaluate(self, case: Case) -> Verdict:
        previous = None
        rubric = self.spec.get("rubric")
        if rubric and self._rubric is not None:
            messages = self._render(rubric["messages"], case.values)
            if isinstance(messages, str):
                return Verdict(error=messages)
            result = await self._ask(case, messages, self._rubric)
            if not result.ok:
                return Verdict(error=f"rubric step: {result.error}")
            previous = previous_of([(rubric["name"], result.parsed.model_dump())])
        unit = unit_values(self.name, self.spec)
        own = [m.model_dump() for m in self.template.messages]
        messages = self._render(own, case.values, previous=previous, unit=unit)
        if isinstance(messages, str):
            return Verdict(error=messages)
        results = await asyncio.gather(
            *(
                self._ask(case, messages, self._answer, variant=i)
                for i in range(self.spec["judges"])
            )
        )
        return pooled(self.spec, results)

    def _render(
        self, messages: list[dict[str, Any]], values: Mapping[str, Any], **steps: Any
    ) -> list[dict[str, Any]] | str:
        """The rendered messages, or the one-line error that stops this verdict."""
        rendered = []
        for message in messages:
            try:
                content = render(message["content"], values, **steps)
            except MissingInput as err:
                line = (message.get("line") or 1) + (err.line or 1) - 1
                return f"metric {self.name}: line {line}: missing {err.name!r}"
            except RenderError as err:
                err.file = self.template.source
                err.line = (message.get("line") or 1) + (err.line or 1) - 1
                return f"metric {self.name}: {err.one_line()}"
            rendered.append({"role": message["role"], "content": content})
        return rendered

    async def _ask(
        self, case: Case, messages: Any, output: type[BaseModel], variant: int = 0
    ) -> Completion:
        if case.llm is None or case.judge is None:
            raise ValueError("a judged metric needs a case with a gateway and an eval model")
        params = self.template.model.parameters
        return await case.llm.complete(
            messages,
            model=case.judge,
            output=output,
            stage=case.stage,
            temperature=params.get("temperature"),
            max_tokens=params.get("max_tokens"),
            variant=variant,
        )


def _value(spec: dict[str, Any], parsed: Any) -> Any:
    return parsed.choice if spec["scale"]["kind"] == "categories" else parsed.score


def pool(spec: dict[str, Any], values: list[Any]) -> tuple[Any, float]:
    """The pooled answer and its 0-100 score."""
    scale, passing = spec["scale"], spec["pass"]
    if spec["pool"] == "mean":
        if scale["kind"] == "boolean":
            share = sum(v == passing for v in values) / len(values)
            return statistics.mean(values), 100.0 * share
        value = statistics.mean(values)
    else:
        value = statistics.mode(values)  # the first of the most frequent, as Verdict's
    if scale["kind"] == "discrete":
        return value, 100.0 * (value - scale["min"]) / (scale["max"] - scale["min"])
    if scale["kind"] == "boolean":
        return value, 100.0 if value == passing else 0.0
    return value, 100.0 if value in passing else 0.0


def pooled(spec: dict[str, Any], results: list[Completion]) -> Verdict:
    answered = [r.parsed for r in results if r.ok and r.parsed is not None]
    errors = [r.error for r in results if not r.ok]
    if not answered:
        return Verdict(error=errors[0] if errors else "no judgement")
    values = [_value(spec, p) for p in answered]
    value, score = pool(spec, values)
    scale = spec["scale"]
    ok = value >= spec["pass"] if scale["kind"] == "discrete" else score >= 50.0
    shown = round(value, 2) if isinstance(value, float) else value
    reason = f"{spec['pool']} of {values}: {shown}"
    if len(values) == 1:
        reason = f"judged {shown}"
    if errors:
        reason += f" ({len(errors)} of {len(results)} judgements failed: {errors[0]})"
    explanation = getattr(answered[0], "explanation", None)
    if explanation:
        reason += f"; {explanation}"
    return Verdict(score=round(score, 2), outcome="ok" if ok else "err", reason=reason[:600])
