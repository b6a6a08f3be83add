"""A small OpenAI Evals API on 127.0.0.1, for tests of `--create-eval-runs`.

Answers the openai SDK's calls with JSON shaped like OpenAI's (FileObject,
EvalCreateResponse, RunCreateResponse): POST /files (multipart upload), POST /evals,
POST /evals/{eval_id}/runs and GET of each, under `/v1` (OpenAI) and `/openai`
(Azure OpenAI, `?api-version=...`). Keeps what it received; `fail` makes one kind of
call ("files", "evals", "runs") answer an error.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_PATH = re.compile(r"^/(?:v1|openai(?:/v1)?)(/.*)$")


@dataclass
class Upload:
    filename: str
    purpose: str
    content: bytes


@dataclass
class Request:
    method: str
    path: str  # as sent, without the query
    query: dict[str, list[str]]
    headers: dict[str, str]  # lowercased names


@dataclass
class State:
    files: dict[str, Upload] = field(default_factory=dict)
    evals: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> body received
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> body received
    requests: list[Request] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)  # call kind -> HTTP status


class FakeEvals:
    """`with FakeEvals() as api:` -> `api.url` (ends with /v1), `api.endpoint` (Azure)."""

    def __init__(self) -> None:
        self.state = State()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        return f"{self.endpoint}/v1"

    def __enter__(self) -> FakeEvals:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._answer(self, "GET")

            def do_POST(self) -> None:
                fake._answer(self, "POST")

        return Handler

    # -- routing ------------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.state.requests.append(Request(method, parts.path, parse_qs(parts.query), headers))
        match = _PATH.match(parts.path)
        route = match.group(1).rstrip("/") if match else ""
        try:
            status, answer = self._route(method, route, headers, body)
        except KeyError as err:
            status, answer = 404, _error(f"no such object: {err.args[0]}", "not_found")
        data = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(
        self, method: str, route: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        segments = route.strip("/").split("/") if route else []
        kind = segments[-1] if len(segments) in (1, 3) else segments[0] if segments else ""
        if method == "POST" and kind in self.state.fail:
            return self.state.fail[kind], _error(f"{kind} refused by the fake", "invalid_request")
        if segments == ["files"] and method == "POST":
            return 200, self._upload(headers.get("content-type", ""), body)
        if len(segments) == 2 and segments[0] == "files" and method == "GET":
            return 200, _file(segments[1], self.state.files[segments[1]])
        if segments == ["evals"] and method == "POST":
            return 200, self._new_eval(json.loads(body))
        if len(segments) == 2 and segments[0] == "evals" and method == "GET":
            return 200, _eval(segments[1], self.state.evals[segments[1]])
        if len(segments) == 3 and segments[0] == "evals" and method == "POST":
            return 200, self._new_run(segments[1], json.loads(body))
        if len(segments) == 4 and segments[0] == "evals" and segments[2] == "runs":
            run_id = segments[3]
            return 200, _run(run_id, segments[1], self.state.runs[run_id])
        return 404, _error(f"unknown route {method} {route}", "not_found")

    # -- objects ------------------------------------------------------------------------

    def _upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + body)
        fields: dict[str, Any] = {}
        filename = ""
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            if part.get_filename():
                filename = part.get_filename() or ""
            fields[str(name)] = payload
        with self._lock:
            file_id = f"file-{len(self.state.files) + 1:04d}"
            upload = Upload(filename, fields.get("purpose", b"").decode(), fields.get("file", b""))
            self.state.files[file_id] = upload
        return _file(file_id, upload)

    def _new_eval(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            eval_id = f"eval_{len(self.state.evals) + 1:04d}"
            self.state.evals[eval_id] = body
        return _eval(eval_id, body)

    def _new_run(self, eval_id: str, body: dict[str, Any]) -> dict[str, Any]:
        if eval_id not in self.state.evals:
            raise KeyError(eval_id)
        with self._lock:
            run_id = f"evalrun_{len(self.state.runs) + 1:04d}"
            self.state.runs[run_id] = body
        return _run(run_id, eval_id, body)


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _file(file_id: str, upload: Upload) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(upload.content),
        "created_at": int(time.time()),
        "filename": upload.filename,
        "purpose": upload.purpose,
        "status": "processed",
    }


def _eval(eval_id: str, body: dict[str, Any]) -> dict[str, Any]:
    config = dict(body["data_source_config"])
    schema = config.pop("item_schema", {})
    shown = {"type": "custom", "schema": {"type": "object", "properties": {"item": schema}}}
    return {
        "id": eval_id,
        "object": "eval",
        "created_at": int(time.time()),
        "name": body.get("name", ""),
        "data_source_config": shown,
        "testing_criteria": body["testing_criteria"],
        "metadata": body.get("metadata") or {},
    }


def _run(run_id: str, eval_id: str, body: dict[str, Any]) -> dict[str, Any]:
    source = body["data_source"]
    return {
        "id": run_id,
        "object": "eval.run",
        "eval_id": eval_id,
        "created_at": int(time.time()),
        "name": body.get("name", ""),
        "model": source.get("model", ""),
        "status": "queued",
        "data_source": source,
        "metadata": body.get("metadata") or {},
        "report_url": f"https://platform.example/evals/{eval_id}?run_id={run_id}",
        "result_counts": {"total": 0, "errored": 0, "failed": 0, "passed": 0},
        "per_model_usage": [],
        "per_testing_criteria_results": [],
        "error": {"code": "", "message": ""},
    }
