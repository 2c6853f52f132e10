"""``OpenAILLM``: any OpenAI-compatible chat-completions endpoint (``POST {base_url}/chat/completions``).

OpenAI itself (``gpt-4.1`` ...) or a self-hosted server (vLLM, Ollama, llama.cpp server, LM Studio) at
``base_url``. Requests are plain JSON over one ``httpx`` client (keep-alive, up to 256 connections), built lazily
on the first call, with the API key looked up then: explicit argument, environment, ``.env``. The ``openai``
package's typed objects cost 2.5-3 ms of CPU a call, which serialized the concurrent judge calls of Guided
Selection; a plain POST costs about 1 ms. There is no retry in the client: our ``retry`` module is the only
retry layer.

Faults. 429, 408, 409 and 5xx (with ``Retry-After``), timeouts, dropped connections and malformed or empty bodies
are ``Transient``: retried. 401 (credentials refused), 403 (permission), 404 (unknown model or endpoint), a 400
saying the model does not exist, and a missing API key are :class:`LLMFatalError`: never retried, ``LLM.map``
stops at the first, and the message names the model and the server. Other HTTP errors fail the call at once.

Timeout. One HTTP request may take ``timeout`` seconds: the argument, else the setting ``RPA_LLM_TIMEOUT``, else
60 (:data:`rpa_lib.llm.config.DEFAULT_TIMEOUT`). A server that accepts connections and never answers fails a call
after at most ``timeout x attempts + backoff`` seconds (``worst_case_seconds``; with the default retry policy
60 x 6 + 31 = 391 s, with ``RPA_LLM_TIMEOUT=10`` 91 s); every timeout error states both numbers.

Credentials. The API key is sent as ``Authorization: Bearer``. Credentials in the base URL
(``https://user:p%40ss@host/v1``; percent-encoding is decoded) are honoured as HTTP Basic auth, which then is
the ``Authorization`` header in the key's place (a warning says so when a key is configured too); they never stay
in the URL the client uses. A base URL with a query string or fragment is rejected (ValueError). The key and the
URL's credentials (as written, decoded, and base64-encoded as in the Basic header) are scrubbed from every error
and log line, and no error chains to the ``httpx`` exception (which holds the request). The server is known
by ``base_url``, its URL without credentials, which is part of the cache key (another server serving the same
model name gets its own cache entries); the credentials are not.

Constrained choice: ``choose_mode="json_schema"`` (a strict JSON schema whose one field is an enum of the
options), ``"logprobs"`` (the options' probability mass at the first token; also gives ``Reply.scores``) or
``"text"`` (instruction only). Structured output sends the schema as ``response_format`` (``"json_schema"``),
asks for any JSON object (``"json_object"``) or relies on the instruction alone (``"text"``). Every mode is
validated by ``base``. This module does not stream, call tools, or send images.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from rpa_lib.llm.answers import choice_instruction, match_option, schema_instruction, with_instruction
from rpa_lib.llm.base import LLM, Request, sample_seed
from rpa_lib.llm.config import request_timeout, setting
from rpa_lib.llm.reply import LLMFatalError, Raw
from rpa_lib.llm.retry import Transient
from rpa_lib.llm.usage import price_for

log = logging.getLogger("rpa_lib.llm")

OPENAI_URL = "https://api.openai.com/v1"
_RETRY_STATUS = {408, 409, 429}
_FATAL_STATUS = {401: "the server refused the credentials: check OPENAI_API_KEY (or api_key=) or the base URL's user:password",
                 403: "permission denied: this key may not use this model or endpoint",
                 404: "not found: check the model name and the base URL (RPA_LLM_MODEL, RPA_LLM_BASE_URL)"}
_NO_MODEL = re.compile(r"model\b.*\b(does not exist|not found)|\b(unknown|invalid) model\b", re.I | re.S)
CHOOSE_MODES = ("json_schema", "logprobs", "text")
STRUCTURED_MODES = ("json_schema", "json_object", "text")


def public_url(url: str) -> str:
    """``url`` without user, password, query, fragment or trailing slash. ``public_url("http://u:p@h:8000/v1/?k=1")``
    -> ``"http://h:8000/v1"``"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # IPv6
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def url_secrets(url: str) -> list[str]:
    """Every form in which ``url``'s credentials could show up: as written, percent-decoded, and the base64 of
    ``user:password`` that HTTP Basic auth sends. Empty when the URL has none."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return []
    user, password = parts.username or "", parts.password or ""
    decoded = f"{unquote(user)}:{unquote(password)}"
    forms = [user, password, unquote(user), unquote(password), parts.netloc.rpartition("@")[0], decoded,
             base64.b64encode(decoded.encode()).decode()]
    return [f for f in forms if len(f) > 3]


def retry_after(headers: Any) -> float | None:
    """Seconds asked for by ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else None."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _choice_schema(options: list[str]) -> dict:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": options}},
              "required": ["answer"], "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "choice", "strict": True, "schema": schema}}


