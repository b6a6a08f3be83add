"""Where a new run starts from: the run saved in its output folder (or one given),
resumed when it is of the same prompt, continued when it is of an earlier version of it
(docs/carry-over.md), kept as history under --fresh; refused only when it is the run of
another prompt altogether."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from promptgen import history
from promptgen.carry import unrelated
from promptgen.context import Context, load_context
from promptgen.errors import ContextError
from promptgen.model import PromptUnderTest
from promptgen.options import Options

CONTEXT_FILE = "context.json"


@dataclass
class Earlier:
    """A run found where the new one goes: kept as history, and continued from unless
    the run starts over (`carry` False: --fresh)."""

    ctx: Context
    carry: bool = True


def new_or_saved(
    prompt: PromptUnderTest, folder: Path, options: Options, previous: Context | None
) -> tuple[Context, Path, list[str], Earlier | None]:
    """A new context for `prompt`; or the run saved in `folder` (or `previous`) resumed
    when it is of the same prompt, continued when it is of an earlier version of it
    (docs/carry-over.md). Only a run of another prompt altogether is refused."""
    ctx = Context.new(prompt)
    existing = folder / CONTEXT_FILE
    if previous is None and not existing.is_file():
        return ctx, folder, [], None
    saved = previous if previous is not None else load_context(existing)
    if options.run.fresh:
        kept = folder / history.HISTORY / history.version_of(saved)
        keeps = "would be kept (not on a dry run)" if options.run.dry_run else "is kept"
        return (
            ctx,
            folder,
            [f"starting over (--fresh); the run before {keeps} in {kept}"],
            (Earlier(saved, carry=False)),
        )
    if saved.prompt_hash == ctx.prompt_hash and not options.run.regenerate:
        saved.prompt = ctx.prompt  # same content; frontmatter run options may be new
        return saved, folder, [f"resuming the run in {folder}"], None
    if unrelated(saved.prompt, prompt):
        raise ContextError(
            f"this folder holds a run of a different prompt ({saved.prompt.name!r}, "
            "nothing of which carries over)",
            file=existing,
            hint="pass --fresh to start over there (its run is kept in history/), or --out "
            "to use another folder",
        )
    return continued(ctx, Earlier(saved), folder)


def continued(
    ctx: Context, earlier: Earlier, folder: Path
) -> tuple[Context, Path, list[str], Earlier | None]:
    """A new version's context continuing `earlier`: its options, resolved again by
    `prepare`, are the earlier run's (its server and models stay); `continue_run` then
    carries over what did not change."""
    ctx.options = earlier.ctx.options.model_copy(deep=True)
    ctx.option_sources = dict(earlier.ctx.option_sources)
    return ctx, folder, [], earlier
