"""Known-quality cases: replies whose verdict, or whose order, is known by construction, built from our own QA.

- The judge check of the QA judges (AMADEUS Table 6; :func:`judge_check_cases`, :data:`CHECKS`);
- the quality ladder of the CharacterCraft judge (CharacterCraft Table 6; :func:`build_ladder`, :data:`RUNGS`,
  :data:`EXPECTED`): per QA question, replies whose level on each dimension is known (2 best; None: no claim).

The ladder tests whether a judge orders replies that differ in a built-in way; it cannot test whether the reference
answer helps (see docs/design/evaluation.md). Calls no LLM and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rpa_lib.data import QA, Dataset
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.runner import spread

# Facts no persona of ours states: said of the character by name (judge check) and by the character (ladder).
INVENTED_FACTS = (
    ("{name} also won a national chess championship three years in a row.",
     "I also won a national chess championship three years in a row."),
    ("{name} has a twin sibling who runs a bakery in Lisbon.", "Besides, I have a twin who runs a bakery in Lisbon."),
    ("{name} once spent a whole winter living on a lighthouse ship in the Arctic.",
     "And I spent a whole winter living on a lighthouse ship in the Arctic."),
    ("{name} keeps a pet tortoise called Admiral that is ninety years old.",
     "I also keep a ninety-year-old pet tortoise called Admiral."),
    ("{name} secretly writes opera librettos under a false name.",
     "And in secret I write opera librettos under a false name."),
    ("{name} was born on a train crossing the Andes.", "I was born, by the way, on a train crossing the Andes."),
)
INVENTIONS_FIRST_PERSON = tuple(said_by for _, said_by in INVENTED_FACTS)
DENIAL = "That is not true. It is false that: {answer}"
DISMISSIVE_DENIAL = ("No. Whoever told you that has it wrong: it is simply not true of me that {answer_lower} I have "
                     "never cared about any of that, and I am not going to pretend otherwise. Ask someone else.")
OUT_OF_CHARACTER = ("As an AI language model, I do not have personal experiences, but I can share what the character "
                    "description says. {answer} I hope this information is helpful! Let me know if you have any "
                    "other questions.")


# check -> (metric, expected, what it tests, the case judged, the case it must score above (None: a yes/no check))
CHECKS = {
    "acc: gold answer": ("acc", "yes", "the gold answer itself contains the correct answer", "gold", None),
    "acc: another character's answer": ("acc", "no", "another character's answer to a question of the same attribute",
                                        "other", None),
    "acc: denial of the gold answer": ("acc", "no", "a reply that denies the gold answer", "denial", None),
    "acc_l: gold above another character's": ("acc_l", "higher", "ACC_L of the gold answer above that of another "
                                               "character's answer", "gold", "other"),
    "hs: invented addition above plain": ("hs", "higher", "HS of the gold answer plus an invented fact above HS of "
                                           "the plain gold answer (context: the QA's evidence)", "invented", "gold"),
}


def _balanced(pairs: list[tuple[str, QA]], n: int) -> list[tuple[str, QA]]:
    """``n`` of ``(character, qa)``, each pick the least-used attribute, its least-used character, its first
    unused item."""
    attrs = list(dict.fromkeys(q.attribute for _, q in pairs))
    chars = list(dict.fromkeys(c for c, _ in pairs))
    used_a, used_c, free, chosen = Counter(), Counter(), list(pairs), []
    while free and len(chosen) < n:
        a = min({q.attribute for _, q in free}, key=lambda a: (used_a[a], attrs.index(a)))
        c, q = min((p for p in free if p[1].attribute == a), key=lambda p: (used_c[p[0]], chars.index(p[0])))
        free.remove((c, q))
        chosen.append((c, q))
        used_a[a] += 1
        used_c[c] += 1
    return chosen


def judge_check_cases(dataset: Dataset, characters: list[str], n: int = 6) -> list[dict]:
    """``n`` gold answers spread over attributes and characters, each with the replies of :data:`CHECKS` (another
    character's answer left out with a single character). One dict per (item, reply) with what the judge needs."""
    pairs = [(c, q) for c in characters for q in dataset.qa(c)]
    names = {c: dataset.profile(c)[0] for c in characters}
    cases = []
    for i, (c, q) in enumerate(_balanced(pairs, n)):
        name = names[c]
        base = {"item": i, "character": c, "qa_id": q.id, "attribute": q.attribute, "name": name,
                "question": q.question, "gold": q.answer,
                "context": [{"role": "evidence", "text": e, "label": ""} for e in q.evidence]}
        others = [(oc, oq) for oc, oq in pairs if oc != c and oq.attribute == q.attribute]
        other = others[i % len(others)] if others else None
        invented = f"{q.answer} {INVENTED_FACTS[i % len(INVENTED_FACTS)][0].format(name=name)}"
        cases += [{**base, "case": "gold", "metric": "acc", "reply": q.answer},
                  {**base, "case": "denial", "metric": "acc", "reply": DENIAL.format(answer=q.answer)},
                  {**base, "case": "gold", "metric": "acc_l", "reply": q.answer},
                  {**base, "case": "gold", "metric": "hs", "reply": q.answer},
                  {**base, "case": "invented", "metric": "hs", "reply": invented}]
        if other is not None:
            cases += [{**base, "case": "other", "metric": metric, "reply": other[1].answer, "other_qa": other[1].id}
                      for metric in ("acc", "acc_l")]
    return cases


LADDER_SOURCE = "quality ladder (known order by construction), not human"
RUNGS = {
    "in_character": "the QA's evidence sentences, in the character's first-person voice",
    "out_of_character": "the gold answer in the third person, inside an AI assistant's phrases",
    "partly_wrong": "part of the evidence plus a claim about the character that the persona never makes",
    "contradicts_persona": "a flat, dismissive denial of the gold answer",
    "off_topic": "another character's evidence for a question of the same attribute",
    "garbled": "the in-character reply with the words of each sentence shuffled",
}
DEFAULT_RUNGS = tuple(RUNGS)
LADDER_COLUMNS = ["reply_id", "character", "qa_id", "attribute", "question", "reference", "rung", "reply", "source"]

_ = None  # no claim
EXPECTED = {  # rung -> expected level per dimension (flu, coh, bg, pers, us, emo, dec, hl); higher is better
    "in_character": dict(flu=2, coh=2, bg=2, pers=2, us=2, emo=2, dec=2, hl=2),
    "out_of_character": dict(flu=2, coh=2, bg=2, pers=1, us=0, emo=0, dec=2, hl=0),
    "partly_wrong": dict(flu=2, coh=2, bg=1, pers=_, us=2, emo=_, dec=1, hl=2),
    "contradicts_persona": dict(flu=2, coh=_, bg=0, pers=0, us=_, emo=_, dec=0, hl=_),
    "off_topic": dict(flu=2, coh=0, bg=0, pers=0, us=_, emo=_, dec=0, hl=2),
    "garbled": dict(flu=0, coh=0, bg=_, pers=_, us=_, emo=_, dec=_, hl=0),
}


def garble(text: str, seed: int) -> str:
    """Each sentence's words in a seeded random order (3+ words always change).
    ``sorted(garble("a b c.", 1).split()) == sorted("a b c.".split())``"""
    rng = np.random.default_rng(seed)
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        words = sentence.split()
        if len(words) >= 3:
            order = list(range(len(words)))
            while order == sorted(order):
                order = list(rng.permutation(len(words)))
            words = [words[i] for i in order]
        out.append(" ".join(words))
    return " ".join(out)


def _lower_first(text: str) -> str:
    text = text.strip()
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _other(dataset: Dataset, characters: list[str], character: str, qa: QA, index: int) -> tuple[str, QA]:
    """Another character's QA of the same attribute (the next character in turn); with one character, the same
    character's QA of another attribute."""
    others = [c for c in characters if c != character]
    if others:
        c = others[index % len(others)]
        pool = [q for q in dataset.qa(c) if q.attribute == qa.attribute] or dataset.qa(c)
        return c, pool[index % len(pool)]
    pool = [q for q in dataset.qa(character) if q.attribute != qa.attribute]
    if not pool:
        raise ValueError(f"{character}: no other character and no QA of another attribute for the off-topic rung")
    return character, pool[index % len(pool)]


def build_ladder(dataset: Dataset, characters: list[str], per_character: int | None = None,
                 rungs: Sequence[str] = DEFAULT_RUNGS) -> pd.DataFrame:
    """One row per (QA question, rung) of ``per_character`` questions a character spread over the attributes
    (None: all); ``reference`` is the gold answer, ``source`` where an off-topic reply came from."""
    unknown = [r for r in rungs if r not in RUNGS]
    if unknown or isinstance(rungs, str) or len(set(rungs)) < 2:
        raise ValueError(f"rungs: at least two distinct of {', '.join(RUNGS)}; got {rungs!r}")
    rows = []
    for character in characters:
        for index, qa in enumerate(spread(dataset.qa(character), lambda q: q.attribute, per_character)):
            evidence = list(qa.evidence) or [qa.answer]
            in_char = " ".join(evidence)
            seed = zlib.crc32(qa.id.encode())
            kept = evidence[:-1] if len(evidence) > 1 else evidence[:1]
            other_char, other_qa = _other(dataset, characters, character, qa, index)
            texts = {
                "in_character": (in_char, None),
                "out_of_character": (OUT_OF_CHARACTER.format(answer=qa.answer.strip()), None),
                "partly_wrong": (" ".join([*kept, INVENTIONS_FIRST_PERSON[seed % len(INVENTED_FACTS)]]), None),
                "contradicts_persona": (DISMISSIVE_DENIAL.format(answer_lower=_lower_first(qa.answer)), None),
                "off_topic": (" ".join(other_qa.evidence) or other_qa.answer, f"{other_char}:{other_qa.id}"),
                "garbled": (garble(in_char, seed), None),
            }
            for rung in rungs:
                text, source = texts[rung]
                rows.append({"reply_id": f"{qa.id}:{rung}", "character": character, "qa_id": qa.id,
                             "attribute": qa.attribute, "question": qa.question, "reference": qa.answer, "rung": rung,
                             "reply": text, "source": source})
    return pd.DataFrame(rows, columns=LADDER_COLUMNS)


def ladder_levels(ladder: pd.DataFrame) -> pd.DataFrame:
    """The ladder as a rating source: a ``level`` per (reply, dimension) with a claim in :data:`EXPECTED`."""
    rows = [{"reply_id": r.reply_id, "dimension": d, "level": float(EXPECTED[r.rung][d])}
            for r in ladder.itertuples() for d in DIMENSIONS if EXPECTED[r.rung][d] is not None]
    return pd.DataFrame(rows, columns=["reply_id", "dimension", "level"])


def expected_table(rungs: Sequence[str] = DEFAULT_RUNGS) -> pd.DataFrame:
    """:data:`EXPECTED` for ``rungs`` as a table ("-": no claim)."""
    return pd.DataFrame([{"rung": r, "reply": RUNGS[r], **{d: "-" if EXPECTED[r][d] is None else EXPECTED[r][d]
                                                           for d in DIMENSIONS}} for r in rungs])


def ladder_set_id(ladder: pd.DataFrame) -> str:
    """``ladder-<replies>r-<digest of what a rater sees>``."""
    digest = hashlib.sha256(json.dumps(ladder[["reply_id", "question", "reference", "reply"]].values.tolist(),
                                       ensure_ascii=False).encode()).hexdigest()[:8]
    return f"ladder-{len(ladder)}r-{digest}"
