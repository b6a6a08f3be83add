"""Start-up: the command line loads only what the command needs (docs/performance.md).

`promptgen --version` loads none of promptgen's machinery; `promptgen inspect` reads
and renders a prompt without pandas, the model clients or llama.cpp; a run loads the
reports (pandas) only after its calls. The figure itself (first call after launch) is
measured by bench/pipeline.py, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "litellm", "openai", "llama_cpp", "aiohttp", "diskcache")
PROBE = """
import json, sys
from promptgen.cli import run_app
code = run_app(args={args!r})
heavy = {heavy!r}
seen = {{"code": code, "loaded": [m for m in heavy if m in sys.modules]}}
seen["jinja2"] = "jinja2" in sys.modules
seen["pipeline"] = "promptgen.pipeline" in sys.modules
print(json.dumps(seen), file=sys.stderr)
"""


def _probe(args: list[str]) -> dict[str, object]:
    code = PROBE.format(args=args, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_version_loads_nothing_heavy() -> None:
    seen = _probe(["--version"])
    assert seen == {"code": 0, "loaded": [], "jinja2": False, "pipeline": False}


def test_inspect_reads_a_prompt_without_the_model_clients_or_pandas() -> None:
    seen = _probe(["inspect", str(REPO / "samples" / "classify-sentiment.prompty"), "--json"])
    assert seen["code"] == 0
    assert seen["loaded"] == []
    assert seen["pipeline"] is False


def test_help_lists_every_command_without_loading_the_pipeline_first() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "promptgen", "--help"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0
    for command in ("run", "inspect", "export", "diff", "mutate", "configure", "lve", "pa"):
        assert f" {command} " in done.stdout
