"""One round of chat-completion requests answered as batches: by the OpenAI Batch API or by an offline engine that
reads request files (docs/batch.md).

Every step is recorded in the folder's ledger, so a killed :func:`run_round` resumes. It never cancels a batch,
stores no answer in the reply cache, does not choose a round's requests and does not retry a failed line.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rpa_lib.llm.batch_ledger import Ledger, Part, round_key
from rpa_lib.llm.budget import Budget, body_tokens, model_price
from rpa_lib.llm.openai_backend import OpenAILLM, public_url, retried, scrub
from rpa_lib.llm.reply import LLMFatalError
from rpa_lib.llm.retry import RetryPolicy
from rpa_lib.llm.usage import Price
from rpa_lib.settings import setting
from rpa_lib.text import write_whole

ENDPOINT = "/v1/chat/completions"
MODES = ("openai", "files")
TERMINAL = ("completed", "failed", "expired", "cancelled")
UNANSWERED = ("batch_expired", "batch_cancelled")  # error codes of the lines a batch never ran
CLOCK_SKEW = 3600  # seconds the server's clock may lag ours when a part's batch is looked for by creation time
MAX_SUBMISSIONS = 3  # times one line is submitted in one round, expired or cancelled batches included
HEARTBEAT = 600.0  # seconds: a progress line repeats after this long without a change
TRANSFER_TIMEOUT = 600.0  # seconds for one upload or download (a file may be 200 MB)


@dataclass(frozen=True)
class Limits:
    """The most requests and bytes one request file may hold (the OpenAI Batch API's limits by default)."""

    requests: int = 50_000
    bytes: int = 200_000_000


def batch_price(price: Price) -> Price:
    """Half the synchronous price. ``batch_price(Price(2.0, 8.0)) == Price(1.0, 4.0)``"""
    return Price(price.input / 2, price.output / 2)


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars ``model`` charges for these tokens through the Batch API (None: its price is unknown)."""
    price = model_price(model)
    return None if price is None else batch_price(price).cost(prompt_tokens, completion_tokens)


def jsonl(line: dict) -> str:
    """A request line as written to a request file: compact JSON and a newline."""
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"


def split_lines(lines: list[dict], limits: Limits = Limits()) -> list[list[dict]]:
    """``lines`` in order, cut into files within ``limits``.
    ``[len(f) for f in split_lines([line] * 5, Limits(requests=2))] == [2, 2, 1]``"""
    files: list[list[dict]] = []
    size = 0
    for line in lines:
        n = len(jsonl(line).encode())
        if n > limits.bytes:
            raise ValueError(f"request {line.get('custom_id')!r} alone is {n:,} bytes, over the {limits.bytes:,} "
                             "bytes a batch file may hold")
        if not files or len(files[-1]) >= limits.requests or size + n > limits.bytes:
            files.append([])
            size = 0
        files[-1].append(line)
        size += n
    return files


def parse_results(text: str, where: str = "results") -> dict[str, dict | None]:
    """A batch output or error file (OpenAI's or ``vllm run-batch``'s) by custom id: ``{"status_code", "body"}``,
    ``{"error": {"code"?, "message", "status_code"?}}``, or None for a line never run; ValueError naming the line
    (``where`` line N) for one that is cut, is not a result line or repeats a custom id."""
    out: dict[str, dict | None] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        at = f"{where} line {n}"
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{at}: not a JSON line ({exc})") from None
        cid = obj.get("custom_id") if isinstance(obj, dict) else None
        if not isinstance(cid, str):
            raise ValueError(f"{at}: no custom_id; a result line is {{\"custom_id\", \"response\": {{\"status_code\", "
                             "\"body\"}, \"error\"}")
        if cid in out:
            raise ValueError(f"{at}: custom_id {cid!r} again; a results file holds one line per request")
        out[cid] = _result(obj, at)
    return out


def _result(obj: dict, at: str) -> dict | None:
    response, error = obj.get("response"), obj.get("error")
    if response is None and error is None:
        raise ValueError(f"{at}: neither a response nor an error (a request line, not its result?)")
    if not isinstance(response, dict | None):
        raise ValueError(f"{at}: response is {type(response).__name__}, not an object")
    response = response or {}
    try:
        status = int(response.get("status_code") or 0)
    except (TypeError, ValueError):
        raise ValueError(f"{at}: response.status_code {response.get('status_code')!r} is not a number") from None
    body = response.get("body")
    completion = isinstance(body, dict) and isinstance(body.get("choices"), list)
    if 200 <= status < 300 and completion and not error:
        return {"status_code": status, "body": body}
    if isinstance(error, dict) and error.get("code") in UNANSWERED:
        return None
    detail = error if error is not None else body.get("error") if isinstance(body, dict) else None
    detail = detail if isinstance(detail, dict) else {"message": detail if isinstance(detail, str) else None}
    no_answer = f"HTTP {status} without a completion" if 200 <= status < 300 else f"HTTP {status}"
    out = {"message": str(detail.get("message") or (no_answer if status else "no response"))}
    if detail.get("code"):
        out["code"] = str(detail["code"])
    if status:
        out["status_code"] = status
    return {"error": out}


def elapsed(seconds: float) -> str:
    """``elapsed(3725) == "1h02m"``, ``elapsed(65) == "1m05s"``, ``elapsed(4.2) == "4s"``"""
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run_round(lines: list[dict], *, mode: str, folder: Path, client: Any = None, progress: bool = True,
              poll_seconds: float = 30.0, limits: Limits = Limits(), budget: Budget | None = None) -> dict[str, dict]:
    """Get ``lines`` answered as batches; the results by custom id (a line still unanswered is absent).
    ``client``: an ``openai.OpenAI`` (None: the one the OpenAI backend builds). ``budget``: each OpenAI batch holds
    its estimated cost at batch price before it starts and books what its answers cost; request files cost nothing."""
    if mode not in MODES:
        raise ValueError(f"unknown batch mode {mode!r}; known: {', '.join(MODES)}")
    models = {str(line["body"].get("model")) for line in lines} if budget is not None and mode == "openai" else set()
    if unpriced := sorted(model for model in models if model_price(model) is None):
        raise LLMFatalError(f"the budget is limited but the price of {', '.join(map(repr, unpriced))} is "
                            "unknown: set RPA_PRICE_IN and RPA_PRICE_OUT or unset the budget")
    if not lines:
        return {}
    ids = [line["custom_id"] for line in lines]
    if repeated := [cid for cid, n in Counter(ids).items() if n > 1]:
        raise ValueError(f"custom ids must be unique in a round; repeated: {repeated[:5]}")
    folder = Path(folder)
    with contextlib.ExitStack() as stack:  # closes the ledger, then the lock's descriptor and with it the lock
        stack.callback(os.close, _lock(folder))
        ledger = stack.enter_context(contextlib.closing(Ledger(folder)))
        model = str(lines[0]["body"].get("model", ""))
        engine = _OpenAI(client, model, budget, folder) if mode == "openai" else _Files(model)
        round_n = ledger.open_round(round_key(ids, mode), mode)
        try:
            _answer(lines, ledger, round_n, engine, _Setup(folder, progress, poll_seconds, limits))
        except Exception as exc:
            failure = engine.failure(exc)
            if failure is None:
                raise
        else:
            results = ledger.results(round_n, ids)
            ledger.finish_round(round_n)
            return results
        raise failure  # outside the handler: not chained to the client's exception (it holds the headers)


def _lock(folder: Path) -> int:
    """A descriptor holding ``folder``'s lock: one round at a time answers a batch folder (two would submit the same
    requests twice, each paid); LLMFatalError naming the process that holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise LLMFatalError(f"{folder}: another run (process {holder}) is answering these batches now; a second one "
                            "would submit its requests again, paid twice. Let it end, then run the same command "
                            "again: every answer is kept") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


