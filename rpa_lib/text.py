"""Text helpers shared by several layers: the sentence segmenter (pysbd), the cut of ranked texts to a length
budget, the reader of JSON-lines files, a file written whole and the two chat messages of a prompt. No model, no
retrieval."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

_LOCAL = threading.local()  # a pysbd segmenter keeps the text it segments on itself: one per thread


def segmenter(language: str = "en", spans: bool = False):
    """This thread's pysbd segmenter for ``language`` (no cleaning; ``spans``: ``segment`` returns character spans)."""
    made = vars(_LOCAL).setdefault("segmenters", {})
    if (language, spans) not in made:
        import pysbd

        made[language, spans] = pysbd.Segmenter(language=language, clean=False, char_span=spans)
    return made[language, spans]


def write_whole(path: Path, text: str) -> None:
    """``path`` written whole or not at all (a temporary file beside it, then renamed): a kill while writing keeps
    what was there, and a reader meanwhile reads the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def within_budget(ranked: Sequence[str], budget: int, length: Callable[[str], int] = len,
                  prefix: Callable[[str, int], str] | None = None) -> list[str]:
    """The top-ranked texts while they fit ``budget``, then the first that does not cut to the rest (``length`` and
    ``prefix`` count and cut in other units). ``within_budget(["abcd", "efgh", "ij"], 6)`` -> ``["abcd", "ef"]``"""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    prefix = prefix or (lambda text, n: text[:n])
    out, spent = [], 0
    for text in ranked:
        if not isinstance(text, str):
            raise TypeError(f"retrieved chunks must be strings, got {type(text).__name__}")
        if spent >= budget:
            break
        size = length(text)
        if spent + size <= budget:
            out.append(text)
            spent += size
        else:
            out.append(prefix(text, budget - spent))
            break
    return out


def read_jsonl(path: str | Path) -> list[dict]:
    """The JSON lines of a file (misses, plan records, key points, outcomes), in order ([] when there is none)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def chat(system: str, user: str) -> list[dict]:
    """A system and a user message: the shape of every prompt the methods and the evaluators send."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
