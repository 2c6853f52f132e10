"""One object owns the layout of a dataset folder (by default the repository's ``data/``) and loads its files,
raising :class:`~rpa_lib.errors.DataError` on the first problem (a QA pair's evidence not in its persona among
them); it holds no loaded state and checks no whole dataset (:mod:`rpa_lib.data.validate` does)::

    data/characters/<slug>/persona.md, qa.jsonl     data/labels.csv
    data/questionnaires/<name>.json                 data/paper_results/<table>.csv

>>> Dataset().characters(["frieren"])    # checked slugs; None: every character
['frieren']
"""

from __future__ import annotations

from pathlib import Path

from rpa_lib import paths
from rpa_lib.data.readers import first_problem, read_labels, read_qa, read_questionnaire
from rpa_lib.data.records import QA, QA_SETS, Questionnaire
from rpa_lib.errors import DataError
from rpa_lib.persona import Persona, list_characters, load_persona, parsed_file, read_text


class Dataset:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root else paths.DATA_DIR
        self.characters_dir = self.root / "characters"
        self.labels_path = self.root / "labels.csv"
        self.questionnaires_dir = self.root / "questionnaires"
        self.grounding_reviewed_path = self.root / "grounding_reviewed.csv"

    def __repr__(self) -> str:
        return f"Dataset({str(self.root)!r})"

    def describe(self) -> str:
        """For a caption: ``"CharacterRAG-EN, our English dataset in the paper's design (data/)"``, ``"your characters
        (user_data/)"`` or the folder."""
        here = self.root.resolve()
        if here == paths.DATA_DIR.resolve():
            return "CharacterRAG-EN, our English dataset in the paper's design (data/)"
        if here == paths.user_data_dir().resolve():
            return f"your characters ({_short(here)}/)"
        return f"the dataset in {_short(here)}/"

    def __eq__(self, other) -> bool:
        return isinstance(other, Dataset) and self.root.resolve() == other.root.resolve()

    def __hash__(self) -> int:
        return hash(self.root.resolve())

    def persona_path(self, slug: str) -> Path:
        return self.characters_dir / slug / "persona.md"

    def qa_path(self, slug: str) -> Path:
        return self.characters_dir / slug / "qa.jsonl"

    def questionnaire_path(self, name: str) -> Path:
        return self.questionnaires_dir / f"{name}.json"

    def slugs(self) -> list[str]:
        return list_characters(self.characters_dir)

    def characters(self, only: list[str] | None = None) -> list[str]:
        """``only`` checked against the dataset (None: every character); DataError for a string or unknown slug."""
        if not self.root.is_dir():
            raise DataError(self.root, None, "no such dataset folder")
        known = self.slugs()
        if only is None:
            if not known:
                raise DataError(self.characters_dir, None, "no character folders")
            return known
        if isinstance(only, str) or not all(isinstance(s, str) for s in only):
            raise DataError(self.characters_dir, None, f"characters must be a list of slugs, e.g. [{only!r}], "
                                                       f"not {type(only).__name__} {only!r}")
        if not only:
            raise DataError(self.characters_dir, None, f"characters is an empty list: name at least one (None: all "
                                                       f"{len(known)})")
        unknown = [s for s in only if s not in known]
        if unknown:
            raise DataError(self.characters_dir, None, f"unknown character(s) {', '.join(map(repr, unknown))}; "
                                                       f"known: {', '.join(known) or 'none'}")
        return list(only)

    def persona(self, slug: str) -> Persona:
        return load_persona(slug, self.characters_dir)

    def qa(self, slug: str, set: str = "paper") -> list[QA]:
        """One character's QA pairs of a question set (``"paper"``, ``"multi"`` or ``"all"``), in file order.

        >>> len(Dataset().qa("frieren")), len(Dataset().qa("frieren", set="multi"))
        (30, 5)
        """
        if set not in (*QA_SETS, "all"):
            raise ValueError(f"unknown QA set {set!r}; known: {', '.join(QA_SETS)}, all")
        path = self.qa_path(slug)
        if not path.is_file() and self.persona_path(slug).is_file():  # a character of one's own, its QA not written
            where = f"{slug} --data-dir {self.root}"
            raise DataError(path, None, f"file not found: write {slug}'s questions with `python -m rpa_lib.authoring "
                                        f"qa-scaffold {where}`, review them, then `qa-promote {where}` "
                                        "(docs/your_own_character.md)")
        items, problems = parsed_file(path, read_qa) if path.is_file() else read_qa(path)  # read once, shared
        first_problem(path, problems)
        persona = self.persona_path(slug)
        if items and persona.is_file():  # evidence no chunk can hold would lower a score without a word
            source = parsed_file(persona, read_text)  # read once while the file is unchanged, as the QA file is
            for q in items:
                if missing := next((e for e in q.evidence if e not in source), None):
                    raise DataError(path, q.line, f"evidence of {q.id} not found verbatim in persona.md: "
                                                  f"{missing[:70]!r} (`python -m rpa_lib.data validate` lists every "
                                                  "problem)")
        return [q for q in items if set in ("all", q.set)]

    def labels(self) -> list[dict[str, str]]:
        rows, problems = parsed_file(self.labels_path, read_labels) if self.labels_path.is_file() else \
            read_labels(self.labels_path)  # a missing file: read_labels says so
        first_problem(self.labels_path, problems)
        return [dict(r) for r in rows]  # copies: the parsed rows are shared

    def has_labels(self) -> bool:
        return self.labels_path.is_file()

    def names(self) -> dict[str, str]:
        return {r["slug"]: r["name"] for r in self.labels()} if self.has_labels() else {}

    def profile(self, slug: str) -> tuple[str, str]:
        """``(name, work)`` from ``labels.csv``, else the persona's title and "their story"."""
        row = next((r for r in self.labels() if r["slug"] == slug), None) if self.has_labels() else None
        return (row["name"], row["work"]) if row else (self.persona(slug).name, "their story")

    def types(self, kind: str, characters: list[str]) -> dict[str, str]:
        """``{slug: type}`` of ``kind`` (``mbti`` or ``sloan``); DataError naming every character without one."""
        rows = {r["slug"]: r for r in self.labels()}
        missing = [s for s in characters if not rows.get(s, {}).get(kind)]
        if missing:
            raise DataError(self.labels_path, None, f"no {kind} type for {', '.join(missing)}: the personality "
                                                    f"evaluation needs one; add it to labels.csv or leave them out")
        return {s: rows[s][kind] for s in characters}

    def questionnaire(self, name: str, items: int | None = None) -> Questionnaire:
        """``mbti`` or ``bigfive`` (any ``questionnaires/<name>.json``); ``items``: a balanced subset."""
        path = self.questionnaire_path(name)
        q, problems = read_questionnaire(path, full=False)  # the item counts are the validator's (full) concern
        first_problem(path, problems)
        return q.subset(items)

    def paper_table(self, name: str):
        """``paper_results/<name>.csv``, a table transcribed from the papers, as a DataFrame (a dataset without that
        folder, a test fixture, uses the repository's)."""
        import pandas as pd

        folder = self.root / "paper_results" if (self.root / "paper_results").is_dir() else paths.PAPER_RESULTS_DIR
        path = folder / f"{name}.csv"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in folder.glob("*.csv")))
            raise DataError(path, None, f"no transcribed paper table named {name!r}; known: {known}")
        return pd.read_csv(path)


def _short(path: Path) -> str:
    return str(path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path)


def user_dataset(data: Dataset | str | Path | None = None) -> Dataset:
    """``data`` as a :class:`Dataset`; None: the user's own characters (:func:`rpa_lib.paths.user_data_dir`)."""
    return as_dataset(paths.user_data_dir() if data is None else data)


def as_dataset(data: Dataset | str | Path | None) -> Dataset:
    """A :class:`Dataset` from a dataset, a folder or None (the repository's ``data/``)."""
    return data if isinstance(data, Dataset) else Dataset(data)


def load_qa(slug: str, data_dir: Dataset | str | Path | None = None, set: str = "paper") -> list[QA]:
    return as_dataset(data_dir).qa(slug, set)


def load_labels(data_dir: Dataset | str | Path | None = None) -> list[dict[str, str]]:
    return as_dataset(data_dir).labels()


def load_questionnaire(name: str, data_dir: Dataset | str | Path | None = None) -> Questionnaire:
    return as_dataset(data_dir).questionnaire(name)
