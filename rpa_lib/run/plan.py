"""A plan of a run before it runs: the table of calls, cached calls, tokens and dollars that the dry runs'
records add up to, and the sample of characters a fast plan dry-runs.

``python -m rpa_lib.reproduce --plan`` executes each notebook with a run mode whose ``plan_file`` makes every LLM a
recording stand-in (:class:`rpa_lib.llm.plan.PlanLLM`) and prints :func:`plan_table` of the files they wrote.

The counts are estimates wherever a method adapts to the model's replies: Guided Selection stops when its slots
fill, CRAG rewrites its query when the evaluator says the chunks are weak, a judge is re-asked after an invalid
answer; the stand-in's answers take one path, a model may take another. Nothing here calls a model or writes to
the reply cache.

Batch rounds (:mod:`rpa_lib.run.rounds`) are priced beside: :func:`batch_text` gives the calls to pay at batch
rates (half the price), plus the judge calls Guided Selection adds in batch mode, and the rounds a run takes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from rpa_lib.llm.batches import batch_price
from rpa_lib.llm.budget import price_override
from rpa_lib.llm.rounds import BATCH_LOOKAHEAD
from rpa_lib.llm.usage import PRICES_AS_OF, Price

# ---- a fast plan: a sample of the characters ----------------------------------------------------------------------

# notebooks whose LLM calls are a sum over characters (each one's items, index and judgements): a fast plan dry-runs
# them on a sample of the characters and scales their counts; with the parameters that count items over all the
# characters together, which the sample runs divided by the factor (05's judge check: check_items cases in all).
# Notebook 06 draws a fixed number of samples over all the characters, so it always runs whole.
PER_CHARACTER = {"03_chunk_usage": (), "04_personality": (), "05_qa_evaluation": ("check_items",),
                 "07_judge_agreement": ()}
SAMPLE_CHARACTERS = 3  # characters a fast plan dry-runs (of 15: counts x 5)


def character_sample(sizes: dict[str, int], k: int = SAMPLE_CHARACTERS) -> list[str]:
    """``k`` characters spread over the persona sizes (``sizes``: slug -> characters of its persona): the middle
    one of each of ``k`` equal slices of the characters sorted by size, so that the sample's mean size is near the
    whole's. ``character_sample({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}, 3) == ["b", "d", "f"]``"""
    ordered = sorted(sizes, key=lambda slug: (sizes[slug], slug))
    if k >= len(ordered):
        return ordered
    return [ordered[min(len(ordered) - 1, int((i + 0.5) * len(ordered) / k))] for i in range(k)]


# ---- the plan's table ------------------------------------------------------------------------------------------


