"""A dry run's stand-in LLM: :class:`PlanLLM` records every call a run would make, with its cache key and estimated
tokens, and answers without calling a model (docs/plan_and_budget.md).

It writes nothing to the reply cache and is chosen by a run mode, never by the environment; :mod:`rpa_lib.run.plan`
turns its plan files into the plan's table.
"""

from __future__ import annotations

import contextlib
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

# the character a call is made for (set by the evaluation runner around each job, :func:`acting`): a fast plan tells
# a call every character makes alike (e.g. LightRAG's keywords of a questionnaire item) from its own, and replicas
# route by it (rpa_lib.llm.replicas); a thread a job starts must carry it over (Guided Selection's look-ahead does;
# LightRAG's event loop runs each coroutine in a copy of its caller's context)
acting_for: contextvars.ContextVar[str | None] = contextvars.ContextVar("rpa_acting_for", default=None)
_WRITE_LOCK = threading.Lock()
_FILES: dict[Path, Any] = {}  # plan files open for appending, one per path, line-buffered


@contextlib.contextmanager
def acting(character: str | None):
    """The LLM calls made inside (in this thread) are for ``character``."""
    token = acting_for.set(character)
    try:
        yield
    finally:
        acting_for.reset(token)


class _CacheView:
    """A backend's reply cache, read only (a missing file is never created); recent lookups are remembered, as the
    stand-in and ``base`` look each key up in turn."""

    def __init__(self, cache: Any):
        self.cache = cache
        self.get = functools.lru_cache(maxsize=1024)(cache.get)

    def put(self, key: str, request: dict, reply: dict) -> None:
        pass


class PlanLLM(LLM):
    """``PlanLLM(get_llm("openai:gpt-4.1"), path)``: answers from ``real``'s cache, else like the fake backend, under
    ``real``'s identity (backend, model, label, price, workers, cache key), recording each call to ``path``."""

    def __init__(self, real: LLM, path: str | Path):
        self.real, self.path = real, Path(path)
        self.backend, self.label, self.model_id, self.price = real.backend, real.label, real.model_id, real.price
        self._server = getattr(real, "base_url", None)
        self.scratch_dir = self.path.with_suffix(".indexes")  # graph indexes built from its replies: see build_path
        super().__init__(cache=False, max_workers=real.max_workers, retry=real.retry)
        cache = real._cache  # read through a view; without a cache file there is nothing to look up
        self._cache = _CacheView(cache) if cache is not None and Path(cache.path).is_file() else None
        self._answers = FakeLLM(real.rule if isinstance(real, FakeLLM) else default_rule, cache=False)

    def __repr__(self) -> str:
        return f"PlanLLM({self.real!r})"

    def _key_extra(self) -> dict:
        return self.real._key_extra()

    def _calling(self, req: Request, fields: dict, key: str, attempts: int) -> None:
        """Records the call to the plan file, with whether the real backend's cache answers it (a reply, or a failure
        after as many attempts as the call allows: one after fewer is sent again, and paid)."""
        cached = self._stored(fields, key, attempts) is not None
        prompt, completion = estimate_tokens(req)
        price = None if self.price is None else [self.price.input, self.price.output]
        entry = {"label": self.label, "model": self.model_id, "server": self._server, "price": price,
                 "free": self.usage.free, "kind": req.kind, "key": key, "cached": cached, "in": prompt,
                 "out": completion, "character": acting_for.get()}
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with _WRITE_LOCK:
            f = _FILES.get(self.path)
            if f is None or f.closed or not self.path.exists():  # a plan file removed since: a new one
                f = _FILES[self.path] = open(self.path, "a", encoding="utf-8", buffering=1)
            f.write(line)

    def _answer(self, req: Request) -> Raw:
        """The fake backend's answer; a choice scored where ``real`` scores its choices, so a dry run of a calibrated
        judge goes on as the real run would. The scores are made up and as sure as the text (the chosen option 0, the
        others -50), so what reads them (CRAG's grades and relevance) decides as it would from the text alone."""
        raw = self._answers._answer(req)
        if req.kind == "choose" and self.real.scores_choices:
            raw.scores = {o: 0.0 if o == raw.text else -50.0 for o in req.options or []}
        return raw

    _chat = _choose = _structured = _answer
