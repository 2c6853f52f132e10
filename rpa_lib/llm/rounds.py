"""Batch rounds, the LLM side: :class:`BatchLLM` answers each round trip from the results of earlier rounds and
records the ones not in yet; :func:`answer_engine_lines` answers a round's lines of in-process engines.

A round trip becomes a request line: an OpenAI batch line for an OpenAI-compatible backend, an engine line
(``{"custom_id", "engine": {"spec", "request"}}``) for an in-process one (docs/plan_and_budget.md, "Batch rounds").
This module sends nothing: :mod:`rpa_lib.run.rounds` drives the rounds and :mod:`rpa_lib.llm.batches` sends lines.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rpa_lib.llm.base import LLM, Request
from rpa_lib.llm.batches import ENDPOINT
from rpa_lib.llm.budget import BudgetExceeded, estimate_tokens
from rpa_lib.llm.cache import Cache, request_key
from rpa_lib.llm.openai_backend import OpenAILLM
from rpa_lib.llm.reply import LLMError, Pending, Raw
from rpa_lib.llm.retry import RetryPolicy
from rpa_lib.text import write_whole

RETRIES = 1  # a failed line is asked again once, in the next round
# Guided Selection's look-ahead in batch mode: chunks of a walk judged per round (a fixed window: the calls depend on
# the verdicts alone, never on timing; docs/plan_and_budget.md has the trade of rounds against calls)
BATCH_LOOKAHEAD = 8
_WRITE_LOCK = threading.Lock()


def results_store(folder: str | Path) -> Cache:
    """Custom id -> ``{"body": completion}``, ``{"raw": ...}`` (an engine's line) or ``{"error", "tries"}``."""
    return Cache(Path(folder) / "results.sqlite")


def engine_spec(llm: LLM) -> str:
    """The ``get_llm`` spec of in-process engine ``llm``. ``engine_spec(FakeLLM()) == "fake:fake"``"""
    if llm.backend == "fake":
        return f"fake:{llm.label}"
    if llm.backend in ("local", "llamacpp"):
        return f"{llm.backend}:{llm.path}"
    raise ValueError(f"{llm!r} is not an in-process engine")


class BatchLLM(LLM):
    """``BatchLLM(get_llm("openai:gpt-4.1"), store, misses)``: ``real`` under its identity (backend, model, label,
    price, workers, cache and cache keys), its round trips answered from ``store``, the missing ones recorded to
    ``misses``."""

    lookahead = BATCH_LOOKAHEAD

    def __init__(self, real: LLM, store: str | Path, misses: str | Path):
        self.real, self.misses = real, Path(misses)
        self.backend, self.label, self.model_id, self.price = real.backend, real.label, real.model_id, real.price
        self.scratch_dir = real.scratch_dir
        # a stored result is the same at every try: retrying one round trip would only wait
        super().__init__(cache=False, max_workers=real.max_workers, retry=RetryPolicy(attempts=1))
        self._cache = real._cache  # the real backend's reply cache: hits as in a synchronous run, replies kept there
        self.store = results_store(store)

    def __repr__(self) -> str:
        return f"BatchLLM({self.real!r})"

    def _key_extra(self) -> dict:
        return self.real._key_extra()

    def _answer(self, req: Request) -> Raw:
        """The stored answer of ``req``'s line; Pending (the line recorded) when there is none yet or it failed
        fewer than ``1 + RETRIES`` times; LLMError when it failed that often."""
        line, read = self.line(req)
        result = self.store.get(line["custom_id"])
        if result is None or ("error" in result and result["tries"] <= RETRIES):
            self._record(line, req)
            raise Pending(f"{req.kind} round trip {line['custom_id'][:12]} waits for the next batch round")
        if "error" in result:
            raise LLMError(f"batch line {line['custom_id'][:12]} failed {result['tries']} times: "
                           f"{result['error'].get('message')}")
        return read(result)

    _chat = _choose = _structured = _answer

    def line(self, req: Request) -> tuple[dict, Callable[[dict], Raw]]:
        """(the request line of ``req``'s round trip, how to read its stored result as a Raw)."""
        real = self.real
        if isinstance(real, OpenAILLM):
            from openai.types.chat import ChatCompletion  # the openai package, loaded when a backend needs it

            mode = real.mode_for(req.kind)
            body = real.body(req, mode)
            line = {"custom_id": request_key({"server": real.base_url, "body": body}), "method": "POST",
                    "url": ENDPOINT, "body": body}
            return line, lambda result: real.raw(req, mode, ChatCompletion.model_validate(result["body"]))
        request = asdict(req)
        key = request_key({"backend": real.backend, "model": real.model_id, "extra": real._key_extra(),
                           "request": request})
        return {"custom_id": key, "engine": {"spec": engine_spec(real), "request": request}}, \
            lambda result: Raw(**result["raw"])

    def _record(self, line: dict, req: Request) -> None:
        """Append ``line`` to the misses file, with model, server, role (the prefix of the settings that hold its key;
        never the key), price and estimated tokens for the rounds."""
        price = None if self.price is None else [self.price.input, self.price.output]
        entry = {**line, "label": self.label, "model": self.model_id, "server": getattr(self.real, "base_url", None),
                 "role": getattr(self.real, "role", None), "price": price, "estimate": list(estimate_tokens(req))}
        text = json.dumps(entry, ensure_ascii=False) + "\n"
        with _WRITE_LOCK:
            self.misses.parent.mkdir(parents=True, exist_ok=True)
            with open(self.misses, "a", encoding="utf-8") as f:
                f.write(text)


def answer_engine_lines(lines: list[dict], build: Callable[[str], LLM], *, progress: bool = True) -> dict[str, dict]:
    """Each engine line's round trip on ``build(spec)`` (once per spec), with the engine's workers and retries:
    ``{custom_id: {"raw": ...} or {"error": {"message": ...}}}``; an LLMFatalError stops the round. A budget reached
    is raised once every line in flight has ended, carrying the answers paid for as ``error.results``."""
    results: dict[str, dict] = {}
    stopped: list[BudgetExceeded] = []
    by_spec: dict[str, list[dict]] = {}
    for line in lines:
        by_spec.setdefault(line["engine"]["spec"], []).append(line)
    for spec, group in by_spec.items():
        engine = build(spec)

        def answer(line: dict, engine: LLM = engine) -> dict | None:
            req = Request(**line["engine"]["request"])
            try:
                return asdict(engine.round_trip(req, f"batch line {line['custom_id'][:12]}"))
            except BudgetExceeded as exc:  # no answer, nothing spent: the line waits for the next run
                stopped.append(exc)
                return None

        for out in engine.map(answer, [] if stopped else group, desc=f"batch · {spec}", progress=progress):
            if not out.ok:
                results[out.item["custom_id"]] = {"error": {"message": out.error}}
            elif out.value is not None:
                results[out.item["custom_id"]] = {"raw": out.value}
    if stopped:
        stopped[0].results = results
        raise stopped[0]
    return results


def answered(result: dict) -> bool:
    """Whether a round's ``result`` for a line is an answer (else a failure, asked again by a later round)."""
    return "error" not in result and result.get("status_code", 200) == 200


def store_results(store: str | Path, lines: list[dict], results: dict[str, Any]) -> tuple[int, int]:
    """Keep a round's ``results`` in the results store, a failure with how many times its line failed so far;
    (answered, failed). A line with no result is not stored: the next round asks it again."""
    store = results_store(store)
    by_id = {line["custom_id"]: line for line in lines}
    for cid, result in results.items():
        if answered(result):
            store.put(cid, by_id.get(cid, {}), {k: v for k, v in result.items() if k != "status_code"})
            continue
        status = result.get("status_code", 200)
        error = result.get("error") or {"message": f"HTTP {status}: {json.dumps(result.get('body'))[:300]}"}
        before = store.get(cid)
        tries = before["tries"] + 1 if before is not None and "error" in before else 1
        store.put(cid, by_id.get(cid, {}), {"error": error, "tries": tries})
    store.close()
    n = sum(map(answered, results.values()))
    return n, len(results) - n


# ---- the rounds' log, for the run records ----------------------------------------------------------------------


def read_log(path: str | Path) -> dict:
    """The rounds of a run so far (``{"mode": ..., "rounds": [...]}``; no rounds when the file is missing)."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"mode": None, "rounds": []}


def log_round(path: str | Path, mode: str, entry: dict | None, **header: Any) -> None:
    """Add ``entry`` (round, calls, by_notebook, answered, failed, seconds, usd, usd_by_notebook) to the log at
    ``path`` (None: no round), with ``header`` (``key``, ``finished``)."""
    log = read_log(path)
    log.update(mode=mode, **header)
    if entry is not None:
        log["rounds"].append(entry)
    write_whole(Path(path), json.dumps(log, indent=1) + "\n")  # a kill while writing keeps the rounds logged before


def rounds_record(path: str | Path, notebook: str) -> dict:
    """The rounds for a run record: number, mode, this notebook's and every notebook's calls per round, and what
    they cost (servers at batch rates): ``usd`` this notebook's share (a call several notebooks asked split among
    them), ``run_usd`` every notebook's; None when a model's price is unknown."""
    log = read_log(path)
    rounds = log["rounds"]
    mine = [None if r.get("usd_by_notebook") is None else r["usd_by_notebook"].get(notebook, 0.0) for r in rounds]
    costs = [r.get("usd") for r in rounds]
    return {"mode": log["mode"], "rounds": len(rounds),
            "calls_per_round": [r["by_notebook"].get(notebook, 0) for r in rounds],
            "all_calls_per_round": [r["calls"] for r in rounds],
            "usd": None if None in mine else round(sum(mine), 6),
            "run_usd": None if None in costs else round(sum(costs), 6)}
