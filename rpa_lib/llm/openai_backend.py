"""``OpenAILLM``: OpenAI or any OpenAI-compatible chat-completions server (vLLM, Ollama, llama.cpp's server, LM
Studio), through the ``openai`` package, whose client retries transport faults. Modes of constrained choice and
structured output are negotiated (:mod:`rpa_lib.llm.modes`); credentials never reach a cache key, an error or a log;
a base URL may list replicas of one model (:mod:`rpa_lib.llm.replicas`). Faults, timeouts, credentials and cache
keys: docs/design/llm.md. It does not stream, call tools or send images.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import math
import re
import threading
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from rpa_lib.llm import answers, modes
from rpa_lib.llm.base import LLM, Request, sample_seed
from rpa_lib.llm.budget import body_tokens
from rpa_lib.llm.replicas import Replicas, routing_transport, split_urls
from rpa_lib.llm.reply import LLMFatalError, Raw
from rpa_lib.llm.retry import Exhausted, RetryPolicy, Transient
from rpa_lib.llm.roles import key_setting, model_setting, url_setting
from rpa_lib.llm.usage import price_for
from rpa_lib.settings import setting

log = logging.getLogger("rpa_lib.llm")

OPENAI_URL = "https://api.openai.com/v1"
MAX_CONNECTIONS = 256  # above any max_workers we use: a call never waits for a connection
DEFAULT_TIMEOUT = 60.0  # seconds per HTTP request (RPA_LLM_TIMEOUT)
RETRY_STATUS = {408, 409, 429}  # retried as the openai package retries them, as any 5xx


def request_timeout(explicit: float | None = None) -> float:
    """Seconds per HTTP request: ``explicit``, else ``RPA_LLM_TIMEOUT``, else 60; ValueError unless positive."""
    raw = explicit if explicit is not None else setting("RPA_LLM_TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"RPA_LLM_TIMEOUT (or timeout=) must be a positive number of seconds, got {raw!r}")
    return seconds


def retried(status: int) -> bool:
    """Whether the openai package retries a reply of this HTTP status."""
    return status in RETRY_STATUS or status >= 500


_FATAL_STATUS = {401: "the server refused the credentials: check {key} or the base URL's user:password",
                 403: "permission denied: this key may not use this model or endpoint",
                 404: "not found: check {model} and {url}"}
_NO_MODEL = re.compile(r"model\b.*\b(does not exist|not found)|\b(unknown|invalid) model\b", re.I | re.S)


def public_url(url: str) -> str:
    """``url`` without user, password, query, fragment or trailing slash. ``public_url("http://u:p@h:8000/v1/?k=1")``
    -> ``"http://h:8000/v1"``"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # IPv6
    port = _port(parts)
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _port(parts: Any, prefix: str = "") -> int | None:
    """``parts.port``; ValueError, its message after ``prefix``, that does not show it (a password written without
    its ``@`` is read as the port)."""
    try:
        return parts.port
    except ValueError:
        raise ValueError(f"{prefix}a URL's port is not a number from 0 to 65535 (a user:password before the host "
                         "needs an @ after it: http://user:password@host:8000/v1)") from None


def checked_urls(base_url: str, role: str = "RPA_LLM") -> list[str]:
    """The URLs of ``base_url`` (replicas, comma-separated), each an http(s) URL with a host; ValueError naming the
    setting of ``role`` otherwise, never showing a credential. ``checked_urls("http://a/v1, http://b/v1")``"""
    name = url_setting(role)
    urls = split_urls(base_url)
    if not urls:
        raise ValueError(f"{name} names no URL: e.g. http://127.0.0.1:8000/v1")
    for url in urls:
        parts, bare = urlsplit(url), re.sub(r"//[^/]*@", "//", url, count=1)  # bare: without user:password@
        if re.search(r"\s|;", bare) or bare.count("://") > 1:
            raise ValueError(f"{name} holds several URLs not separated by commas: separate replicas with commas, "
                             "e.g. http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1")
        if parts.scheme not in ("http", "https") or not url.lower().startswith(f"{parts.scheme}://"):
            starts = ("" if "@" in url else f"; it starts with {parts.scheme + ':'!r}" if parts.scheme  # no user shown
                      else "; it has none")
            raise ValueError(f"{name} must start with http:// or https://, e.g. http://127.0.0.1:8000/v1{starts}")
        _port(parts, f"{name}: ")
        if not parts.hostname:
            raise ValueError(f"{name} names no host: e.g. http://127.0.0.1:8000/v1")
        if parts.path.rstrip("/").endswith("/chat/completions"):
            base = public_url(url).removesuffix("/chat/completions")
            raise ValueError(f"{name} is the endpoint {public_url(url)}: give the server's base URL, {base}")
    return urls


