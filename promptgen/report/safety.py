"""The safety judge's findings, as the reports and the console summary show them: the
verdict on the prompt under test (a flagged prompt gets a warning; the run went on) and
the tests whose inputs were flagged, with whether the evaluation left them out."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from html import escape

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting.safety import flagged_kind, handled, kept_for_purpose
from promptgen.report.markdown_text import cell, table, text
from promptgen.report.stats import excerpt
from promptgen.results import SafetyVerdict, Test

LABELS = {"injection": "prompt injection", "harmful": "harmful content"}
CAVEAT = "A model's judgement, not a guarantee: check the flagged items yourself."


@dataclass(frozen=True)
class Findings:
    prompt: SafetyVerdict | None
    screened: int
    flagged: list[Test]
    dropped: bool  # flagged tests were left out of the evaluation
    # Flagged, and run all the same: the prompt's own purpose handles what was flagged.
    kept: list[Test] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return self.prompt is not None or self.screened > 0

    @property
    def left_out(self) -> list[Test]:
        """The flagged tests the evaluation leaves out."""
        if not self.dropped:
            return []
        kept = {t.id for t in self.kept}
        return [t for t in self.flagged if t.id not in kept]

    def counts(self, tests: list[Test] | None = None) -> str:
        """ "1 prompt injection, 2 harmful content"."""
        chosen = self.flagged if tests is None else tests
        by_label: Counter[str | None] = Counter(t.safety for t in chosen)
        return ", ".join(f"{by_label[k]} {v}" for k, v in LABELS.items() if by_label[k])

    def purpose(self) -> str:
        """ "personal data": what the kept tests hold, which the prompt handles."""
        kinds = dict.fromkeys(flagged_kind(t) for t in self.kept)
        return " and ".join(k for k in kinds if k)

    def tests_line(self) -> str:
        if not self.flagged:
            return f"none of {self.screened} screened tests flagged"
        flagged = f"{len(self.flagged)} of {self.screened} screened tests flagged"
        if not self.dropped:
            return f"{flagged} ({self.counts()}), kept in the runs"
        left = self.left_out
        said = f"{flagged} ({self.counts()})"
        if self.kept:
            ran = "all" if not left else str(len(self.kept))
            said += (
                f", {ran} run on the models as the prompt handles {self.purpose()} "
                "(its own purpose)"
            )
        if left:
            which = "not run" if not self.kept else f"{len(left)} not run"
            said += f", {which} on the models (--keep-unsafe runs them)"
        return said


def findings(ctx: Context) -> Findings:
    options = ctx.options
    screened = [t for t in ctx.tests if t.safety is not None]
    flagged = [t for t in screened if t.flagged]
    handles = handled(ctx) if flagged else frozenset()
    return Findings(
        prompt=ctx.safety,
        screened=len(screened),
        flagged=flagged,
        # Not set (None) and tests screened: the judge was not small, so it was on.
        dropped=options.generation.safety is not False and not options.evaluation.keep_unsafe,
        kept=[t for t in flagged if kept_for_purpose(t, handles)],
    )


def prompt_warning(ctx: Context) -> str | None:
    """One line for stderr when the prompt under test was flagged."""
    verdict = ctx.safety
    if verdict is None or not verdict.flagged:
        return None
    return (
        f"the safety judge flags the prompt under test as {_label(verdict.verdict)}: "
        f"{excerpt(verdict.reason, 200) or 'no reason given'} (the run went on; "
        "review the prompt, or pass --no-safety if it is about security on purpose)"
    )


def dropped_warning(ctx: Context) -> str | None:
    """One line for stderr when flagged tests were left out of the evaluation."""
    found = findings(ctx)
    left = found.left_out
    if not (left and ctx.options.models.models):
        return None
    if found.kept:  # some flagged tests ran all the same: count those left out
        return (
            f"the safety screen flagged {len(found.flagged)} of {found.screened} tests; "
            f"{len(left)} of them ({found.counts(left)}) not run on the models "
            f"(--keep-unsafe runs them)"
        )
    return (
        f"the safety screen flagged {len(found.flagged)} of {found.screened} tests "
        f"({found.counts()}); they were not run on the models (--keep-unsafe runs them)"
    )


def kept_note(ctx: Context) -> str | None:
    """One line for stderr when flagged tests ran because the prompt handles them."""
    found = findings(ctx)
    if not (found.dropped and found.kept and ctx.options.models.models):
        return None
    return (
        f"{len(found.kept)} of the {len(found.flagged)} tests the safety screen flagged "
        f"hold {found.purpose()}, which the prompt handles: they were run on the models"
    )


def why_nothing(ctx: Context) -> str:
    """Why no test ran on the models named: the reason `gate.not_evaluated` and the
    reports give."""
    found = findings(ctx)
    left, total = found.left_out, len(ctx.tests)
    if not left:
        return "no test to run"
    if len(left) < total:
        return (
            f"the safety screen flagged {len(left)} of {total} tests and the others were "
            "invalid or filtered out (--keep-unsafe runs the flagged ones)"
        )
    return f"the safety screen flagged all {total} tests (--keep-unsafe runs them)"


def summary_line(ctx: Context) -> str | None:
    """The console summary's line (None when nothing was judged)."""
    found = findings(ctx)
    if not found.any:
        return None
    prompt = "not judged" if found.prompt is None else _prompt_label(found.prompt)
    return f"safety       prompt {prompt}; {found.tests_line()}"


