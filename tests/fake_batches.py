"""The fake chat server (tests/fakellm.py) with OpenAI's Files and Batches API, for
`--batch` tests and bench/batch.py.

POST /v1/files (multipart, purpose=batch), GET /v1/files/{id}/content, POST /v1/batches,
GET /v1/batches/{id}; every other call is the plain fake's. A batch is `validating` at
its first poll, `in_progress` for `polls` polls, then ends: its lines are answered by
the fake's responder (as if each had been called), written to an output file, and the
lines listed in `fail` (custom ids, each failing once) to an error file. `expire` makes
the next batches end `expired`, answering only their first `expire_answers` lines.
`refuse` makes POST /batches answer 404 (a server without a Batch API).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakellm import FakeLLM, Responder, _completion

_ROUTE = re.compile(r"^/v1/(files|batches)(?:/([^/?]+))?(/content)?(?:\?.*)?$")


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    custom_ids: list[str]
    polls: int = 0
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    created_at: int = field(default_factory=lambda: int(time.time()))


class FakeBatches(FakeLLM):
    def __init__(
        self, latency: float = 0.0, responder: Responder | None = None, polls: int = 2
    ) -> None:
        super().__init__(latency=latency, responder=responder)
        self.polls = polls
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.batches: dict[str, FakeBatch] = {}
        self.created: list[str] = []  # batch ids, in order of creation
        self.retrieved: list[str] = []  # batch ids, one per poll
        self.fail: set[str] = set()  # custom ids whose line fails once
        self.expire = 0  # how many of the next batches expire
        self.expire_answers = 1  # lines an expiring batch still answers
        self.refuse = False
        self._batch_lock = threading.Lock()

    def batch_lines(self, batch_id: str) -> list[dict[str, Any]]:
        """The request lines a batch was created with."""
        content = self.files[self.batches[batch_id].input_file_id][1]
        return [json.loads(line) for line in content.splitlines() if line.strip()]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        plain = super()._handler()
        fake = self

        class Handler(plain):  # type: ignore[misc, valid-type]
            def _route(self, method: str) -> bool:
                match = _ROUTE.match(self.path)
                if not match:
                    return False
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length) if length else b""
                status, data = fake._answer(method, match.groups(), self.headers, body)
                self.send_response(status)
                is_json = isinstance(data, dict)
                payload = json.dumps(data).encode() if is_json else data
                kind = "application/json" if is_json else "application/octet-stream"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return True

            def do_GET(self) -> None:
                if not self._route("GET"):
                    super().do_GET()

            def do_POST(self) -> None:
                if not self._route("POST"):
                    super().do_POST()

        return Handler

    def _answer(
        self, method: str, groups: tuple[str | None, ...], headers: Any, body: bytes
    ) -> tuple[int, dict[str, Any] | bytes]:
        kind, ident, content = groups
        with self._batch_lock:
            if kind == "files" and method == "POST":
                return 200, self._upload(headers.get("Content-Type", ""), body)
            if kind == "files" and ident in self.files and content:
                return 200, self.files[ident][1]
            if kind == "batches" and method == "POST" and ident is None:
                if self.refuse:
                    return 404, {"error": {"message": "no batches here", "type": "x"}}
                return 200, self._create(json.loads(body))
            if kind == "batches" and ident in self.batches:
                self.retrieved.append(ident)
                return 200, self._poll(self.batches[ident])
        return 404, {"error": {"message": f"no such object: {ident}", "type": "x"}}

    def _upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        fields = {}
        for part in BytesParser(policy=HTTP).parsebytes(head + body).iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
        file_id = self._store(fields.get("purpose", b"").decode(), fields.get("file", b""))
        return _file(file_id, self.files[file_id])

    def _store(self, purpose: str, content: bytes) -> str:
        file_id = f"file-{len(self.files) + 1:05d}"
        self.files[file_id] = (purpose, content)
        return file_id

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["endpoint"] == "/v1/chat/completions", body
        assert body["completion_window"] == "24h", body
        file_id = body["input_file_id"]
        assert self.files[file_id][0] == "batch", "upload the input with purpose=batch"
        lines = [json.loads(x) for x in self.files[file_id][1].splitlines() if x.strip()]
        batch_id = f"batch_{len(self.batches) + 1:04d}"
        batch = FakeBatch(batch_id, file_id, [x["custom_id"] for x in lines])
        self.batches[batch_id] = batch
        self.created.append(batch_id)
        return _batch(batch)

    def _poll(self, batch: FakeBatch) -> dict[str, Any]:
        batch.polls += 1
        if batch.status == "validating":
            batch.status = "in_progress"
        elif batch.status == "in_progress" and batch.polls > self.polls:
            self._finish(batch)
        return _batch(batch)

    def _finish(self, batch: FakeBatch) -> None:
        expiring = self.expire > 0
        self.expire -= expiring
        out, errors = [], []
        for n, line in enumerate(self.batch_lines(batch.id)):
            custom_id = line["custom_id"]
            if expiring and n >= self.expire_answers:
                errors.append(_error_line(custom_id, "batch_expired", "not done in time"))
            elif custom_id in self.fail:
                self.fail.discard(custom_id)
                errors.append(_error_line(custom_id, "server_error", "fake line failure"))
            else:
                reply = self._next(line["body"])
                self._done()
                answer = {
                    "status_code": 200,
                    "request_id": "r",
                    "body": _completion(line["body"], reply),
                }
                out.append(
                    {"id": f"resp-{n}", "custom_id": custom_id, "response": answer, "error": None}
                )
        batch.status = "expired" if expiring else "completed"
        if out:
            batch.output_file_id = self._store("batch_output", _jsonl(out))
        if errors:
            batch.error_file_id = self._store("batch_output", _jsonl(errors))


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def _error_line(custom_id: str, code: str, message: str) -> dict[str, Any]:
    return {
        "id": f"err-{custom_id}",
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def _file(file_id: str, stored: tuple[str, bytes]) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(stored[1]),
        "created_at": int(time.time()),
        "filename": "input.jsonl",
        "purpose": stored[0],
        "status": "processed",
    }


def _batch(batch: FakeBatch) -> dict[str, Any]:
    total = len(batch.custom_ids)
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "input_file_id": batch.input_file_id,
        "completion_window": "24h",
        "status": batch.status,
        "created_at": batch.created_at,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "request_counts": {"total": total, "completed": 0, "failed": 0},
    }
