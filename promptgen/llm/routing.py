"""Which backend serves a model: the backends asked in turn whether they own its id.

Above the backends (it imports each of them); the backends and `backend.py`, which
declares what they are, import nothing from here.
"""

from __future__ import annotations

from collections.abc import Iterator

from promptgen.llm.backend import Backend


def _backend_types() -> Iterator[type[Backend]]:
    """The backends in the order they are asked for a model. Each module is imported
    when its turn comes; none imports llama_cpp, litellm or openai before a call."""
    from promptgen.llm.local import LocalBackend

    yield LocalBackend
    from promptgen.llm.openai_compat import OpenAICompatBackend

    yield OpenAICompatBackend
    from promptgen.llm.remote import RemoteBackend

    yield RemoteBackend


def backend_type(model_id: str, api_base: str | None) -> type[Backend]:
    """The backend that owns `model_id` (its class: policies are read without a call)."""
    return next(k for k in _backend_types() if k.owns(model_id, api_base))
