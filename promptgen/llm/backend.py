"""What the gateway needs from a backend, and the policy each backend declares.

A backend says which model ids it owns and how it must be called; the gateway reads
that and never tests model ids itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from promptgen.llm.types import ChatRequest, RawReply

if TYPE_CHECKING:
    from promptgen.llm.batch import BatchAPI

# Calls in flight per model at first when neither the backend nor --concurrency sets a
# lower number; the limit then grows while the provider takes more (llm/adaptive.py), up
# to --concurrency, else DEFAULT_CEILING.
DEFAULT_CONCURRENCY = 8
DEFAULT_CEILING = 256


@dataclass(frozen=True, kw_only=True)
class BackendPolicy:
    """How the gateway calls a backend.

    concurrency: calls in flight per model, fixed; None means the adaptive limit (from
        DEFAULT_CONCURRENCY up to --concurrency, else DEFAULT_CEILING).
    cancellable: whether a call is abandoned at its timeout; one that is not runs to its
        end (bounded by max_tokens).
    structured_mode: "negotiate" asks for a JSON Schema answer and steps down when the
        server refuses; "grammar" means the backend constrains decoding to the schema.
    uses_api_base: whether answers depend on --api-base (then it is part of the cache key).
    per_loop: whether the backend's connections belong to the event loop that opened
        them (a new loop gets a new backend).
    batch: whether the backend may offer a provider Batch API (`--batch`); then its
        `batch_api(model)` says for which models (None: not for this one).
    small: whether its models are small: generation then cuts its work into one-item
        calls (`--stepwise auto`, docs/stages.md).
    deterministic: whether the same request always gets the same reply (the embedded
        model: a fixed seed, in process): a faulty reply is then not asked again, the
        retry could only repeat it (`RetryPolicy.fault_retries`).
    computes_here: whether its calls compute on this machine's cores (the embedded
        model): a call asked in case it is needed then costs its whole compute, so work is
        not asked ahead speculatively (the groundtruth candidates, stages/groundtruth.py).
    takes: the call parameters (beyond messages, temperature, max_tokens, seed) the
        backend sends; None: every one. What a prompt declares beyond them is said once
        per model before the runs (`LLM.unsent`).
    """

    concurrency: int | None
    cancellable: bool
    structured_mode: Literal["negotiate", "grammar"]
    uses_api_base: bool
    per_loop: bool
    batch: bool = False
    small: bool = False
    deterministic: bool = False
    computes_here: bool = False
    takes: frozenset[str] | None = None


class Backend(Protocol):
    policy: ClassVar[BackendPolicy]

    @classmethod
    def owns(cls, model_id: str, api_base: str | None) -> bool:
        """Whether this backend serves `model_id` (asked in the gateway's order)."""
        ...

    @classmethod
    def model_name(cls, model_id: str) -> str:
        """The model's name as this backend knows it."""
        ...

    @classmethod
    def create(cls, api_base: str | None) -> Backend: ...

    @classmethod
    def many_choices(cls, model: str) -> bool:
        """Whether one request may ask this model for several answers (`n`): decided
        without a call, so a plan can count the requests a run will make."""
        ...

    def check_credentials(self, model: str) -> None: ...

    def supports_json_schema(self, model: str) -> bool: ...

    def stores_completions(self, model: str) -> bool:
        """Whether the provider keeps a completion asked with `store` and `metadata`
        (OpenAI's stored completions), so `--store-completions` can ask for it."""
        ...

    async def chat(self, request: ChatRequest, mode: str) -> RawReply: ...

    def batch_api(self, model: str) -> BatchAPI | None:
        """The provider's Files + Batches endpoints for `model`, when it has them."""
        ...
