"""Loading the metrics of a run, once: every module of this package that defines
`metrics(prompt, options) -> list[Metric]` is a metric kind, asked in its `LOAD_ORDER`.
A new kind is one module (plus its test); nothing else names it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from promptgen.errors import BadInputError
from promptgen.evaluation.protocol import Metric
from promptgen.model import PromptUnderTest
from promptgen.options import Options

Loader = Callable[[PromptUnderTest, Options], list[Metric]]
# This package, by its folder and name: its __init__ imports this module, so the package
# itself is not imported here.
_FOLDER = Path(__file__).parent
_PACKAGE = __name__.rpartition(".")[0]


def kinds() -> list[ModuleType]:
    """The metric-kind modules, in load order. A module whose source has no top-level
    `def metrics(` is not imported here (helpers of the kinds load when they are used)."""
    found = []
    for info in pkgutil.iter_modules([str(_FOLDER)]):
        if not _may_define_metrics(info.name):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        if callable(getattr(module, "metrics", None)):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "LOAD_ORDER", 100), m.__name__))


def _may_define_metrics(name: str) -> bool:
    source = _FOLDER / f"{name}.py"
    try:
        return "\ndef metrics(" in source.read_text(encoding="utf-8")
    except OSError:  # no source (bytecode only): import it and see
        return True


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
