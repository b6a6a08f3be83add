"""Inspect AI (the UK AISI eval framework): `dataset.jsonl` and `task.py`.

Each exported test is one sample (the prompt rendered for it as chat messages, the
reference answer as target, what the test is for as metadata). `task.py` defines a
`@task` that answers each sample with `generate()` and scores it with a model-graded
rubric: promptgen's own rules-compliance judge, asked of a grader model (`-T grader=`,
or the model under test). Run it with `inspect eval task.py --model openai/<name>`.
"""

from __future__ import annotations

import json
import keyword
import re
from pathlib import Path
from typing import Any

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.export.common import (
    CheckSpec,
    ExportResult,
    ExportSettings,
    JudgeWords,
    arguments,
    compliance_judge,
    expected_output,
    exported_tests,
    input_text,
    metric_sources,
    models_under_test,
    native_metrics_skipped,
    parsed_checks,
    provider_and_name,
    rendered_messages,
    sampling,
    test_metadata,
    text_value,
    write_jsonl,
    write_text,
)
from promptgen.results import MetricInfo, Test

TARGET = "inspect"
WORDS = JudgeWords()
# Where the scorer puts the test's input and the model's answer into the judge prompt
# (one pass over the template, so neither value can inject the other's slot).
SLOTS = {"input": "@@INPUT@@", "output": "@@OUTPUT@@"}

# promptgen provider prefix -> Inspect AI model prefix (the rest of the id is kept).
PROVIDERS = {
    "openai": "openai",
    "azure": "openai/azure",
    "anthropic": "anthropic",
    "gemini": "google",
    "mistral": "mistral",
    "groq": "groq",
    "together_ai": "together",
    "ollama": "ollama",
    "openrouter": "openrouter",
    "xai": "grok",
}

# promptgen's call parameters (OpenAI spelling) -> GenerateConfig fields.
CONFIG_FIELDS = {
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "seed": "seed",
    "top_p": "top_p",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "stop": "stop_seqs",
}


