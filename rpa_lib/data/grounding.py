"""Is a QA answer grounded in its evidence? A lexical check for the validator: every number and every proper name
in the answer must appear in one of the evidence strings (or in the question, or in the character's name or work,
which a first-person persona need not repeat). It finds evidence lists that leave out a fact the answer uses,
which would make evidence recall count a question as answered by chunks that lack that fact.

It does not judge meaning: a paraphrased fact with no number or name in it is not checked, and a name spelled
differently in the evidence (a nickname) is flagged. What counts:

- a number: digits (``1,000`` reads as 1000) in the answer; the evidence may give it as digits or as a number word
  (``twelve``, ``thousand``).
- a proper name: a capitalised word (``Himmel``, ``TV``) that is not the first word of a sentence, or that is the
  first word of a sentence and is one of the persona's names (capitalised in the middle of its sentences, never
  written in lower case), so "Pretending to be ..." is not a name and "Azusa taught her ..." is. A possessive
  (``Momoka's``) is matched by its stem; case is ignored in the evidence.

>>> ungrounded("Himmel, the hero, in 1,000 years.", ["I travelled with him."], names={"Himmel"})
['1000', 'Himmel']
"""

from __future__ import annotations

import re

NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
                "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
                "thousand": 1000}
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\(\s*)$")


def numbers(text: str) -> set[int]:
    """The numbers written in ``text``, as digits or number words (each word alone, and runs of them read as one
    number). ``numbers("two hundred and fifty thousand, or 1,000") == {2, 100, 50, 1000, 250000}``"""
    found = {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\d|\d", text)}
    total = current = 0
    for word in [*re.findall(r"[a-z]+", text.lower()), ""]:
        if word in NUMBER_WORDS:
            value = NUMBER_WORDS[word]
            found.add(value)
            if value == 100:
                current = max(current, 1) * 100
            elif value == 1000:
                total, current = total + max(current, 1) * 1000, 0
            else:
                current += value
        elif word != "and" or not (total or current):
            if total or current:
                found.add(total + current)
            total = current = 0
    return found


def _capitalised(text: str) -> list[tuple[str, bool]]:
    """``(word, starts_a_sentence)`` for every capitalised word."""
    return [(m.group(), bool(_SENTENCE_START.search(text[:m.start()])))
            for m in _WORD.finditer(text) if m.group()[0].isupper()]


def persona_names(text: str) -> set[str]:
    """The persona's names: capitalised words written in the middle of a sentence and never in lower case.
    ``persona_names("I met Himmel. After that, after all, Himmel left.") == {"Himmel"}``"""
    lower = set(re.findall(r"[a-z][A-Za-z'\-]*", text))
    return {_stem(w) for w, first in _capitalised(text)
            if not first and w != "I" and _stem(w).lower() not in lower and w.lower() not in lower}


def _stem(word: str) -> str:
    return re.sub(r"'s?$", "", word)


def ungrounded(answer: str, evidence: list[str] | tuple[str, ...], also: str = "",
               names: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The numbers and proper names of ``answer`` found in no evidence string (nor in ``also``: the question, the
    character's name and work), in answer order. ``names`` (:func:`persona_names`) tells a name that starts a
    sentence from an ordinary word; a capitalised word inside a sentence always counts."""
    allowed = " ".join([*evidence, also])
    have_numbers, lowered = numbers(allowed), allowed.lower()
    missing = [str(n) for n in dict.fromkeys(int(d.replace(",", "")) for d in re.findall(r"\d[\d,]*\d|\d", answer))
               if n not in have_numbers]
    for word, first in _capitalised(answer):
        stem = _stem(word)
        if word == "I" or (first and stem not in names):
            continue
        if stem.lower() not in lowered and stem not in missing:
            missing.append(stem)
    return missing
