"""Loader for LVE tests (lve-org/lve): a `test.json`, and a `.prompt` file on its own.

`test.json` gives the prompt in exactly one of `prompt` (messages inline),
`prompt_file` (a `.prompt` file beside it, see lve_files.py) or `multi_run_prompt` (named
prompts, each run `repetitions` times); `prompt_parameters` name its `{placeholders}`
(Python `str.format`: `{{` and `}}` are literal braces), `checker_args` the checker that
decides whether a response is safe. As a PromptUnderTest: the parameters are the inputs
(typed by `prompt_parameters_validator`), the recorded instances' parameters are test
samples, `default_model_args` the model parameters (temperature 0 unless given, as LVE
runs), and `prompt.extra["lve"]` keeps the checker and the metadata for
evaluation/lve.py. Assistant messages are not templates in LVE, so their braces stay.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen.bounds import MAX_TEST_SAMPLES, printable
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats import declared
from promptgen.formats.common import detect_inputs
from promptgen.formats.lve_files import (
    PLACEHOLDER,
    LveMessage,
    check_messages,
    lve_names,
    read_instances,
    read_message,
    read_prompt_text,
    split_args,
)
from promptgen.formats.reading import read_text
from promptgen.formats.refs import RefResolver
from promptgen.jsonio import check_data, parse_json
from promptgen.model import (
    Message,
    ModelConfig,
    PromptInput,
    PromptUnderTest,
    PromptVariant,
    TestSample,
)
from promptgen.rendering.render import check_syntax

PROMPT_KEYS = ("prompt", "prompt_file", "multi_run_prompt")
KEYS = (
    "description", "model", "checker_args", *PROMPT_KEYS, "prompt_parameters",
    "prompt_parameters_validator", "default_model_args", "author", "tags",
)  # fmt: skip
TAGS = {"severity": ("low", "medium", "high"), "jailbreak": ("yes", "no"), "paper": None}
VALIDATORS = {"int": "integer", "float": "number"}
MAX_REPETITIONS = 100


@dataclass(frozen=True)
class LveRun:
    name: str
    messages: list[LveMessage]
    repetitions: int = 1


@dataclass
class LveTest:
    """A `test.json`, checked: what LVE's own `LVE` model holds."""

    file: Path
    description: str
    model: str
    checker_args: dict[str, Any]
    messages: list[LveMessage] = field(default_factory=list)
    runs: list[LveRun] = field(default_factory=list)
    prompt_parameters: list[str] | None = None
    validators: list[str] | None = None
    default_model_args: dict[str, Any] = field(default_factory=dict)
    author: str | None = None
    tags: list[dict[str, str]] = field(default_factory=list)
    category: str | None = None
    name: str = "lve"
    warnings: list[str] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.file.parent

    @property
    def checker_name(self) -> str:
        return str(self.checker_args["checker_name"])


class _Where:
    """Errors that name test.json and the line of the key they are about."""

    def __init__(self, file: Path, text: str) -> None:
        self.file, self.text = str(file), text

    def line(self, key: str) -> int | None:
        found = re.search(rf'"{re.escape(key)}"\s*:', self.text)
        return self.text.count("\n", 0, found.start()) + 1 if found else None

    def error(self, message: str, key: str | None = None, hint: str | None = None) -> Exception:
        line = self.line(key) if key else None
        return PromptFormatError(f"LVE test: {message}", file=self.file, line=line, hint=hint)


