"""The pipeline's stages, one module each (the module's name is the stage's name).

Each module declares its work (see `promptgen.stage`); the pipeline derives the order
from `requires` and `after`, and a stage is finished when its `todo` is empty. To add a
stage, write its module and list it here.
"""

from __future__ import annotations

from types import ModuleType

from promptgen.stages import (
    baseline,
    expand,
    groundedness,
    groundtruth,
    input_spec,
    intent,
    inverse_rules,
    metrics,
    review,
    rules,
    runs,
    tests,
    validity,
)

# Declaration order breaks ties in the derived order (and orders the progress bars).
MODULES: tuple[ModuleType, ...] = (
    intent,
    input_spec,
    rules,
    inverse_rules,
    groundedness,
    tests,
    baseline,
    expand,
    validity,
    groundtruth,
    runs,
    review,
    metrics,
)
