"""Batch rounds (``python -m rpa_lib.reproduce --batch local|openai|files``): execute the notebooks that use an LLM
until a round records no miss, answering each round's misses in one batch per role, server and model. Knows nothing of
papermill (``reproduce`` passes how to execute a notebook in a round). Design notes: ``docs/design/run.md``.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rpa_lib.llm.base import LLM
from rpa_lib.llm.batches import batch_price, run_round, tokens_of
from rpa_lib.llm.budget import Budget, BudgetExceeded, usd
from rpa_lib.llm.factory import get_llm, role_backend
from rpa_lib.llm.rounds import answer_engine_lines, answered, log_round, read_log, store_results
from rpa_lib.llm.usage import Price
from rpa_lib.run.profiles import BATCH_MODES
from rpa_lib.text import read_jsonl

MAX_ROUNDS = 200  # a run that needs more is going in circles
LINE_KEYS = ("custom_id", "method", "url", "body")  # what a batch request line holds

Collect = Callable[[str, dict, Path], "str | None"]  # (notebook, run mode, scratch folder) -> why it stopped, or None


def batch_mode(store: Path, misses: Path, log: Path) -> dict:
    """The ``run_mode`` of batch mode: answers from ``store``, misses to ``misses``, rounds in ``log``."""
    return {"batch_store": str(store), "batch_misses": str(misses), "batch_log": str(log)}


def unique_lines(lines_by_notebook: dict[str, list[dict]]) -> list[dict]:
    """Every notebook's misses, each custom id once (in order of first appearance)."""
    seen: dict[str, dict] = {}
    for lines in lines_by_notebook.values():
        for line in lines:
            seen.setdefault(line["custom_id"], line)
    return list(seen.values())


def line_costs(lines: list[dict], results: dict[str, dict]) -> dict[str, float] | None:
    """Dollars each answered line cost, from the tokens its answer reports: a server's at batch rates, an in-process
    engine's at the price it was given (``RPA_PRICE_IN`` / ``RPA_PRICE_OUT``; none: free), as in a run. None when a
    server's price is unknown. An answer the transport kept from a round the log never counted (the run was stopped
    after the batch came back, before the round was logged) is counted here: the log holds every round paid."""
    out = {}
    for line in lines:
        result = results.get(line["custom_id"]) or {}
        price = None if line.get("price") is None else Price(*line["price"])
        if "body" in result:
            if price is None:
                return None
            out[line["custom_id"]] = batch_price(price).cost(*tokens_of(result["body"]))
        elif "raw" in result and price is not None:
            out[line["custom_id"]] = price.cost(result["raw"]["prompt_tokens"], result["raw"]["completion_tokens"])
    return out


def notebook_costs(misses: dict[str, list[dict]], costs: dict[str, float] | None) -> dict[str, float] | None:
    """Each notebook's share of a round's ``costs``: a line asked by several notebooks split among them, so the
    shares add up to the round's cost."""
    if costs is None:
        return None
    asked = {nb: {line["custom_id"] for line in m} for nb, m in misses.items() if m}
    askers = Counter(cid for ids in asked.values() for cid in ids)
    return {nb: round(sum(costs.get(cid, 0.0) / askers[cid] for cid in ids), 9) for nb, ids in asked.items()}


def unfinished_run(runs: Path, key: str) -> Path | None:
    """The newest run folder in ``runs`` of ``key`` (the command's notebooks, parameters and mode) that stopped before
    its run records were written (in a round, or in the final pass): the same command goes on in it, so its records
    count the rounds paid before the stop."""
    for folder in sorted(runs.glob("run-*"), reverse=True):
        log = read_log(folder / "rounds.json")
        if log.get("key") == key and not log.get("finished"):
            return folder
    return None


def engine_builder(budget: Budget | None) -> Callable[[str], LLM]:
    """How a round builds the in-process engine of a spec: uncached (the rounds store its answers), and held by
    ``budget`` when given a price (``RPA_PRICE_IN`` / ``RPA_PRICE_OUT``), as in a run."""
    def build(spec: str) -> LLM:
        return get_llm(spec, cache=False).with_budget(budget)  # None: no limit
    return build


def answer_round(lines: list[dict], mode: str, folder: Path, build: Callable[[str], LLM], *,
                 send: Callable[..., dict[str, dict]], budget: Budget | None, progress: bool) -> dict[str, dict]:
    """The results of one round's lines: engine lines in this process (``build(spec)``), the others through ``send``
    once per role, server and model, each in its own folder under ``folder / "transport"`` (a restart resumes it)."""
    engines = [line for line in lines if "engine" in line]
    results = answer_engine_lines(engines, build, progress=progress) if engines else {}
    remote: dict[tuple[str, str, str], list[dict]] = {}
    for line in lines:
        if "engine" not in line:  # a role's own key may bill another account: its lines are a batch of their own
            remote.setdefault((line.get("role") or "RPA_LLM", line["server"], line["body"]["model"]), []).append(line)
    for (role, server, model), group in remote.items():
        if mode == "local":
            raise SystemExit(f"--batch local runs in-process engines only; model {model!r} at {server} is an "
                             "OpenAI-compatible server: use --batch openai (OpenAI's API) or --batch files")
        # the Batch API of the lines' server (vLLM has none: --batch files), with the key the role's calls use
        client = role_backend(role, model, server, cache=False).openai_client() if mode == "openai" else None
        # no role in the role-play LLM's folder name: a run stopped before misses named their role resumes there
        slug = hashlib.sha256(f"{'' if role == 'RPA_LLM' else role + ' '}{server} {model}".encode()).hexdigest()[:12]
        try:
            results.update(send([{k: line[k] for k in LINE_KEYS} for line in group], mode=mode,
                                folder=folder / "transport" / slug, client=client, budget=budget, progress=progress))
        except BudgetExceeded as exc:  # the answers of the groups before it are kept all the same
            exc.results = {**results, **getattr(exc, "results", {})}
            raise
    return results


