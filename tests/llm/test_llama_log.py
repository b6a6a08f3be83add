"""Making embedded contexts from threads leaves the terminal alone (needs the 'local' extra).

llama-cpp-python's own silencing swapped file descriptors 1 and 2 around each load; two
loads at once left them on the null device, and a CI run lost its summary that way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from promptgen.llm.weights import SPECS, part_files
from tests.conftest import REPO

pytestmark = pytest.mark.local

pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[local]'"
)
SMALL = "qwen2.5-coder-0.5b"
if part_files(SPECS[SMALL]) is None:
    pytest.skip("the local model weights are not installed", allow_module_level=True)

# Two calls at once make two contexts of the model from two worker threads, while the
# main thread prints to both streams; then the process exits (contexts freed at exit).
SCRIPT = textwrap.dedent(
    f"""
    import sys, threading, time
    from promptgen.llm import local

    pool = local._contexts()
    start = threading.Barrier(3)

    def call():
        start.wait()
        with pool.use({SMALL!r}):
            time.sleep(0.3)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    start.wait()
    printed = 0
    while any(thread.is_alive() for thread in threads):
        print(f"err {{printed}}", file=sys.stderr, flush=True)
        print(f"out {{printed}}", flush=True)
        printed += 1
        time.sleep(0.005)
    print(f"made {{pool.made[{SMALL!r}]}} printed {{printed}}", file=sys.stderr, flush=True)
    print(f"made {{pool.made[{SMALL!r}]}} printed {{printed}}", flush=True)
    """
)


def test_contexts_made_at_once_lose_no_line_and_print_none() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PROMPTGEN_LOCAL_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    *err_lines, err_last = done.stderr.splitlines()
    *out_lines, out_last = done.stdout.splitlines()
    assert err_last == out_last and err_last.startswith("made 2 printed ")
    printed = int(err_last.rsplit(" ", 1)[1])
    assert printed > 0  # the loads took long enough for the main thread to print
    # Every line printed during the loads arrived, and nothing else: no llama.cpp log
    # line, no traceback from a context freed at interpreter teardown.
    assert err_lines == [f"err {i}" for i in range(printed)]
    assert out_lines == [f"out {i}" for i in range(printed)]