class OpenAILLM(LLM):
    """``OpenAILLM("gpt-4.1")``; ``OpenAILLM("qwen3-32b", base_url="http://127.0.0.1:8000/v1")``."""

    backend = "openai"
    _keep_causes = False  # the httpx exceptions hold the request, headers included

    def __init__(self, model: str = "gpt-4.1", *, base_url: str | None = None, api_key: str | None = None,
                 cache: Any = True, max_workers: int = 8, retry=None, timeout: float | None = None,
                 choose_mode: str = "json_schema", structured_mode: str = "json_schema"):
        if choose_mode not in CHOOSE_MODES or structured_mode not in STRUCTURED_MODES:
            raise ValueError(f"choose_mode in {CHOOSE_MODES}, structured_mode in {STRUCTURED_MODES}")
        self.model, self.timeout = model, request_timeout(timeout)
        self.choose_mode, self.structured_mode = choose_mode, structured_mode
        self.base_url = public_url(base_url) if base_url else OPENAI_URL  # never holds a credential
        parts = urlsplit(base_url or OPENAI_URL)
        if parts.query or parts.fragment:
            raise ValueError(f"base URL {self.base_url} has a query string or fragment: pass the key as api_key= "
                             "(or OPENAI_API_KEY) or as user:password@ in the URL (sent as HTTP Basic auth)")
        has_auth = parts.username is not None or parts.password is not None
        self._basic_auth = (unquote(parts.username or ""), unquote(parts.password or "")) if has_auth else None
        self._explicit_key = api_key
        self._secrets: list[str] = url_secrets(base_url or "")
        self._self_hosted = base_url is not None
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
    def worst_case_seconds(self) -> float:
        """How long a call can wait on a server that never answers: ``timeout x attempts + backoff``."""
        return self.retry.worst_case(self.timeout)

    def _key_extra(self) -> dict:
        return {"choose_mode": self.choose_mode, "structured_mode": self.structured_mode, "server": self.base_url}

    def _scrub(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):  # longest first: "user:pw" before "pw"
            text = text.replace(secret, "***")
        return text

    def _where(self) -> str:
        return f"model {self.model!r} at {self.base_url}"

    def _http(self) -> Any:
        """The ``httpx`` client, built on the first call (the key is looked up then)."""
        with self._client_lock:
            if self._client is None:
                import httpx

                key = setting("OPENAI_API_KEY", self._explicit_key)
                if key is None and not self._self_hosted:
                    raise LLMFatalError(f"no OpenAI API key for {self._where()}: set OPENAI_API_KEY "
                                        "(environment or .env) or pass api_key=")
                if key is not None and len(key) > 3:
                    self._secrets.append(key)
                headers = {"Accept": "application/json", "User-Agent": "rpa_lib"}
                auth = None
                if self._basic_auth is not None:  # the URL's credentials, as HTTP Basic auth (never in the URL)
                    if key is not None:
                        log.warning("%s: the base URL has credentials, sent as HTTP Basic auth in place of the "
                                    "API key, which is not sent", self.base_url)
                    auth = httpx.BasicAuth(*self._basic_auth)
                else:  # self-hosted servers usually ignore the key but may want the header
                    headers["Authorization"] = f"Bearer {key or 'not-needed'}"
                self._client = httpx.Client(base_url=f"{self.base_url}/", headers=headers, auth=auth,
                                            timeout=self.timeout, limits=httpx.Limits(max_connections=256,
                                                                                      max_keepalive_connections=64))
            return self._client

    def _status_failure(self, status: int, detail: str, headers: Any = None) -> Exception:
        """Our exception for an HTTP error status: Transient, LLMFatalError or RuntimeError, its message scrubbed."""
        message = self._scrub(f"HTTP {status}: {detail}")
        if status in _RETRY_STATUS or status >= 500:
            return Transient(message, retry_after(headers))
        if status in _FATAL_STATUS or (status == 400 and _NO_MODEL.search(detail)):
            hint = _FATAL_STATUS.get(status, _FATAL_STATUS[404])
            return LLMFatalError(f"{message} -- {hint} ({self._where()})")
        return RuntimeError(message)

    def _create(self, messages: list[dict], **params: Any) -> tuple[dict, Raw]:
        """One request; the first choice (the JSON object) and its text, or Transient / LLMFatalError / RuntimeError."""
        client = self._http()
        import httpx

        failure: Exception | None = None
        try:
            response = client.post("chat/completions", json={"model": self.model, "messages": messages, **params})
            body = _json_or_none(response)
        except httpx.TimeoutException:
            failure = Transient(f"timed out after {self.timeout:g} s (RPA_LLM_TIMEOUT); a call gives up after at "
                                f"most {self.worst_case_seconds:g} s ({self.retry.attempts} attempts and backoff)")
        except httpx.UnsupportedProtocol as exc:
            failure = RuntimeError(self._scrub(f"{self.base_url} is not an http(s) URL: {exc}"))
        except httpx.TransportError as exc:  # refused, reset, dropped mid-body: a restarting server comes back
            failure = Transient(self._scrub(f"connection failed: {type(exc).__name__}: {exc}"))
        except httpx.HTTPError as exc:
            failure = RuntimeError(self._scrub(f"{type(exc).__name__}: {exc}"))
        if failure is not None:  # raised outside the handler: nothing chains to the request
            raise failure
        if response.status_code >= 400:
            raise self._status_failure(response.status_code, _error_detail(response, body), response.headers)
        if body is None:
            raise Transient("malformed response body")
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise Transient("response has no choices")
        message, usage = choices[0].get("message"), body.get("usage")
        content = message.get("content") if isinstance(message, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        raw = Raw(content if isinstance(content, str) else "", int(usage.get("prompt_tokens") or 0),
                  int(usage.get("completion_tokens") or 0))
        return choices[0], raw

    def _common(self, req: Request) -> dict:
        return {"seed": sample_seed(req.seed, req.sample), "temperature": req.temperature}

    def _chat(self, req: Request) -> Raw:
        return self._create(req.messages, max_tokens=req.max_tokens, **self._common(req))[1]

    def _choose(self, req: Request) -> Raw:
        options = req.options or []
        messages = with_instruction(req.messages, choice_instruction(options))
        max_tokens = 16 + max(len(o) for o in options)
        if self.choose_mode == "json_schema":
            _, raw = self._create(messages, max_tokens=max_tokens + 16, response_format=_choice_schema(options),
                                  **self._common(req))
            return raw
        if self.choose_mode == "text":
            return self._create(messages, max_tokens=max_tokens, **self._common(req))[1]
        choice, raw = self._create(messages, max_tokens=max_tokens, logprobs=True, top_logprobs=20,
                                   **self._common(req))
        raw.scores = _first_token_scores(choice, options)
        if match_option(raw.text, options) is None and raw.scores:
            raw.text = max(raw.scores, key=raw.scores.__getitem__)
        return raw

    def _structured(self, req: Request) -> Raw:
        messages = with_instruction(req.messages, schema_instruction(req.schema or {}))
        params: dict[str, Any] = {"max_tokens": req.max_tokens, **self._common(req)}
        if self.structured_mode == "json_schema":
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": req.schema, "strict": False}}
        elif self.structured_mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        return self._create(messages, **params)[1]


def _json_or_none(response: Any) -> Any:
    """The body as JSON, or None when it is not JSON (a malformed or truncated body)."""
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):  # json.JSONDecodeError is a ValueError
        return None


def _error_detail(response: Any, body: Any) -> str:
    """What an error response says: the OpenAI-style ``{"error": {"message": ...}}``, else the body's start."""
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail")
    if isinstance(error, str) and error:
        return error
    return (response.text or response.reason_phrase or "no detail").strip()[:300]


def _first_token_scores(choice: dict, options: list[str]) -> dict[str, float] | None:
    """log of the probability mass, among the first token's top alternatives, of tokens that begin each option."""
    content = (choice.get("logprobs") or {}).get("content")
    if not content or not isinstance(content, list):
        return None
    mass = dict.fromkeys(options, 0.0)
    for alt in content[0].get("top_logprobs") or []:
        token = str(alt.get("token", "")).strip().lower()
        for option in options:
            if token and option.lower().startswith(token):
                mass[option] += math.exp(float(alt.get("logprob", -math.inf)))
    if not any(mass.values()):
        return None
    return {o: (math.log(m) if m > 0 else -math.inf) for o, m in mass.items()}
