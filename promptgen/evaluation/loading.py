"""Loading the metrics of a run, once: every module of this package that defines
`metrics(prompt, options) -> list[Metric]` is a metric kind, asked in its `LOAD_ORDER`.
A new kind is one module (plus its test); nothing else names it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

import promptgen.evaluation as package
from promptgen.errors import BadInputError
from promptgen.evaluation.protocol import Metric
from promptgen.model import PromptUnderTest
from promptgen.options import Options

Loader = Callable[[PromptUnderTest, Options], list[Metric]]


def kinds() -> list[ModuleType]:
    """The metric-kind modules, in load order."""
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if callable(getattr(module, "metrics", None)):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "LOAD_ORDER", 100), m.__name__))


def load_metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    """Every metric of this run; raises BadInputError before any call is made."""
    loaded = [metric for kind in kinds() for metric in kind.metrics(prompt, options)]
    names = [m.name for m in loaded]
    clash = next((n for n in names if names.count(n) > 1), None)
    if clash:
        raise BadInputError(
            f"two metrics are named {clash!r}", hint="give each metric a distinct name"
        )
    return loaded