def scrub(text: str, secrets) -> str:
    """``text`` with each (non-empty) secret replaced by ``***``, longest first ("user:pw" before "pw").
    ``scrub("key sk-abc1 in", ["sk-abc1"]) == "key *** in"``"""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def url_secrets(url: str) -> list[str]:
    """Every form ``url``'s credentials could show up in: as written, percent-decoded, and as HTTP Basic auth's base64
    of ``user:password``. ``url_secrets("http://h/v1") == []``"""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return []
    user, password = parts.username or "", parts.password or ""
    decoded = f"{unquote(user)}:{unquote(password)}"
    forms = [user, password, unquote(user), unquote(password), parts.netloc.rpartition("@")[0], decoded,
             base64.b64encode(decoded.encode()).decode()]
    return [f for f in forms if len(f) > 3]


@functools.cache
def _client_class() -> type:
    """``openai.OpenAI`` waiting ``retry_policy.delay(n, Retry-After)`` before its n-th retry and never retrying a
    capability answer (a 500 rejecting the mode); built on first use, so importing this module imports no ``openai``."""
    import openai

    class Client(openai.OpenAI):
        retry_policy = RetryPolicy()
        where = "the server"  # named in the one line said when it first retries, as a wait would look like a hang
        said_retrying = False

        def _calculate_retry_timeout(self, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
            retry = options.get_max_retries(self.max_retries) - remaining_retries + 1  # 1 before the first retry
            if not self.said_retrying:
                self.said_retrying = True
                log.warning("%s: %s; retrying, up to %d attempts a request", self.where,
                            "no connection or no reply" if response_headers is None else "a retryable HTTP status",
                            options.get_max_retries(self.max_retries) + 1)
            asked = self._parse_retry_after_header(response_headers)
            return self.retry_policy.delay(retry, asked if asked is not None and math.isfinite(asked) and asked > 0
                                           else None)

        def _should_retry(self, response: Any) -> bool:
            if response.status_code == 500:
                try:
                    params = json.loads(response.request.content or b"{}")
                except (ValueError, AttributeError):
                    params = {}
                if isinstance(params, dict) and modes.is_rejection(500, _error_detail(response), params):
                    return False
            return super()._should_retry(response)

    return Client


class OpenAILLM(LLM):
    """``OpenAILLM("gpt-4.1")``; ``OpenAILLM("qwen3-32b", base_url="http://127.0.0.1:8000/v1")``."""

    backend = "openai"
    _keep_causes = False  # the openai exceptions hold the request, headers included

    def __init__(self, model: str = "gpt-4.1", *, base_url: str | None = None, api_key: str | None = None,
                 cache: Any = True, max_workers: int = 8, retry=None, timeout: float | None = None,
                 choose_mode: str | None = None, structured_mode: str | None = None, role: str = "RPA_LLM"):
        self.role = role  # the prefix of the settings that gave its key: a batch round's client is built from them
        self.choose_mode = modes.checked("choose", choose_mode, role)
        self.structured_mode = modes.checked("structured", structured_mode, role)
        self.model, self.timeout = model, request_timeout(timeout)
        urls = checked_urls(base_url, role) if base_url else [OPENAI_URL]
        servers = sorted({public_url(u) for u in urls})  # several: replicas of one model
        self.base_url = ",".join(servers)  # never holds a credential
        self._replicas = Replicas(servers) if len(servers) > 1 else None
        parts = urlsplit(urls[0])
        if any(urlsplit(u).query or urlsplit(u).fragment for u in urls):
            raise ValueError(f"base URL {self.base_url} has a query string or fragment: pass the key as api_key= "
                             "(or OPENAI_API_KEY) or as user:password@ in the URL (sent as HTTP Basic auth)")
        if len({(urlsplit(u).username, urlsplit(u).password) for u in urls}) > 1:
            raise ValueError(f"the replicas {self.base_url} have different credentials: they must share one")
        has_auth = parts.username is not None or parts.password is not None
        self._basic_auth = (unquote(parts.username or ""), unquote(parts.password or "")) if has_auth else None
        self._explicit_key = api_key
        self._secrets: list[str] = [s for u in urls for s in url_secrets(u)]
        self._self_hosted = base_url is not None
        self._answered = False  # whether the server has answered a request of this backend (an error included)
        self._client: Any = None
        self._client_lock = threading.Lock()
        official = base_url is None or parts.hostname == "api.openai.com"
        self.label = f"{model} (openai)" if official else f"{model} (openai-compatible)"
        self.model_id = model
        self.price = price_for(model)
        super().__init__(cache=cache, max_workers=max_workers, retry=retry)

    def __repr__(self) -> str:
        return f"OpenAILLM({self.model!r}, base_url={self.base_url!r}, timeout={self.timeout:g}, cache={self._cache!r})"

    @property
    def scores_choices(self) -> bool:
        """Only the ``logprobs`` choose mode scores the options: set by the role's setting, or negotiated in this
        process under ``auto`` (a dry run negotiates nothing, so it plans ``auto`` as unscored)."""
        return self.mode_for("choose") == "logprobs"

    @property
    def worst_case_seconds(self) -> float:
        """How long a call can wait on a server that never answers: ``timeout x attempts + backoff``."""
        return self.retry.worst_case(self.timeout)

    def _key_extra(self) -> dict:
        return {"choose_mode": modes.key_mode(self.choose_mode),
                "structured_mode": modes.key_mode(self.structured_mode), "server": self.base_url}

    def _most_tokens(self, req: Request) -> tuple[int, int]:
        """The most ``req`` can cost in its mode now or, under ``auto``, any mode it may fall back to in this call."""
        mode = self.mode_for(req.kind)
        chain = modes.CHAINS.get(req.kind, ())
        auto = self._configured(req.kind) == "auto"
        bounds = [body_tokens(self.body(req, m), most=True) for m in (chain[chain.index(mode):] if auto else [mode])]
        return max(i for i, _ in bounds), max(o for _, o in bounds)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _where(self) -> str:
        return f"model {self.model!r} at {self.base_url}"

    def openai_client(self) -> Any:
        """The ``openai.OpenAI`` client this backend sends with, built on first use (the key looked up then); also
        for the endpoints it does not wrap: files and batches (:mod:`rpa_lib.llm.batches`)."""
        with self._client_lock:
            if self._client is None:
                import httpx2

                key = setting("OPENAI_API_KEY", self._explicit_key)
                if key is None and not self._self_hosted:
                    raise LLMFatalError(f"no OpenAI API key for {self._where()}: set OPENAI_API_KEY "
                                        "(environment or .env) or pass api_key=")
                if key is not None and len(key) > 3:
                    self._secrets.append(key)
                headers = {"User-Agent": "rpa_lib"}
                if self._basic_auth is not None:  # the URL's credentials, as HTTP Basic auth (never in the URL)
                    if key is not None:
                        log.warning("%s: the base URL has credentials, sent as HTTP Basic auth in place of the "
                                    "API key, which is not sent", self.base_url)
                    headers["Authorization"] = "Basic " + base64.b64encode(":".join(self._basic_auth).encode()).decode()
                limits = httpx2.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=64)
                if self._replicas is None:
                    http = httpx2.Client(timeout=self.timeout, limits=limits)
                else:  # each request to a replica that accepts it, addressed to the first
                    http = httpx2.Client(timeout=self.timeout, transport=routing_transport(
                        self._replicas, httpx2.HTTPTransport(limits=limits)))
                url = self.base_url if self._replicas is None else self._replicas.urls[0]
                # self-hosted servers usually ignore the key but the package wants one
                client = _client_class()(api_key=key or "not-needed", base_url=url, timeout=self.timeout,
                                         max_retries=self.retry.attempts - 1, default_headers=headers,
                                         http_client=http)
                client.retry_policy, client.where = self.retry, self._where()
                if self._self_hosted:
                    self._check_served(client.with_options(max_retries=0))
                self._client = client
            return self._client

    def _check_served(self, client: Any) -> None:
        """LLMFatalError when a self-hosted server lists its models and ours is not among them (llama.cpp's server
        answers any name with its one model); a server that lists none (or not as OpenAI's API does) is not checked."""
        import openai

        try:
            served = [m.id for m in client.models.list(timeout=min(self.timeout, 10.0)).data]
        except (openai.OpenAIError, ValueError, AttributeError, TypeError):  # TypeError: a body without "data"
            return
        if served and not any(s == self.model or s.startswith(f"{self.model}:") for s in served):  # Ollama: "m:tag"
            raise LLMFatalError(f"model {self.model!r} is not served at {self.base_url}; it serves "
                                f"{', '.join(map(repr, served[:10]))}: check {model_setting(self.role)}")

    def _status_failure(self, status: int, detail: str, attempts: int = 1) -> Exception:
        """Exhausted (a status the client retries), LLMFatalError or RuntimeError for an HTTP error, scrubbed."""
        message = self._scrub(f"HTTP {status}: {detail}")
        if retried(status):
            return Exhausted(message, attempts)
        if status in _FATAL_STATUS or (status == 400 and _NO_MODEL.search(detail)):
            hint = _FATAL_STATUS.get(status, _FATAL_STATUS[404]).format(
                key=key_setting(self.role), model=model_setting(self.role), url=url_setting(self.role))
            if status == 404 and not all(u.endswith("/v1") for u in self.base_url.split(",")):
                hint += "; an OpenAI-compatible server's base URL usually ends in /v1"
            return LLMFatalError(f"{message} -- {hint} ({self._where()})")
        return RuntimeError(message)

    def _create(self, body: dict) -> Any:
        """The parsed completion of one request of ``body``, else Transient (a malformed body), Exhausted,
        LLMFatalError, RuntimeError or :class:`modes.Rejected`."""
        client = self.openai_client()
        import httpx2
        import openai

        failure: Exception | None = None
        try:
            response = client.chat.completions.with_raw_response.create(**body)
            self._answered = True
            self.usage.record_retry(response.retries_taken)
            completion = response.parse()
            if isinstance(completion, str):  # not JSON: a web page, another kind of server
                kind = response.headers.get("content-type", "no content type").split(";")[0]
                failure = LLMFatalError(f"{self._where()} answered a chat completion request with {kind}, not "
                                        f"JSON: is {url_setting(self.role)} the URL of an OpenAI-compatible API?")
        except openai.APITimeoutError as exc:
            failure = Exhausted(f"timed out after {self.timeout:g} s (RPA_LLM_TIMEOUT); a call gives up after at "
                                f"most {self.worst_case_seconds:g} s ({self.retry.attempts} attempts and backoff)",
                                self._attempts(exc.request))
        except openai.APIConnectionError as exc:  # refused, reset, dropped mid-body
            cause = exc.__cause__ or exc
            message = self._scrub(f"connection failed: {type(cause).__name__}: {cause}")
            failure = Exhausted(message, self._attempts(exc.request))
            if not self._answered and isinstance(cause, httpx2.ConnectError):  # no server there: each call would wait
                check = (f"is the server running, and is {url_setting(self.role)} right?" if self._self_hosted
                         else "is this machine online?")
                failure = LLMFatalError(f"failed after {failure.attempts} attempts: {message}; nothing has answered at "
                                        f"{self.base_url} in this run: {check}")
        except openai.APIStatusError as exc:
            self._answered = True
            attempts = self._attempts(exc.response.request)
            detail = _error_detail(exc.response)
            if modes.is_rejection(exc.status_code, detail, body):
                failure = modes.Rejected(self._scrub(f"HTTP {exc.status_code}: {detail}"))
            else:
                failure = self._status_failure(exc.status_code, detail, attempts)
        except (openai.APIResponseValidationError, ValueError):  # ValueError: a body that is not JSON
            failure = Transient("malformed response body", paid=Raw(""))  # its tokens unknown
        except openai.OpenAIError as exc:
            failure = RuntimeError(self._scrub(f"{type(exc).__name__}: {exc}"))
        if failure is not None:  # raised outside the handler: nothing chains to the request
            raise failure
        return completion

    def _attempts(self, request: Any) -> int:
        """Tries the client made of the request it gave up on (the retry count it sent), recorded in the usage."""
        try:
            retries = int(request.headers.get("x-stainless-retry-count", 0))
        except (AttributeError, TypeError, ValueError):
            retries = 0
        self.usage.record_retry(retries)
        return retries + 1

    def _configured(self, kind: str) -> str | None:
        return {"choose": self.choose_mode, "structured": self.structured_mode}.get(kind)

    def mode_for(self, kind: str) -> str | None:
        """How a round trip of ``kind`` is asked now: the configured or negotiated mode (None for a chat)."""
        configured = self._configured(kind)
        return None if configured is None else modes.current(self.base_url, self.model, kind, configured)

    def body(self, req: Request, mode: str | None) -> dict:
        """The ``chat.completions`` body of ``req`` asked in ``mode``: what a call sends and a batch line carries."""
        common = {"model": self.model, "seed": sample_seed(req.seed, req.sample), "temperature": req.temperature}
        if req.kind == "chat":
            return {**common, "messages": req.messages, "max_tokens": req.max_tokens}
        if req.kind == "choose":
            options = req.options or []
            body = {**common, "messages": answers.with_instruction(req.messages, answers.choice_instruction(options)),
                    "max_tokens": 16 + max(len(o) for o in options)}
            if mode == "json_schema":
                body["max_tokens"] += 16
                answer = {"type": "object", "properties": {"answer": {"type": "string", "enum": options}},
                          "required": ["answer"], "additionalProperties": False}
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": "choice", "strict": True, "schema": answer}}
            elif mode != "text":
                body.update(logprobs=True, top_logprobs=20)
            return body
        schema = req.schema or {}
        # an example object, not the schema, where a small model must follow the instruction alone after a fallback
        fallback = mode not in (modes.key_mode(self.structured_mode), "json_object_schema")  # auto starts at json_schema
        instruction = answers.example_instruction(schema) if fallback else answers.schema_instruction(schema)
        body = {**common, "messages": answers.with_instruction(req.messages, instruction), "max_tokens": req.max_tokens}
        formats = {"json_schema": {"type": "json_schema",
                                   "json_schema": {"name": "reply", "schema": req.schema, "strict": False}},
                   "json_object_schema": {"type": "json_object", "schema": req.schema},
                   "json_object": {"type": "json_object"}}
        if mode in formats:
            body["response_format"] = formats[mode]
        return body

    @staticmethod
    def raw(req: Request, mode: str | None, completion: Any) -> Raw:
        """The :class:`Raw` of a completion (the package's, or a batch result's): its first choice's text, the tokens
        and, for a choice asked with logprobs, the options' scores; Transient (its tokens paid) when it holds no
        choice."""
        choices, usage = getattr(completion, "choices", None), getattr(completion, "usage", None)
        raw = Raw("", int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
        if not choices or getattr(choices[0], "message", None) is None:
            raise Transient("response has no choices", paid=raw)
        raw.text = content if isinstance(content := choices[0].message.content, str) else ""
        if req.kind == "choose" and mode == "logprobs":
            options = req.options or []
            raw.scores = answers.first_token_scores(getattr(getattr(choices[0], "logprobs", None), "content", None),
                                                    options)
            if answers.match_option(raw.text, options) is None and raw.scores:  # counted as coerced, never the model's
                raw.text, raw.coerced = max(raw.scores, key=raw.scores.__getitem__), True
        return raw

    def _send(self, req: Request, mode: str | None) -> Raw:
        return self.raw(req, mode, self._create(self.body(req, mode)))

    def _chat(self, req: Request) -> Raw:
        return self._send(req, None)

    def _negotiated(self, req: Request) -> Raw:
        """``req`` sent in this server's current mode for its kind; on a capability answer, in the next mode."""
        configured = self._configured(req.kind)
        while True:
            mode = self.mode_for(req.kind)
            try:
                raw = self._send(req, mode)
            except modes.Rejected as exc:
                modes.fall_back(self.base_url, self.model, req.kind, configured, mode, str(exc), self.role)
                continue
            self.usage.record_mode(req.kind, mode)  # for the run record
            return raw

    _choose = _structured = _negotiated


def _error_detail(response: Any) -> str:
    """An error response's message (OpenAI's ``error.message`` or FastAPI's ``detail``), else the body's start."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail")
    if isinstance(error, list):  # FastAPI request-validation errors: [{"loc": ..., "msg": ...}]
        error = "; ".join(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in error)
    if isinstance(error, str) and error:
        return error[:1000]
    return (response.text or response.reason_phrase or "no detail").strip()[:300]