@dataclass
class _Setup:
    folder: Path
    progress: bool
    poll_seconds: float
    limits: Limits
    _shown: dict[str, tuple[str, float]] = field(default_factory=dict)  # what -> (state, when it was shown)

    def round_dir(self, round_n: int) -> Path:
        return self.folder / f"round-{round_n:04d}"

    def file(self, part: Part, name: str) -> Path:
        """``round-XXXX/{name}-N.jsonl`` of ``part`` (name: requests, results or errors)."""
        return self.round_dir(part.round) / f"{name}-{part.n}.jsonl"

    def show(self, what: str, state: str, since: float) -> None:
        """One line on stderr per change of ``what``'s state, and again after :data:`HEARTBEAT` seconds unchanged."""
        now = time.time()
        last = self._shown.get(what)
        if not (last and last[0] == state and now - last[1] < HEARTBEAT):
            self._shown[what] = (state, now)
            self.say(f"{what}: {state} ({elapsed(now - since)})")

    def say(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr, flush=True)

    def poll(self, parts: list[Part], look: Callable[[Part], None]) -> None:
        """``look`` at each live part, every ``poll_seconds``, until each is collected in the ledger."""
        while parts:
            for part in parts:
                look(part)
            parts = [part for part in parts if part.live]
            if parts:
                time.sleep(self.poll_seconds)


