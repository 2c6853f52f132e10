"""The dataset's records: a QA pair, a questionnaire with its dimensions and items. Plain frozen data; reading
and checking files is :mod:`rpa_lib.data.readers`' job."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

QA_SETS = ("paper", "multi")  # the paper's 30 a character; the multi-paragraph pairs written for chunking


@dataclass(frozen=True)
class QA:
    id: str
    question: str
    answer: str
    attribute: str
    evidence: tuple[str, ...]
    line: int | None = field(default=None, compare=False)  # line in qa.jsonl, for messages
    set: str = "paper"  # one of QA_SETS (see data/README.md)


@dataclass(frozen=True)
class Dimension:
    id: str
    name: str
    high: str  # letter when the score is above the scale midpoint
    low: str
    high_name: str = ""  # e.g. "Social"
    low_name: str = ""  # e.g. "Reserved"


@dataclass(frozen=True)
class Item:
    id: str
    dimension: str
    keyed: str  # "high" or "low": which letter agreement points to
    statement: str
    question: str


@dataclass(frozen=True)
class Questionnaire:
    name: str
    points: int  # Likert points, e.g. 7 -> answers 1..7
    labels: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    items: tuple[Item, ...]

    @property
    def midpoint(self) -> float:
        return (1 + self.points) / 2

    def dimension(self, dim_id: str) -> Dimension:
        return next(d for d in self.dimensions if d.id == dim_id)

    def subset(self, n: int | None) -> Questionnaire:
        """A balanced subset of ``n`` items (None: all): ``n // dimensions`` per dimension, alternately keyed high
        and low in file order. ``load_questionnaire("mbti").subset(8)`` asks 2 per dichotomy, one each way."""
        if n is None or n >= len(self.items):
            return self
        per_dim = n // len(self.dimensions)
        if per_dim < 1:
            raise ValueError(f"{n} items cannot cover the {len(self.dimensions)} dimensions of {self.name}")
        keep: set[str] = set()
        for dim in self.dimensions:
            sides = [[i for i in self.items if i.dimension == dim.id and i.keyed == k] for k in ("high", "low")]
            order = [s[j] for j in range(max(map(len, sides))) for s in sides if j < len(s)]
            keep |= {i.id for i in order[:per_dim]}
        return replace(self, items=tuple(i for i in self.items if i.id in keep))
