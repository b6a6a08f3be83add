"""The rules model names the inputs of a prompt that has no placeholders.

It only proposes; the substitution is done here, on exact matches of the words it
quotes, so the prompt's text is never rewritten by a model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from promptgen.errors import PromptgenError
from promptgen.importing.pieces import Imported, Msg, Piece, Var, merge_text, var_name
from promptgen.llm import LLM
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Items, Text


class ProposedInput(BaseModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$", description="snake_case identifier")
    type: Literal["string", "integer", "number", "boolean"]
    description: Text(200, min_length=3)  # type: ignore[valid-type]
    replaces: Text(500, description="Exact words of the prompt, or empty.")  # type: ignore[valid-type]


class ImportAnswer(BaseModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,59}$")
    description: Text(300, min_length=10)  # type: ignore[valid-type]
    inputs: Items(ProposedInput, 8, min_length=1)  # type: ignore[valid-type]


def shown(imported: Imported) -> str:
    return "\n\n".join(f"{m.role}:\n{m.text}" for m in imported.messages)


async def name_inputs(imported: Imported, llm: LLM, model: str = "rules") -> Imported:
    """Ask the model which parts are inputs; apply its answer to the messages."""
    messages = stage_messages("import", prompt=shown(imported))
    result = await llm.complete(messages, model=model, output=ImportAnswer, stage="import")
    if not result.ok:
        raise PromptgenError(
            f"the rules model could not name the inputs: {result.error}",
            hint="run again, or pass --no-llm to import the text as it is",
        )
    apply_answer(imported, result.parsed)
    return imported


def apply_answer(imported: Imported, answer: ImportAnswer) -> None:
    imported.name = answer.name
    imported.description = " ".join(answer.description.split())
    appended: list[str] = []
    taken: set[str] = set()
    for proposal in answer.inputs:
        name = var_name(proposal.name)
        if name in taken:
            continue
        taken.add(name)
        imported.types[name] = proposal.type
        imported.descriptions[name] = " ".join(proposal.description.split())
        words = proposal.replaces.strip()
        if words and _replace(imported.messages, words, name):
            imported.samples[name] = sample = _sample(words, proposal.type)
            if isinstance(sample, str) and proposal.type != "string":
                imported.types[name] = "string"  # the prompt's own example says so
        else:
            appended.append(name)
    for message in imported.messages:
        if message.variables and message.role == "system" and len(imported.messages) == 1:
            message.role = "user"  # a lone template is what the user sends, filled in
    if appended:
        imported.messages.append(Msg("user", _appended(appended)))


def _replace(messages: list[Msg], words: str, name: str) -> bool:
    """Every exact occurrence of `words` in the literal text becomes the variable."""
    total = sum(len(m.text) for m in messages)
    if len(words) * 2 > total:  # the whole prompt is not an input of itself
        return False
    found = False
    for message in messages:
        out: list[Piece] = []
        for piece in message.pieces:
            if isinstance(piece, Var) or words not in piece:
                out.append(piece)
                continue
            found = True
            parts = piece.split(words)
            for i, part in enumerate(parts):
                out += [part] if i == len(parts) - 1 else [part, Var(name)]
        message.pieces = merge_text(out)
    return found


def _sample(words: str, kind: str) -> object:
    try:
        if kind == "integer":
            return int(words)
        if kind == "number":
            return float(words)
    except ValueError:
        pass
    if kind == "boolean" and words.lower() in ("true", "false", "yes", "no"):
        return words.lower() in ("true", "yes")
    return words


def _appended(names: list[str]) -> list[Piece]:
    if len(names) == 1:
        return [Var(names[0])]
    out: list[Piece] = []
    for i, name in enumerate(names):
        out += [("\n\n" if i else "") + name.replace("_", " ").capitalize() + ":\n", Var(name)]
    return out
