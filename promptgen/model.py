"""The prompt under test: one model that every file format loads into."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from promptgen.kinds import PromptFormat, TemplateEngine
from promptgen.secrets import redact, register_mapping

Role = Literal["system", "user", "assistant", "developer", "function", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "developer", "function", "tool")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class ModelConfig(_Model):
    """Which model the prompt was written for and how to call it."""

    id: str | None = None
    provider: str | None = None
    api: str | None = Field(None, description="chat, completion, responses, embedding, image")
    connection: dict[str, Any] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="Call parameters in OpenAI spelling (temperature, max_tokens, top_p, ...).",
    )
    response_format: Any = None

    @model_validator(mode="after")
    def _register_secrets(self) -> ModelConfig:
        """Keys written into the prompt are known to `secrets.scrub` from the moment the
        prompt is read, so no error text that quotes them is written out."""
        register_mapping(self.connection)
        register_mapping(self.parameters)
        return self

    @field_serializer("connection", "parameters")
    def _hide_secrets(self, value: dict[str, Any]) -> dict[str, Any]:
        """Only what is written out is redacted: the call still gets the real values
        (`prompting.invoke.call_settings` reads the attribute, not a dump)."""
        return redact(value)


class PromptInput(_Model):
    """One input variable of the prompt."""

    name: str
    type: str = "string"
    description: str | None = None
    default: Any = None
    sample: Any = None
    enum: list[Any] | None = None
    required: bool = False
    detected: bool = Field(False, description="Found in a template but not declared.")

    @property
    def example(self) -> Any:
        """The author's value of the input: its sample, else its default (None: neither)."""
        return self.sample if self.sample is not None else self.default


class Message(_Model):
    """One chat message; `content` is a template until rendered."""

    role: Role
    content: str
    attributes: dict[str, Any] = Field(default_factory=dict)
    line: int | None = Field(None, description="1-based line of the message in the source file.")
    variable: str | None = Field(
        None,
        description="For an assistant message: the name its text is known by (LVE "
        "multi-step prompts). With empty content, the model under test writes it: it is "
        "called on the messages before it, and its answer takes the message's place.",
    )

    @property
    def to_fill(self) -> bool:
        """The model under test writes this message (a step of a multi-step prompt)."""
        return self.role == "assistant" and self.variable is not None and not self.content


class PromptVariant(_Model):
    """One prompt of a multi-run prompt (LVE `multi_run_prompt`): run `repetitions` times,
    after the variants before it; the run's answers are collected in order."""

    name: str
    messages: list[Message] = Field(default_factory=list)
    repetitions: int = Field(1, ge=1, le=100)


class Scenario(_Model):
    name: str
    instructions: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class TestSample(_Model):
    """An example input (and optionally its expected output) supplied by the author."""

    inputs: dict[str, Any] = Field(default_factory=dict)
    expected: Any = None
    source: str | None = Field(None, description="File the sample was read from, if any.")


class StageInstructions(_Model):
    """Extra guidance for the generation stages, from the frontmatter or the CLI."""

    intent: str | None = None
    input_spec: str | None = None
    output_rules: str | None = None
    inverse_output_rules: str | None = None
    tests: str | None = None
    test_expansion: str | None = None


class PromptUnderTest(_Model):
    """A prompt file, parsed: everything later stages need, nothing format-specific."""

    name: str
    description: str | None = None
    source: str | None = Field(None, description="Path of the file it was loaded from.")
    format: PromptFormat = "prompty"
    model: ModelConfig = Field(default_factory=ModelConfig)
    inputs: dict[str, PromptInput] = Field(default_factory=dict)
    messages: list[Message] = Field(default_factory=list)
    variants: list[PromptVariant] = Field(
        default_factory=list,
        description="A multi-run prompt's prompts (LVE multi_run_prompt): each run of a test "
        "calls every variant, `repetitions` times each; `messages` holds the first.",
    )
    scenarios: list[Scenario] = Field(default_factory=list)
    test_samples: list[TestSample] = Field(default_factory=list)
    fixed_inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="Input values every test and run uses, over the test's own (the run "
        "option `vars`, `--var NAME=VALUE`); generation does not vary these inputs.",
    )
    instructions: StageInstructions = Field(default_factory=StageInstructions)
    tags: list[str] = Field(default_factory=list)
    template_engine: TemplateEngine = "jinja2"
    outputs: Any = None
    checks: list[Any] = Field(
        default_factory=list,
        description="Deterministic checks from the frontmatter, as written ({name: args}).",
    )
    check_lines: list[int | None] = Field(
        default_factory=list, description="Line of each check in the source file."
    )
    run_options: dict[str, Any] = Field(
        default_factory=dict, description="Run options set in the frontmatter (camelCase keys)."
    )
    frontmatter: dict[str, Any] = Field(
        default_factory=dict, description="The frontmatter as written (for lossless export)."
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Frontmatter keys promptgen does not know, kept as is."
    )
    warnings: list[str] = Field(default_factory=list)

    @field_serializer("frontmatter", "extra")
    def _hide_secrets(self, value: dict[str, Any]) -> dict[str, Any]:
        return redact(value)

    @property
    def declared_inputs(self) -> list[PromptInput]:
        return [i for i in self.inputs.values() if not i.detected]

    @property
    def detected_inputs(self) -> list[PromptInput]:
        return [i for i in self.inputs.values() if i.detected]

    def content_hash(self) -> str:
        """Hash of everything that changes what gets generated from this prompt."""
        payload = self.model_dump(
            mode="json",
            include={
                "messages",
                "variants",
                "inputs",
                "model",
                "scenarios",
                "test_samples",
                "instructions",
                "template_engine",
            },
        )
        messages = payload["messages"] + [m for v in payload["variants"] for m in v["messages"]]
        for message in messages:
            message.pop("line", None)
            if message.get("variable") is None:
                message.pop("variable", None)  # the same hash as before the field existed
        if not payload["variants"]:
            payload.pop("variants")
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()
