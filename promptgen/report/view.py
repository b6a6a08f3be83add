"""`promptgen view`: find a run's report.html and open it, or serve an index of every
run over HTTP on 127.0.0.1 only.

The server answers the index page and the report files of the runs it lists, nothing
else: no directory listings, no context.json, no path outside the root.
"""

from __future__ import annotations

import signal
import threading
import webbrowser
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from promptgen.errors import BadInputError
from promptgen.report.index import CONTEXT_FILE, REPORT_FILE, find_runs, index_entries, index_html

HOST = "127.0.0.1"
PREFERRED_PORT = 8000
# What the server hands out from a run folder, with its content type.
SERVED = {
    REPORT_FILE: "text/html; charset=utf-8",
    "report.md": "text/markdown; charset=utf-8",
    "overview.csv": "text/csv; charset=utf-8",
}


def report_path(target: Path | None, root: Path) -> Path:
    """The report.html a `view` target means: a report file, a context file, a run
    folder, a folder of runs (its newest), or nothing (the newest run under `root`)."""
    if target is None:
        return _newest_report(root)
    if not target.exists():
        raise BadInputError(f"{target}: no such file or folder", hint="give a run folder")
    if target.is_file():
        report = target if target.suffix == ".html" else target.parent / REPORT_FILE
    elif (target / REPORT_FILE).is_file() or (target / CONTEXT_FILE).is_file():
        report = target / REPORT_FILE
    else:
        return _newest_report(target)
    if not report.is_file():
        raise BadInputError(
            f"{report.parent}: no {REPORT_FILE} yet",
            hint=f"run `promptgen {report.parent / CONTEXT_FILE}` to write the reports",
        )
    return report


def _newest_report(root: Path) -> Path:
    for context in find_runs(root):
        report = context.parent / REPORT_FILE
        if report.is_file():
            return report
    raise BadInputError(
        f"no run with a {REPORT_FILE} under {root}/",
        hint="run `promptgen FILE` first, or give a run folder",
    )


def open_in_browser(url: str) -> bool:
    """Open `url` in the user's browser ($BROWSER first); False when none could be."""
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def _handler(root: Path) -> type[BaseHTTPRequestHandler]:
    base = root.resolve()

    class Handler(BaseHTTPRequestHandler):
        server_version = "promptgen"

        def do_GET(self) -> None:  # the name http.server calls
            path = unquote(urlsplit(self.path).path)
            if path in ("/", "/index.html"):
                page = index_html(root, index_entries(root))
                self._send(HTTPStatus.OK, page.encode("utf-8"), "text/html; charset=utf-8")
                return
            found = _served_file(base, path)
            if found is None:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
                return
            self._send(HTTPStatus.OK, found.read_bytes(), SERVED[found.name])

        def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the page requests are of no interest on the terminal."""

    return Handler


def _served_file(base: Path, path: str) -> Path | None:
    """A report file of a run under `base`, or None (outside it, or not a report)."""
    try:
        found = (base / path.lstrip("/")).resolve()
        found.relative_to(base)
    except (ValueError, OSError):
        return None
    if found.name not in SERVED or not found.is_file():
        return None
    if not (found.parent / CONTEXT_FILE).is_file():  # only run folders
        return None
    return found


def make_server(root: Path, port: int | None = None) -> ThreadingHTTPServer:
    """A server for the runs under `root` on 127.0.0.1; port None tries 8000, then any
    free port; 0 is any free port."""
    handler = _handler(root)
    if port is None:
        try:
            return ThreadingHTTPServer((HOST, PREFERRED_PORT), handler)
        except OSError:
            port = 0
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as err:
        raise BadInputError(
            f"cannot serve on {HOST}:{port}: {err.strerror or err}",
            hint="give another --port, or 0 for any free one",
        ) from err


def server_url(server: ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/"


def serve(server: ThreadingHTTPServer, ready: Callable[[], None] = lambda: None) -> None:
    """Serve until Ctrl-C. `ready` runs once the server answers (opening a browser that
    fetches the page at once must not wait on a server not yet listening)."""
    thread = threading.Thread(target=server.serve_forever, name="promptgen-view", daemon=True)
    # Started from a script's background (`cmd &`), a process inherits SIGINT ignored and
    # Python installs no handler: Ctrl-C, which is how this command stops, would be lost.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler) if main else None
    thread.start()
    try:
        ready()
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
