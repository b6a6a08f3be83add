"""`promptgen inspect`: what a prompt file parses to, as data and as rich tables."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.markup import escape as _markup_escape
from rich.panel import Panel
from rich.table import Table

from promptgen.bounds import terminal_text
from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.evaluation import check_name, load_metrics
from promptgen.evaluation.verdict_judge import preview
from promptgen.formats.detect import FORMATS
from promptgen.formats.github_models import evaluator_kind
from promptgen.model import Message, PromptUnderTest
from promptgen.options import Options
from promptgen.rendering.render import render_messages

SHOWN_CHARS = 4_000  # of each message in the tables (--json has everything)
SHOWN_ROWS = 50  # of each table


def example_values(prompt: PromptUnderTest) -> tuple[dict[str, Any], dict[str, str]]:
    """A value for every input (sample, else default, else first test sample) and its source.

    Inputs with no value anywhere are shown as `<name>` so the rest still renders.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    first = prompt.test_samples[0].inputs if prompt.test_samples else {}
    for name, spec in prompt.inputs.items():
        for source, value in (("sample", spec.sample), ("default", spec.default)):
            if value is not None:
                values[name], sources[name] = value, source
                break
        else:
            if name in first:
                values[name], sources[name] = first[name], "testSamples[0]"
            else:
                values[name], sources[name] = f"<{name}>", "placeholder"
    return values, sources


def inspect_data(prompt: PromptUnderTest) -> dict[str, Any]:
    values, sources = example_values(prompt)
    try:
        judge = prompt.format == "verdict" and prompt.extra.get("verdict")
        rendered: Any = preview(prompt, values) if judge else render_messages(prompt, values)
        render_error = None
    except TemplateSecurityError:
        raise  # the template breaks the sandbox's rules or limits: an error, exit code 2
    except RenderError as err:  # e.g. a placeholder where the template wants an object
        rendered, render_error = [], err.one_line()
    return {
        "format": prompt.format,
        "format_description": FORMATS.get(prompt.format, ""),
        "prompt": prompt.model_dump(mode="json", exclude={"frontmatter"}),
        "inputs_declared": [i.name for i in prompt.declared_inputs],
        "inputs_detected": [i.name for i in prompt.detected_inputs],
        "checks": checks_data(prompt),
        "evaluators": evaluators_data(prompt),
        "metrics": metrics_data(prompt),
        "render_values": values,
        "render_value_sources": sources,
        "rendered": rendered,
        "render_error": render_error,
    }


def checks_data(prompt: PromptUnderTest) -> list[dict[str, Any]]:
    """Each deterministic check: the metric name it is reported under, as written, line."""
    lines = prompt.check_lines
    return [
        {"name": check_name(spec), "check": spec, "line": lines[i] if i < len(lines) else None}
        for i, spec in enumerate(prompt.checks)
    ]


def metrics_data(prompt: PromptUnderTest) -> list[dict[str, Any]]:
    """Every metric a run of this file scores with by default: the built-in judges, and
    what the file brings (its checks, LVE checker, Promptarchitect tests, judge files
    beside it). Loading them checks them: a bad one is an error with its line."""
    return [
        {
            "name": m.name,
            "kind": m.info.kind,
            "judged": m.judged,
            "description": m.info.description,
            "source": m.info.source,
        }
        for m in load_metrics(prompt, Options())
    ]


def evaluators_data(prompt: PromptUnderTest) -> list[dict[str, Any]]:
    """A GitHub Models prompt's `evaluators`: name, kind, and whether promptgen runs it
    (string evaluators run as checks; llm and uses evaluators are kept, not run)."""
    if prompt.format != "prompt.yml":
        return []
    evaluators = prompt.frontmatter.get("evaluators") or []
    return [
        {
            "name": e.get("name"),
            "kind": evaluator_kind(e),
            "run": evaluator_kind(e) == "string",
        }
        for e in evaluators
        if isinstance(e, dict)
    ]


