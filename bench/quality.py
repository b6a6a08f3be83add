"""Rule and test quality per sample: do the rules cover the prompt's instructions, and
does every rule get a test?

For every prompt under `samples/` (or those named), with the instruction list written by
hand beside it (`<name>.instructions.txt`, one explicit instruction per line):

1. Generation, timed: `promptgen SAMPLE --effort min` as a user runs it (its own
   process, no response cache unless `--cache`), with the embedded model (`--local`), the scripted
   large-model fake (`--fake`) or a model behind `--api-base`.
2. Judging, not timed into the run: the same context resumed with `--groundedness
   --validity` (the product's own judges mark each rule grounded or not and each test
   valid or not), then, per instruction, `prompts/instruction_coverage.prompty` asked of
   the eval model for the 3 rules sharing the most content words with it, one rule per
   call, until one covers it. `--show` prints each instruction with the rule that
   covered it and the judge's reason, for checking by hand.

Printed per sample:
- recall: instructions covered by at least one rule;
- ungrounded: rules the groundedness judge found unsupported by the prompt;
- dup pairs: pairs of rules (or of inverse rules) that say the same thing:
  `promptgen.stages.rules.near_duplicate` (same words once the "The output ..." frame
  is set aside, token-sort similarity >= 85, the same numbers and negations);
- coverage: (rule or inverse rule, scenario) pairs with at least one generated test;
  "reasons": the pairs without one that carry a recorded reason;
- valid: generated tests the validity judge accepted;
- placeholders: generated tests whose input holds template syntax or copies the prompt's
  own text (`promptgen.prompting.input_checks`; target 0);
- restating: inverse rules that do not contradict their rule
  (`promptgen.prompting.inverse_forms.contradicts`; target 0);
- dup inputs: pairs of generated tests of one scenario with near-duplicate inputs (the
  same words once stop words are set aside, or token-sort similarity >= 85);
- behaviours: behaviours listed (stage behaviours) and those a test exercises; classes:
  the output classes the prompt names and those a test is written for; expected: those
  a test expects (its class checked by a call, or dictated by the prompt);
- time: wall seconds of the generation command (target: 600 on 2 cores).

    python bench/quality.py --local                       # the embedded 1.5B model
    python bench/quality.py --fake                        # the scripted large-model fake
    python bench/quality.py --api-base URL --model NAME   # e.g. ../shared/tools/mockllm.py
    python bench/quality.py --local --samples classify-sentiment sql-from-question
    python bench/quality.py --local --phase generate --out runs   # timed runs only ...
    python bench/quality.py --local --phase judge --out runs      # ... judged later

Every sample is generated before any is judged, so judging never shares the machine with
a timed run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pydantic import BaseModel

from promptgen.api import load_context
from promptgen.discover import find_prompts
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Text
from promptgen.prompting.likeness import near_duplicate

LOCAL = "local/qwen2.5-coder-1.5b"
INSTRUCTIONS = ".instructions.txt"  # a prompt's hand-written instruction list, beside it
TARGETS = {"recall": 80.0, "ungrounded": 10.0, "dup_pairs": 0, "coverage": 100.0, "time": 600.0}


class Covers(BaseModel):
    reason: Text(300)  # type: ignore[valid-type]
    covers: bool


# Rules asked about per instruction: those sharing the most content words with it.
SHORTLIST = 3


@dataclass
class Figures:
    sample: str
    instructions: int = 0
    covered: int = 0
    rules: int = 0
    inverse_rules: int = 0
    ungrounded: int = 0
    judged_grounded: int = 0
    dup_pairs: int = 0
    targets: int = 0
    with_tests: int = 0
    reasons: int = 0
    tests: int = 0
    valid: int = 0
    judged_valid: int = 0
    seconds: float = 0.0
    judge_seconds: float = 0.0
    placeholders: int = 0
    restating: int = 0
    dup_inputs: int = 0
    behaviours: int = 0
    behaviours_tested: int = 0
    classes: int = 0
    classes_tested: int = 0
    classes_expected: int = 0
    error: str = ""
    matches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return 100.0 * self.covered / self.instructions if self.instructions else 0.0

    @property
    def ungrounded_share(self) -> float:
        return 100.0 * self.ungrounded / self.judged_grounded if self.judged_grounded else 0.0

    @property
    def coverage(self) -> float:
        return 100.0 * self.with_tests / self.targets if self.targets else 0.0

    @property
    def validity(self) -> float:
        return 100.0 * self.valid / self.judged_valid if self.judged_valid else 0.0


# --- measures -------------------------------------------------------------------------


def near_duplicate_pairs(texts: list[str]) -> int:
    return sum(
        near_duplicate(texts[i], texts[j])
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
    )


def instruction_list(prompt: Path) -> list[str]:
    path = prompt.parent / (prompt.name.split(".")[0] + INSTRUCTIONS)
    if not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_figures(ctx: Any, figures: Figures) -> None:
    from promptgen.report.coverage import rule_coverage

    coverage = rule_coverage(ctx)
    figures.targets, figures.with_tests = coverage.targets, coverage.with_tests
    figures.reasons = coverage.with_reason
    generated = [t for t in ctx.tests if t.origin == "generated"]
    figures.tests = len(generated)
    figures.judged_valid = sum(t.valid is not None for t in generated)
    figures.valid = sum(t.valid is True for t in generated)
    figures.rules, figures.inverse_rules = len(ctx.rules), len(ctx.inverse_rules)
    figures.judged_grounded = sum(r.grounded is not None for r in ctx.rules)
    figures.ungrounded = sum(r.grounded is False for r in ctx.rules)
    figures.dup_pairs = near_duplicate_pairs([r.text for r in ctx.rules]) + near_duplicate_pairs(
        [r.text for r in ctx.inverse_rules]
    )
    suite_figures(ctx, figures)


def suite_figures(ctx: Any, figures: Figures) -> None:
    """What a person rating the suite looks at first: template syntax or copied prompt
    text in inputs, inverses that restate their rule, near-duplicate inputs, behaviours
    and output classes exercised."""
    from promptgen.prompting.input_checks import copies, near_duplicate_inputs, placeholder
    from promptgen.prompting.inverse_forms import contradicts
    from promptgen.prompting.writing import shared_inputs

    generated = [t for t in ctx.tests if t.origin == "generated"]
    prompt_words = "\n".join(m.content for m in ctx.prompt.messages if m.content)
    names = list(ctx.prompt.inputs)
    added = {b.id: b.appended for b in ctx.behaviours}

    def written(test: Any) -> dict[str, Any]:
        """The inputs as the model wrote them: a request or hostile instruction promptgen
        added to them (from the prompt's own words) set aside."""
        values = dict(test.inputs)
        for behaviour in test.behaviours:
            for name, text in added.get(behaviour, {}).items():
                if isinstance(values.get(name), str):
                    values[name] = values[name].removesuffix(text)
        return values

    figures.placeholders = sum(
        bool(placeholder(written(t), names))
        or any(copies(v, prompt_words) for v in written(t).values())
        for t in generated
    )
    rules = {r.id: r for r in ctx.rules}
    figures.restating = sum(
        not contradicts(inv.text, (rules[inv.inverse_of].source or rules[inv.inverse_of].text))
        for inv in ctx.inverse_rules
        if inv.inverse_of in rules
    )
    shared = shared_inputs(ctx.prompt)  # one article, many questions: not duplicates
    figures.dup_inputs = sum(
        a.scenario == b.scenario and near_duplicate_inputs(a.inputs, b.inputs, shared)
        for i, a in enumerate(generated)
        for b in generated[i + 1 :]
    )
    exercised = {b for t in ctx.tests for b in t.behaviours}
    figures.behaviours = len(ctx.behaviours)
    figures.behaviours_tested = sum(b.id in exercised for b in ctx.behaviours)
    named = [b for b in ctx.behaviours if b.kind == "class" and b.expected_class]
    classes = {b.expected_class for b in named}
    tested = {b.expected_class for b in named if b.id in exercised}
    expected = {t.expected_class for t in generated if t.expected_class}
    figures.classes, figures.classes_tested = len(classes), len(tested)
    # written for a class is not the class checked: only a test whose class could be
    # trusted (sorted into it by a check call, or dictated) expects it
    figures.classes_expected = len(classes & expected)


def shortlist(instruction: str, rules: list[str]) -> list[int]:
    """Indexes of the rules to ask about, most shared content words first (a small judge
    shown every rule at once picks the first; asked about one rule at a time, it reads)."""
    from promptgen.prompting.seeds import content_words

    wanted = content_words(instruction)
    ranked = sorted(range(len(rules)), key=lambda i: -len(wanted & content_words(rules[i])))
    return ranked[:SHORTLIST]


async def judge_recall(
    instructions: list[str], rules: list[str], model: str, settings: Any, figures: Figures
) -> None:
    """An instruction is covered when the judge says one of its shortlisted rules covers
    it (asked in shortlist order, stopping at the first yes)."""
    from promptgen.llm import LLM

    llm = LLM(settings)
    try:
        for text in instructions:
            match: dict[str, Any] = {"instruction": text, "rule": None, "reason": ""}
            for index in shortlist(text, rules):
                messages = stage_messages(
                    "instruction_coverage", instruction=text, rule=rules[index]
                )
                result = await llm.complete(
                    messages, model=model, output=Covers, temperature=0, stage="bench"
                )
                if not result.ok:
                    match["reason"] = result.error
                    continue
                if result.parsed.covers:
                    match.update(rule=rules[index], reason=result.parsed.reason)
                    break
            figures.covered += match["rule"] is not None
            figures.matches.append(match)
    finally:
        await llm.aclose()


# --- running --------------------------------------------------------------------------


def _promptgen(args: list[str], env: dict[str, str]) -> tuple[int, str, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
    return proc.returncode, tail[0], time.perf_counter() - start


GENERATION = "generation.json"  # a sample's generation time and outcome, beside its run


def generate(prompt: Path, folder: Path, models: list[str], cache: bool, effort: str) -> None:
    """Phase 1: the timed generation run; its time and outcome go to generation.json."""
    common = [*models, "--quiet", *([] if cache else ["--no-cache"])]
    code, tail, seconds = _promptgen(
        [str(prompt), "--effort", effort, "--out", str(folder), *common], _env()
    )
    error = f"generation exit {code}: {tail}" if code != 0 else ""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / GENERATION).write_text(json.dumps({"seconds": seconds, "error": error}))


def judge(prompt: Path, name: str, folder: Path, models: list[str], cache: bool) -> Figures:
    """Phase 2: groundedness, validity and recall judged on the generated run."""
    from promptgen.llm.config import load_settings

    figures = Figures(name)
    instructions = instruction_list(prompt)
    figures.instructions = len(instructions)
    try:
        done = json.loads((folder / GENERATION).read_text())
    except (OSError, ValueError):
        figures.error = "not generated (run the generation phase first)"
        return figures
    figures.seconds, figures.error = done["seconds"], done["error"]
    if figures.error:
        return figures
    common = [*models, "--quiet", *([] if cache else ["--no-cache"])]
    start = time.perf_counter()
    code, tail, _ = _promptgen(
        [str(folder / "context.json"), "--groundedness", "--validity", *common], _env()
    )
    if code != 0:
        figures.error = f"judging exit {code}: {tail}"
    ctx = load_context(folder / "context.json")
    test_figures(ctx, figures)
    api_base = models[models.index("--api-base") + 1] if "--api-base" in models else None
    judge_model = models[models.index("--eval-model") + 1]
    settings = load_settings({"api_base": api_base, "cache": cache})
    rules = [r.text for r in ctx.rules]
    asyncio.run(judge_recall(instructions, rules, judge_model, settings, figures))
    figures.judge_seconds = time.perf_counter() - start
    return figures


def suite_only(name: str, folder: Path) -> Figures:
    """The suite figures of a run already generated, without a model call. A run made
    before behaviours existed gets them derived from its prompt, none counted as tested."""
    from promptgen.prompting.behaviours import derive

    figures = Figures(name)
    try:
        ctx = load_context(folder / "context.json")
    except Exception as err:  # a missing or broken run: said in its row
        figures.error = str(err)
        return figures
    if not ctx.behaviours:
        ctx.behaviours = derive(ctx.prompt)
    test_figures(ctx, figures)
    return figures


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def samples(names: list[str]) -> list[tuple[Path, str]]:
    plan = find_prompts([str(REPO / "samples")], REPO / "promptgen-out")
    found = [
        (f.path, f.slug)
        for f in plan.prompts
        if instruction_list(f.path) and not f.path.name.endswith(INSTRUCTIONS)
    ]
    if names:
        found = [(p, n) for p, n in found if n in names or p.name.split(".")[0] in names]
    return found


def suite_table(rows: list[Figures]) -> str:
    """The suite figures: placeholders, restating inverses, duplicate inputs, behaviours
    and classes exercised, and classes a test expects (checked or dictated)."""
    head = (
        f"{'sample':<34} {'tests':>5} {'placeholders':>12} {'restating':>9} {'dup inputs':>10} "
        f"{'behaviours':>10} {'classes':>7} {'expected':>8}"
    )
    lines = [head, "-" * len(head)]
    for f in rows:
        if f.error and not f.rules:
            continue
        lines.append(
            f"{f.sample:<34} {f.tests:>5} {f.placeholders:>12} {f.restating:>9} "
            f"{f.dup_inputs:>10} {f'{f.behaviours_tested}/{f.behaviours}':>10} "
            f"{f'{f.classes_tested}/{f.classes}':>7} {f.classes_expected:>8}"
        )
    return "\n".join(lines)


def table(rows: list[Figures]) -> str:
    head = (
        f"{'sample':<34} {'rules':>5} {'inv':>4} {'recall':>8} {'ungrounded':>10} "
        f"{'dup pairs':>9} {'coverage':>9} {'reasons':>7} {'tests':>5} {'valid':>7} "
        f"{'time s':>7} {'judge s':>7}"
    )
    lines = [head, "-" * len(head)]
    for f in rows:
        if f.error and not f.rules:
            lines.append(f"{f.sample:<34} {f.error}")
            continue
        lines.append(
            f"{f.sample:<34} {f.rules:>5} {f.inverse_rules:>4} "
            f"{f'{f.covered}/{f.instructions}':>4} {f.recall:3.0f}% "
            f"{f'{f.ungrounded}/{f.judged_grounded}':>5} {f.ungrounded_share:3.0f}% "
            f"{f.dup_pairs:>9} {f.coverage:8.0f}% {f.reasons:>7} {f.tests:>5} "
            f"{f.validity:6.0f}% {f.seconds:7.0f} {f.judge_seconds:7.0f}"
            + (f"  ({f.error})" if f.error else "")
        )
    return "\n".join(lines)


def verdicts(rows: list[Figures]) -> list[str]:
    """The targets (issue: recall >= 80 %, ungrounded <= 10 %, no near-duplicate pairs,
    coverage 100 %, generation <= 10 minutes), each with the samples that miss it."""
    checks = [
        ("recall >= 80%", lambda f: f.recall >= TARGETS["recall"]),
        ("ungrounded <= 10%", lambda f: f.ungrounded_share <= TARGETS["ungrounded"]),
        ("no near-duplicate pairs", lambda f: f.dup_pairs == 0),
        ("coverage 100%", lambda f: f.coverage >= TARGETS["coverage"]),
        ("no placeholder inputs", lambda f: f.placeholders == 0),
        ("no restating inverses", lambda f: f.restating == 0),
        ("no near-duplicate inputs", lambda f: f.dup_inputs == 0),
        ("every output class tested", lambda f: f.classes_tested == f.classes),
        ("generation <= 600 s", lambda f: f.seconds <= TARGETS["time"]),
    ]
    out = []
    for label, ok in checks:
        missed = [f.sample for f in rows if f.error or not ok(f)]
        out.append(f"{label:<26} {'met' if not missed else 'missed: ' + ', '.join(missed)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="the embedded 1.5B model")
    where.add_argument("--fake", action="store_true", help="the scripted large-model fake")
    where.add_argument("--api-base", help="an OpenAI-compatible server (with --model)")
    parser.add_argument("--model", default="bench-model", help="model name at --api-base")
    parser.add_argument("--samples", nargs="*", default=[], help="sample names (default: all)")
    parser.add_argument("--effort", default="min")
    parser.add_argument(
        "--stepwise",
        choices=("auto", "on", "off"),
        default="auto",
        help="the generation's --stepwise (off with --local: the whole-prompt path on the "
        "embedded model)",
    )
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temp dir)")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="use the response cache (re-print figures; the times are then not the runs')",
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument(
        "--phase",
        choices=("all", "generate", "judge", "suite"),
        default="all",
        help="generate only (timed), judge runs already generated in --out, or print only "
        "the suite figures of those runs (no model call)",
    )
    parser.add_argument("--show", action="store_true", help="print each sample's matches")
    args = parser.parse_args()

    if args.phase in ("judge", "suite") and not args.out:
        parser.error(f"--phase {args.phase} needs the --out of the generation phase")
    out = args.out or Path(tempfile.mkdtemp(prefix="promptgen-quality-"))
    server = None
    if args.local:
        models = ["--rules-model", LOCAL, "--eval-model", LOCAL]
    else:
        if args.fake:
            from bench.quality_fake import start_fake

            server = start_fake()
            args.api_base = server.url
        models = ["--rules-model", args.model, "--eval-model", args.model]
        models += ["--api-base", args.api_base]
    generation = [*models, "--stepwise", args.stepwise]
    rows = []
    chosen = samples(args.samples)
    try:
        if args.phase in ("all", "generate"):  # every generation first, then the judging
            for prompt, name in chosen:
                print(f"... generating {name}", file=sys.stderr, flush=True)
                generate(prompt, out / name, generation, args.cache, args.effort)
        if args.phase == "suite":
            rows = [suite_only(name, out / name) for _, name in chosen]
        if args.phase in ("all", "judge"):
            for prompt, name in chosen:
                print(f"... judging {name}", file=sys.stderr, flush=True)
                rows.append(judge(prompt, name, out / name, models, args.cache))
    finally:
        if server is not None:
            server.stop()
    where_ = "embedded 1.5B" if args.local else ("scripted fake" if args.fake else args.api_base)
    if args.phase == "generate":
        print(f"generated in {out}: judge with --phase judge --out {out}")
        return
    if args.phase == "suite":
        print(f"suite figures of the runs in {out}")
        print(suite_table(rows))
        return
    print(f"rule and test quality at --effort {args.effort} ({where_}; runs in {out})")
    print(table(rows))
    print()
    print(suite_table(rows))
    print()
    print("\n".join(verdicts(rows)))
    if args.show:
        for f in rows:
            print(f"\n{f.sample}:")
            for m in f.matches:
                print(f"  {'+' if m['rule'] else '-'} {m['instruction']}")
                print(f"      -> {m['rule']}\n      ({m['reason']})")
    if args.json:
        payload = [{**asdict(f), "recall": f.recall, "coverage": f.coverage} for f in rows]
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
