"""Dataset statistics for AMADEUS Figure 3: per character (length, paragraphs, sections, QA pairs per attribute,
longest paragraph) and per paragraph (attribute, depth, length). Reads files; draws nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rpa_lib.data.dataset import Dataset, as_dataset
from rpa_lib.data.validate import spans_two_paragraphs, subsection_sizes
from rpa_lib.persona import ATTRIBUTES


def dataset_statistics(data_dir: Dataset | str | Path | None = None, characters: list[str] | None = None):
    """Two DataFrames: a row per character and a row per paragraph. ``qa_pairs`` and ``qa_<attribute>`` count the
    paper set, ``qa_pairs_multi`` the multi set."""
    import pandas as pd

    ds = as_dataset(data_dir)
    names = ds.names()
    per_char, per_par = [], []
    for slug in ds.characters(characters):
        persona = ds.persona(slug)
        qa = Counter(q.attribute for q in ds.qa(slug))
        pars = persona.paragraphs
        per_char.append({"character": slug, "name": names.get(slug, persona.name),
                         "characters_written": len(persona.source),
                         "paragraphs": len(pars), "sections": len(persona.sections),
                         "max_depth": max(len(s.headings) for s in persona.sections) - 1,
                         "longest_paragraph": persona.longest_paragraph,
                         "median_paragraph": int(sorted(len(p.text) for p in pars)[len(pars) // 2]),
                         "qa_pairs": sum(qa.values()), **{f"qa_{a}": qa[a] for a in ATTRIBUTES},
                         "qa_pairs_multi": len(ds.qa(slug, set="multi"))})
        per_par += [{"character": slug, "attribute": p.attribute, "depth": len(p.headings) - 1, "length": len(p.text)}
                    for p in pars]
    return pd.DataFrame(per_char), pd.DataFrame(per_par)


def dataset_totals(per_char, per_par):
    """One row of totals of :func:`dataset_statistics`' tables."""
    import pandas as pd

    return pd.DataFrame([{
        "characters": len(per_char), "written characters": per_char.characters_written.sum(),
        "paragraphs": per_char.paragraphs.sum(), "QA pairs": per_char.qa_pairs.sum(),
        "multi-paragraph QA pairs": per_char.qa_pairs_multi.sum(),
        "median paragraph": int(per_par.length.median()), "longest paragraph": per_par.length.max(),
    }])


def structure_figures(data_dir: Dataset | str | Path | None = None, characters: list[str] | None = None) -> dict:
    """The dataset's structural totals, as ``validate`` prints them."""
    import statistics

    ds = as_dataset(data_dir)
    slugs = ds.characters(characters)
    personas = {s: ds.persona(s) for s in slugs}
    sizes = [n for p in personas.values() for n in subsection_sizes(p)]
    qa = {s: ds.qa(s, set="all") for s in slugs}
    return {"characters": len(slugs),
            "paragraph_characters": sum(len(par.text) for p in personas.values() for par in p.paragraphs),
            "paragraphs": sum(len(p.paragraphs) for p in personas.values()), "subsections": len(sizes),
            "median_paragraphs_per_subsection": statistics.median(sizes) if sizes else 0,
            "max_paragraphs_per_subsection": max(sizes, default=0),
            "qa_pairs": sum(q.set == "paper" for v in qa.values() for q in v),
            "qa_pairs_multi": sum(q.set == "multi" for v in qa.values() for q in v),
            "two_paragraph_qa": sum(spans_two_paragraphs(personas[s], q) for s in slugs for q in qa[s])}
