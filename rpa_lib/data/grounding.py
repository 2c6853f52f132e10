"""Is a QA answer grounded in its evidence? Two lexical checks for the validator: :func:`ungrounded` (every number
and proper name of an answer appears in an evidence string, the question, or the character's name or work) and
:func:`unsupported_words` (content words the persona uses but no evidence string does, for a person to review).
Neither judges meaning; ``docs/design/data.md`` says what each counts and why.

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


def numbers(text: str) -> set[int]:
    """Digits and number words, alone and runs read as one number.
    ``numbers("two hundred and fifty thousand, or 1,000") == {2, 100, 50, 1000, 250000}``"""
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


def _starts_sentence(text: str, i: int) -> bool:
    """Whether the text before ``text[i]`` is empty or ends with ``.!?;:`` and white space, or with ``(``. Looks back
    only over the white space, so a whole persona is read in linear time."""
    if i == 0:
        return True
    j = i
    while j > 0 and text[j - 1].isspace():
        j -= 1
    return j > 0 and (text[j - 1] == "(" or (text[j - 1] in ".!?;:" and j < i))


def _capitalised(text: str) -> list[tuple[str, bool]]:
    return [(m.group(), _starts_sentence(text, m.start())) for m in _WORD.finditer(text) if m.group()[0].isupper()]


def persona_names(text: str) -> set[str]:
    """Capitalised words written mid-sentence and never in lower case.
    ``persona_names("I met Himmel. After that, after all, Himmel left.") == {"Himmel"}``"""
    lower = set(re.findall(r"[a-z][A-Za-z'\-]*", text))
    return {_stem(w) for w, first in _capitalised(text)
            if not first and w != "I" and _stem(w).lower() not in lower and w.lower() not in lower}


def _stem(word: str) -> str:
    return re.sub(r"'s?$", "", word)


def ungrounded(answer: str, evidence: list[str] | tuple[str, ...], also: str = "",
               names: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The numbers and proper names of ``answer`` in no evidence string nor in ``also`` (question, name, work), in
    answer order; ``names`` (:func:`persona_names`) tells a name that starts a sentence from an ordinary word."""
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


# Words that carry no fact of their own: function words, auxiliaries, pronouns, generic quantifiers and adverbs,
# and verbs of saying or being. Compared after lower-casing, before stemming.
STOP_WORDS = frozenset("""
about above after again against also although always among another anyone anything around away back because been
before being below between both came cannot come comes could does doing done down during each either else even ever
every from further gets getting give given gives goes going gone have having he'd he's here hers herself himself
into it's itself just keep keeps kept know known least less like made make makes many more most much must myself
never next none only onto other others ours over same says said shall she'd she's should since some something
still such take takes taken than that that's their theirs them themselves then there these they this those though
through thus till together took toward towards under unless until upon very want wanted wants well went were what
when where whether which while whom whose will with within without would your yours yourself also later often
usually once almost already quite rather really whole first last aren't can't couldn't didn't doesn't don't hadn't
hasn't haven't isn't shouldn't wasn't weren't won't wouldn't
""".split()) | frozenset(NUMBER_WORDS)
_LETTERS = re.compile(r"[^\W\d_]+(?:['\-][^\W\d_]+)*")  # a word in any script, with inner ' and -
_MIN_LETTERS = 4


def stem(word: str) -> str:
    """A crude lemma: lower case; possessive, plural, ``-ing``, ``-ed``, ``-ly`` and a final ``-e`` stripped; a final
    ``-y`` read as ``-i``. ``[stem(w) for w in ["Stories", "tried", "burning"]] == ["stori", "tri", "burn"]``"""
    w = _stem(word.lower())
    if len(w) > 3 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[:-len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    else:
        if len(w) > 5 and w.endswith("ly"):
            w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if w.endswith("y"):
        w = w[:-1] + "i"
    return w


def stems(text: str) -> set[str]:
    """The :func:`stem` of every word of ``text``, hyphenated ones split, in any script."""
    return {stem(part) for m in _LETTERS.finditer(text) for part in m.group().split("-")}


def content_words(text: str, names: set[str] | frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """``(word, stem)`` of each content word, once a stem: 4+ letters, not a stop word, not a proper name.
    ``content_words("Then Frieren gave Fern a staff.") == [("gave", "gav"), ("staff", "staff")]``"""
    out: dict[str, str] = {}
    for m in _LETTERS.finditer(text):
        word = m.group()
        if word[0].isupper() and (not _starts_sentence(text, m.start()) or _stem(word) in names):
            continue
        for part in word.split("-"):
            low = part.lower()
            bare = _stem(low)
            if len(bare) >= _MIN_LETTERS and low not in STOP_WORDS and bare not in STOP_WORDS:
                out.setdefault(stem(bare), bare)
    return [(w, s) for s, w in out.items()]


def unsupported_words(answer: str, evidence: list[str] | tuple[str, ...], also: str = "",
                      persona: set[str] | frozenset[str] = frozenset(),
                      names: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The content words of ``answer`` whose stem is in ``persona`` (its :func:`stems`) but not in the evidence nor
    in ``also`` (question, name, work), in answer order: each a paraphrase or a fact the evidence lacks."""
    allowed = stems(" ".join([*evidence, also]))
    return [w for w, s in content_words(answer, names) if s in persona and s not in allowed]