def run_rounds(notebooks: list[str], collect: Collect, *, mode: str, store: Path, run_dir: Path,
               build: Callable[[str], LLM], budget: Budget | None = None,
               send: Callable[..., dict[str, dict]] = run_round, progress: bool = True, key: str = "") -> list[dict]:
    """Rounds until one has no miss: ``collect(notebook, run_mode, scratch)`` executes a notebook and says why it
    stopped (None: it ran to its end). A ``run_dir`` whose log has rounds (a run stopped before its end) goes on
    after them. Returns this call's entries of the log ``run_dir / "rounds.json"`` (which holds ``key``)."""
    if mode not in BATCH_MODES:
        raise ValueError(f"batch mode must be one of {', '.join(BATCH_MODES)}, not {mode!r}")
    log = run_dir / "rounds.json"
    log_round(log, mode, None, key=key)  # first: the records name the mode with no round, a stop in round 1 resumes here
    waiting = list(notebooks)  # not yet run to their end without a miss
    entries: list[dict] = []
    start_all = time.monotonic()
    for r in range(len(read_log(log)["rounds"]) + 1, MAX_ROUNDS + 1):  # a stopped run resumed: after its rounds
        round_dir = run_dir / f"round-{r:02d}"
        start = time.monotonic()
        misses: dict[str, list[dict]] = {}
        for nb in waiting:
            misses_file = round_dir / f"{nb}.misses.jsonl"
            misses_file.unlink(missing_ok=True)  # of this round stopped midway: its calls are recorded again
            problem = collect(nb, batch_mode(store, misses_file, log), round_dir / "scratch")
            misses[nb] = read_jsonl(misses_file)
            if problem and not misses[nb]:
                raise SystemExit(f"{nb}: stopped in batch round {r} with no call waiting, so it failed: {problem} "
                                 f"(executed copy in {round_dir / 'scratch'})")
        waiting = [nb for nb in waiting if misses[nb]]
        lines = unique_lines(misses)
        if not lines:
            print(f"batch: round {r} has no miss; every answer is in ({_elapsed(time.monotonic() - start_all)} in all)",
                  flush=True)
            return entries
        stop = None
        try:
            results = answer_round(lines, mode, store, build, send=send, budget=budget, progress=progress)
        except BudgetExceeded as exc:  # in-process engines stopped by the budget: what they answered is kept, logged
            results, stop = getattr(exc, "results", {}), exc
        costs = line_costs(lines, results)
        n_answered = sum(map(answered, results.values()))
        entry = {"round": r, "calls": len(lines), "by_notebook": {nb: len({line["custom_id"] for line in m})
                                                                   for nb, m in misses.items() if m},
                 "answered": n_answered, "failed": len(results) - n_answered,
                 "seconds": round(time.monotonic() - start, 1),
                 "usd": None if costs is None else sum(costs.values()), "usd_by_notebook": notebook_costs(misses, costs)}
        log_round(log, mode, entry, key=key)  # logged before stored: a kill between the two pays a line twice, and
        store_results(store, lines, results)  # logs both; the other order would keep a paid round in no log
        entries.append(entry)
        print(_progress_line(entry, time.monotonic() - start_all), flush=True)
        if stop is not None:
            raise stop
        if not entry["answered"] and not entry["failed"]:
            raise SystemExit(f"batch round {r}: none of its {len(lines)} calls was answered; run the same command "
                             "again to resume")
    raise SystemExit(f"batch: no end after {MAX_ROUNDS} rounds; the calls of each round are in {run_dir}")


def _elapsed(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _progress_line(entry: dict, elapsed: float) -> str:
    """``batch: round 2: 40 calls (04_personality 30, 05_qa_evaluation 10), 40 answered, 0 failed, 3.1 s, $0.00
    at batch rates; 9.8 s in all``"""
    who = ", ".join(f"{nb} {n}" for nb, n in entry["by_notebook"].items())
    money = "price unknown" if entry["usd"] is None else f"{usd(round(entry['usd'], 4))} at batch rates"
    return (f"batch: round {entry['round']}: {entry['calls']} calls ({who}), {entry['answered']} answered, "
            f"{entry['failed']} failed, {entry['seconds']} s, {money}; {_elapsed(elapsed)} in all")
