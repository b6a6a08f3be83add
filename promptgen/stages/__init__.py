"""The pipeline's stages, one module each (the module's name is the stage's name).

Each module declares its work (see `promptgen.stage`); the pipeline derives the order
from `requires` and `after`, and a stage is finished when its `todo` is empty. To add a
stage, write its module here: every module of this package is a stage.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def _modules() -> tuple[ModuleType, ...]:
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return tuple(importlib.import_module(f"{__name__}.{name}") for name in names)


MODULES: tuple[ModuleType, ...] = _modules()