def write(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    result = ExportResult(TARGET)
    result.skipped += native_metrics_skipped(ctx)
    tests = exported_tests(ctx)
    config, skipped_params = generate_config(ctx)
    checks, skipped_checks = check_scorers(ctx, tests)
    try:
        result.paths.append(write_jsonl(out / "dataset.jsonl", [sample(ctx, t) for t in tests]))
        result.paths.append(write_text(out / "task.py", task_file(ctx, config, checks)))
    except OSError as err:
        raise BadInputError(
            f"cannot write the Inspect AI export into {out}: {err.strerror or err}",
            hint="choose a folder you can write to (--out)",
        ) from err
    result.skipped += skipped_params + skipped_metrics(ctx) + skipped_checks
    models, skipped_models = inspect_models(models_under_test(ctx, settings))
    result.skipped += skipped_models
    result.notes.append(f"{len(tests)} samples in {out / 'dataset.jsonl'}")
    for model in models or ["openai/<model>"]:
        result.notes.append(f"run: cd {out} && inspect eval task.py --model {model}")
    return result


# -- dataset.jsonl ----------------------------------------------------------------------


def sample(ctx: Context, test: Test) -> dict[str, Any]:
    """One Inspect sample: the rendered prompt as chat input, the reference answer (or
    "") as target, and metadata the scorer and the log viewer read."""
    return {
        "id": test.id,
        "input": rendered_messages(ctx, test),
        "target": expected_output(test) or "",
        "metadata": {
            **test_metadata(ctx, test),
            "inputs": arguments(ctx, test),
            "judge_input": input_text(ctx, test),
        },
    }


# -- what maps and what does not ----------------------------------------------------------


def generate_config(ctx: Context) -> tuple[dict[str, Any], list[str]]:
    """The prompt's sampling parameters as GenerateConfig fields, and those left out."""
    config: dict[str, Any] = {}
    skipped = []
    for name, value in sampling(ctx).items():
        field = CONFIG_FIELDS.get(name)
        if field is None:
            skipped.append(f"parameter {name}: no GenerateConfig field carries it; not set")
            continue
        config[field] = [value] if field == "stop_seqs" and isinstance(value, str) else value
    return config, skipped


def skipped_metrics(ctx: Context) -> list[str]:
    return [line for info in metric_sources(ctx) if (line := _metric_skip(info)) is not None]


def _metric_skip(info: MetricInfo) -> str | None:
    if info.kind in ("compliance", "check"):
        return None  # compliance is the rubric scorer; checks are handled one by one
    if info.kind == "accuracy":
        return (
            f"metric '{info.name}': promptgen's 0-100 agreement with the groundtruth has no "
            "Inspect scorer of the same scale; the reference answer is each sample's target"
        )
    if info.kind == "groundtruth":
        return f"metric '{info.name}': it rates groundtruth answers, not the model under test"
    source = f" ({Path(info.source).name})" if info.source else ""
    return (
        f"metric '{info.name}'{source}: a custom promptgen judge; Inspect has no "
        "counterpart, so it is not exported"
    )


def check_scorers(ctx: Context, tests: list[Test]) -> tuple[list[str], list[str]]:
    """Checks Inspect's built-in scorers express exactly (as Python calls), and the rest.

    `includes()` compares the output with the sample's target, so only `contains` /
    `icontains` of `{{expected}}` map, and only when every target is the author's sample
    output (promptgen fills `{{expected}}` from nothing else)."""
    scorers: list[str] = []
    skipped: list[str] = []
    targets_are_samples = bool(tests) and all(_target_is_sample_output(t) for t in tests)
    for spec in parsed_checks(ctx):
        call = _builtin(spec)
        if call is not None and targets_are_samples:
            scorers.append(call)
        elif call is not None:
            skipped.append(
                f"check '{spec.label}': Inspect's includes() compares with the target, which "
                "is not the author's sample output for every test"
            )
        else:
            skipped.append(
                f"check '{spec.label}': Inspect's built-in scorers (includes, match, pattern) "
                "compare the output with the target; no built-in does this check"
            )
    return scorers, skipped


def _builtin(spec: CheckSpec) -> str | None:
    expected = isinstance(spec.args, str) and re.fullmatch(r"\{\{\s*expected\s*\}\}", spec.args)
    if spec.base == "contains" and not spec.negated and expected:
        return f"includes(ignore_case={spec.ignore_case})"
    return None


def _target_is_sample_output(test: Test) -> bool:
    if test.origin != "sample" or test.expected_output is None:
        return False
    return expected_output(test) == text_value(test.expected_output)


def inspect_models(models: list[str]) -> tuple[list[str], list[str]]:
    """promptgen model ids as Inspect AI `--model` values, and those with no provider."""
    names: list[str] = []
    skipped: list[str] = []
    for model in models:
        provider, name = provider_and_name(model)
        prefix = PROVIDERS.get(provider or "openai")
        if prefix is None:
            skipped.append(
                f"model {model}: no Inspect AI provider known for '{provider}'; "
                "give --model yourself"
            )
        else:
            names.append(f"{prefix}/{name}")
    return names, skipped


# -- task.py ------------------------------------------------------------------------------


def task_name(name: str) -> str:
    """The prompt's name as a Python identifier (`classify-sentiment` -> classify_sentiment)."""
    ident = re.sub(r"\W+", "_", name.strip(), flags=re.ASCII).strip("_").lower() or "prompt"
    if ident[0].isdigit():
        ident = f"prompt_{ident}"
    return f"{ident}_" if keyword.iskeyword(ident) else ident


def py_text(text: str, indent: str) -> str:
    """A Python literal for `text`: a triple-quoted string when that is exact and its lines
    are short, else short quoted pieces, one or more per line of text (ruff-clean at a
    line length of 100)."""
    if _triple_quotable(text):
        return f'"""\\\n{text}"""'
    pieces = [piece for line in text.splitlines(keepends=True) for piece in _pieces(line)]
    inner = "".join(f"\n{indent}    {quoted(piece)}" for piece in pieces or [""])
    return f"({inner}\n{indent})"


def quoted(text: str) -> str:
    """A double-quoted Python literal (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)


def _triple_quotable(text: str) -> bool:
    plain = all(c.isprintable() or c == "\n" for c in text)
    short = all(len(line) <= 95 for line in text.split("\n"))
    return plain and short and "\\" not in text and '"""' not in text and not text.endswith('"')


PIECE = 80  # the longest quoted piece of text on one line of task.py


def _pieces(line: str) -> list[str]:
    """`line` cut into pieces whose literals fit on a line, after a space where possible."""
    pieces = []
    while len(quoted(line)) > PIECE:
        cut = 1
        while cut < len(line) and len(quoted(line[: cut + 1])) <= PIECE:
            cut += 1
        space = line.rfind(" ", 0, cut)
        cut = space + 1 if space > 0 else cut
        pieces.append(line[:cut])
        line = line[cut:]
    return [*pieces, line] if line else pieces


def _judge_item(role: str, content: str) -> str:
    """One (role, text) entry of JUDGE, laid out as `ruff format` lays it out."""
    indent = " " * 8
    return f"    (\n{indent}{quoted(role)},\n{indent}{py_text(content, indent)},\n    ),\n"


def task_file(ctx: Context, config: dict[str, Any], checks: list[str]) -> str:
    judge = compliance_judge(ctx, input=SLOTS["input"], output=SLOTS["output"], words=WORDS)
    judge_items = "".join(_judge_item(m["role"], m["content"]) for m in judge)
    name = task_name(ctx.prompt.name)
    config_args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    scorer_list = ", ".join(["rules_rubric(grader)", *checks])
    scorer_imports = ["CORRECT", "INCORRECT", "NOANSWER", "Score", "Scorer", "Target"]
    scorer_imports += ["accuracy", "scorer", "stderr"]
    if checks:
        scorer_imports.append("includes")
    scorer_imports.sort(key=lambda s: (not s.isupper(), s[0].islower(), s))
    return TASK_TEMPLATE.format(
        name=name,
        judge_items=judge_items,
        passed=quoted(WORDS.passed),
        failed=quoted(WORDS.failed),
        config=config_args,
        scorers=scorer_list if not checks else f"[{scorer_list}]",
        scorer_imports=",\n    ".join(scorer_imports),
        input_slot=SLOTS["input"],
        output_slot=SLOTS["output"],
    )


TASK_TEMPLATE = '''\
"""Inspect AI task `{name}`, written by promptgen (`promptgen export`) from a prompt.

Each sample of dataset.jsonl is one promptgen test: the prompt rendered for it, the
reference answer as target (empty when there is none), and the rule it targets as
metadata. The model under test answers with generate(); a grader model then reads the
prompt, its rules, the test's input and the answer, and replies {passed} (correct) or
{failed} (incorrect).

    inspect eval task.py --model openai/gpt-4o-mini
    inspect eval task.py --model openai/gpt-4o-mini -T grader=openai/gpt-4o
"""

import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import (
    {scorer_imports},
)
from inspect_ai.solver import TaskState, generate

HERE = Path(__file__).parent

# The rules-compliance judge (role, text); {input_slot} and {output_slot} are filled per sample.
JUDGE = [
{judge_items}]
PASSED = {passed}
FAILED = {failed}
SLOTS = re.compile(r"{input_slot}|{output_slot}")
VERDICT = re.compile(r"\\b(" + PASSED + "|" + FAILED + r")\\b", re.IGNORECASE)


def judge_messages(judge_input: str, answer: str) -> list[ChatMessage]:
    values = {{"{input_slot}": judge_input, "{output_slot}": answer}}
    messages: list[ChatMessage] = []
    for role, text in JUDGE:
        content = SLOTS.sub(lambda m: values[m.group(0)], text)
        if role == "system":
            messages.append(ChatMessageSystem(content=content))
        else:
            messages.append(ChatMessageUser(content=content))
    return messages


@scorer(metrics=[accuracy(), stderr()])
def rules_rubric(grader: str | None = None) -> Scorer:
    """Correct when the grader finds that the answer breaks none of the prompt's rules."""

    async def score(state: TaskState, target: Target) -> Score:
        model = get_model(grader) if grader else get_model(role="grader")
        answer = state.output.completion
        messages = judge_messages(str(state.metadata.get("judge_input", "")), answer)
        reply = await model.generate(messages, config=GenerateConfig(temperature=0.0))
        verdicts = VERDICT.findall(reply.completion)
        if not verdicts:
            return Score(value=NOANSWER, answer=answer, explanation=reply.completion)
        passed = verdicts[-1].lower() == PASSED
        value = CORRECT if passed else INCORRECT
        return Score(value=value, answer=answer, explanation=reply.completion)

    return score


@task
def {name}(grader: str | None = None) -> Task:
    """The prompt's tests, scored by the rules rubric (grader: default the model under test)."""
    return Task(
        dataset=json_dataset(str(HERE / "dataset.jsonl")),
        solver=generate(),
        scorer={scorers},
        config=GenerateConfig({config}),
    )
'''
