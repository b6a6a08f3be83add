"""A Typer group where `promptgen FILE [options]` can sit beside subcommands.

When a default command is registered, a first argument that is not a subcommand is
routed to it. Until then, a file path given as the first argument gets a hint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.core import TyperGroup

from promptgen.errors import BadInputError


class DefaultCommandGroup(TyperGroup):
    default_command: str | None = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.default_command and args and self._is_free_word(ctx, args[0]):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def _is_free_word(self, ctx: Any, word: str) -> bool:
        return not word.startswith("-") and self.get_command(ctx, word) is None

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        word = args[0] if args else ""
        if word and self.get_command(ctx, word) is None and Path(word).exists():
            raise BadInputError(
                f"'{word}' is a file, not a command",
                hint=f"to see how promptgen reads it: promptgen inspect {word}",
            )
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        # Keep the order commands were added in: most used first.
        return list(self.commands)
