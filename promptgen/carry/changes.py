"""What an edit of a prompt changed, by area, and the one phrase that says it.

The areas are the parts of a prompt its content hash covers (`PromptUnderTest
.content_hash`): messages (with their template engine and a multi-run prompt's
variants), inputs, parameters (the model config), author tests (test samples),
scenarios and instructions (the stage guidance). Messages are compared instruction
by instruction (`prompting/seeds.py`): kept, added, deleted, reworded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from promptgen.model import PromptUnderTest
from promptgen.prompting.seeds import Seed, content_words, instruction_seeds

AREAS = ("messages", "inputs", "parameters", "author tests", "scenarios", "instructions")
# Share of content words (Jaccard) a deleted and an added instruction share to be one
# instruction reworded rather than one deleted and another added.
REWORDED = 0.5


def instruction_key(text: str) -> str:
    """An instruction compared as its words (case, spacing and punctuation aside)."""
    import re

    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


@dataclass
class InstructionDiff:
    """The instruction sentences of two versions, compared."""

    kept: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    reworded: list[tuple[str, str]] = field(default_factory=list)  # (then, now)

    def phrase(self) -> str:
        """'1 instruction added, 1 reworded' ('' when no instruction changed)."""
        counts = [
            (len(self.added), "added"),
            (len(self.deleted), "deleted"),
            (len(self.reworded), "reworded"),
        ]
        return counted(counts, "instruction")


def counted(counts: list[tuple[int, str]], noun: str) -> str:
    """'2 rows added, 1 removed': the noun with the first count only ('' for none)."""
    said = [(n, w) for n, w in counts if n]
    if not said:
        return ""
    (n, what), *rest = said
    return ", ".join([f"{n} {noun}{'' if n == 1 else 's'} {what}", *(f"{m} {w}" for m, w in rest)])


def diff_instructions(then: list[Seed], now: list[Seed]) -> InstructionDiff:
    """Instructions kept (same words), and of the others each deleted one paired with
    the added one sharing most content words (at least REWORDED of them): reworded."""
    before = {instruction_key(s.text): s.text for s in then}
    after = {instruction_key(s.text): s.text for s in now}
    diff = InstructionDiff(kept=[t for k, t in after.items() if k in before])
    gone = [t for k, t in before.items() if k not in after]
    new = [t for k, t in after.items() if k not in before]
    for old in gone:
        words = content_words(old)
        scored = [
            (len(words & content_words(n)) / max(1, len(words | content_words(n))), n) for n in new
        ]
        best = max(scored, default=(0.0, ""), key=lambda pair: pair[0])
        if best[0] >= REWORDED:
            diff.reworded.append((old, best[1]))
            new.remove(best[1])
        else:
            diff.deleted.append(old)
    diff.added = new
    return diff


@dataclass
class Changes:
    """What differs between two versions of a prompt, by area."""

    said: dict[str, str]  # area -> what changed in it, in words
    instructions: InstructionDiff

    @property
    def changed(self) -> list[str]:
        return [a for a in AREAS if a in self.said]

    def phrase(self) -> str:
        """'messages: 1 instruction added; author tests: 2 rows added'."""
        return "; ".join(f"{a}: {self.said[a]}" for a in self.changed)

    def has(self, *areas: str) -> bool:
        return any(a in self.said for a in areas)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _messages(prompt: PromptUnderTest) -> str:
    groups = [prompt.messages, *(v.messages for v in prompt.variants)]
    shown = [
        [m.model_dump(mode="json", exclude={"line"}, exclude_none=True) for m in g] for g in groups
    ]
    reps = [v.repetitions for v in prompt.variants]
    return _dump([shown, reps, prompt.template_engine])


def _keyed(then: dict[str, str], now: dict[str, str], noun: str) -> str:
    """'1 row added, 2 removed, 1 changed' for two tables of dumped items."""
    counts = [
        (sum(k not in then for k in now), "added"),
        (sum(k not in now for k in then), "removed"),
        (sum(k in now and now[k] != v for k, v in then.items()), "changed"),
    ]
    return counted(counts, noun) or "reordered"


def _samples(prompt: PromptUnderTest) -> dict[str, str]:
    return {
        _dump(s.inputs): _dump(s.model_dump(mode="json", exclude={"source"}))
        for s in prompt.test_samples
    }


def compare(then: PromptUnderTest, now: PromptUnderTest) -> Changes:
    """What changed from `then` to `now`."""
    said: dict[str, str] = {}
    diff = diff_instructions(instruction_seeds(then), instruction_seeds(now))
    if _messages(then) != _messages(now):
        said["messages"] = diff.phrase() or "text changed, every instruction as before"
    inputs_then = {k: _dump(v.model_dump(mode="json")) for k, v in then.inputs.items()}
    inputs_now = {k: _dump(v.model_dump(mode="json")) for k, v in now.inputs.items()}
    if inputs_then != inputs_now:
        said["inputs"] = _names(inputs_then, inputs_now)
    model_then, model_now = then.model.model_dump(mode="json"), now.model.model_dump(mode="json")
    if model_then != model_now:
        said["parameters"] = _parameters(model_then, model_now)
    samples_then, samples_now = _samples(then), _samples(now)
    if list(samples_then.items()) != list(samples_now.items()):
        said["author tests"] = _keyed(samples_then, samples_now, "row")
    scenarios_then = {s.name: _dump(s.model_dump(mode="json")) for s in then.scenarios}
    scenarios_now = {s.name: _dump(s.model_dump(mode="json")) for s in now.scenarios}
    if list(scenarios_then.items()) != list(scenarios_now.items()):
        said["scenarios"] = _names(scenarios_then, scenarios_now)
    guidance_then = then.instructions.model_dump(mode="json")
    guidance_now = now.instructions.model_dump(mode="json")
    if guidance_then != guidance_now:
        names = [k for k in guidance_now if guidance_then.get(k) != guidance_now.get(k)]
        said["instructions"] = ", ".join(names) + " changed"
    return Changes(said, diff)


def _names(then: dict[str, str], now: dict[str, str]) -> str:
    """'tone added; name changed' for two tables of named items."""
    parts = [
        *(f"{k} added" for k in now if k not in then),
        *(f"{k} removed" for k in then if k not in now),
        *(f"{k} changed" for k in now if k in then and then[k] != now[k]),
    ]
    return "; ".join(parts) or "reordered"


def _parameters(then: dict[str, Any], now: dict[str, Any]) -> str:
    """The model settings that changed, by name (values are not shown: they may be
    keys)."""
    names = [
        k for k in ("id", "provider", "api", "response_format", "connection") if then[k] != now[k]
    ]
    params_then, params_now = then["parameters"], now["parameters"]
    names += [
        k for k in sorted({*params_then, *params_now}) if params_then.get(k) != params_now.get(k)
    ]
    return ", ".join(names) + " changed"
