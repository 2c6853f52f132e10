"""HTML views for JupyterLab of ranked chunks, a method's ``Response`` and a persona's chunks, used by their
``_repr_html_`` and by :mod:`rpa_lib.explore`. Long texts fold with ``<details>``; every text is escaped. It computes
nothing and calls no LLM.

>>> fold("a short text")
'a short text'
"""

from __future__ import annotations

import html
from collections.abc import Sequence

PREVIEW = 90  # characters of a folded text shown before it is opened

STYLE = ("<style>.rpa-t{border-collapse:collapse;font-size:12px;margin:2px 0}"
         ".rpa-t th,.rpa-t td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
         ".rpa-t summary{cursor:pointer}.rpa-yes{color:#1a7f37;font-weight:600}.rpa-no{color:#999}"
         ".rpa-spec{color:#b35900}.rpa-reply{background:#f6f8fa;border-left:3px solid #0969da;padding:4px 8px;"
         "white-space:pre-wrap}.rpa-muted{color:#666;font-size:11px}.rpa-error{color:#cf222e}</style>")


def detail_text(value, width: int = 80) -> str:
    """A method's detail as one line: numbers rounded, lists and dicts summarised, long text cut.

    >>> detail_text([0.71234, 0.2]), detail_text({"a": 1, "b": "x"}), detail_text([{"source": "persona"}] * 3)
    ('0.712, 0.2', 'a: 1, b: x', '3 items')
    """
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        text = ", ".join(f"{k}: {detail_text(v, width)}" for k, v in value.items())
    elif isinstance(value, list | tuple):
        if value and all(isinstance(v, dict) for v in value):
            return f"{len(value)} items"
        text = ", ".join(detail_text(v, width) for v in value)
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def details_lines(details: dict, skip=("attributes",)) -> list[str]:
    """``details`` as ``"key: value"`` lines (underscores as spaces, values via :func:`detail_text`)."""
    return [f"{k.replace('_', ' ')}: {detail_text(v)}" for k, v in details.items() if k not in skip]


def esc(text: object) -> str:
    return html.escape(str(text))


def fold(text: str, preview: int = PREVIEW) -> str:
    """``text`` escaped, and folded (the start shows, a click opens the rest) when longer than ``preview``."""
    if len(text) <= preview:
        return esc(text)
    return f"<details><summary>{esc(text[:preview].rstrip())}…</summary>{esc(text)}</details>"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; cells are HTML already (escape with :func:`esc` / :func:`fold`)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'{STYLE}<table class="rpa-t"><tr>{head}</tr>{body}</table>'


def chunk_text(chunk) -> str:
    """A chunk's body: its text without the heading path ACTS puts in front."""
    return chunk.body or chunk.text


def hits_html(hits: Sequence) -> str:
    return table(["rank", "score", "heading path", "chunk", "text"],
                 [[str(i), f"{h.score:.3f}", esc(h.chunk.context), esc(h.chunk.id), fold(chunk_text(h.chunk))]
                  for i, h in enumerate(hits, start=1)])


def chunks_html(chunks: Sequence, *, limit: int | None = None) -> str:
    """A persona's chunks: id, length, overlap with the chunk before (in the source), heading path, text folded;
    ``limit``: the first chunks only (the rest are counted)."""
    shown = chunks[:limit] if limit else chunks
    rows = [[esc(c.id.rsplit(":", 1)[-1]), str(len(chunk_text(c))),
             str(prev.end - c.start) if prev is not None and prev.end > c.start else "", esc(c.context),
             fold(chunk_text(c))] for prev, c in zip([None, *shown], shown)]  # each chunk with the one before it
    more = f'<div class="rpa-muted">… and {len(chunks) - limit} more</div>' if limit and len(chunks) > limit else ""
    return table(["#", "length", "overlap", "heading path", "text"], rows) + more


def walk_html(walk: Sequence[tuple], speculative: Sequence = ()) -> str:
    """GS's walk: each examined chunk (``(hit, verdict)`` pairs) with the judge's verdict, then the ``speculative``
    hits judged ahead and discarded."""
    steps = [(hit, f'<span class="rpa-{"yes" if ok else "no"}">{"kept" if ok else "no"}</span>') for hit, ok in walk]
    steps += [(hit, '<span class="rpa-spec">speculative</span>') for hit in speculative]
    return table(["step", "score", "verdict", "heading path", "text"],
                 [[str(i), f"{hit.score:.3f}", verdict, esc(hit.chunk.context), fold(chunk_text(hit.chunk))]
                  for i, (hit, verdict) in enumerate(steps, start=1)])


