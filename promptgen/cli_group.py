"""A Typer group where `promptgen FILE [options]` can sit beside subcommands.

A first argument that is not a subcommand, nor an option of the group itself
(`--version`, `--help`), is routed to the group's default command: `promptgen FILE`,
`promptgen --prompt TEXT` and `promptgen --dry-run FILE` all run it.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup


class DefaultCommandGroup(TyperGroup):
    default_command: str | None = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.default_command and args and self._is_free_word(ctx, args[0]):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def _is_free_word(self, ctx: Any, word: str) -> bool:
        if word.startswith("-"):
            own = {name for p in self.get_params(ctx) for name in (*p.opts, *p.secondary_opts)}
            return word.split("=", 1)[0] not in own
        return self.get_command(ctx, word) is None

    def list_commands(self, ctx: Any) -> list[str]:
        # Keep the order commands were added in: most used first.
        return list(self.commands)