def read_plan(path: str | Path) -> list[dict]:
    """The calls recorded in a plan file, in order ([] when there is none)."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def shared_keys(calls: list[dict]) -> set[str]:
    """Keys recorded for two or more characters: calls that do not depend on the character (LightRAG's keywords
    of a questionnaire item), made alike by every character and paid for once."""
    seen: dict[str, str] = {}
    shared = set()
    for c in calls:
        who = c.get("character")
        if who is not None and seen.setdefault(c["key"], who) != who:
            shared.add(c["key"])
    return shared


def plan_rows(calls_by_notebook: dict[str, list[dict]], factors: dict[str, float] | None = None) -> list[dict]:
    """One row per notebook and model: ``calls``; ``cached`` (in the reply cache now); ``repeats`` (not cached
    now, but an identical call earlier in the run will have cached it); ``to_pay`` (the rest) with their estimated
    ``in_tokens``, ``out_tokens`` and ``cost`` (None when the price is unknown). Notebooks in the given order.
    ``factors``: notebook -> characters of the run per character dry-run (a fast plan): each call counts that many
    times, and a call to pay too, unless it was made alike for several characters (:func:`shared_keys`: paid
    once, the rest repeats); ``scaled`` names the factor (1.0: counted whole)."""
    factors = factors or {}
    seen: set[str] = set()
    rows = []
    for notebook, calls in calls_by_notebook.items():
        factor = factors.get(notebook, 1.0)
        shared = shared_keys(calls) if factor != 1.0 else set()
        by_model: dict[str, dict] = {}
        for c in calls:
            row = by_model.setdefault(c["model"], {
                "notebook": notebook, "label": c["label"], "model": c["model"], "server": c["server"],
                "price": c["price"], "scaled": factor, "calls": 0.0, "cached": 0.0, "repeats": 0.0, "to_pay": 0.0,
                "in_tokens": 0.0, "out_tokens": 0.0, "choose_in": 0.0, "choose_out": 0.0, "choose_calls": 0.0})
            row["calls"] += factor
            if c["cached"]:
                row["cached"] += factor
            elif c["key"] in seen:
                row["repeats"] += factor
            else:
                paid = 1.0 if c["key"] in shared else factor
                row["to_pay"] += paid
                row["repeats"] += factor - paid
                row["in_tokens"] += paid * c["in"]
                row["out_tokens"] += paid * c["out"]
                if c["kind"] == "choose":  # Guided Selection's judge calls are among them (batch_text)
                    row["choose_calls"] += paid
                    row["choose_in"] += paid * c["in"]
                    row["choose_out"] += paid * c["out"]
            seen.add(c["key"])
        for row in by_model.values():
            for key in ("calls", "cached", "repeats", "to_pay", "in_tokens", "out_tokens", "choose_in", "choose_out",
                        "choose_calls"):
                row[key] = round(row[key])
            price = row["price"]
            row["cost"] = None if price is None else (row["in_tokens"] * price[0] + row["out_tokens"] * price[1]) / 1e6
            rows.append(row)
    return rows


def plan_total(rows: list[dict]) -> float | None:
    """The estimated cost of every call still to pay for; None when a model's price is unknown."""
    costs = [r["cost"] for r in rows]
    return None if any(c is None for c in costs) else sum(costs)


# ---- batch rounds -----------------------------------------------------------------------------------------------

# extra Guided Selection judge calls in batch mode (window BATCH_LOOKAHEAD = 8) over a synchronous run (window 4):
# `python -m benchmarks gs --rounds`, 24 walks, N=30, K=2, a judge saying yes to 12% (docs/benchmarks.md)
GS_EXTRA_CALLS = 0.11
# rounds after Guided Selection's walk: the Attribute Extractor, the answer, the budget-matched control's answer,
# the judges; measured: the smoke profile (N=4, one round of walk) takes 5 rounds (docs/plan_and_budget.md)
ROUNDS_AFTER_GS = 4


def batch_rounds(max_iterations: int, lookahead: int = BATCH_LOOKAHEAD) -> int:
    """The rounds a batch run takes, estimated: the most rounds a walk of ``max_iterations`` chunks takes
    (``ceil(N / lookahead)``, when its slot fills last) and :data:`ROUNDS_AFTER_GS`; a re-ask after an invalid
    reply adds one for its item. ``batch_rounds(30) == 8``"""
    return math.ceil(max(max_iterations, 1) / lookahead) + ROUNDS_AFTER_GS


def batch_total(rows: list[dict]) -> float | None:
    """The calls to pay at batch rates, every constrained choice (Guided Selection's judge calls are among them)
    counted :data:`GS_EXTRA_CALLS` more: an upper bound. None when a model's price is unknown."""
    total = 0.0
    for r in rows:
        if r["price"] is None:
            return None
        price = batch_price(Price(*r["price"]))
        total += price.cost(r["in_tokens"], r["out_tokens"])
        total += GS_EXTRA_CALLS * price.cost(r["choose_in"], r["choose_out"])
    return total


