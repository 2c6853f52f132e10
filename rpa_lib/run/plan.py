"""A plan of a run before it runs: the table of calls, cached calls, tokens and dollars that the dry runs' records
(:class:`rpa_lib.llm.plan.PlanLLM`) add up to, the sample of characters a fast plan dry-runs, and the price of batch
rounds. It calls no model and writes no cache; its counts are estimates where a method adapts to the replies.
"""

from __future__ import annotations

import math

from rpa_lib.llm.batches import batch_price
from rpa_lib.llm.budget import price_override
from rpa_lib.llm.rounds import BATCH_LOOKAHEAD
from rpa_lib.llm.usage import PRICES_AS_OF, Price

# notebooks whose calls are a sum over characters, with their parameters that count items over all characters (the
# sample runs them divided by the factor); 06 draws a fixed number of samples over all characters: always run whole
PER_CHARACTER = {"03_chunk_usage": (), "04_personality": (), "05_qa_evaluation": ("check_items",),
                 "07_judge_agreement": ()}
SAMPLE_CHARACTERS = 3  # characters a fast plan dry-runs (of 15: counts x 5)
COUNTS = ("calls", "cached", "repeats", "to_pay", "in_tokens", "out_tokens", "choose_in", "choose_out", "choose_calls")


def character_sample(sizes: dict[str, int], k: int = SAMPLE_CHARACTERS) -> list[str]:
    """The middle character of each of ``k`` equal slices of ``sizes`` (slug -> persona size) sorted by size.
    ``character_sample({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}, 3) == ["b", "d", "f"]``"""
    ordered = sorted(sizes, key=lambda slug: (sizes[slug], slug))
    if k >= len(ordered):
        return ordered
    return [ordered[min(len(ordered) - 1, int((i + 0.5) * len(ordered) / k))] for i in range(k)]


def shared_keys(calls: list[dict]) -> set[str]:
    """Keys recorded for two or more characters: calls alike for every character (LightRAG's keywords of an item)."""
    seen: dict[str, str] = {}
    shared = set()
    for c in calls:
        who = c.get("character")
        if who is not None and seen.setdefault(c["key"], who) != who:
            shared.add(c["key"])
    return shared


def plan_rows(calls_by_notebook: dict[str, list[dict]], factors: dict[str, float] | None = None) -> list[dict]:
    """One row per notebook and model: ``calls``, ``cached`` (now), ``repeats`` (of an earlier call of the run),
    ``to_pay`` with its ``in_tokens``, ``out_tokens`` and ``cost`` (0 for a model run in this process, None: price unknown). ``factors``: notebook ->
    scale of a fast plan (``scaled``); a call alike for several characters is paid once."""
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
                "price": c["price"], "free": c["free"], "scaled": factor, **dict.fromkeys(COUNTS, 0.0)})
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
            row.update({key: round(row[key]) for key in COUNTS})
            price = row["price"]
            row["cost"] = (Price(*price).cost(row["in_tokens"], row["out_tokens"]) if price is not None
                           else 0.0 if row["free"] else None)
            rows.append(row)
    return rows


def plan_total(rows: list[dict]) -> float | None:
    costs = [r["cost"] for r in rows]
    return None if any(c is None for c in costs) else sum(costs)


GS_EXTRA_CALLS = 0.11  # Guided Selection's extra judge calls in batch mode (docs/design/run.md: how it was measured)
ROUNDS_AFTER_GS = 4  # the Attribute Extractor, the answer, the control's answer, the judges


def batch_rounds(max_iterations: int) -> int:
    """The rounds a batch run takes: a walk's ``ceil(N / lookahead)`` and :data:`ROUNDS_AFTER_GS`.
    ``batch_rounds(30) == 8``"""
    return math.ceil(max(max_iterations, 1) / BATCH_LOOKAHEAD) + ROUNDS_AFTER_GS


