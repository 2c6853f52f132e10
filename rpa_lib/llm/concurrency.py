"""Run a function over items with a bounded thread pool and a progress bar, keeping input order.

Each item yields one :class:`Outcome`: its value, or the exception it raised as ``"ExcType: message"``; nothing
is dropped and nothing is None. Threads suit LLM calls (they wait on the network or on torch, which releases
the GIL). This module does not retry, cache or rate-limit: the LLM call inside ``fn`` does that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from rpa_lib.llm.reply import Outcome


def _run_one(fn: Callable[[Any], Any], item: Any) -> Outcome:
    try:
        return Outcome(item, value=fn(item))
    except Exception as exc:  # recorded, never raised: one failed item must not stop the others
        return Outcome(item, error=f"{type(exc).__name__}: {exc}")


def run_map(
    fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int = 1, desc: str = "llm", progress: bool = True
) -> list[Outcome]:
    """``[Outcome(item, fn(item)) ...]`` in input order, at most ``workers`` at a time. ``run_map(len, ["ab"])``"""
    from tqdm import tqdm

    items = list(items)
    outcomes: list[Outcome | None] = [None] * len(items)
    failed = 0
    with tqdm(total=len(items), desc=desc, disable=not progress, leave=False) as bar:

        def done(i: int, outcome: Outcome) -> None:
            nonlocal failed
            outcomes[i] = outcome
            failed += not outcome.ok
            if failed:
                bar.set_postfix(failed=failed, refresh=False)
            bar.update()

        if workers <= 1:
            for i, item in enumerate(items):
                done(i, _run_one(fn, item))
        else:
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpa-llm")
            try:
                futures = {pool.submit(_run_one, fn, item): i for i, item in enumerate(items)}
                for future in as_completed(futures):
                    done(futures[future], future.result())
            finally:  # on Ctrl-C, drop the queued items instead of running them all first
                pool.shutdown(wait=True, cancel_futures=True)
    return outcomes  # type: ignore[return-value]
