"""``BatchServer``: the OpenAI files and batches endpoints on 127.0.0.1, for tests of the batch protocol.

The endpoints the ``openai`` package calls: ``POST /v1/files`` (multipart: ``file``, ``purpose``), ``GET
/v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches`` (newest first, in pages), ``GET
/v1/batches/{id}`` and ``POST /v1/batches/{id}/cancel``. A batch moves one step each time it is retrieved:
validating -> in_progress -> finalizing -> completed, its request counts filled in on the way; a request file whose
lines are not chat-completion requests fails validation. Each line is answered as the mock chat server answers
(:func:`benchmarks.mock_server.chat_completion`, ``answer(body)``; default: an echo).

Outcomes are scripted per batch, in the order the batches are created (``outcomes=["expired"]``; "completed"
after the script): ``"completed"``; ``"expired"`` (the first half of the lines answered, the others in the error
file as ``batch_expired``); ``"failed_lines"`` (every second line answered with an HTTP 400 in the error file);
``"cancelled"`` (as if someone cancelled it: cancelling, then cancelled, the first half answered, the others
``batch_cancelled``); ``"failed"`` (validation fails: status failed, ``errors`` naming line 1, no output). Faults of
``POST /v1/batches`` are scripted per request (``create_faults=["lost"]``; none after the script): ``"lost"`` (the
batch is created but the reply is an HTTP 500, as when it is lost on the way), ``"refused"`` (an HTTP 503, nothing
created). It counts uploads, created batches, retrievals and listings (pages of the batch list), keeps every
uploaded file and the Authorization headers it received; ``paused`` holds every batch where it is.

With ``api_key`` set it refuses any other key with a 401 that echoes the Authorization header it got, as
``MockServer`` does (to test that clients scrub it). It does not expire anything by the clock, or run any endpoint
but chat completions in a batch.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from urllib.parse import parse_qs, urlsplit

from benchmarks.mock_server import Answer, JSONHandler, Server, chat_completion, default_answer, load_answer, serve

OUTCOMES = ("completed", "expired", "failed_lines", "cancelled", "failed")
CREATE_FAULTS = ("lost", "refused")
ENDPOINT = "/v1/chat/completions"
_FILE_CONTENT = re.compile(r"/v1/files/([^/]+)/content$")
_BATCH = re.compile(r"/v1/batches/([^/]+)$")
_CANCEL = re.compile(r"/v1/batches/([^/]+)/cancel$")
_NEXT = {"validating": "in_progress", "in_progress": "finalizing", "finalizing": "completed",
         "cancelling": "cancelled"}


class BatchServer:
    """``with BatchServer(outcomes=["expired"]) as server: OpenAI(base_url=server.base_url, api_key="x")``."""

    def __init__(self, answer: Answer | None = None, *, outcomes: list[str] | tuple[str, ...] = (),
                 create_faults: list[str] | tuple[str, ...] = (), port: int = 0, api_key: str | None = None):
        for name, given, known in (("outcomes", outcomes, OUTCOMES), ("create faults", create_faults, CREATE_FAULTS)):
            if set(given) - set(known):
                raise ValueError(f"unknown {name} {sorted(set(given) - set(known))}; known: {known}")
        self.answer = answer or default_answer
        self.outcomes, self.create_faults, self.port = list(outcomes), list(create_faults), port
        self.api_key = api_key
        self.files: dict[str, dict] = {}  # id -> the file object, its content under "content" (bytes)
        self.batches: dict[str, dict] = {}  # id -> the batch object, its scripted outcome under "outcome"
        self.uploads = self.created = self.retrievals = self.listings = 0
        self.authorizations: set[str] = set()  # the Authorization headers received
        self.paused = False  # True: batches stay as they are (a test kills its client meanwhile)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd: Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("BatchServer is not started: use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> BatchServer:
        self._httpd = Server(("127.0.0.1", self.port), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="mock-batches",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> BatchServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def request_lines(self, file_id: str) -> list[dict]:
        """The request lines of an uploaded file."""
        return [json.loads(line) for line in self.files[file_id]["content"].decode().splitlines() if line.strip()]

    def _add_file(self, content: bytes, filename: str, purpose: str) -> dict:
        file = {"id": f"file-{next(self._ids)}", "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed", "content": content}
        self.files[file["id"]] = file
        return file

    def upload(self, content: bytes, filename: str, purpose: str) -> dict:
        with self._lock:
            self.uploads += 1
            return self._add_file(content, filename, purpose)

    def create(self, input_file_id: str, endpoint: str, window: str) -> dict:
        with self._lock:
            self.created += 1
            outcome = self.outcomes.pop(0) if self.outcomes else "completed"
            batch = {"id": f"batch_{next(self._ids)}", "object": "batch", "endpoint": endpoint,
                     "input_file_id": input_file_id, "completion_window": window, "status": "validating",
                     "created_at": int(time.time()), "output_file_id": None, "error_file_id": None, "errors": None,
                     "request_counts": {"total": 0, "completed": 0, "failed": 0}, "outcome": outcome}
            self.batches[batch["id"]] = batch
            return batch

    def retrieve(self, batch_id: str) -> dict:
        """The batch after one more step of its life."""
        with self._lock:
            self.retrievals += 1
            batch = self.batches[batch_id]
            status, lines = batch["status"], self.request_lines(batch["input_file_id"])
            if self.paused:
                pass
            elif status == "validating" and (batch["outcome"] == "failed" or not _valid(lines)):
                batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": [
                    {"code": "invalid_request", "line": 1, "message": "line 1 is not a valid request (mock)"}]})
            elif status == "in_progress" and batch["outcome"] in ("expired", "cancelled"):
                batch["status"] = "expired" if batch["outcome"] == "expired" else "cancelling"
                if batch["status"] == "expired":
                    self._finish(batch, lines)
            elif status in _NEXT:
                batch["status"] = _NEXT[status]
                batch["request_counts"] = {"total": len(lines), "completed": 0, "failed": 0}
                if batch["status"] in ("completed", "cancelled"):
                    self._finish(batch, lines)
            return batch

    def cancel(self, batch_id: str) -> dict:
        with self._lock:
            batch = self.batches[batch_id]
            if batch["status"] in ("validating", "in_progress", "finalizing"):
                batch.update(status="cancelling", outcome="cancelled")
            return batch

    def _finish(self, batch: dict, lines: list[dict]) -> None:
        """Write the batch's output and error files as its scripted outcome says."""
        outcome, half = batch["outcome"], (len(lines) + 1) // 2
        output, errors = [], []
        for i, line in enumerate(lines):
            request_id = f"req_{next(self._ids)}"
            if outcome in ("expired", "cancelled") and i >= half:
                code = f"batch_{outcome}"
                errors.append({"id": request_id, "custom_id": line["custom_id"], "response": None,
                               "error": {"code": code, "message": f"not run: the batch is {outcome} (mock)"}})
            elif outcome == "failed_lines" and i % 2 == 1:
                body = {"error": {"message": "invalid request (mock)", "type": "invalid_request_error",
                                  "code": "mock_invalid"}}
                errors.append({"id": request_id, "custom_id": line["custom_id"], "error": None,
                               "response": {"status_code": 400, "request_id": request_id, "body": body}})
            else:
                body = chat_completion(line["body"], self.answer, len(output) + 1)
                output.append({"id": request_id, "custom_id": line["custom_id"], "error": None,
                               "response": {"status_code": 200, "request_id": request_id, "body": body}})
        failed = sum(e["response"] is not None for e in errors)
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": failed}
        batch[f"{batch['status']}_at"] = int(time.time())
        for key, rows in (("output_file_id", output), ("error_file_id", errors)):
            if rows:
                content = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[key] = self._add_file(content, f"{batch['id']}_{key}.jsonl", "batch_output")["id"]


