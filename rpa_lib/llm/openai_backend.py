"""``OpenAILLM``: any OpenAI-compatible chat-completions endpoint through the ``openai`` package.

OpenAI itself (``gpt-4.1`` ...) or a self-hosted server (vLLM, Ollama, llama.cpp server, LM Studio) at
``base_url``. The client is built lazily on the first call with ``max_retries=0`` (our ``retry`` module is the only
retry layer) and the API key looked up then: explicit argument, environment, ``.env``. Faults map to
``Transient`` (429, 408, 409, 5xx with ``Retry-After``; timeouts; dropped connections; malformed or empty
bodies); other HTTP errors fail at once. Error texts are scrubbed of the key and of credentials in the URL.

Constrained choice: ``choose_mode="json_schema"`` (a strict JSON schema whose one field is an enum of the
options), ``"logprobs"`` (the options' probability mass at the first token; also gives ``Reply.scores``) or
``"text"`` (instruction only). Structured output sends the schema as ``response_format`` (``"json_schema"``),
asks for any JSON object (``"json_object"``) or relies on the instruction alone (``"text"``). Every mode is
validated by ``base``. This module does not stream, call tools, or send images.
"""

from __future__ import annotations

import json
import math
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from rpa_lib.llm.answers import choice_instruction, match_option, schema_instruction, with_instruction
from rpa_lib.llm.base import LLM, Request, sample_seed
from rpa_lib.llm.config import setting
from rpa_lib.llm.reply import LLMError, Raw
from rpa_lib.llm.retry import Transient
from rpa_lib.llm.usage import price_for

OPENAI_URL = "https://api.openai.com/v1"
_RETRY_STATUS = {408, 409, 429}
CHOOSE_MODES = ("json_schema", "logprobs", "text")
STRUCTURED_MODES = ("json_schema", "json_object", "text")


def public_url(url: str) -> str:
    """``url`` without user, password, query or fragment. ``public_url("http://u:p@h:8000/v1?k=1")`` ->
    ``"http://h:8000/v1"``"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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

    def __init__(self, model: str = "gpt-4.1", *, base_url: str | None = None, api_key: str | None = None,
                 cache: Any = True, max_workers: int = 8, retry=None, timeout: float = 60.0,
                 choose_mode: str = "json_schema", structured_mode: str = "json_schema"):
        if choose_mode not in CHOOSE_MODES or structured_mode not in STRUCTURED_MODES:
            raise ValueError(f"choose_mode in {CHOOSE_MODES}, structured_mode in {STRUCTURED_MODES}")
        self.model, self.timeout = model, timeout
        self.choose_mode, self.structured_mode = choose_mode, structured_mode
        self._base_url = base_url  # may hold credentials: only ever shown through public_url
        self._explicit_key = api_key
        self._secrets: list[str] = []
        self._client: Any = None
        self._client_lock = threading.Lock()
        self.base_url = public_url(base_url) if base_url else OPENAI_URL
        official = base_url is None or urlsplit(base_url).hostname == "api.openai.com"
        self.label = f"{model} (openai)" if official else f"{model} (openai-compatible)"
        self.model_id = model
        self.price = price_for(model)
        super().__init__(cache=cache, max_workers=max_workers, retry=retry)

    def __repr__(self) -> str:
        return f"OpenAILLM({self.model!r}, base_url={self.base_url!r}, cache={self._cache!r})"

    def _key_extra(self) -> dict:
        return {"choose_mode": self.choose_mode, "structured_mode": self.structured_mode}

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _openai(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import openai

                key = setting("OPENAI_API_KEY", self._explicit_key)
                if key is None and self._base_url is None:
                    raise LLMError("no OpenAI API key: set OPENAI_API_KEY (environment or .env) or pass api_key=")
                key = key or "not-needed"  # self-hosted servers usually ignore the key but the client wants one
                parts = urlsplit(self._base_url or OPENAI_URL)
                self._secrets = [s for s in (key, parts.password, parts.username, parts.query) if s and len(s) > 3]
                url, http_client = self._base_url or OPENAI_URL, None
                if parts.username or parts.password:  # send them as Basic auth, keep them out of the URL (and logs)
                    url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
                    auth = (unquote(parts.username or ""), unquote(parts.password or ""))
                    http_client = openai.DefaultHttpxClient(auth=auth)
                self._client = openai.OpenAI(api_key=key, base_url=url, timeout=self.timeout, max_retries=0,
                                             http_client=http_client)
            return self._client

    def _create(self, messages: list[dict], **params: Any) -> tuple[Any, Raw]:
        """One request; the first choice and its text, or ``Transient``/``RuntimeError`` with a scrubbed message."""
        client = self._openai()
        import openai

        try:
            response = client.chat.completions.create(model=self.model, messages=messages, **params)
        except openai.APITimeoutError:
            raise Transient(f"timed out after {self.timeout} s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise Transient(self._scrub(f"connection failed: {type(cause).__name__}: {cause}")) from None
        except openai.APIStatusError as exc:
            message = self._scrub(f"HTTP {exc.status_code}: {exc.message}")
            if exc.status_code in _RETRY_STATUS or exc.status_code >= 500:
                raise Transient(message, retry_after(exc.response.headers)) from None
            raise RuntimeError(message) from None
        except (json.JSONDecodeError, openai.APIResponseValidationError):
            raise Transient("malformed response body") from None
        choices = getattr(response, "choices", None)
        if not choices:
            raise Transient("response has no choices")
        usage = getattr(response, "usage", None)
        raw = Raw(choices[0].message.content or "", getattr(usage, "prompt_tokens", 0) or 0,
                  getattr(usage, "completion_tokens", 0) or 0)
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


def _first_token_scores(choice: Any, options: list[str]) -> dict[str, float] | None:
    """log of the probability mass, among the first token's top alternatives, of tokens that begin each option."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    mass = dict.fromkeys(options, 0.0)
    for alt in content[0].top_logprobs or []:
        token = alt.token.strip().lower()
        for option in options:
            if token and option.lower().startswith(token):
                mass[option] += math.exp(alt.logprob)
    if not any(mass.values()):
        return None
    return {o: (math.log(m) if m > 0 else -math.inf) for o, m in mass.items()}