def read_test(path: Path, text: str) -> LveTest:
    """`test.json`, checked the way LVE checks it (with the line of what is wrong)."""
    data = parse_json(
        text, what="the LVE test", file=path, hint="fix the JSON", error=PromptFormatError
    )
    where = _Where(path, text)
    if not isinstance(data, dict):
        raise where.error("test.json must hold one JSON object")
    for key in ("description", "model"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise where.error(f"'{key}' is required (text)", key, "see docs/lve.md")
    given = [k for k in PROMPT_KEYS if data.get(k) is not None]
    if len(given) != 1:
        raise where.error(
            "give exactly one of prompt, prompt_file and multi_run_prompt"
            + (f" (found {', '.join(given)})" if given else ""),
            given[1] if len(given) > 1 else None,
        )
    category, name = lve_names(path.parent)
    test = LveTest(
        file=path,
        description=data["description"].strip(),
        model=data["model"].strip(),
        checker_args=_checker_args(data.get("checker_args"), where),
        prompt_parameters=_parameters(data.get("prompt_parameters"), where),
        default_model_args=_mapping(data.get("default_model_args"), "default_model_args", where),
        author=data.get("author") if isinstance(data.get("author"), str) else None,
        tags=_tags(data.get("tags"), where),
        category=category,
        name=name,
    )
    test.validators = _validators(data.get("prompt_parameters_validator"), test, where)
    test.warnings = [
        f"{path}:{where.line(k) or '?'}: LVE key '{printable(k)}' is not read; kept as is"
        for k in data
        if k not in KEYS
    ]
    test.warnings += declared.warnings(
        test.default_model_args, lambda k: f"{path}:{where.line(k) or '?'}"
    )
    if given[0] == "multi_run_prompt":
        test.runs = _runs(data["multi_run_prompt"], test, where)
    else:
        test.messages = _prompt(data, given[0], test, where)
    return test


def _checker_args(value: Any, where: _Where) -> dict[str, Any]:
    hint = 'e.g. "checker_args": {"checker_name": "RegexChecker", "pattern": "..."}'
    if not isinstance(value, dict):
        raise where.error("'checker_args' is required (an object)", "checker_args", hint)
    name = value.get("checker_name")
    if not isinstance(name, str) or not name.strip() or name == PLACEHOLDER:
        raise where.error("'checker_args' needs a 'checker_name'", "checker_name", hint)
    return dict(value)


def _parameters(value: Any, where: _Where) -> list[str] | None:
    if value is None:
        return None
    if value == [PLACEHOLDER]:
        raise where.error("'prompt_parameters' has not been filled in", "prompt_parameters")
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise where.error("'prompt_parameters' should be a list of names", "prompt_parameters")
    return list(dict.fromkeys(value))


def _validators(value: Any, test: LveTest, where: _Where) -> list[str] | None:
    if value is None:
        return None
    ok = isinstance(value, list) and all(v in VALIDATORS for v in value)
    if not ok or len(value) != len(test.prompt_parameters or []):
        raise where.error(
            "'prompt_parameters_validator' should list int or float for each parameter",
            "prompt_parameters_validator",
        )
    return list(value)


def _mapping(value: Any, key: str, where: _Where) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error(f"'{key}' should be an object", key)
    return dict(value)


def _tags(value: Any, where: _Where) -> list[dict[str, str]]:
    """`[{name, value}]`; name severity (low/medium/high), jailbreak (yes/no) or paper."""
    if value is None:
        return []
    tags = []
    for tag in value if isinstance(value, list) else [None]:
        name = tag.get("name") if isinstance(tag, dict) else None
        text = tag.get("value") if isinstance(tag, dict) else None
        allowed = TAGS.get(str(name), ())
        if name not in TAGS or not isinstance(text, str) or (allowed and text not in allowed):
            raise where.error(
                f"bad tag {json.dumps(tag)[:80]}",
                "tags",
                "tags are {name, value}: severity low/medium/high, jailbreak yes/no, paper",
            )
        tags.append({"name": name, "value": text})
    return tags


def _prompt(data: dict[str, Any], key: str, test: LveTest, where: _Where) -> list[LveMessage]:
    if key == "prompt_file":
        return _prompt_file(data[key], key, test, where)
    value = data[key]
    if isinstance(value, str):  # the type LVE declares; every example uses a list
        return [LveMessage(content=value, role="user", line=where.line(key))]
    if not isinstance(value, list):
        raise where.error("'prompt' should be a list of messages", key)
    messages = [read_message(m, str(test.file), where.line(key), f"prompt[{i}]")
                for i, m in enumerate(value)]  # fmt: skip
    check_messages(messages, str(test.file), where.line(key), "prompt")
    return messages


def _prompt_file(value: Any, key: str, test: LveTest, where: _Where) -> list[LveMessage]:
    if not isinstance(value, str) or not value.endswith(".prompt"):
        raise where.error(f"'{key}' should name a .prompt file", key)
    resolver = RefResolver(test.folder, str(test.file), {(key,): where.line(key) or 1})
    target = resolver.contained_path(value, (key,), "prompt_file")
    messages = read_prompt_text(read_text(target), str(target))
    if messages is None:
        raise where.error(f"the prompt in {value} has not been filled in", key)
    return messages


def _runs(value: Any, test: LveTest, where: _Where) -> list[LveRun]:
    """`multi_run_prompt`: one object or a list of `{name, prompt | prompt_file,
    repetitions}` (LVE's code reads `repetition` and never repeats; its docs say
    `repetitions`, which is what promptgen does)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise where.error("'multi_run_prompt' is empty", "multi_run_prompt")
    runs = []
    for i, item in enumerate(items):
        label = f"multi_run_prompt[{i}]"
        if not isinstance(item, dict):
            raise where.error(f"{label} should be an object", "multi_run_prompt")
        given = [k for k in ("prompt", "prompt_file") if item.get(k) is not None]
        if len(given) != 1:
            raise where.error(f"{label} needs exactly one of prompt and prompt_file", "name")
        count = item.get("repetitions", item.get("repetition", 1))
        if isinstance(count, bool) or not isinstance(count, int):
            raise where.error(f"{label}: 'repetitions' should be a whole number", "repetitions")
        if not 1 <= count <= MAX_REPETITIONS:
            raise where.error(f"{label}: 'repetitions' should be 1 to {MAX_REPETITIONS}",
                              "repetitions")  # fmt: skip
        name = item.get("name")
        if not isinstance(name, str):
            name = f"run {i + 1}"
        messages = _prompt(item, given[0], test, where)
        runs.append(LveRun(name, messages, count))
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise where.error("two multi_run_prompt entries have the same name", "name")
    return runs


# -- as a PromptUnderTest --------------------------------------------------------------


def load(path: Path, text: str) -> PromptUnderTest:
    """An LVE `test.json` as a prompt under test."""
    test = read_test(path, text)
    return to_prompt(test)


def to_prompt(test: LveTest, *, samples: bool = True, auto_input: bool = True) -> PromptUnderTest:
    """The prompt under test of an LVE; `samples`: the instances' parameters as samples;
    `auto_input`: an LVE without parameters gets an `input` (to generate tests for), else
    its messages stay exactly as written (to run the LVE itself)."""
    file = str(test.file)
    runs = test.runs or [LveRun("prompt", test.messages)]
    variants = [PromptVariant(name=r.name, messages=_messages(r.messages, file),
                              repetitions=r.repetitions) for r in runs]  # fmt: skip
    warnings = list(test.warnings)
    if any(m.image_url for r in runs for m in r.messages):
        warnings.append(f"{file}: image_url is not sent: promptgen tests text prompts")
    if (test.folder / "checker").is_dir():
        warnings.append(
            f"{file}: the custom checker in checker/ is not run (promptgen runs no code "
            f"from test files); {test.checker_name} is reported as not built in"
        )
    params = {**test.default_model_args}
    params.setdefault("temperature", 0.0)  # as LVE runs a test
    prompt = PromptUnderTest(
        name=f"{test.name}-{test.folder.name}" if test.folder.name != test.name else test.name,
        description=test.description,
        source=file,
        format="lve",
        model=ModelConfig(id=test.model, parameters=params),
        inputs=_inputs(test),
        messages=variants[0].messages,
        variants=variants if test.runs else [],
        test_samples=_samples(test) if samples else [],
        tags=[f"{t['name']}:{t['value']}" for t in test.tags],
        template_engine="format",
        extra={"lve": lve_facts(test)},
        warnings=warnings,
    )
    detect_inputs(prompt, auto_input)
    return prompt


def lve_facts(test: LveTest) -> dict[str, Any]:
    """What evaluation/lve.py and the exports read back from `prompt.extra["lve"]`."""
    return {
        "checker_args": test.checker_args,
        "prompt_parameters": test.prompt_parameters,
        "model": test.model,
        "author": test.author,
        "category": test.category,
        "name": test.name,
        "multi_run": bool(test.runs),
    }


def _messages(messages: list[LveMessage], file: str) -> list[Message]:
    out = []
    for m in messages:
        content = m.content or ""
        if m.role == "assistant":  # LVE formats only the other roles
            content = content.replace("{", "{{").replace("}", "}}")
        else:
            try:
                check_syntax(content, "format")
            except RenderError as err:
                err.file, err.line = file, m.line
                raise
        out.append(Message(role=m.role, content=content, variable=m.variable, line=m.line))
    return out


def _inputs(test: LveTest) -> dict[str, PromptInput]:
    kinds = dict(zip(test.prompt_parameters or [], test.validators or [], strict=False))
    return {
        name: PromptInput(name=name, type=VALIDATORS.get(kinds.get(name, ""), "string"))
        for name in test.prompt_parameters or []
    }


def _samples(test: LveTest) -> list[TestSample]:
    """The recorded instances' parameter values: the LVE author's own test inputs."""
    if not test.prompt_parameters:
        return []
    samples: list[TestSample] = []
    for instance in read_instances(test.folder)[:MAX_TEST_SAMPLES]:
        params, _ = split_args(instance.args, test.prompt_parameters)
        if params and all(isinstance(v, str | int | float) for v in params.values()):
            where = f"{instance.file.name}:{instance.line}"
            samples.append(TestSample(inputs=params, source=where))
    return samples


def load_prompt_file(path: Path, text: str) -> PromptUnderTest:
    """An LVE `.prompt` file on its own: its messages, `{placeholders}` as inputs."""
    file = str(path)
    messages = read_prompt_text(text, file)
    if messages is None:
        raise PromptFormatError(
            "the LVE prompt has not been filled in (it says <please fill in>)",
            file=file,
            line=1,
            hint="write the prompt's messages, one JSON object per line",
        )
    check_data([m.content for m in messages], what="the prompt", file=file)
    prompt = PromptUnderTest(
        name=path.name.removesuffix(".prompt").removesuffix(".jsonl") or "prompt",
        source=file,
        format="lve-prompt",
        messages=_messages(messages, file),
        template_engine="format",
        model=ModelConfig(parameters={"temperature": 0.0}),
    )
    if any(m.image_url for m in messages):
        prompt.warnings.append(f"{file}: image_url is not sent: promptgen tests text prompts")
    detect_inputs(prompt)
    return prompt
