"""Render Verdict templates with Verdict's own prompt code; run in tests/tools/verdict/.venv.

stdin: a JSON list of {"template", "source", "previous", "unit"}; stdout: a JSON list of
{"system", "user"} (or {"error"}). `verdict.prompt` is loaded without the package's
`__init__`, which would import the whole pipeline (instructor, litellm ...).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from typing import Any


class Namespace(dict):  # type: ignore[type-arg]
    """A dict whose keys read as attributes too, like the schemas Verdict passes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return Namespace({k: namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [namespace(v) for v in value]
    return value


def load_prompt_class() -> Any:
    spec = importlib.util.find_spec("verdict")
    if spec is None or spec.submodule_search_locations is None:
        raise SystemExit("verdict is not installed in this environment")
    package = types.ModuleType("verdict")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["verdict"] = package
    from verdict.prompt import Prompt

    return Prompt


def main() -> None:
    prompt_class = load_prompt_class()
    out = []
    for case in json.load(sys.stdin):
        source = namespace(case.get("source") or {})
        try:
            prompt = prompt_class.from_template(case["template"])
            message = prompt.format(
                input_schema=source,
                unit=namespace(case.get("unit")),
                previous=namespace(case.get("previous")),
                source=source,
            )
            out.append({"system": message.system, "user": message.user})
        except Exception as err:  # reported to the test, which shows it
            out.append({"error": f"{type(err).__name__}: {err}"})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
