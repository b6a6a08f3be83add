"""Layers point one way: a module never imports from a layer above its own.

    base -> model -> formats -> prompting -> llm -> stages, evaluation -> pipeline -> api
    -> command line, reports

Deferred imports inside functions count too. And nothing outside the backend that
owns the `local/` prefix tests a model name for it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "promptgen"

# Layer of each module, by its dotted name under `promptgen` (a package covers its
# modules); listed bottom to top.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "bounds", "jsonio", "secrets", "resources", "yamlpos", "kinds", "options",
     "results", "collector"),
    ("model", "context", "order"),
    ("formats", "rendering"),
    ("prompting",),
    ("llm",),
    ("config", "evaluation", "selection", "stage", "stages", "mutation"),
    ("progress", "pipeline"),
    ("api", "mutate", "lve_run", "configure", "importing", "discover"),
    ("__init__", "__main__", "cli", "report", "gate", "schemas", "docsgen", "export", "batch"),
]  # fmt: skip


def layer_of(module: str) -> int:
    parts = module.split(".")
    for depth in (2, 1):
        name = ".".join(parts[:depth])
        for index, layer in enumerate(LAYERS):
            if name in layer:
                return index
    raise AssertionError(f"promptgen.{module} is in no layer: add it to LAYERS")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("promptgen."):
                names.add(node.module.removeprefix("promptgen."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("promptgen."):
                    names.add(alias.name.removeprefix("promptgen."))
    return names


def test_every_import_points_down_or_sideways() -> None:
    upward = []
    for module, path in modules().items():
        own = layer_of(module)
        for target in imports(path):
            if layer_of(target) > own:
                upward.append(f"promptgen.{module} imports promptgen.{target}")
    assert not upward, "\n".join(upward)


def test_only_the_local_backend_knows_its_prefix() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if 'startswith("local/")' in path.read_text(encoding="utf-8")
        and not path.name.startswith("local")
    ]
    assert not offenders
