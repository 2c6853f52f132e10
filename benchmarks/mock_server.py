"""``MockServer``: an OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1, for tests and benchmarks.

It answers with ``answer(body) -> str | dict | None`` (None: a null content; default: :func:`default_answer`), after ``latency`` seconds, and
can inject faults, scripted per request (``script=["429", None, "500"]``) or drawn at ``fault_rate`` from
``faults`` with a seeded generator: ``"429"`` (with ``Retry-After``), ``"500"``, ``"hang"`` (no reply for
``hang_seconds``, longer than a client timeout), ``"malformed"`` (200 with a broken JSON body), ``"empty"`` (200
with no choices), ``"drop"`` (connection closed without a reply); and, in ``script`` or ``faults`` only when
named, the fatal ``"401"``, ``"403"`` and ``"404"`` (the model does not exist). It honours ``response_format``
json_schema in the default answer and returns ``logprobs`` when asked; with ``api_key`` set it rejects other keys
with a 401 that echoes the Authorization header it got, and with ``models`` set it answers a 404 for any other
model (to test that clients scrub the one and stop at the other). ``rejects`` (``"json_schema"``,
``"json_object_schema"``, ``"json_object"``, ``"logprobs"``) are answered as llama.cpp's server answers a
``response_format`` it cannot serve: a 500 whose body is a request-validation error. It counts requests and faults and keeps every
request's body and headers; ``GET /v1/mock/stats`` returns the counts, for a server run in another process
(``python -m benchmarks.mock_server --answer MODULE:FUNCTION``, as the benchmarks do, so that its CPU time does not
compete with the client's threads for one interpreter).

Its answers (:func:`chat_completion`) and JSON handler also serve the batch endpoints' test server
(``benchmarks.batch_server``). It does not stream, tokenize like a real model, or implement any endpoint but chat
completions and models.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rpa_lib.llm.answers import schema_example

FAULTS = ("429", "500", "hang", "malformed", "empty", "drop")  # transient: a client should retry them
FATAL = ("401", "403", "404")  # a client should stop at them
Answer = Callable[[dict], "str | dict | None"]


def _last_user(body: dict) -> str:
    return next((m.get("content") or "" for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")


def _pick_enums(schema: Any, text: str) -> Any:
    """``schema`` with every enum reduced to the value named earliest in ``text`` (first listed when none is)."""
    if isinstance(schema, dict):
        out = {k: _pick_enums(v, text) for k, v in schema.items()}
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            found = [(text.lower().find(str(v).lower()), i) for i, v in enumerate(schema["enum"])]
            hits = [f for f in found if f[0] >= 0]
            out["enum"] = [schema["enum"][min(hits)[1] if hits else 0]]
        return out
    return [_pick_enums(v, text) for v in schema] if isinstance(schema, list) else schema


def default_answer(body: dict) -> str | dict:
    """With a json_schema ``response_format``: an object satisfying it (enums: the value named earliest in the
    last user message). Otherwise ``"echo: <last user message>"``."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema", {})
        return schema_example(_pick_enums(schema, _last_user(body)))
    if fmt.get("type") == "json_object":
        return {"echo": _last_user(body)}
    return "echo: " + _last_user(body)


def _logprobs(text: str, top: int) -> dict:
    tokens = re.findall(r"\s*\S+", text) or [text]
    alt = {"token": " the", "logprob": -4.0, "bytes": list(b" the")}
    return {"content": [{"token": t, "logprob": -0.05, "bytes": list(t.encode()),
                         "top_logprobs": [{"token": t, "logprob": -0.05, "bytes": list(t.encode())}, alt][:top]}
                        for t in tokens]}


def chat_completion(body: dict, answer: Answer, number: int) -> dict:
    """The chat-completion JSON answering request ``body`` with ``answer(body)`` (None: a null content), its usage
    counted in words. ``chat_completion({"messages": [{"role": "user", "content": "hi"}]}, default_answer, 1)``"""
    out = answer(body)
    text = json.dumps(out) if isinstance(out, dict) else "" if out is None else str(out)
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    content = None if out is None else text  # None: a null content, as servers send for a refusal
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop", "logprobs": None}
    if body.get("logprobs"):
        choice["logprobs"] = _logprobs(text, int(body.get("top_logprobs") or 1))
    return {"id": f"chatcmpl-mock-{number}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "mock"), "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                      "total_tokens": prompt + len(text.split())}}


