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
     "results", "collector", "version", "words", "csvcells"),
    ("model", "context", "order", "saving", "history"),
    ("formats", "rendering"),
    ("prompting",),
    ("llm",),
    ("config", "evaluation", "selection", "stage", "stages", "mutation"),
    ("progress", "pipeline"),
    ("api", "mutate", "lve_run", "configure", "importing", "discover", "roles"),
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
            elif node.module == "promptgen":  # a module, or a name of the package's __init__
                names.update(a.name if _is_module(a.name) else "__init__" for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("promptgen."):
                    names.add(alias.name.removeprefix("promptgen."))
    return names


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


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


# -- import circles ----------------------------------------------------------------------


def module_names() -> dict[str, Path]:
    """Every promptgen module by its full dotted name (a package by its `__init__`)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("promptgen", *parts))] = path
    return found


def import_edges(module: str, path: Path, known: set[str]) -> set[str]:
    """The promptgen modules `module` imports, wherever the import stands (module level,
    inside a function, under TYPE_CHECKING). `from package import name` imports the
    submodule `package.name` when there is one, else the package's `__init__` itself.
    Importing `a.b.c` also runs the `__init__` of the packages `a` and `a.b`: an edge to
    each, except to the packages `module` is itself inside (they run before it does)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    edges = set()
    for target in targets:
        if target not in known:
            continue
        edges.add(target)
        parts = target.split(".")
        for depth in range(1, len(parts)):
            ancestor = ".".join(parts[:depth])
            if not (module == ancestor or module.startswith(ancestor + ".")):
                edges.add(ancestor)
    edges.discard(module)
    return edges


def import_graph() -> dict[str, set[str]]:
    found = module_names()
    known = set(found)
    return {module: import_edges(module, path, known) for module, path in found.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Circles as chains from their smallest module, e.g. [a, b, a]: the shortest circle
    through each module on one, except a module already on a circle found before."""
    cycles: dict[tuple[str, ...], list[str]] = {}
    for start in sorted(graph):
        if any(start in cycle for cycle in cycles):
            continue
        previous: dict[str, str] = {}
        queue = [start]
        closing = None
        while queue and closing is None:
            following = []
            for module in queue:
                for target in sorted(graph[module]):
                    if target == start:
                        closing = module
                        break
                    if target not in previous:
                        previous[target] = module
                        following.append(target)
                if closing is not None:
                    break
            queue = following
        if closing is None:
            continue
        chain = [closing]
        while chain[-1] != start:
            chain.append(previous[chain[-1]])
        chain.reverse()
        turn = chain.index(min(chain))
        key = tuple(chain[turn:] + chain[:turn])
        cycles.setdefault(key, [*key, key[0]])
    return sorted(cycles.values())


def test_no_import_circles() -> None:
    circles = [" -> ".join(cycle) for cycle in import_cycles(import_graph())]
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "e2", "e"]]


def test_only_the_rendering_package_imports_jinja2() -> None:
    """Untrusted templates render in `promptgen.rendering` (its sandbox and limits) only."""
    outside = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "jinja2" for n in names) and not module.startswith(
                "rendering."
            ):
                outside.append(f"promptgen.{module}")
    assert not outside, outside
