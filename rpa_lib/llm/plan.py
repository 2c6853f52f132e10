"""A dry run's stand-in LLM: :class:`PlanLLM` records every call a run would make, with its cache key and
estimated tokens, and answers without calling a model.

``PlanLLM(real, path)`` wraps a backend (which connects no client and loads no model until its first call, never
made here): it keys each call exactly as that backend would, looks the key up in that backend's reply cache, answers
with the cached reply when there is one (so the run follows the path those replies took) and otherwise as the fake
backend does, and appends one JSON line per call to ``path``: model, key, whether the cache holds it, estimated
tokens (:func:`rpa_lib.llm.budget.estimate_tokens`: an upper bound) and the character the call was made for
(:data:`acting_for`, which the evaluation runner sets). It writes nothing to the reply cache; a graph index built
from its made-up replies goes to its ``scratch_dir``, never to the cache a real run reads.

Chosen by a run mode (``get_llm(spec, mode=RunMode(plan_file=...))``), never by the environment.
:mod:`rpa_lib.run.plan` turns plan files into the plan's table.
"""

from __future__ import annotations

import contextvars
import functools
import json
import threading
from pathlib import Path
from typing import Any

from rpa_lib.llm.base import LLM, Request
from rpa_lib.llm.budget import estimate_tokens
from rpa_lib.llm.fake import FakeLLM, default_rule
from rpa_lib.llm.reply import Raw

# the character whose answer a call is made for (set by the evaluation runner around each job), recorded with each
# planned call: a fast plan tells a call every character makes alike (e.g. LightRAG's keywords of a questionnaire
# item) from its own
acting_for: contextvars.ContextVar[str | None] = contextvars.ContextVar("rpa_acting_for", default=None)
_WRITE_LOCK = threading.Lock()
_FILES: dict[Path, Any] = {}  # plan files open for appending, one per path, line-buffered


def _plan_file(path: Path):
    """The open plan file at ``path`` (call under ``_WRITE_LOCK``): opened once, not once per call."""
    f = _FILES.get(path)
    if f is None or f.closed or not path.exists():  # a plan file removed since: a new one
        f = _FILES[path] = open(path, "a", encoding="utf-8", buffering=1)
    return f


class _CacheView:
    """A backend's reply cache, read only: ``get`` looks up, ``put`` is dropped. A missing file is never created.
    Recent lookups are remembered: the stand-in and ``base`` look each key up in turn."""

    def __init__(self, cache: Any):
        self.cache = cache if cache is not None and Path(cache.path).is_file() else None
        self.get = functools.lru_cache(maxsize=1024)(self._get)

    def _get(self, key: str) -> dict | None:
        return None if self.cache is None else self.cache.get(key)

    def put(self, key: str, request: dict, reply: dict) -> None:
        pass


class PlanLLM(LLM):
    """``PlanLLM(get_llm("openai:gpt-4.1"), path)``: answers like the fake backend (or from ``real``'s cache) under
    ``real``'s identity (backend, model, label, price, workers, cache key), recording each call to ``path``."""

    def __init__(self, real: LLM, path: str | Path):
        self.real, self.path = real, Path(path)
        self.backend, self.label, self.model_id, self.price = real.backend, real.label, real.model_id, real.price
        self._server = getattr(real, "base_url", None)
        self.scratch_dir = self.path.with_suffix(".indexes")  # graph indexes built from its replies: see build_path
        super().__init__(cache=False, max_workers=real.max_workers, retry=real.retry)
        view = _CacheView(real._cache)
        self._cache = view if view.cache is not None else None  # no cache file: nothing to look up
        self._budget = None  # a plan spends nothing
        self._answers = FakeLLM(real.rule if isinstance(real, FakeLLM) else default_rule, cache=False)
        self._last = threading.local()  # the request whose key was made last, and its fields and key

    def __repr__(self) -> str:
        return f"PlanLLM({self.real!r})"

    def _key_extra(self) -> dict:
        return self.real._key_extra()

    def _keys(self, req: Request) -> tuple[dict, str]:
        last = getattr(self._last, "keys", None)
        if last is None or last[0] is not req:  # made once for the record and once for ``base``
            self._last.keys = last = (req, super()._keys(req))
        return last[1]

    def _call(self, req: Request, name: str | None, attempts: int, run) -> Any:
        fields, key = self._keys(req)
        cached = self._cache is not None and (self._cache.get(key) is not None
                                              or self._cache.get(self._failed(fields)[1]) is not None)
        prompt, completion = estimate_tokens(req)
        price = None if self.price is None else [self.price.input, self.price.output]
        self._record({"label": self.label, "model": self.model_id, "server": self._server, "price": price,
                      "kind": req.kind, "key": key, "cached": cached, "in": prompt, "out": completion,
                      "character": acting_for.get()})
        return super()._call(req, name, attempts, run)

    def _record(self, entry: dict) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with _WRITE_LOCK:
            _plan_file(self.path).write(line)

    def _chat(self, req: Request) -> Raw:
        return self._answers._chat(req)

    def _choose(self, req: Request) -> Raw:
        return self._answers._choose(req)

    def _structured(self, req: Request) -> Raw:
        return self._answers._structured(req)
