"""llama.cpp's log, taken by a callback instead of silenced at the file descriptors.

llama-cpp-python silences a model or context being made (`verbose=False`) by pointing
the process's file descriptors 1 and 2 at the null device and back, and `sys.stdout`
and `sys.stderr` with them. That is not safe with threads: two contexts made at once
(the pool makes them from worker threads) can leave both descriptors on the null device
for good, and a line another thread prints meanwhile is lost. A run on CI lost its
progress lines and its summary that way, and still exited 0.

`take` switches that silencing off and gives llama.cpp's log a callback of its own:
its lines go to the `promptgen.llama` logger at debug level, never to the terminal (a
model that fails to load raises, and promptgen says so in one line).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from types import TracebackType
from typing import Any

log = logging.getLogger("promptgen.llama")

_lock = threading.Lock()
_sink: Any = None  # the ctypes callback: kept alive as long as llama.cpp may call it


class _Unsilenced:
    """llama-cpp-python's `suppress_stdout_stderr`, doing nothing."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> _Unsilenced:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def _line(level: int, text: bytes | None, user_data: Any) -> None:
    if text:
        log.debug("%s", text.decode("utf-8", errors="replace").rstrip("\n"))


def take(llama_cpp: Any) -> None:
    """Once per process: llama.cpp logs to `log`, nothing touches stdout or stderr."""
    global _sink
    if _sink is not None:
        return
    with _lock:
        if _sink is not None:
            return
        import llama_cpp._internals as internals
        import llama_cpp.llama as high

        for module in (high, internals):  # the two that make models and contexts
            setattr(module, "suppress_stdout_stderr", _Unsilenced)  # noqa: B010
        _sink = llama_cpp.llama_log_callback(_line)
        llama_cpp.llama_log_set(_sink, ctypes.c_void_p(0))
