"""The LLM gateway. Stages use `LLM.complete`; nothing else imports litellm or openai."""

from promptgen.llm.batch import batched
from promptgen.llm.client import LLM, RetryPolicy
from promptgen.llm.config import ALIASES, GatewaySettings, load_settings
from promptgen.llm.limits import bounded_gather
from promptgen.llm.routing import backend_type
from promptgen.llm.types import Completion, ModelConfigError

__all__ = [
    "ALIASES",
    "LLM",
    "Completion",
    "GatewaySettings",
    "ModelConfigError",
    "RetryPolicy",
    "backend_type",
    "batched",
    "bounded_gather",
    "load_settings",
]