def _answer(lines: list[dict], ledger: Ledger, round_n: int, engine: _OpenAI | _Files, setup: _Setup) -> None:
    """Write the lines without an answer into new parts and have the live parts answered, again for the lines a
    batch never ran, until every line has a result or was submitted :data:`MAX_SUBMISSIONS` times."""
    by_id = {line["custom_id"]: line for line in lines}
    # batches an earlier run started for some of these lines, then stopped and asked for other lines: collected, not
    # submitted again (each would be paid twice)
    elsewhere = [part for part in ledger.started_elsewhere(round_n) if by_id.keys() & set(part.custom_ids)
                 and setup.file(part, "requests").is_file()] if isinstance(engine, _OpenAI) else []
    for part in elsewhere:
        setup.say(f"round {part.round} batch {part.n} ({part.batch_id}), started by an earlier run, holds "
                  f"{len(by_id.keys() & set(part.custom_ids))} of these requests: collected, not submitted again")
    while True:
        parts = ledger.parts(round_n)
        known = ledger.results(round_n, list(by_id))
        live = {cid for part in parts + elsewhere if part.live for cid in part.custom_ids}
        tries = Counter(cid for part in parts for cid in part.custom_ids)
        todo = [line for cid, line in by_id.items()
                if cid not in known and cid not in live and tries[cid] < MAX_SUBMISSIONS]
        for chunk in split_lines(todo, setup.limits):
            ledger.add_part(round_n, [line["custom_id"] for line in chunk])
        pending = [part for part in [*elsewhere, *ledger.parts(round_n)] if part.live]
        if not pending:
            return
        for part in pending:  # a run killed between the ledger's part and its file leaves no file: written here
            path = setup.file(part, "requests")
            if not path.exists():
                write_whole(path, "".join(jsonl(by_id[cid]) for cid in part.custom_ids))
        engine.finish(pending, ledger, setup)


# What running batches hold, per budget and batch folder, for as long as the budget lives: a round stopped while its
# batches run (an interrupt, a transport fault) leaves them held, and running it again in this process takes those
# holds over instead of holding the batches twice. Only collecting a batch settles its hold.
_RUNNING: weakref.WeakKeyDictionary[Budget, dict[str, dict[tuple[int, int], float]]] = weakref.WeakKeyDictionary()