def batch_text(rows: list[dict], max_iterations: int) -> str:
    """The plan's lines on batch rounds: the price at batch rates beside the synchronous one, and the rounds."""
    sync, batch = plan_total(rows), batch_total(rows)
    share = f", {batch / sync:.0%} of the synchronous {_money(sync)}" if sync and batch is not None else ""
    extra = round(GS_EXTRA_CALLS * sum(r["choose_calls"] for r in rows))
    return (f"batch rounds (--batch openai): {_money(batch)} at batch rates (half price; every constrained choice "
            f"counted {GS_EXTRA_CALLS:.0%} more for Guided Selection's look-ahead of {BATCH_LOOKAHEAD}: at most "
            f"{extra:,} calls beyond a synchronous run's {sum(r['to_pay'] for r in rows):,} to pay){share}; about {batch_rounds(max_iterations)} rounds (a walk of N={max_iterations} judges "
            f"{BATCH_LOOKAHEAD} chunks a round: at most {math.ceil(max(max_iterations, 1) / BATCH_LOOKAHEAD)}; then "
            f"{ROUNDS_AFTER_GS} for the extractor, the answer, the control's answer and the judges; a re-ask adds one)")


def _money(cost: float | None) -> str:
    return "price unknown" if cost is None else f"${cost:,.2f}"


def plan_table(rows: list[dict], notebooks: list[str], skipped: dict[str, str] | None = None,
               sample: str | None = None) -> str:
    """The plan as text: a header saying how it was made, one line per notebook and model, the models' prices
    and the totals. ``skipped``: notebook -> why it has no row (e.g. "no LLM calls"); ``sample``: which
    notebooks were dry-run on a sample of the characters, and how they were scaled."""
    skipped = skipped or {}
    lines = [*([sample, ""] if sample else []),
        "Estimates from a dry run with a stand-in LLM (no model was called). Adaptive methods (Guided Selection,",
        "CRAG, re-asks after an invalid answer) take paths that depend on the model's replies: the stand-in follows",
        "cached replies where there are some and answers the rest itself, so the counts are an estimate.",
        "Tokens: about 4 characters a token; output tokens are each request's max_tokens (an upper bound; for a",
        "choice, the JSON naming the longest option), so the cost is an upper bound for the calls counted.",
        "Cached: in the reply cache now; repeats: identical to an earlier call of this run, cached by then.", "",
        f"{'notebook':<24} {'model':<34} {'calls':>8} {'cached':>8} {'repeats':>8} {'to pay':>8} "
        f"{'in tokens':>12} {'out tokens':>12} {'cost':>14}",
    ]
    for nb in notebooks:
        if nb in skipped:
            lines.append(f"{nb:<24} ({skipped[nb]})")
        for r in (r for r in rows if r["notebook"] == nb):
            nb_shown = f"{nb} (x{r['scaled']:.3g})" if r.get("scaled", 1.0) != 1.0 else nb
            lines.append(f"{nb_shown:<24} {r['label'][:34]:<34} {r['calls']:>8,} {r['cached']:>8,} {r['repeats']:>8,} "
                         f"{r['to_pay']:>8,} {r['in_tokens']:>12,} {r['out_tokens']:>12,} {_money(r['cost']):>14}")
    total = {k: sum(r[k] for r in rows) for k in ("calls", "cached", "repeats", "to_pay", "in_tokens", "out_tokens")}
    cost = plan_total(rows)
    lines.append(f"{'total':<24} {'':<34} {total['calls']:>8,} {total['cached']:>8,} {total['repeats']:>8,} "
                 f"{total['to_pay']:>8,} {total['in_tokens']:>12,} {total['out_tokens']:>12,} {_money(cost):>14}")
    lines.append("")
    models = {(r["label"], r["model"], r["server"]): r["price"] for r in rows}
    for (label, model, server), price in models.items():
        where = f" at {server}" if server else ""
        said = (f"${price[0]:.2f} / ${price[1]:.2f} per million input / output tokens"
                if price is not None else "price unknown (set RPA_PRICE_IN and RPA_PRICE_OUT): tokens only")
        lines.append(f"model {label} ({model}{where}): {said}")
    if models:
        lines.append("(prices from RPA_PRICE_IN / RPA_PRICE_OUT)" if price_override() else
                     f"(price table of {PRICES_AS_OF}; RPA_PRICE_IN / RPA_PRICE_OUT override it)")
    return "\n".join(lines)