class MockServer:
    """``with MockServer(latency=0.1, fault_rate=0.2) as server: OpenAI(base_url=server.base_url, ...)``."""

    def __init__(self, answer: Answer | None = None, *, latency: float = 0.0, fault_rate: float = 0.0,
                 faults: tuple[str, ...] = FAULTS, script: list[str | None] | None = None, retry_after: float = 0.0,
                 hang_seconds: float = 5.0, api_key: str | None = None, models: tuple[str, ...] | None = None,
                 seed: int = 0, port: int = 0, rejects: tuple[str, ...] = (), list_models: bool = False):
        unknown = (set(faults) | {f for f in script or [] if f}) - set(FAULTS) - set(FATAL)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS + FATAL}")
        self.answer = answer or default_answer
        self.latency, self.fault_rate, self.faults = latency, fault_rate, tuple(faults)
        self.script = list(script or [])
        self.retry_after, self.hang_seconds = retry_after, hang_seconds
        self._api_key, self.models, self.port = api_key, models, port
        self.list_models = list_models  # GET /v1/models lists ``models``; off: a 404, as servers without it answer
        self.rejects = tuple(rejects)  # response_format types / "logprobs" answered as llama.cpp's server does
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests = 0  # chat-completion requests received
        self.served: Counter[str] = Counter()  # "ok" and each fault kind
        self.bodies: list[dict] = []  # request bodies, in arrival order
        self.headers: list[dict[str, str]] = []  # their headers (names in lower case), in the same order
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("MockServer is not started: use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> MockServer:
        self._stop.clear()
        self._httpd = Server(("127.0.0.1", self.port), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="mock-openai",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases hanging requests
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_fault(self, body: dict, headers: dict[str, str]) -> str | None:
        with self._lock:
            index = self.requests
            self.requests += 1
            self.bodies.append(body)
            self.headers.append(headers)
            if index < len(self.script):
                fault = self.script[index]
            elif self.fault_rate and self._random.random() < self.fault_rate:
                fault = self._random.choice(self.faults)
            else:
                fault = None
            self.served[fault or "ok"] += 1
            return fault

    def _completion(self, body: dict) -> dict:
        return chat_completion(body, self.answer, self.requests)


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a hanging request must not block shutdown
    request_queue_size = 128  # many clients connect at once in the benchmark


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that answers JSON bodies and OpenAI-style errors (``{"error": {"message"}}``)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps({"error": {"message": message, "type": "mock_error"}}).encode(), headers)


def _handler(server: MockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/mock/stats"):
                with server._lock:
                    stats = {"requests": server.requests, "served": dict(server.served)}
                self._send(200, json.dumps(stats).encode())
            elif self.path.rstrip("/").endswith("/models") and server.list_models:
                listed = [{"id": m, "object": "model"} for m in server.models or ("mock",)]
                self._send(200, json.dumps({"object": "list", "data": listed}).encode())
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._error(404, f"no route {self.path}")
            given = self.headers.get("Authorization", "")
            if server._api_key is not None and given.removeprefix("Bearer ") != server._api_key:
                return self._error(401, f"Incorrect API key provided: {given.removeprefix('Bearer ')}")
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                return self._error(400, "request body is not JSON")
            if server.models is not None and body.get("model") not in server.models:
                return self._error(404, f"The model `{body.get('model')}` does not exist.")
            fault = server._next_fault(body, {k.lower(): v for k, v in self.headers.items()})
            kind = (body.get("response_format") or {}).get("type")
            kind = "json_object_schema" if kind == "json_object" and "schema" in body["response_format"] else kind
            if kind in server.rejects or ("logprobs" in server.rejects and body.get("logprobs")):
                asked = kind if kind in server.rejects else "logprobs"  # llama.cpp's server: a 500, a validation text
                return self._error(500, f"1 validation error: response_format.type: Input should be 'text' or "
                                        f"'json_object' [input: {asked!r}]")
            if server.latency:
                time.sleep(server.latency)
            try:
                self._respond(fault, body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. after a hang)
                self.close_connection = True

        def _respond(self, fault: str | None, body: dict) -> None:
            if fault in FATAL:
                messages = {"401": "Incorrect API key provided: " + self.headers.get("Authorization", ""),
                            "403": "You are not allowed to use this model (mock)",
                            "404": f"The model `{body.get('model')}` does not exist."}
                return self._error(int(fault), messages[fault])
            if fault == "429":
                seconds = server.retry_after
                headers = {"Retry-After": str(max(0, round(seconds))), "retry-after-ms": str(int(seconds * 1000))}
                return self._error(429, "rate limited (mock)", headers)
            if fault == "500":
                return self._error(500, "internal error (mock)")
            if fault == "hang":
                server._stop.wait(server.hang_seconds)
                self.close_connection = True
                return None
            if fault == "drop":
                self.close_connection = True
                return None
            if fault == "malformed":
                return self._send(200, b'{"id": "chatcmpl-mock", "choices": [{"index": 0, "mess')
            if fault == "empty":
                completion = server._completion(body)
                return self._send(200, json.dumps({**completion, "choices": []}).encode())
            return self._send(200, json.dumps(server._completion(body)).encode())

    return Handler


def load_answer(spec: str) -> Answer:
    """The function named ``"package.module:function"``. ``load_answer("benchmarks.mock_server:default_answer")``"""
    import importlib

    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"--answer needs MODULE:FUNCTION, got {spec!r}")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.mock_server --port 8765``: serve until interrupted (dry runs of whole profiles). The first
    line printed names the URL (``--port 0``: a free port)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.mock_server", description=main.__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--answer", default=None, help="MODULE:FUNCTION answering each request body")
    args = parser.parse_args(argv)
    answer = load_answer(args.answer) if args.answer else None
    server = MockServer(answer, latency=args.latency, port=args.port).start()
    return serve(server, "mock OpenAI-compatible server", lambda: f"served {server.requests} requests: "
                                                                  f"{dict(server.served)}")


def serve(server: Any, name: str, served: Callable[[], str]) -> int:
    """Serve a started ``server`` until Ctrl-C: the first line names its URL, the last says what it ``served``."""
    print(f"{name} at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
        print(served())
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
