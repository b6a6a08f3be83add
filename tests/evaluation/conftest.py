"""The metric tests' fixtures: a pipeline responder, the fake server, a gateway on it."""

from tests.stagekit import fake, llm, responder  # noqa: F401