class _OpenAI:
    """The OpenAI Batch API through the ``openai`` package: ``finish`` returns when each part is collected."""

    def __init__(self, client: Any, model: str, budget: Budget | None, folder: Path):
        self._client, self.model, self.budget = client, model, budget
        # (round, part) -> the estimate its batch holds in this process
        self._holds = {} if budget is None else _RUNNING.setdefault(budget, {}).setdefault(str(folder.resolve()), {})

    def failure(self, exc: Exception) -> Exception | None:
        """An error of the ``openai`` package as LLMFatalError, without the client's key or credentials (a server
        may echo them); None for any other exception."""
        import openai

        if not isinstance(exc, openai.OpenAIError):
            return None
        auth = str((getattr(self._client, "default_headers", None) or {}).get("Authorization", ""))
        secrets = [getattr(self._client, "api_key", None), auth, auth.partition(" ")[2]]
        text = scrub(f"{type(exc).__name__}: {exc}", [x for x in secrets if x and len(x) > 3])  # as OpenAILLM: no 3-letter placeholder
        if isinstance(exc, openai.NotFoundError):  # vLLM, llama.cpp's server: no /v1/files nor /v1/batches
            server = public_url(str(getattr(self._client, "base_url", "")))
            return LLMFatalError(f"batch transport: {text}; the server at {server} has no Batch API, or does not know "
                                 "this batch (vLLM and llama.cpp's server have none: use --batch files)")
        return LLMFatalError(f"batch transport: {text}; the round's progress is in its ledger: run again to resume")

    def finish(self, parts: list[Part], ledger: Ledger, setup: _Setup) -> None:
        if self._client is None:  # the backend's client: RPA_LLM_BASE_URL, OPENAI_API_KEY, its retries and timeout
            self._client = OpenAILLM(self.model, base_url=setting("RPA_LLM_BASE_URL"), cache=False).openai_client()
        client = self._client
        for part in parts:  # batches started before a restart count before another one starts
            if part.batch_id is not None:
                self._hold_started(part, setup)
        for part in parts:
            self._submit(client, part, ledger, setup)

        def look(part: Part) -> None:
            batch = client.batches.retrieve(part.batch_id)
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            if (batch.status, counts) != (part.status, part.counts):
                ledger.update(part, status=batch.status, counts=counts)
            setup.show(f"round {part.round} batch {part.n} ({part.batch_id})", _state(batch), part.created)
            if batch.status in TERMINAL:
                self._collect(client, part, batch, ledger, setup)

        setup.poll(parts, look)

    def _submit(self, client: Any, part: Part, ledger: Ledger, setup: _Setup) -> None:
        """Upload the part's file and start its batch, each unless the ledger says it was done (a batch created
        just before a kill, whose id the ledger missed, is found among the batches by its input file)."""
        resumed = part.file_id is not None
        if part.file_id is None:
            path = setup.file(part, "requests")
            with path.open("rb") as f:
                uploaded = client.files.create(file=(path.name, f), purpose="batch", timeout=TRANSFER_TIMEOUT)
            ledger.update(part, file_id=uploaded.id, status="uploaded")
        if part.batch_id is None:
            found = _find(client, part) if resumed else None
            if found:
                self._hold_started(part, setup)
            batch = found or self._start(client, part, setup)
            ledger.update(part, batch_id=batch.id, status=batch.status)
            setup.say(f"round {part.round} batch {part.n}: {len(part.custom_ids)} requests "
                      f"{'found' if found else 'submitted'} as {batch.id}")

    def _hold_started(self, part: Part, setup: _Setup) -> None:
        """Hold the estimate of a part whose batch another process started, unless this one holds it already."""
        if self.budget is not None and (part.round, part.n) not in self._holds:
            self._holds[part.round, part.n] = self.budget.hold_started(_estimate(setup.file(part, "requests")))

    def _start(self, client: Any, part: Part, setup: _Setup) -> Any:
        """Create the part's batch, under the budget's hold of its estimated cost when there is a budget."""
        if self.budget is None:
            return _create(client, part)
        held = self.budget.hold(_estimate(setup.file(part, "requests")), f"round {part.round}",
                                noun=f"batch {part.n} of {len(part.custom_ids)} requests")
        try:
            batch = _create(client, part)
        except BaseException:
            self.budget.settle(held, None)
            raise
        self._holds[part.round, part.n] = held
        return batch

    def _collect(self, client: Any, part: Part, batch: Any, ledger: Ledger, setup: _Setup) -> None:
        """Keep the ended batch's output and error files beside the request file, store its results (every line of
        a batch that failed validation gets the batch's errors), mark the part finished and book its cost."""
        results: dict[str, dict | None] = {}
        for name, file_id in (("results", batch.output_file_id), ("errors", batch.error_file_id)):
            if file_id:
                text = client.files.content(file_id, timeout=TRANSFER_TIMEOUT).text
                path = setup.file(part, name)
                path.write_text(text, encoding="utf-8")
                try:
                    results.update(parse_results(text, f"{path} (file {file_id} of {batch.id})"))
                except ValueError as exc:
                    raise LLMFatalError(f"batch transport: {exc}") from None
        if batch.status == "failed":
            results.update(_validation_errors(part, batch))
        kept = {cid: r for cid, r in results.items() if r is not None and cid in part.custom_ids}
        if self.budget is not None:  # booked first: a kill between the two books it again on restart, never not at all
            answers = [r for r in kept.values() if "error" not in r]
            cost = sum(batch_cost(model, *usage) or 0.0 for model, usage in _usages(answers))
            self.budget.settle(self._holds.pop((part.round, part.n)), cost, len(answers))
        ledger.collect(part, kept, batch.status)


