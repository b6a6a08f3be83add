"""The frontmatter promptgen accepts: Prompty v1 and v2 keys plus PromptPex extensions.

This model validates shapes (so a wrong type is reported with its line) and is the
source of `schemas/prompt.schema.json`. Unknown keys are allowed and preserved.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from promptgen.options import frontmatter_fields

Scalar = str | int | float | bool | None


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class InputProperty(_Open):
    """One input. v1 spells `type`/`sample`; v2 spells `kind`/`example`/`enumValues`."""

    name: str | None = Field(None, description="Required in the list form.")
    type: str | None = None
    kind: str | None = None
    description: str | None = None
    default: Any = None
    sample: Any = None
    example: Any = None
    enum: list[Any] | None = None
    enumValues: list[Any] | None = None
    required: bool | None = None


class ModelSection(_Open):
    """v1: api/configuration/parameters. v2: id/provider/apiType/connection/options."""

    id: str | None = None
    provider: str | None = None
    apiType: str | None = None
    connection: dict[str, Any] | str | None = None
    options: dict[str, Any] | None = None
    api: str | None = None
    configuration: dict[str, Any] | str | None = None
    parameters: dict[str, Any] | None = None
    response: str | None = None


class TemplateSection(_Open):
    format: str | dict[str, Any] | None = None
    parser: str | dict[str, Any] | None = None
    type: str | None = None


class ScenarioSection(_Open):
    name: str = Field(description="Shown in reports and test ids.")
    instructions: str | None = None
    parameters: dict[str, Any] | None = Field(
        None, description="Input values fixed by this scenario (not generated)."
    )


class InstructionsSection(_Open):
    intent: str | None = None
    inputSpec: str | None = None
    outputRules: str | None = None
    inverseOutputRules: str | None = None
    tests: str | None = Field(None, description="Guidance for test generation.")
    testExpansion: str | None = None


class _FrontmatterBase(_Open):
    """YAML between the `---` lines at the top of a .prompty, .md or .txt prompt file."""

    schema_: str | None = Field(None, alias="$schema")
    name: str | None = None
    displayName: str | None = None
    description: str | None = None
    version: str | int | float | None = None
    authors: list[str] | None = None
    metadata: dict[str, Any] | None = None
    source: str | None = None
    url: str | None = None
    model: str | ModelSection | None = None
    sample: dict[str, Any] | str | None = None
    inputs: dict[str, InputProperty | Scalar | list[Any]] | list[InputProperty] | None = None
    outputs: dict[str, Any] | list[Any] | None = None
    template: str | TemplateSection | None = None
    tools: list[Any] | dict[str, Any] | str | None = Field(
        None,
        description="Tools the model under test is sent (Prompty v2 `kind: function` tools, "
        "or OpenAI tool objects); promptgen runs none. Other kinds are not sent (a warning).",
    )
    tags: list[str] | None = None
    scenarios: list[ScenarioSection] | None = None
    testSamples: list[dict[str, Any] | str] | None = Field(
        None, description="Example inputs: objects, or paths (relative to the prompt) of files."
    )
    instructions: InstructionsSection | None = Field(
        None, description="Extra guidance for the generation stages."
    )
    imported: Any = None
    base: str | None = Field(None, description="Prompty v1 inheritance; kept, not applied.")
    checks: list[dict[str, Any] | str] | None = Field(
        None,
        description="Deterministic checks on every output: `- contains: Hello` or "
        "`- word-count: {max: 50}` (docs/metrics.md).",
    )


# Run options a prompt may carry (a command-line flag overrides them; docs/options.md),
# derived from their one declaration in promptgen/options.py.
Frontmatter = create_model(
    "Frontmatter",
    __base__=_FrontmatterBase,
    __doc__=_FrontmatterBase.__doc__,
    **frontmatter_fields(),
)
RUN_OPTION_KEYS: tuple[str, ...] = tuple(frontmatter_fields())


def known_keys() -> set[str]:
    keys = set()
    for name, info in Frontmatter.model_fields.items():
        keys.add(info.alias or name)
    return keys


def prompt_schema() -> dict[str, Any]:
    schema = Frontmatter.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promptgen prompt frontmatter"
    return schema
