"""A Typer group where `promptgen FILE [options]` can sit beside subcommands, and whose
subcommands load on first use.

A first argument that is not a subcommand, nor an option of the group itself
(`--version`, `--help`), is routed to the group's default command: `promptgen FILE`,
`promptgen --prompt TEXT` and `promptgen --dry-run FILE` all run it.

Each subcommand lives in its own module, imported only when that command runs (or when
`--help` lists them): `promptgen --version` or `promptgen inspect` never load the
pipeline, pandas or the model clients (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import typer
from typer.core import TyperGroup

from promptgen.errors import BadInputError


@dataclass(frozen=True)
class LazyCommand:
    """`module:attribute`, a command function or a Typer app of subcommands; `texts`
    maps a command setting (help, epilog) to the module constant that holds it."""

    module: str
    attribute: str
    texts: dict[str, str] = field(default_factory=dict)

    def load(self, name: str) -> Any:
        module = importlib.import_module(self.module)
        target = getattr(module, self.attribute)
        if isinstance(target, typer.Typer):
            return typer.main.get_group(target)
        single = typer.Typer(add_completion=False)  # completion is the group's business
        settings = {key: getattr(module, constant) for key, constant in self.texts.items()}
        single.command(name=name, **settings)(target)
        return typer.main.get_command(single)


class DefaultCommandGroup(TyperGroup):
    default_command: str | None = None
    lazy: ClassVar[dict[str, LazyCommand]] = {}
    order: tuple[str, ...] = ()  # most used first, as `--help` lists them

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy:
            command = self.lazy[cmd_name].load(cmd_name)
            self.add_command(command, cmd_name)
        return command

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.default_command and args and self._is_free_word(ctx, args[0]):
            self._check_not_a_typo(ctx, args[0])
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def _is_free_word(self, ctx: Any, word: str) -> bool:
        if word.startswith("-"):
            own = {name for p in self.get_params(ctx) for name in (*p.opts, *p.secondary_opts)}
            return word.split("=", 1)[0] not in own
        return word not in self.commands and word not in self.lazy

    def _check_not_a_typo(self, ctx: Any, word: str) -> None:
        """A bare word that is no file but close to a command name is a mistyped command
        (`promptgen improt`), not a prompt file: say which command was meant."""
        if word.startswith("-") or any(c in word for c in "./\\") or Path(word).exists():
            return
        close = difflib.get_close_matches(word, self.list_commands(ctx), n=1)
        if close:
            raise BadInputError(f"no such command {word!r}", hint=f"did you mean {close[0]!r}?")

    def list_commands(self, ctx: Any) -> list[str]:
        names = [*self.commands, *self.lazy]
        first = [n for n in self.order if n in names]
        return list(dict.fromkeys([*first, *names]))
