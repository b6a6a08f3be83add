"""What each provider family accepts in structured output: one table (`PROFILES`),
each rule with the page it comes from (`Source`), and the one function that says which
profile a model is called under (`profile_for`).

`llm/shaping.py` shapes a schema to a profile before it is sent; `llm/schema_rules.py`
lists what a schema breaks under one (the tests and the enforcing fake server,
tests/fakellm.py, use it). docs/llm.md shows the same table with the same sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from promptgen.kinds import PROVIDER_PROFILES


@dataclass(frozen=True)
class Source:
    title: str
    url: str


OPENAI = Source(
    "Structured model outputs - OpenAI API",
    "https://platform.openai.com/docs/guides/structured-outputs",
)
OPENAI_REFERENCE = Source(
    "Create chat completion (response_format.json_schema.name) - OpenAI API Reference",
    "https://platform.openai.com/docs/api-reference/chat/create",
)
AZURE = Source(
    "How to use structured outputs with Azure OpenAI in Microsoft Foundry Models",
    "https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/structured-outputs",
)
ANTHROPIC = Source(
    "Structured outputs - Claude Docs (JSON Schema limitations, schema complexity limits)",
    "https://platform.claude.com/docs/en/build-with-claude/structured-outputs",
)
LITELLM_ANTHROPIC = Source(
    "litellm: AnthropicConfig.map_response_format_to_anthropic_output_format ($defs inlined)",
    "https://github.com/BerriAI/litellm/blob/main/litellm/llms/anthropic/chat/transformation.py",
)
GEMINI = Source(
    "Structured outputs | Gemini API (JSON Schema support, limitations)",
    "https://ai.google.dev/gemini-api/docs/structured-output",
)
OLLAMA = Source(
    "Structured Outputs - Ollama",
    "https://docs.ollama.com/capabilities/structured-outputs",
)
OLLAMA_REFS = Source(
    "Ollama not respecting structured outputs with some ordering of refs (ollama#8444)",
    "https://github.com/ollama/ollama/issues/8444",
)
LLAMA_CPP = Source(
    "llama.cpp grammars/README.md: JSON Schemas -> GBNF, known limitations",
    "https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md",
)
VLLM = Source(
    "Structured Outputs - vLLM (xgrammar and guidance backends)",
    "https://docs.vllm.ai/en/latest/features/structured_outputs/",
)
VLLM_XGRAMMAR = Source(
    "vLLM: has_xgrammar_unsupported_json_features",
    "https://github.com/vllm-project/vllm/blob/main/vllm/v1/structured_output/backend_xgrammar.py",
)
LM_STUDIO = Source(
    "Structured Output | LM Studio Docs",
    "https://lmstudio.ai/docs/advanced/structured-output",
)

# How a keyword reads once it is moved into the description ({} is its value).
TOLD: dict[str, str] = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "more than {}",
    "exclusiveMaximum": "less than {}",
    "multipleOf": "a multiple of {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matching the regular expression {}",
    "format": "in {} format",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "uniqueItems": "no two items alike",
    "minProperties": "at least {} properties",
    "maxProperties": "at most {} properties",
}
# Keywords that shape the JSON itself: every profile takes them.
STRUCTURE = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "anyOf", "$ref",
     "$defs", "description", "title", "enum", "const", "default"}
)  # fmt: skip
# Keywords no profile takes and shaping cannot tell in words: only flagged.
OTHER = frozenset(
    {"allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
     "patternProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
     "contains", "minContains", "maxContains", "prefixItems"}
)  # fmt: skip
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}
LLAMA_FORMATS = frozenset({"date", "time", "date-time", "uuid"})
# Regular-expression features Anthropic's grammar does not take (its "Pattern support").
_COMPLEX_REGEX = re.compile(r"\\[1-9]|\(\?[=!<]|\\[bB]|\{\d{3,},?\d*\}|\{\d*,\d{3,}\}")


@dataclass(frozen=True)
class Profile:
    """What one provider family accepts in a structured-output schema.

    takes: constraint keywords (of TOLD) it enforces; the others are told in words.
    refuses: the keywords it answers with HTTP 400 where it does not take them (a value
        it does not take: a format, a pattern, a minItems); the others it ignores
        without a word, which is worse: the bound would silently not hold.
    """

    name: str
    title: str
    sent: str  # what promptgen sends and through what
    takes: frozenset[str]
    refuses: frozenset[str]
    formats: frozenset[str] | None = None  # string formats it takes (None: every one)
    bounds_on_integers_only: bool = False  # minimum/maximum only on "integer"
    anchored_patterns: bool = False  # a pattern must read ^...$
    simple_patterns: bool = False  # no backreference, lookaround, \b, large {n,m}
    min_items_at_most: int | None = None  # the largest minItems it takes
    max_depth: int | None = None  # object levels, the root object is level 1
    max_properties: int | None = None  # object properties in the schema, $defs once
    max_unions: int | None = None  # fields with anyOf or a type list, $defs inlined
    max_optional: int | None = None  # properties not in `required`, $defs inlined
    max_enum_values: int | None = None
    max_names_chars: int | None = None  # property and $defs names, enum and const values
    root_object: bool = False  # the root is an object, never anyOf
    strict_objects: bool = False  # additionalProperties false on every object
    all_required: bool = False  # every property listed in `required`
    name_rule: bool = False  # the format's name matches NAME_RULE
    inline_refs: bool = False  # $defs inlined before sending (the server cannot follow them)
    inlined_by_litellm: bool = False  # limits count the inlined form
    rules: tuple[tuple[str, Source], ...] = field(default=())

    def keeps(self, node: dict[str, Any], keyword: str) -> bool:
        """Whether `keyword` of the schema `node` is sent as is (else it is told)."""
        if keyword not in self.takes:
            return False
        value = node[keyword]
        if keyword == "format":
            return self.formats is None or value in self.formats
        if keyword == "pattern":
            text = str(value)
            if self.anchored_patterns and not (text.startswith("^") and text.endswith("$")):
                return False
            return not (self.simple_patterns and _COMPLEX_REGEX.search(text))
        if keyword == "minItems" and self.min_items_at_most is not None:
            return isinstance(value, int) and value <= self.min_items_at_most
        if keyword in ("minimum", "maximum") and self.bounds_on_integers_only:
            kind = node.get("type")
            return kind == "integer" or kind == ["integer"]
        return True


_TELLABLE = frozenset(TOLD)
_OPENAI_TAKES = frozenset(
    {"pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
     "exclusiveMinimum", "minItems", "maxItems"}
)  # fmt: skip
_FINE_TUNED_REFUSES = frozenset(
    {"minLength", "maxLength", "pattern", "format", "minimum", "maximum", "multipleOf",
     "minItems", "maxItems"}
)  # fmt: skip
# llama.cpp refuses a pattern not written ^...$; vLLM's xgrammar these two.
_XGRAMMAR_REFUSES = frozenset({"pattern", "multipleOf", "uniqueItems"})

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="openai",
            title="OpenAI (current)",
            sent="response_format json_schema, strict; litellm or an OpenAI API base",
            takes=_OPENAI_TAKES,
            refuses=_TELLABLE,
            formats=OPENAI_FORMATS,
            max_depth=10,
            max_properties=5000,
            max_enum_values=1000,
            max_names_chars=120_000,
            root_object=True,
            strict_objects=True,
            all_required=True,
            name_rule=True,
            rules=(
                (
                    "supported keywords: pattern, format (9 names), multipleOf, minimum, "
                    "maximum, exclusive bounds, minItems, maxItems; no others",
                    OPENAI,
                ),
                ("5,000 object properties, 10 levels of nesting", OPENAI),
                ("120,000 characters of names and values, 1,000 enum values", OPENAI),
                ("root object, every field required, additionalProperties false", OPENAI),
                ("format name ^[a-zA-Z0-9_-]{1,64}$", OPENAI_REFERENCE),
            ),
        ),
        Profile(
            name="azure",
            title="Azure OpenAI",
            sent="response_format json_schema, strict; litellm azure/ or *.openai.azure.com",
            takes=frozenset(),
            refuses=_TELLABLE,
            formats=frozenset(),
            max_depth=5,
            max_properties=100,
            root_object=True,
            strict_objects=True,
            all_required=True,
            name_rule=True,
            rules=(
                (
                    "unsupported: minLength, maxLength, pattern, format, minimum, maximum, "
                    "multipleOf, minItems, maxItems, uniqueItems, min/maxProperties",
                    AZURE,
                ),
                ("100 object properties, 5 levels of nesting", AZURE),
                ("root object, every field required, additionalProperties false", AZURE),
                ("format name ^[a-zA-Z0-9_-]{1,64}$", OPENAI_REFERENCE),
            ),
        ),
        Profile(
            name="openai-ft",
            title="OpenAI fine-tuned (ft:...)",
            sent="response_format json_schema, strict; an ft: model id",
            takes=_OPENAI_TAKES - _FINE_TUNED_REFUSES,
            refuses=_TELLABLE,
            formats=frozenset(),
            max_depth=5,
            max_properties=100,
            max_enum_values=500,
            max_names_chars=15_000,
            root_object=True,
            strict_objects=True,
            all_required=True,
            name_rule=True,
            rules=(
                (
                    "not for fine-tuned models: minLength, maxLength, pattern, format, "
                    "minimum, maximum, multipleOf, minItems, maxItems",
                    OPENAI,
                ),
                (
                    "100 properties, 5 levels, 15,000 characters, 500 enum values: the "
                    "limits before the page raised them, which Azure still states; the "
                    "page does not say fine-tuned models have the raised ones",
                    AZURE,
                ),
                ("format name ^[a-zA-Z0-9_-]{1,64}$", OPENAI_REFERENCE),
            ),
        ),
        Profile(
            name="anthropic",
            title="Anthropic (through litellm)",
            sent="litellm output_format (or a forced tool), $defs inlined by litellm",
            takes=frozenset({"pattern", "format", "minItems"}),
            refuses=_TELLABLE,
            formats=ANTHROPIC_FORMATS,
            simple_patterns=True,
            min_items_at_most=1,
            max_unions=16,
            max_optional=24,
            strict_objects=True,
            inlined_by_litellm=True,
            rules=(
                (
                    "not supported: numerical constraints, minLength, maxLength, array "
                    "constraints beyond minItems 0 or 1; a 400 names the keyword",
                    ANTHROPIC,
                ),
                (
                    "at most 16 parameters with union types (anyOf or type arrays) and 24 "
                    "optional parameters",
                    ANTHROPIC,
                ),
                (
                    "patterns without backreferences, lookaround, word boundaries or large {n,m}",
                    ANTHROPIC,
                ),
                ("every $ref inlined before the schema is sent", LITELLM_ANTHROPIC),
            ),
        ),
        Profile(
            name="gemini",
            title="Gemini (through litellm)",
            sent="litellm response_json_schema (Gemini 2.0 and later)",
            takes=frozenset({"format", "minimum", "maximum", "minItems", "maxItems"}),
            refuses=frozenset(),
            formats=frozenset({"date-time", "date", "time"}),
            rules=(
                (
                    "supported: format (date-time, date, time), minimum, maximum, minItems, "
                    "maxItems, anyOf, $ref; other keywords are ignored, not refused",
                    GEMINI,
                ),
                ("very large or deeply nested schemas may be refused (no figure given)", GEMINI),
            ),
        ),
        Profile(
            name="ollama",
            title="Ollama",
            sent="response_format json_schema (or litellm ollama/: format), as a grammar",
            takes=frozenset({"pattern", "format", "minimum", "maximum"}),
            refuses=frozenset({"pattern"}),
            formats=LLAMA_FORMATS,
            bounds_on_integers_only=True,
            anchored_patterns=True,
            inline_refs=True,
            rules=(
                ("the schema becomes a llama.cpp grammar", OLLAMA),
                (
                    "unsupported keywords are skipped silently; minimum/maximum on integers "
                    "only; a pattern must start with ^ and end with $",
                    LLAMA_CPP,
                ),
                ("$defs referring to later $defs give a wrong grammar: inlined", OLLAMA_REFS),
                (
                    "length and item bounds left out: large ones unroll into grammars "
                    "llama.cpp refuses (as for the embedded model)",
                    LLAMA_CPP,
                ),
            ),
        ),
        Profile(
            name="compatible",
            title="OpenAI-compatible servers (vLLM, llama.cpp server, LM Studio)",
            sent="response_format json_schema to --api-base",
            takes=frozenset({"pattern", "format", "minimum", "maximum"}),
            refuses=_XGRAMMAR_REFUSES,
            formats=LLAMA_FORMATS,
            bounds_on_integers_only=True,
            anchored_patterns=True,
            rules=(
                (
                    "llama.cpp server: unsupported keywords skipped silently, minimum/maximum "
                    "on integers only, patterns ^...$, no uri or email format",
                    LLAMA_CPP,
                ),
                ("vLLM: xgrammar or guidance backends", VLLM),
                (
                    "vLLM's xgrammar refuses multipleOf, uniqueItems, contains, "
                    "patternProperties, unknown formats",
                    VLLM_XGRAMMAR,
                ),
                (
                    "LM Studio: OpenAI's structured-output format, llama.cpp grammars for "
                    "GGUF models",
                    LM_STUDIO,
                ),
                (
                    "length and item bounds left out: large ones unroll into grammars "
                    "llama.cpp refuses",
                    LLAMA_CPP,
                ),
            ),
        ),
    )
}
assert tuple(PROFILES) == PROVIDER_PROFILES

# litellm provider prefixes that name a profile of their own.
_PREFIXES = {
    "anthropic": "anthropic",
    "azure": "azure",
    "azure_ai": "azure",
    "github": "azure",  # GitHub Models serves OpenAI's models from Azure
    "gemini": "gemini",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "openai": "openai",
}
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
OLLAMA_PORT = 11434


def profile_for(model_id: str, api_base: str | None = None, chosen: str | None = None) -> str:
    """The profile `model_id` is called under: the one chosen (--provider-profile), else
    a provider prefix (anthropic/, azure/, gemini/, ollama/, ...; vertex_ai/ and
    bedrock/ by the model's name), else an `ft:` model id, else the API base's host
    (*.openai.azure.com: azure, api.openai.com: openai, port 11434: ollama, any other
    server: compatible), else openai for an OpenAI model and compatible for any other
    litellm provider."""
    if chosen:
        return chosen
    prefix, _, rest = model_id.partition("/") if "/" in model_id else ("", "", model_id)
    prefix = prefix.lower()
    mapped = _PREFIXES.get(prefix)
    if prefix in ("vertex_ai", "bedrock"):
        mapped = "anthropic" if "claude" in rest else "gemini" if "gemini" in rest else None
    if mapped and mapped != "openai":
        return mapped
    if rest.startswith("ft:"):
        return "openai-ft"
    if api_base:
        parts = urlsplit(api_base)
        host = (parts.hostname or "").lower()
        if host.endswith(_AZURE_HOSTS):
            return "azure"
        if host == "api.openai.com":
            return "openai"
        if parts.port == OLLAMA_PORT:
            return "ollama"
        return "compatible"
    return "openai" if prefix in ("", "openai") else "compatible"