def skipped_line(cfg: RunConfig) -> str | None:
    """The console summary's line when the pre-check was left out because the eval model
    is small (safety not set)."""
    if cfg.gen.safety is not None or cfg.safety or not cfg.generating:
        return None
    return (
        "safety       not checked: the eval model is too small to judge it "
        "(--safety checks all the same)"
    )


def _prompt_label(verdict: SafetyVerdict) -> str:
    return "safe" if not verdict.flagged else f"FLAGGED as {_label(verdict.verdict)}"


def safety_markdown(ctx: Context) -> str:
    """The report's "Safety" section ("" when nothing was judged)."""
    found = findings(ctx)
    if not found.any:
        return ""
    lines = ["## Safety", ""]
    verdict = found.prompt
    if verdict is not None and verdict.flagged:
        lines += [
            f"> **Warning:** the safety judge flags the prompt under test as "
            f"**{_label(verdict.verdict)}**: {text(verdict.reason or 'no reason given')}",
            "",
        ]
    prompt = "not judged" if verdict is None else _prompt_label(verdict)
    lines += [f"- **Prompt:** {prompt}", f"- **Tests:** {found.tests_line()}"]
    if found.flagged:
        rows = [
            [cell(t.id), _label(t.safety), cell(t.safety_reason or "-"), cell(_inputs(t))]
            for t in found.flagged
        ]
        lines += ["", table(["Test", "Verdict", "Reason", "Input"], rows)]
    lines += ["", f"_{text(CAVEAT)}_"]
    return "\n".join(lines)


def safety_html(ctx: Context) -> list[str]:
    """The report's "Safety" section, as a list of zero or one sections."""
    found = findings(ctx)
    if not found.any:
        return []
    parts = []
    verdict = found.prompt
    if verdict is not None and verdict.flagged:
        parts.append(
            '<p><span class="tag bad">warning</span> <strong>The safety judge flags the '
            f"prompt under test as {escape(_label(verdict.verdict))}:</strong> "
            f"{escape(verdict.reason or 'no reason given')}</p>"
        )
    prompt = "not judged" if verdict is None else _prompt_label(verdict)
    parts.append(f"<p>Prompt: {escape(prompt)}. Tests: {escape(found.tests_line())}.</p>")
    if found.flagged:
        rows = "".join(
            f'<tr><td class="id">{escape(t.id)}</td>'
            f'<td class="bad">{escape(_label(t.safety))}</td>'
            f"<td>{escape(t.safety_reason or '-')}</td>"
            f"<td><pre>{escape(_inputs(t))}</pre></td></tr>"
            for t in found.flagged
        )
        head = "<tr><th>Test</th><th>Verdict</th><th>Reason</th><th>Input</th></tr>"
        parts.append(f"<table><thead>{head}</thead><tbody>{rows}</tbody></table>")
    parts.append(f'<p class="hint">{escape(CAVEAT)}</p>')
    body = "\n".join(parts)
    return [f'<section id="safety"><h2>Safety</h2>\n{body}\n</section>']


def _label(verdict: str | None) -> str:
    return LABELS.get(verdict or "", verdict or "-")


def _inputs(test: Test) -> str:
    return excerpt(json.dumps(test.inputs, ensure_ascii=False, default=str), 300)


def models_said(ctx: Context) -> str:
    """The models of the run as the reports' summary names them: those with runs; else
    the models named and why nothing ran on them (never a bare "none" for them)."""
    if ctx.models_run:
        return ", ".join(ctx.models_run)
    named = ctx.options.models.models
    if not named:
        return "none"
    if not ctx.options.evaluation.evals:
        return f"none ({', '.join(named)} named, --no-evals)"
    left = {t.id for t in findings(ctx).left_out}
    keep_invalid = ctx.options.evaluation.keep_invalid
    runnable = [t for t in ctx.tests if t.id not in left and (keep_invalid or t.valid is not False)]
    why = "no test ran on them (see Errors)" if runnable else why_nothing(ctx)
    return f"none: {', '.join(named)} named, nothing was evaluated on them: {why}"