def _find(client: Any, part: Part) -> Any:
    """The batch of ``part``'s input file, or None: ``batches.list`` pages newest first, read back only to the
    batches created before the part was written (less :data:`CLOCK_SKEW`), never the account's whole history."""
    since = part.created - CLOCK_SKEW
    recent = itertools.takewhile(lambda b: (b.created_at or since) >= since, client.batches.list(limit=100))
    return next((b for b in recent if b.input_file_id == part.file_id), None)


def _create(client: Any, part: Part) -> Any:
    """Start the batch of ``part``'s input file, as often as ``client`` retries a request. The client never retries
    it itself: a create sends no idempotency key, so a retry after a lost reply starts a second batch, paid and never
    collected; after a failure the server may have accepted, the batch is looked for by its input file first."""
    import openai  # the openai package, loaded when a batch is started

    once, tries = client.with_options(max_retries=0), 1 + client.max_retries
    policy = getattr(client, "retry_policy", RetryPolicy())
    for attempt in range(1, tries + 1):
        try:
            return once.batches.create(input_file_id=part.file_id, endpoint=ENDPOINT, completion_window="24h")
        except (openai.APIConnectionError, openai.APIStatusError) as exc:  # a timeout is a connection error
            status = getattr(exc, "status_code", None)
            if status is not None and not retried(status):
                raise
            if (found := _find(client, part)) is not None:
                return found
            if attempt == tries:
                raise
        time.sleep(policy.delay(attempt))


def _estimate(path: Path) -> float:
    """The most the requests in ``path`` can cost at batch price (every reply as long as its ``max_tokens``)."""
    bodies = [json.loads(line)["body"] for line in path.read_text(encoding="utf-8").splitlines()]
    return sum(batch_cost(str(b.get("model")), *body_tokens(b)) or 0.0 for b in bodies)


def _state(batch: Any) -> str:
    counts = batch.request_counts
    done = f", {counts.completed}/{counts.total} done, {counts.failed} failed" if counts and counts.total else ""
    return f"{batch.status}{done}"


def _validation_errors(part: Part, batch: Any) -> dict[str, dict]:
    """Errors for a batch that failed validation: a line's own error where one names it, else the others'."""
    errors = list(getattr(batch.errors, "data", None) or [])
    named = {e.line: e for e in errors if e.line and 1 <= e.line <= len(part.custom_ids)}
    general = "; ".join(e.message or e.code or "" for e in errors if e.line not in named) or "batch failed"
    out = {cid: {"error": {"code": "batch_failed", "message": general}} for cid in part.custom_ids}
    for line, e in named.items():
        out[part.custom_ids[line - 1]] = {"error": {"code": e.code or "batch_failed", "message": e.message or ""}}
    return out