def batch_total(rows: list[dict]) -> float | None:
    """The calls to pay at batch rates (an in-process engine given a price: at that price), constrained choices
    counted :data:`GS_EXTRA_CALLS` more (an upper bound); None when a model's price is unknown."""
    total = 0.0
    for r in rows:
        if r["free"] and r["price"] is None:
            continue
        if r["price"] is None:
            return None
        price = Price(*r["price"]) if r["free"] else batch_price(Price(*r["price"]))  # an engine: its own price
        total += price.cost(r["in_tokens"], r["out_tokens"])
        total += GS_EXTRA_CALLS * price.cost(r["choose_in"], r["choose_out"])
    return total


def batch_text(rows: list[dict], max_iterations: int) -> str:
    """The plan's line on batch rounds: the price at batch rates beside the synchronous one, and the rounds."""
    sync, batch = plan_total(rows), batch_total(rows)
    share = f", {batch / sync:.0%} of the synchronous {_money(sync)}" if sync and batch is not None else ""
    extra = round(GS_EXTRA_CALLS * sum(r["choose_calls"] for r in rows))
    return (f"batch rounds (--batch openai): {_money(batch)} at batch rates (half price; every constrained choice "
            f"counted {GS_EXTRA_CALLS:.0%} more for Guided Selection's look-ahead of {BATCH_LOOKAHEAD}: at most "
            f"{extra:,} calls beyond a synchronous run's {sum(r['to_pay'] for r in rows):,} to pay){share}; "
            f"about {batch_rounds(max_iterations)} rounds (a walk of N={max_iterations} judges "
            f"{BATCH_LOOKAHEAD} chunks a round: at most {math.ceil(max(max_iterations, 1) / BATCH_LOOKAHEAD)}; then "
            f"{ROUNDS_AFTER_GS} for the extractor, the answer, the control's answer and the judges; a re-ask adds one)")


def _money(cost: float | None) -> str:
    return "price unknown" if cost is None else f"${cost:,.2f}"


def plan_table(rows: list[dict], notebooks: list[str], skipped: dict[str, str] | None = None,
               sample: str | None = None) -> str:
    """The plan as text: how it was made, a line per notebook and model, the totals and prices. ``skipped``:
    notebook -> why it has no row; ``sample``: the fast plan's header line."""
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

    def line(first: str, r: dict) -> str:
        return (f"{first:<24} {r['label'][:34]:<34} {r['calls']:>8,} {r['cached']:>8,} {r['repeats']:>8,} "
                f"{r['to_pay']:>8,} {r['in_tokens']:>12,} {r['out_tokens']:>12,} {_money(r['cost']):>14}")

    for nb in notebooks:
        if nb in skipped:
            lines.append(f"{nb:<24} ({skipped[nb]})")
        for r in (r for r in rows if r["notebook"] == nb):
            lines.append(line(f"{nb} (x{r['scaled']:.3g})" if r["scaled"] != 1.0 else nb, r))
    total = {k: sum(r[k] for r in rows) for k in COUNTS}
    lines += [line("total", {**total, "label": "", "cost": plan_total(rows)}), ""]
    models = {(r["label"], r["model"], r["server"]): (r["price"], r["free"]) for r in rows}
    for (label, model, server), (price, free) in models.items():
        where = f" at {server}" if server else ""
        said = (f"${price[0]:.2f} / ${price[1]:.2f} per million input / output tokens" if price is not None
                else "runs in this process, no API cost: tokens only" if free
                else "price unknown (set RPA_PRICE_IN and RPA_PRICE_OUT): tokens only")
        lines.append(f"model {label} ({model}{where}): {said}")
    if models:
        lines.append("(prices from RPA_PRICE_IN / RPA_PRICE_OUT)" if price_override() else
                     f"(price table of {PRICES_AS_OF}; RPA_PRICE_IN / RPA_PRICE_OUT override it)")
    return "\n".join(lines)