FREE = "no API cost (runs in this process)"  # what an in-process engine's calls cost, in every summary


def calls_line(calls: Sequence, price=None, free: bool = False) -> str:
    """"5 calls (2 from cache) · 812 + 40 tokens · 3.1 s · $0.0001" (cost only when the model has a price, ``free``:
    it runs in this process; ", 1 coerced" after the cache count when choices were coerced from logprobs)."""
    cached, coerced = sum(c.cached for c in calls), sum(c.coerced for c in calls)
    prompt, completion = sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls)
    cost = (f"${price.cost(prompt, completion):.4f}" if price is not None
            else FREE if free else "cost unknown (no price for this model)")
    coerced_note = f", {coerced} coerced" if coerced else ""
    return " · ".join([f"{len(calls)} call{'s' * (len(calls) != 1)} ({cached} from cache{coerced_note})",
                       f"{prompt} + {completion} tokens", f"{sum(c.seconds for c in calls):.1f} s", cost])


def context_html(items: Sequence, scores: dict[str, float]) -> str:
    """What reached the LLM: role, label, source chunks, similarity to the question (from ``scores``), text."""

    def score(item) -> str:
        known = [scores[c] for c in item.chunk_ids if c in scores]
        return f"{max(known):.3f}" if known and len(item.chunk_ids) == 1 else ""

    return table(["role", "label", "from chunks", "score", "text"],
                 [[esc(i.role), esc(i.label), esc(", ".join(c.rsplit(":", 1)[-1] for c in i.chunk_ids)), score(i),
                   fold(i.text)] for i in items])


def response_html(response, *, walk: Sequence[tuple] | None = None, speculative: Sequence = (), price=None,
                  free: bool = False, retrieved: Sequence = (), label: str | None = None) -> str:
    """One method's answer: reply, calls line, retrieved chunks and GS's walk (when given), AE's attributes, other
    details and the context that reached the LLM. ``label``: the method's display name (default its registry name)."""
    r, d = response, response.details or {}
    parts = [f"{STYLE}<div><b>{esc(label or r.method)}</b> · {esc(r.character)}</div>",
             f'<div class="rpa-reply">{esc(r.reply) or "<i>(empty reply)</i>"}</div>',
             f'<div class="rpa-muted">{esc(calls_line(r.calls, price, free))}</div>']
    if retrieved:
        parts.append(f"<div><b>Retrieved</b> (top {len(retrieved)})</div>" + hits_html(retrieved))
    if walk is not None:
        status = " · GS failed: the slot stayed empty, the top K+1 were used" if d.get("gs_failed") else ""
        parts.append(f"<div><b>Guided Selection</b>: {len(walk)} examined, {d.get('speculative', 0)} "
                     f"speculative{status}</div>{walk_html(walk, speculative)}")
    elif "examined" in d:
        parts.append(f"<div><b>Guided Selection</b>: {d['examined']} examined, {d.get('speculative', 0)} speculative"
                     f"{', failed' if d.get('gs_failed') else ''}</div>")
    if d.get("attributes"):
        rows = [[esc(k), fold(v, 240)] for k, v in d["attributes"].items()]
        parts.append("<div><b>Attributes (AE)</b></div>" + table(["attribute", "text"], rows))
    if other := details_lines(d, skip=("attributes", "examined", "speculative", "gs_failed")):
        parts.append(f'<div class="rpa-muted">{"<br>".join(esc(line) for line in other)}</div>')
    scores = {h.chunk.id: h.score for h in [*retrieved, *(h for h, _ in walk or ()), *speculative]}
    parts.append(f"<div><b>Context that reached the LLM</b> ({len(r.context)} items)</div>"
                 + context_html(r.context, scores))
    return "".join(parts)


def error_html(method: str, error: str) -> str:
    return f'{STYLE}<div><b>{esc(method)}</b></div><div class="rpa-error">{esc(error)}</div>'