def escape(text: str) -> str:
    """Text from the prompt's files for a Rich table: markup escaped, and control
    characters shown, never sent to the terminal (a title, a cleared screen)."""
    return _markup_escape(terminal_text(text))


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text[: limit * 4]
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inputs_table(prompt: PromptUnderTest, sources: dict[str, str]) -> Table:
    table = Table(title="Inputs", title_justify="left", expand=False)
    for col in ("name", "type", "origin", "default", "sample", "enum", "description"):
        table.add_column(col)
    _more(table, len(prompt.inputs))
    for spec in list(prompt.inputs.values())[:SHOWN_ROWS]:
        table.add_row(
            escape(spec.name),
            escape(spec.type),
            "detected" if spec.detected else "declared",
            "" if spec.default is None else escape(_short(spec.default, 30)),
            "" if spec.sample is None else escape(_short(spec.sample, 30)),
            "" if not spec.enum else escape(_short(spec.enum, 30)),
            escape(_short(spec.description or "", 40)),
        )
    return table


def _clipped(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return (
        f"{text[:SHOWN_CHARS]}\n… ({len(text) - SHOWN_CHARS:,} more characters; --json shows all)"
    )


def _more(table: Table, total: int) -> None:
    if total > SHOWN_ROWS:
        table.caption = f"first {SHOWN_ROWS} of {total:,} (--json shows all)"


def _messages(title: str, messages: list[dict[str, Any]]) -> Panel:
    parts = []
    for m in messages[:SHOWN_ROWS]:
        extra = {k: v for k, v in m.items() if k not in ("role", "content")}
        attrs = f" {escape(_short(extra, 200))}" if extra else ""
        role = escape(str(m["role"]))
        parts.append(f"[bold cyan]{role}[/]{attrs}:\n{escape(_clipped(m['content']))}")
    if len(messages) > SHOWN_ROWS:
        parts.append(f"… {len(messages) - SHOWN_ROWS:,} more messages (--json shows all)")
    return Panel("\n\n".join(parts) or "(none)", title=title, title_align="left")


def print_inspect(prompt: PromptUnderTest, data: dict[str, Any]) -> None:
    console = Console()
    m = prompt.model
    header = Table.grid(padding=(0, 2))
    header.add_row("name", escape(prompt.name))
    if prompt.description:
        header.add_row("description", escape(_short(prompt.description, 100)))
    header.add_row("file", escape(prompt.source or ""))
    header.add_row("format", escape(f"{prompt.format}: {FORMATS.get(prompt.format, '')}"))
    header.add_row("model", escape(f"{m.id or '(not set)'}  {_short(m.parameters or '', 80)}"))
    header.add_row("template", escape(prompt.template_engine))
    if prompt.tags:
        header.add_row("tags", escape(", ".join(prompt.tags)))
    console.print(Panel(header, title="Prompt", title_align="left"))
    console.print(_inputs_table(prompt, data["render_value_sources"]))
    if prompt.variants:
        for variant in prompt.variants[:SHOWN_ROWS]:
            title = f"Prompt {variant.name!r} (run {variant.repetitions} time(s); templates)"
            console.print(_messages(title, _templates(variant.messages)))
    else:
        console.print(_messages("Messages (templates)", _templates(prompt.messages)))
    if prompt.scenarios:
        table = Table(title="Scenarios", title_justify="left")
        for col in ("name", "instructions", "parameters"):
            table.add_column(col)
        _more(table, len(prompt.scenarios))
        for s in prompt.scenarios[:SHOWN_ROWS]:
            table.add_row(
                escape(s.name),
                escape(_short(s.instructions or "", 50)),
                escape(_short(s.parameters)),
            )
        console.print(table)
    if prompt.test_samples:
        table = Table(title="Test samples", title_justify="left")
        for col in ("#", "inputs", "expected", "file"):
            table.add_column(col)
        _more(table, len(prompt.test_samples))
        for i, sample in enumerate(prompt.test_samples[:SHOWN_ROWS]):
            table.add_row(
                str(i),
                escape(_short(sample.inputs, 70)),
                escape(_short(sample.expected if sample.expected is not None else "", 30)),
                escape(sample.source or ""),
            )
        console.print(table)
    _print_checks(console, data)
    _print_judge(console, prompt)
    instructions = prompt.instructions.model_dump(exclude_none=True)
    if instructions:
        grid = Table.grid(padding=(0, 2))
        for stage, text in instructions.items():
            grid.add_row(stage, escape(_clipped(text)))
        console.print(Panel(grid, title="Stage instructions", title_align="left"))
    values = ", ".join(f"{k}={v}" for k, v in data["render_value_sources"].items())
    if data["render_error"]:
        console.print(Panel(escape(data["render_error"]), title="Rendered", style="red"))
    else:
        console.print(_messages(f"Rendered (values from: {values})", data["rendered"]))
    console.print(Group())


def _print_judge(console: Console, prompt: PromptUnderTest) -> None:
    """A Verdict template's judge keys (it is a metric when it declares a scale)."""
    spec = prompt.extra.get("verdict") if prompt.format == "verdict" else None
    if not spec:
        return
    scale = spec["scale"]
    words = {
        "discrete": f"{scale.get('min')} to {scale.get('max')}",
        "boolean": "true / false",
        "categories": ", ".join(scale.get("values", [])),
    }[scale["kind"]]
    grid = Table.grid(padding=(0, 2))
    grid.add_row("scale", escape(f"{scale['kind']}: {words}"))
    grid.add_row("passes", escape(_short(spec["pass"], 60)))
    grid.add_row("judges", f"{spec['judges']}, pooled by {spec['pool']}")
    grid.add_row("explanation", "asked" if spec["explanation"] else "not asked")
    if spec.get("rubric"):
        grid.add_row("rubric step", escape(f"{spec['rubric']['name']} -> previous"))
    console.print(Panel(grid, title="Judge (a metric: --metric FILE)", title_align="left"))


def _templates(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as written; a step the model under test writes is said in words."""
    shown = []
    for m in messages:
        named = {"variable": m.variable} if m.variable else {}
        content = "(written by the model under test)" if m.to_fill else m.content
        shown.append({**m.attributes, **named, "role": m.role, "content": content})
    return shown


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col)
    return table


def _print_checks(console: Console, data: dict[str, Any]) -> None:
    if data["checks"]:
        table = _table("Checks (deterministic, on every output)", ("name", "check", "line"))
        _more(table, len(data["checks"]))
        for check in data["checks"][:SHOWN_ROWS]:
            spec = check["check"]
            if isinstance(spec, dict) and len(spec) == 2 and "name" in spec:
                spec = {k: v for k, v in spec.items() if k != "name"}
            shown = escape(_short(spec, 60))
            table.add_row(escape(_short(check["name"], 40)), shown, str(check["line"] or ""))
        console.print(table)
    listed = {c["name"] for c in data["checks"]}  # the frontmatter's checks, shown above
    extra = [m for m in data["metrics"] if m["name"] not in listed]
    if extra:
        table = _table("Metrics (scored on every run)", ("name", "kind", "how", "from"))
        _more(table, len(extra))
        for m in extra[:SHOWN_ROWS]:
            how = "judged by every eval model" if m["judged"] else "deterministic"
            source = escape(_short(m["source"] or "built in", 50))
            table.add_row(escape(_short(m["name"], 40)), m["kind"], how, source)
        console.print(table)
    if data["evaluators"]:
        table = _table("Evaluators (prompt.yml)", ("name", "kind", "promptgen"))
        _more(table, len(data["evaluators"]))
        for e in data["evaluators"][:SHOWN_ROWS]:
            how = "runs it as a check" if e["run"] else "keeps it, does not run it"
            table.add_row(escape(_short(e["name"] or "(no name)", 40)), e["kind"], how)
        console.print(table)