def _valid(lines: list[dict]) -> bool:
    return bool(lines) and all(line.get("method") == "POST" and line.get("url") == ENDPOINT and "custom_id" in line
                               and isinstance(line.get("body"), dict) for line in lines)


def _public(obj: dict) -> bytes:
    """A file or batch object as the API shows it (without the server's own fields)."""
    return json.dumps({k: v for k, v in obj.items() if k not in ("content", "outcome")}).encode()


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    return {part.get_param("name", header="content-disposition"): (part.get_filename(), part.get_payload(decode=True))
            for part in message.iter_parts()}


def _handler(server: BatchServer) -> type[JSONHandler]:
    class Handler(JSONHandler):
        def parse_request(self) -> bool:
            ok = super().parse_request()
            if ok:
                server.authorizations.add(self.headers.get("Authorization", ""))
            return ok

        def refused(self) -> bool:
            """A 401 echoing the Authorization header when ``api_key`` is set and another key came."""
            given = self.headers.get("Authorization", "")
            if server.api_key is None or given == f"Bearer {server.api_key}":
                return False
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._error(401, f"Incorrect API key provided: {given}")
            return True

        def do_GET(self) -> None:
            if self.refused():
                return
            path = self.path.split("?")[0].rstrip("/")
            if (m := _FILE_CONTENT.search(path)) and m.group(1) in server.files:
                content = server.files[m.group(1)]["content"]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            elif path.endswith("/v1/batches"):  # newest first, ``limit`` (default 20) a page ``after`` an id
                query = parse_qs(urlsplit(self.path).query)
                with server._lock:
                    server.listings += 1
                    newest = list(server.batches)[::-1]
                    after = query.get("after", [None])[0]
                    start = newest.index(after) + 1 if after in newest else 0
                    page = newest[start:start + int(query.get("limit", [20])[0])]
                    data = [json.loads(_public(server.batches[b])) for b in page]
                more = start + len(page) < len(newest)
                self._send(200, json.dumps({"object": "list", "data": data, "has_more": more}).encode())
            elif (m := _BATCH.search(path)) and m.group(1) in server.batches:
                self._send(200, _public(server.retrieve(m.group(1))))
            else:
                self._error(404, f"no route or object {self.path}")

        def do_POST(self) -> None:
            if self.refused():
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/v1/files"):
                fields = _multipart(self.headers.get("Content-Type", ""), raw)
                filename, content = fields.get("file", (None, None))
                purpose = (fields.get("purpose", (None, b""))[1] or b"").decode()
                if content is None or purpose != "batch":
                    return self._error(400, "a batch upload needs a file and purpose=batch")
                return self._send(200, _public(server.upload(content, filename or "upload.jsonl", purpose)))
            if (m := _CANCEL.search(path)) and m.group(1) in server.batches:
                return self._send(200, _public(server.cancel(m.group(1))))
            if path.endswith("/v1/batches"):
                body = json.loads(raw or b"{}")
                if body.get("input_file_id") not in server.files or body.get("endpoint") != ENDPOINT:
                    return self._error(400, f"unknown input file or endpoint other than {ENDPOINT}")
                fault = server.create_faults.pop(0) if server.create_faults else None
                if fault == "refused":
                    return self._error(503, "overloaded, nothing created (mock)")
                batch = server.create(body["input_file_id"], body["endpoint"], body.get("completion_window", "24h"))
                if fault == "lost":
                    return self._error(500, "the batch was created but this reply is lost (mock)")
                return self._send(200, _public(batch))
            return self._error(404, f"no route {self.path}")

    return Handler


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.batch_server --port 8766``: serve the files and batches endpoints until interrupted (a
    dry run of ``--batch openai``, docs/batch.md). The first line printed names the URL (``--port 0``: a free port)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.batch_server", description=main.__doc__)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--answer", default=None, help="MODULE:FUNCTION answering each request line's body")
    parser.add_argument("--outcomes", default="", help=f"comma-separated outcomes of the batches in the order they "
                        f"are created, then completed ({', '.join(OUTCOMES)})")
    args = parser.parse_args(argv)
    server = BatchServer(load_answer(args.answer) if args.answer else None, port=args.port,
                         outcomes=[o for o in args.outcomes.split(",") if o]).start()
    return serve(server, "test batch server", lambda: f"{server.uploads} uploads, {server.created} batches, "
                                                       f"{server.retrievals} retrievals")


if __name__ == "__main__":
    import sys

    sys.exit(main())
