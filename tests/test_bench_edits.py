"""bench/edits.py on one sample and one kind of edit: the figures it prints are the ones
the runs' saved contexts and the fake server say."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import edits
from bench.edit_kinds import EDITS, KINDS, Edit, prompt_files
from bench.edits_fake import EditingModel, rule_of
from promptgen.context import Context, load_context
from promptgen.results import Rule
from tests.conftest import REPO
from tests.fakellm import FakeLLM

GENERATION = ("behaviours", "input_spec", "intent", "inverse_rules", "rules", "tests")
HAIKU = [
    "Write one haiku about whatever the user gives you: a topic, a word, a feeling or a "
    "short scene.",
    "Follow the 5-7-5 pattern of syllables across three lines, include one concrete image "
    "from nature or daily life, and avoid rhyme.",
    "Reply with the three lines only: no title, no quotation marks and no explanation.",
    "If the user's message is empty or only punctuation, write a haiku about silence.",
]
ADDED = 'Never use the word "haiku" in the poem itself.'


def gen_calls(ctx: Context) -> int:
    return ctx.usage.by_model[edits.GEN].calls


def test_the_printed_row_is_what_the_runs_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLLM(responder=EditingModel()) as fake:
        edits.main(
            ["--samples", "haiku.md", "--kinds", "add", "--api-base", fake.url,
             "--keep", str(tmp_path), "--jobs", "1"]
        )  # fmt: skip
        to_gen = sum(1 for body in fake.requests if body["model"].endswith(edits.GEN))
    printed = capsys.readouterr().out.splitlines()
    v1 = load_context(tmp_path / "0" / "v1" / "out" / "context.json")
    edit = load_context(tmp_path / "0" / "add" / "edit" / "context.json")
    fresh = load_context(tmp_path / "0" / "add" / "fresh" / "context.json")
    record = edit.edit
    assert record is not None and fresh.edit is None
    # The fake reads one rule per instruction; the edit adds the new one's only.
    assert [r.text for r in v1.rules] == [rule_of(t) for t in HAIKU]
    new = Rule.make(rule_of(ADDED))
    assert [r.id for r in edit.rules] == [*(r.id for r in v1.rules[:2]), new.id,
                                          *(r.id for r in v1.rules[2:])]  # fmt: skip
    assert [r.id for r in edit.rules] == [r.id for r in fresh.rules]  # as a fresh run has them
    added = [t for t in edit.tests if t.id not in record.tests_kept]
    assert record.tests_kept == [t.id for t in v1.tests] and record.tests_retired == []
    # The figures printed: the generation calls the contexts counted, which are all the
    # calls the server had for the rules model over the three runs.
    assert gen_calls(v1) + gen_calls(edit) + gen_calls(fresh) == to_gen
    assert (gen_calls(edit), gen_calls(fresh)) == (4, 7)
    row = next(line for line in printed if line.startswith("haiku.md (4 rules)"))
    assert row.split()[3:8] == [
        "add", "4/7", "0.57", "4/1/0", f"{len(v1.tests)}/{len(added)}/0",
    ]  # fmt: skip
    assert len(added) == 2  # the new rule's test and its inverse rule's
    assert row.endswith("messages: 1 instruction added")
    stages = printed[printed.index(row) + 1].split("by stage (edit/fresh): ")[1]
    both = [
        f"{s} {edit.usage.by_stage[s].calls if s in edit.usage.by_stage else 0}"
        f"/{fresh.usage.by_stage[s].calls}"
        for s in GENERATION
    ]
    assert stages == ", ".join(both)
    assert stages == (
        "behaviours 0/1, input_spec 1/1, intent 1/1, inverse_rules 0/2, rules 1/1, tests 1/1"
    )
    assert printed[-3:-1] == [
        "target: one added instruction on a sample with 6 rules costs at most a third of a "
        "fresh generation (effort min):",
        "  no sample has 6 rules at effort min: not measured",
    ]


def test_every_sample_has_every_kind_written() -> None:
    samples = prompt_files(REPO / "samples")
    assert len(samples) == 11 and set(samples) == set(EDITS)
    assert all(set(kinds) == set(KINDS) for kinds in EDITS.values())
    applicable = sum(isinstance(c, Edit) for kinds in EDITS.values() for c in kinds.values())
    assert applicable == 52  # 14 kinds do not apply, each saying why
