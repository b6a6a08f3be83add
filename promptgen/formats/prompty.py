"""Loader for `.prompty`, `.md` and `.txt` prompts: optional YAML frontmatter + role-marked body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from promptgen.bounds import MAX_MESSAGES, MAX_SCENARIOS, MAX_TEST_SAMPLES, printable
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats import declared
from promptgen.formats.body import parse_messages, read_frontmatter, split_frontmatter
from promptgen.formats.common import (
    check_count,
    check_parameters,
    detect_inputs,
    input_from_property,
    model_config,
    parameter_line,
    split_sample,
    strip_suffix,
)
from promptgen.formats.frontmatter import (
    RUN_OPTION_KEYS,
    Frontmatter,
    InputProperty,
    known_keys,
)
from promptgen.formats.prompty_tools import function_tools
from promptgen.formats.refs import RefResolver, read_data_file
from promptgen.formats.validate import built_error, type_error, validate_section
from promptgen.model import (
    Message,
    ModelConfig,
    PromptFormat,
    PromptInput,
    PromptUnderTest,
    Scenario,
    StageInstructions,
    TemplateEngine,
    TestSample,
)
from promptgen.rendering.render import check_syntax
from promptgen.yamlpos import (
    Path_,
    line_of,
)

_SUFFIXES = (".prompty", ".md", ".txt")
_ENGINES: dict[str, TemplateEngine] = {
    "jinja2": "jinja2",
    "jinja": "jinja2",
    "nunjucks": "jinja2",
    "mustache": "mustache",
}


def load(path: Path, text: str, fmt: PromptFormat) -> PromptUnderTest:
    file = str(path)
    split = split_frontmatter(text, file, require_close=fmt == "prompty")
    raw, lines = read_frontmatter(split.frontmatter, split.frontmatter_line, file)
    where: dict[str, Any] = {"file": file, "lines": lines}
    check_count(raw.get("scenarios"), MAX_SCENARIOS, ("scenarios",), what="scenarios", **where)
    check_count(raw.get("testSamples"), MAX_TEST_SAMPLES, ("testSamples",), what="samples", **where)
    resolver = RefResolver(path.parent, file, lines)
    resolved = resolver.resolve(raw)
    front: Any = validate_section(Frontmatter, resolved, file=file, lines=lines, what="frontmatter")
    _check_values(resolved, file, lines)
    extra = {k: v for k, v in raw.items() if k not in known_keys()}
    model, said = _model(front, file, lines)
    warnings = [*resolver.warnings, *_warnings(front, extra, file, lines), *said]
    engine = _engine(front.template, file, lines)
    messages = _messages(split.body, split.body_line, file, engine)
    metadata = front.metadata or {}
    try:
        prompt = PromptUnderTest(
            name=front.name or front.displayName or strip_suffix(path.name, _SUFFIXES),
            description=front.description,
            source=file,
            format=fmt,
            model=model,
            inputs=_inputs(front, resolved.get("inputs"), resolver),
            messages=messages,
            scenarios=[Scenario(**s.model_dump(exclude_none=True)) for s in front.scenarios or []],
            test_samples=_test_samples(front.testSamples or [], resolver),
            instructions=_instructions(front.instructions),
            tags=front.tags or list(metadata.get("tags") or []),
            template_engine=engine,
            outputs=front.outputs,
            checks=list(front.checks or []),
            check_lines=[
                line_of(resolver.lines, ("checks", i)) for i in range(len(front.checks or []))
            ],
            run_options={
                k: getattr(front, k) for k in RUN_OPTION_KEYS if getattr(front, k) is not None
            },
            frontmatter=raw,
            extra=extra,
            warnings=warnings,
        )
    except ValidationError as err:  # a safety net: the checks above catch what they know
        raise built_error(err, file=file, line=None, what="frontmatter") from err
    detect_inputs(prompt)
    return prompt


def _warnings(front: Any, extra: dict[str, Any], file: str, lines: dict[Path_, int]) -> list[str]:
    warnings = [
        f"{file}:{lines.get((k,), '?')}: unknown frontmatter key '{printable(k)}' kept as is"
        for k in extra
    ]
    if front.base:
        warnings.append(
            f"{file}: 'base: {front.base}' (prompt inheritance) is kept but not applied"
        )
    return warnings


def _model(front: Any, file: str, lines: dict[Path_, int]) -> tuple[ModelConfig, list[str]]:
    """The model section, with Prompty v2's top-level function tools among its parameters
    (what the model under test is sent), and warnings for what it is not sent."""
    model = model_config(front.model)

    def where(i: int | None) -> str:
        path: Path_ = ("tools",) if i is None else ("tools", i)
        return f"{file}:{line_of(lines, path) or '?'}"

    tools, warnings = function_tools(front.tools, where)
    if tools and model.parameters.get("tools"):
        warnings.append(
            f"{where(None)}: the top-level 'tools' are not sent: model.parameters.tools are"
        )
    elif tools:
        model.parameters["tools"] = tools
    blocks: tuple[Path_, ...] = (("model", "parameters"), ("model", "options"), ("model",))
    unsent = declared.warnings(
        model.parameters, lambda n: f"{file}:{parameter_line(lines, blocks, n) or '?'}"
    )
    return model, [*warnings, *unsent]


def _messages(body: str, body_line: int, file: str, engine: TemplateEngine) -> list[Message]:
    messages = parse_messages(body, file, body_line)
    if len(messages) > MAX_MESSAGES:
        raise PromptFormatError(
            f"the body has {len(messages):,} messages; promptgen takes at most {MAX_MESSAGES:,}",
            file=file,
            line=messages[MAX_MESSAGES].line,
            hint="merge or remove role markers",
        )
    for message in messages:
        try:
            check_syntax(message.content, engine)
        except RenderError as err:
            err.file = file
            err.line = (message.line or 1) + (err.line or 1) - 1
            raise
    return messages


def _check_values(front: dict[str, Any], file: str, lines: dict[Path_, int]) -> None:
    """Types the frontmatter model leaves open but promptgen relies on."""
    metadata = front.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    if tags is not None:
        bad = (
            [i for i, t in enumerate(tags) if not isinstance(t, str)]
            if isinstance(tags, list)
            else []
        )
        if not isinstance(tags, list) or bad:
            where: Path_ = ("metadata", "tags", *bad[:1])
            raise type_error(
                ".".join(str(p) for p in where),
                "a string" if bad else "a list of strings",
                tags[bad[0]] if bad else tags,
                file=file,
                line=line_of(lines, where),
                what="frontmatter",
            )
    model = front.get("model")
    if isinstance(model, dict):
        for block in ("parameters", "options"):
            check_parameters(
                model.get(block), ("model", block), file=file, lines=lines, what="frontmatter"
            )


def _engine(template: Any, file: str, lines: dict[Path_, int]) -> TemplateEngine:
    if template is None:
        return "jinja2"
    value: Any = template
    if not isinstance(template, str):
        value = template.format or template.type or "jinja2"
        if isinstance(value, dict):
            value = value.get("kind") or value.get("type") or "jinja2"
    engine = _ENGINES.get(str(value).lower())
    if engine is None:
        raise PromptFormatError(
            f"template format '{printable(value)}' is not supported",
            file=file,
            line=line_of(lines, ("template",)),
            hint="use jinja2 (default) or mustache",
        )
    return engine


def _inputs(front: Any, raw_inputs: Any, resolver: RefResolver) -> dict[str, PromptInput]:
    inputs: dict[str, PromptInput] = {}
    if isinstance(front.inputs, list):
        for i, prop in enumerate(front.inputs):
            if not prop.name:
                raise PromptFormatError(
                    "an input in list form needs a 'name'",
                    file=resolver.file,
                    line=line_of(resolver.lines, ("inputs", i)),
                    hint="write - name: my_input",
                )
            inputs[prop.name] = input_from_property(prop.name, prop.model_dump(exclude_none=True))
    elif isinstance(front.inputs, dict):
        for name, prop in front.inputs.items():
            value = prop.model_dump(exclude_none=True) if isinstance(prop, InputProperty) else prop
            inputs[name] = input_from_property(name, value)
    samples = front.sample
    if isinstance(samples, str):
        target = resolver.contained_path(samples, ("sample",), "sample file")
        samples = read_data_file(target, resolver.file, line_of(resolver.lines, ("sample",)))
        if not isinstance(samples, dict):
            raise PromptFormatError(
                f"sample file '{printable(front.sample)}' must hold one object "
                "(input name -> value)",
                file=resolver.file,
                line=line_of(resolver.lines, ("sample",)),
                hint="write a JSON or YAML mapping",
            )
    if isinstance(samples, dict):
        for name, value in samples.items():
            if name in inputs:
                inputs[name].sample = value
            else:
                inputs[name] = PromptInput(name=name, sample=value)
    return inputs


def _test_samples(items: list[Any], resolver: RefResolver) -> list[TestSample]:
    samples: list[TestSample] = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            samples.append(split_sample(item))
            continue
        where = ("testSamples", i)
        target = resolver.contained_path(item, where, "testSamples file")
        data = read_data_file(target, resolver.file, line_of(resolver.lines, where))
        rows = data if isinstance(data, list) else [data]
        if len(samples) + len(rows) > MAX_TEST_SAMPLES:
            raise PromptFormatError(
                f"testSamples file '{printable(item)}' brings the samples to "
                f"{len(samples) + len(rows):,}; promptgen takes at most {MAX_TEST_SAMPLES:,}",
                file=resolver.file,
                line=line_of(resolver.lines, where),
                hint="keep the most useful rows",
            )
        for row in rows:
            if not isinstance(row, dict):
                raise PromptFormatError(
                    f"testSamples file '{printable(item)}' must hold objects (input name -> value)",
                    file=resolver.file,
                    line=line_of(resolver.lines, where),
                    hint="write a JSON/YAML list of objects, JSON Lines, or CSV with a header",
                )
            samples.append(split_sample(row, source=item))
    return samples


def _instructions(section: Any) -> StageInstructions:
    if section is None:
        return StageInstructions()
    return StageInstructions(
        intent=section.intent,
        input_spec=section.inputSpec,
        output_rules=section.outputRules,
        inverse_output_rules=section.inverseOutputRules,
        tests=section.tests,
        test_expansion=section.testExpansion,
    )
