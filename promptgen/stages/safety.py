"""Safety: one judge call on the prompt under test, for prompt injection and harmful
content. A flagged prompt is reported, never refused: a prompt may rightly be about
security or moderation, so the run goes on and the reports carry a warning."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import prompt_text, stage_messages
from promptgen.prompting.safety import SafetyAnswer
from promptgen.results import SafetyVerdict
from promptgen.stage import Scope, WorkItem

# It blocks nothing (the verdict changes no other stage), so it runs beside the
# analysis instead of adding a round before it.
requires: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    """Before generation only: `--tests FILE` and `--samples-only` run the user's own
    tests on a prompt they chose."""
    return cfg.safety and cfg.generating


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    return [] if ctx.safety is not None else [WorkItem("prompt")]


async def run(item: WorkItem[None], scope: Scope) -> None:
    messages = stage_messages("safety", prompt=prompt_text(scope.ctx.prompt))
    result = await scope.complete(messages, model="eval", output=SafetyAnswer)
    if not result.ok:
        scope.fail(result.error)
        return
    answer: SafetyAnswer = result.parsed
    scope.ctx.safety = SafetyVerdict(
        verdict=answer.verdict, reason=answer.reason.strip(), model=result.model
    )