@dataclass
class _Files:
    """Request files answered by whoever runs them: waits for ``results-N.jsonl`` beside each ``requests-N.jsonl``."""

    model: str

    def failure(self, exc: Exception) -> Exception | None:
        """None: no client, so nothing of the ``openai`` package to scrub."""
        return None

    def finish(self, parts: list[Part], ledger: Ledger, setup: _Setup) -> None:
        folder = setup.round_dir(parts[0].round)
        names = ", ".join(f"requests-{p.n}.jsonl" for p in parts)
        setup.say(
            f"Round {parts[0].round}: {sum(len(p.custom_ids) for p in parts)} requests in {folder} ({names}). "
            f"Run each file with an engine that reads the OpenAI batch format and write its results beside it, e.g.\n"
            f"  vllm run-batch -i requests-{parts[0].n}.jsonl -o results-{parts[0].n}.jsonl "
            f"--model {self.model or 'MODEL'}\n"
            "Waiting for every results-N.jsonl (docs/batch.md says how to run them elsewhere and copy them back).")

        def look(part: Part) -> None:
            results = _read_results(setup.file(part, "results"), setup.file(part, "requests"), part)
            have = len(results)
            setup.show(f"round {part.round} results-{part.n}.jsonl", f"{have}/{len(part.custom_ids)} lines",
                       part.created)
            if have == len(part.custom_ids):  # _read_results refuses a line of another file
                ledger.collect(part, {cid: r for cid, r in results.items() if r is not None}, "completed")

        setup.poll(parts, look)


def _read_results(path: Path, requests: Path, part: Part) -> dict[str, dict | None]:
    """The results in ``path`` so far (none while it is missing; a last line cut short is still being written or
    copied); LLMFatalError naming the file and line for a line that is no result or answers no request of ``part``."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")  # a cut may split a character
    except FileNotFoundError:
        return {}
    head, _, last = text.rpartition("\n")
    try:
        json.loads(last or "null")
    except ValueError:
        text = head  # the last line, not complete yet
    try:
        results = parse_results(text, str(path))
    except ValueError as exc:
        raise LLMFatalError(f"{exc}; correct or remove {path.name}, then run the same command again") from None
    asked = set(part.custom_ids)
    if foreign := [cid for cid in results if cid not in asked]:
        raise LLMFatalError(f"{path}: {len(foreign)} line(s) answer requests that {requests.name} does not hold "
                            f"(custom_id {', '.join(map(repr, foreign[:3]))}): the results of another file? Remove "
                            "it, then run the same command again")
    return results


def summary(folder: Path) -> dict:
    """Per round that sent anything, for a run record: mode, batch ids (or request files), requests submitted,
    answered and failed, tokens and dollars at batch price (None: not an OpenAI round, or a price unknown); totals."""
    with contextlib.closing(Ledger(Path(folder))) as ledger:
        rounds = [_round_summary(r) for r in ledger.rounds() if r["parts"]]  # not those answered from earlier ones
    dollars = [r["usd"] for r in rounds if r["usd"] is not None]
    totals = {k: sum(r[k] for r in rounds) for k in ("calls", "answered", "failed", "prompt_tokens",
                                                      "completion_tokens")}
    return {"rounds": rounds, **totals, "usd": sum(dollars) if dollars else None}


def _round_summary(record: dict) -> dict:
    answers = [r for r in record["results"].values() if "error" not in r]
    usages = _usages(answers)
    costs = [batch_cost(model, *usage) for model, usage in usages]
    parts = record["parts"]
    return {"round": record["round"], "mode": record["mode"],
            "batches": [p.batch_id or f"requests-{p.n}.jsonl" for p in parts],
            "calls": sum(len(p.custom_ids) for p in parts), "answered": len(answers),
            "failed": len(record["results"]) - len(answers), "prompt_tokens": sum(u[0] for _, u in usages),
            "completion_tokens": sum(u[1] for _, u in usages),
            "usd": sum(costs, 0.0) if record["mode"] == "openai" and None not in costs else None}


def tokens_of(body: dict) -> tuple[int, int]:
    """(prompt tokens, completion tokens) a completion body reports (0 where it reports none)."""
    usage = body.get("usage") or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def _usages(answers: list[dict]) -> list[tuple[str, tuple[int, int]]]:
    return [(answer["body"].get("model", ""), tokens_of(answer["body"])) for answer in answers]
