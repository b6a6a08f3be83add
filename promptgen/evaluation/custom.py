"""Custom metrics: judges written as prompt templates.

`*.metric.prompty` files beside the prompt are found automatically: `NAME.metric.prompty`
or `NAME.*.metric.prompty` belongs to the prompt file `NAME.*` in that folder only; any
other metric file there applies to every prompt in the folder. `--metric FILE` and
`--custom-metric TEXT` add more.
"""

from __future__ import annotations

from pathlib import Path

from promptgen.errors import BadInputError, RenderError, TemplateSecurityError
from promptgen.evaluation.judges import TemplateJudge
from promptgen.evaluation.protocol import Metric
from promptgen.evaluation.verdict_judge import is_judge_file
from promptgen.formats import SUFFIXES, load_prompt
from promptgen.formats.body import parse_messages
from promptgen.formats.common import strip_suffix
from promptgen.model import Message, PromptUnderTest
from promptgen.options import Options
from promptgen.rendering.precheck import example_inputs
from promptgen.rendering.render import render_messages, template_variables
from promptgen.results import MetricInfo

LOAD_ORDER = 2
RESERVED = ("compliance", "accuracy")  # the built-in judges' names
METRIC_SUFFIX = ".metric.prompty"
# What a custom metric's template may use (plus the prompt's own input names).
JUDGE_VALUES = ("prompt", "intent", "inputSpec", "rules", "input", "output", "groundtruth")


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    return custom_metrics(prompt, options)


def discover(prompt_file: Path) -> list[Path]:
    """Metric files beside the prompt that apply to it (see the module docstring)."""
    folder = prompt_file.parent
    if not folder.is_dir():
        return []
    stem = strip_suffix(prompt_file.name, SUFFIXES)
    stems = {strip_suffix(p.name, SUFFIXES) for p in folder.iterdir() if _is_prompt(p)}
    found = []
    for path in sorted(folder.glob(f"*{METRIC_SUFFIX}")):
        owner = path.name[: -len(METRIC_SUFFIX)].split(".")[0]
        if owner == stem or owner not in stems:
            found.append(path)
    return found


def _is_prompt(path: Path) -> bool:
    return path.is_file() and not path.name.endswith(METRIC_SUFFIX) and path.name.endswith(SUFFIXES)


def custom_metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    paths: list[Path] = []
    if prompt.source and Path(prompt.source).is_file():
        paths += discover(Path(prompt.source))
    files = options.evaluation.metric_files
    given = [_given_file(file) for file in files if not is_judge_file(file)]  # verdict_judge.py
    metrics: list[Metric] = []
    for path in dict.fromkeys(p.resolve() for p in [*paths, *given]):
        try:
            metrics.append(_from_file(path, prompt))
        except BadInputError as err:
            if path in given:  # name the flag the file came from
                err.message = f"--metric: {err.message}"
            raise
    for i, text in enumerate(options.evaluation.custom_metrics, start=1):
        metrics.append(_inline(text, i, prompt))
    reserved = next((m.name for m in metrics if m.name in RESERVED), None)
    if reserved:
        raise BadInputError(
            f"a custom metric is named {reserved!r}, like a built-in one",
            hint="give it another name",
        )
    return metrics


def _given_file(file: str) -> Path:
    """A `--metric` path, checked before it is read: a metric file that exists."""
    path = Path(file)
    if path.is_dir():
        raise BadInputError(
            "--metric names a folder", file=path, hint=f"give a *{METRIC_SUFFIX} file"
        )
    if not path.is_file():
        raise BadInputError("--metric file not found", file=path, hint="check the path")
    if not path.name.endswith(METRIC_SUFFIX):
        raise BadInputError(
            f"--metric takes a *{METRIC_SUFFIX} file",
            file=path,
            hint="rename it, or check the path",
        )
    return path.resolve()


def _from_file(path: Path, prompt: PromptUnderTest) -> Metric:
    template = load_prompt(path)
    name = (
        template.name
        if template.name != strip_suffix(path.name, SUFFIXES)
        else path.name[: -len(METRIC_SUFFIX)]
    )
    _check_variables(template, prompt, str(path))
    info = MetricInfo(
        name=name,
        kind="custom",
        scorer="scorer" in template.tags,
        description=template.description,
        source=str(path),
    )
    return TemplateJudge(info, template, scores_groundtruth="groundtruth" in template.tags)


def _inline(text: str, index: int, prompt: PromptUnderTest) -> Metric:
    where = f"--custom-metric #{index}"
    messages = parse_messages(text, where)
    names = {v for m in messages for v in template_variables(m.content)}
    if "output" not in names:
        messages.append(
            Message(role="user", content="Input:\n{{input}}\n\nOutput to judge:\n{{output}}")
        )
    template = PromptUnderTest(name=f"custom-{index}", source=where, messages=messages)
    _check_variables(template, prompt, where)
    info = MetricInfo(name=f"custom-{index}", kind="custom", description=text[:200])
    return TemplateJudge(info, template)


def _check_variables(template: PromptUnderTest, prompt: PromptUnderTest, where: str) -> None:
    """Every variable is one promptgen provides, and the template renders at all: a judge
    template refused for security or size is refused now, before any call (it would be
    refused at every judgement), with the metric's file or flag and line."""
    _check_names(template, prompt, where)
    values = {**{name: "sample" for name in JUDGE_VALUES}, **example_inputs(prompt)}
    try:
        render_messages(template, values, strict=False)
    except TemplateSecurityError as err:
        if err.file is None:
            err.file = where
        raise
    except RenderError:
        return  # a placeholder value may not fit; a judgement says so with the real one


def _check_names(template: PromptUnderTest, prompt: PromptUnderTest, where: str) -> None:
    allowed = {*JUDGE_VALUES, *prompt.inputs}
    for message in template.messages:
        for name in template_variables(message.content, template.template_engine):
            if name not in allowed:
                raise BadInputError(
                    f"metric uses {{{{{name}}}}}, which promptgen does not provide",
                    file=where,
                    line=message.line,
                    hint="a metric can use " + ", ".join(JUDGE_VALUES) + " and the prompt's inputs",
                )
