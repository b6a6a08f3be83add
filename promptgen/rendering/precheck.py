"""A template that can never render is refused when the prompt is prepared, before any
call: it is rendered once with a value for every input (its sample, else its default,
else the first test sample's, else a short placeholder of the input's type), and a
security or size error (`TemplateSecurityError`) is the run's one line, exit 2. Any other
render error is left to the tests themselves: a placeholder may not fit a template that
wants a particular value."""

from __future__ import annotations

from typing import Any

from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.model import PromptUnderTest
from promptgen.rendering.render import render_messages

PLACEHOLDERS: dict[str, Any] = {
    "string": "sample",
    "number": 1.5,
    "integer": 1,
    "boolean": True,
    "array": ["sample"],
    "list": ["sample"],
    "object": {"key": "sample"},
}


def example_inputs(prompt: PromptUnderTest) -> dict[str, Any]:
    """A value for every input: sample, default, first test sample, else a placeholder."""
    first = prompt.test_samples[0].inputs if prompt.test_samples else {}
    values: dict[str, Any] = {}
    for name, spec in prompt.inputs.items():
        for value in (spec.sample, spec.default, first.get(name)):
            if value is not None:
                values[name] = value
                break
        else:
            values[name] = PLACEHOLDERS.get(str(spec.type), "sample")
    return values


def check_renders(prompt: PromptUnderTest) -> None:
    """Raise the TemplateSecurityError of a template no test could ever render."""
    try:
        render_messages(prompt, example_inputs(prompt), strict=False)
    except TemplateSecurityError:
        raise
    except RenderError:
        return
