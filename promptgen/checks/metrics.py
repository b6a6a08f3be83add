"""The metrics an evaluation scores with: built-in judges, custom metric files, checks.

Custom metrics are `*.metric.prompty` files. Those beside the prompt are found
automatically: `NAME.metric.prompty` or `NAME.*.metric.prompty` belongs to the prompt
file `NAME.*` in that folder only; any other metric file there applies to every
prompt in the folder. `--metric FILE` and `--custom-metric TEXT` add more.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptgen.checks.parse import parse_check
from promptgen.errors import BadInputError
from promptgen.formats import SUFFIXES, load_prompt
from promptgen.formats.body import parse_messages
from promptgen.formats.common import strip_suffix
from promptgen.model import Message, PromptUnderTest
from promptgen.options import Options
from promptgen.render import template_variables
from promptgen.results import MetricInfo

METRIC_SUFFIX = ".metric.prompty"
# What a custom metric's template may use (plus the prompt's own input names).
JUDGE_VALUES = ("prompt", "intent", "inputSpec", "rules", "input", "output", "groundtruth")


@dataclass
class Metric:
    info: MetricInfo
    template: PromptUnderTest | None = None  # custom metrics
    check: Any = None  # deterministic checks
    spec: Any = None  # a check as written, when its values use {{name}} of each test
    groundtruth: bool = False  # tagged `groundtruth`: scores groundtruth answers

    @property
    def name(self) -> str:
        return self.info.name


def builtin_metrics(options: Options) -> list[Metric]:
    metrics = []
    if options.compliance:
        metrics.append(
            Metric(
                MetricInfo(
                    name="compliance",
                    kind="compliance",
                    description="A judge reads the prompt, its rules, the input and the output, "
                    "and answers ok or err.",
                )
            )
        )
    if options.groundtruth:
        metrics.append(
            Metric(
                MetricInfo(
                    name="accuracy",
                    kind="accuracy",
                    scorer=True,
                    description="How well the output agrees with the groundtruth answer (0-100).",
                )
            )
        )
    return metrics


def check_name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    ((name, args),) = spec.items()
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f"{name}={shown}"


def check_metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    metrics: dict[str, Metric] = {}
    for spec in [*prompt.checks, *options.checks]:
        name = check_name(spec)
        metrics[name] = Metric(
            MetricInfo(name=name, kind="check", description="deterministic check"),
            check=parse_check(spec),
            spec=spec if "{{" in json.dumps(spec) else None,
        )
    return list(metrics.values())


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
    for file in options.metric_files:
        path = Path(file)
        if not path.is_file():
            raise BadInputError("metric file not found", file=path, hint="check --metric")
        paths.append(path)
    metrics = [_from_file(path, prompt) for path in dict.fromkeys(p.resolve() for p in paths)]
    for i, text in enumerate(options.custom_metrics, start=1):
        metrics.append(_inline(text, i, prompt))
    names = [m.name for m in metrics]
    clash = next((n for n in names if names.count(n) > 1 or n in ("compliance", "accuracy")), None)
    if clash:
        raise BadInputError(
            f"two metrics are named {clash!r}", hint="give each metric a distinct name"
        )
    return metrics


def _from_file(path: Path, prompt: PromptUnderTest) -> Metric:
    template = load_prompt(path)
    name = (
        template.name
        if template.name != strip_suffix(path.name, SUFFIXES)
        else path.name[: -len(METRIC_SUFFIX)]
    )
    _check_variables(template, prompt, str(path))
    return Metric(
        MetricInfo(
            name=name,
            kind="custom",
            scorer="scorer" in template.tags,
            description=template.description,
            source=str(path),
        ),
        template=template,
        groundtruth="groundtruth" in template.tags,
    )


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
    return Metric(info, template=template)


def _check_variables(template: PromptUnderTest, prompt: PromptUnderTest, where: str) -> None:
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


def load_metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    """Every metric of this run; raises BadInputError before any call is made."""
    return [
        *builtin_metrics(options),
        *custom_metrics(prompt, options),
        *check_metrics(prompt, options),
    ]


_PLACEHOLDER = re.compile(r"\{\{\s*([\w.-]+)\s*\}\}")


def fill_placeholders(spec: Any, values: dict[str, Any]) -> tuple[Any, list[str]]:
    """`{{name}}` in a check's strings replaced by the test's values (plain text
    replacement, as gh models does: no logic, nothing evaluated); returns the names
    no value was found for."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            missing.append(name)
            return match.group(0)
        value = values[name]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _PLACEHOLDER.sub(replace, node)
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        return node

    return walk(spec), missing
