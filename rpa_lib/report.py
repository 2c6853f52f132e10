"""Write tables (CSV + LaTeX) and figures (PDF + PNG + the CSV of their numbers) to explicit folders, labelled with the
models that produced them; resolve a notebook's output folders; write its run record. This module computes nothing.

Example (not run as a doctest: it writes files)::

    save_table(df, "table1_similarity", caption="...", results_dir=out)   # out/table1_similarity.{csv,tex}
    save_figure(fig, "table1_similarity", data=df, figures_dir=figs)      # figs/table1_similarity.{pdf,png,csv}
"""

from __future__ import annotations

import json
import platform
import re
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from rpa_lib import paths
from rpa_lib.notebook_params import parameters


def output_dirs(figures_dir: str | Path | None = None, results_dir: str | Path | None = None) -> tuple[Path, Path]:
    """The folders a notebook writes to (created): its parameters, else ``figures/`` and ``results/`` under
    :func:`rpa_lib.paths.output_root`."""
    root = paths.output_root()
    return (paths.ensure(Path(figures_dir or root / "figures")), paths.ensure(Path(results_dir or root / "results")))


class Written(dict):
    """The files a save function wrote, by extension; shows nothing when a notebook cell ends with the call."""

    def _ipython_display_(self) -> None:
        pass


class WrittenPath(type(Path())):
    """A path that shows nothing in a notebook when a cell ends with the call that wrote it."""

    def _ipython_display_(self) -> None:
        pass


MODEL_COLUMNS = ("llm", "judge", "embedder")  # the label columns of every results CSV (tests/test_results_labels.py)


def with_models(df: pd.DataFrame, llm: str | None = None, judge: str | None = None, embedder: str | None = None,
                rows=None, gs_llm: str | None = None) -> pd.DataFrame:
    """A copy of ``df`` whose ``llm``, ``judge``, ``embedder`` (and ``gs_llm``) columns name the models behind its
    numbers; a label left None adds no column. Only the ``rows`` (a mask) are labelled, and only where empty.

    >>> t = pd.DataFrame({"source": ["ours", "paper"], "llm": [None, "GPT-4.1"], "acc": [0.5, 0.9]})
    >>> with_models(t, llm="SmolLM2", judge="gpt-4.1", rows=t.source == "ours").fillna("-").values.tolist()
    [['ours', 'SmolLM2', 0.5, 'gpt-4.1'], ['paper', 'GPT-4.1', 0.9, '-']]
    """
    out = df.copy()
    mask = pd.Series(True, index=out.index) if rows is None else pd.Series(rows, index=out.index).astype(bool)
    for column, value in zip((*MODEL_COLUMNS, "gs_llm"), (llm, judge, embedder, gs_llm)):
        if value is None or value == "":
            continue
        out[column] = out.get(column, pd.Series(None, index=out.index, dtype=object)).astype(object)
        out.loc[mask & out[column].isna(), column] = value
    return out


def save_table(df: pd.DataFrame, name: str, results_dir: Path, caption: str = "", float_format: str = "{:.4f}",
               index: bool = False, models: dict | None = None) -> dict[str, Path]:
    """``<name>.csv`` (with :func:`with_models`'s label columns, ``models`` its arguments) and ``<name>.tex`` (a
    booktabs table with ``caption``, which names the models); returns the paths written."""
    results_dir.mkdir(parents=True, exist_ok=True)
    csv_path, tex_path = results_dir / f"{name}.csv", results_dir / f"{name}.tex"
    (with_models(df, **models) if models else df).to_csv(csv_path, index=index)
    floats = set(df.select_dtypes("float").columns)
    shown = pd.DataFrame({_tex_escape(str(c)): ["-" if pd.isna(v) else float_format.format(v) if c in floats
                                                else _tex_escape(str(v)) for v in df[c]] for c in df.columns})
    tex = shown.style.hide(axis="index") if not index else shown.style
    tex_path.write_text(tex.to_latex(caption=_tex_escape(caption) or None, label=f"tab:{name}", hrules=True,
                                     position="t", column_format="l" * len(shown.columns)))
    return Written(csv=csv_path, tex=tex_path)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex_escape(text: str) -> str:
    """Escape LaTeX's special characters in one pass. ``_tex_escape("sum_mu 5%") == r"sum\\_mu 5\\%"``"""
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _TEX[m.group(0)], text)


def save_figure(fig, name: str, figures_dir: Path, data: pd.DataFrame | None = None,
                models: dict | None = None) -> dict[str, Path]:
    """``<name>.pdf``, ``<name>.png`` (200 dpi) and, given ``data``, ``<name>.csv`` with the labels of
    :func:`with_models` (``models``: its arguments)."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    out = Written()
    for ext in ("pdf", "png"):
        out[ext] = figures_dir / f"{name}.{ext}"
        fig.savefig(out[ext], dpi=200, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
    if data is not None:
        out["csv"] = figures_dir / f"{name}.csv"
        (with_models(data, **models) if models else data).to_csv(out["csv"], index=False)
    return out


def caption_line(*parts) -> str:
    """Parts joined with " | ": a string as it is, a ``(label, value)`` pair as ``"label: value"``; empty ones left out.

    >>> caption_line(plural(2, "character"), ("GS N", None), ("LLM", "fake"), ("embedder", "hash-64"))
    '2 characters | LLM: fake | embedder: hash-64'
    """
    shown = []
    for part in parts:
        if isinstance(part, tuple):
            label, value = part
            if value is not None and value != "":
                shown.append(f"{label}: {value}")
        elif part:
            shown.append(str(part))
    return " | ".join(shown)


def plural(n: int, noun: str) -> str:
    """``plural(1, "character") == "1 character"``, ``plural(12, "question") == "12 questions"``."""
    return f"{n} {noun}{'s' * (n != 1)}"


def run_label(llm: str | None = None, embedder: str | None = None) -> str:
    """``"LLM: ... | embedder: ..."`` for titles and captions."""
    return caption_line(("LLM", llm), ("embedder", embedder))


class Timer:
    """Wall-clock seconds per notebook step, as rows (``step``, ``items``, ``seconds``) for the run record.

    >>> timing = Timer()
    >>> with timing("judging") as step:
    ...     step["items"] = 3
    >>> [(r["step"], r["items"]) for r in timing.rows]
    [('judging', 3)]
    """

    def __init__(self):
        self.rows: list[dict] = []

    @contextmanager
    def __call__(self, step: str, items: int | None = None):
        row = {"step": step, "items": items}
        start = time.perf_counter()
        yield row
        row["seconds"] = round(time.perf_counter() - start, 1)
        self.rows.append(row)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["step", "items", "seconds"])


_OUTPUT_PARAMETERS = ("figures_dir", "results_dir")  # where the record itself is written; never recorded


def notebook_parameters(notebook: str, namespace: dict) -> dict:
    """The values of the parameters ``notebooks/<notebook>.ipynb`` declares, from ``namespace`` (its ``globals()``),
    except the output folders."""
    path = paths.NOTEBOOKS_DIR / f"{notebook}.ipynb"
    declared = parameters(path) if path.is_file() else {}
    if not declared:
        raise ValueError(f"{notebook}: no notebook of that name with a cell tagged 'parameters' in "
                         f"{paths.NOTEBOOKS_DIR}")
    return {name: namespace[name] for name in declared if name in namespace and name not in _OUTPUT_PARAMETERS}


def save_run_record(name: str, results_dir: Path, parameters: dict | None = None, **fields) -> Path:
    """``<name>.run.json``: what produced a result: the notebook's ``parameters``, then ``fields`` (labels, resolved
    values, usage, timing), a field replacing a parameter of the same name."""
    record = {"name": name, "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(),
              **(parameters or {}), **fields}
    path = results_dir / f"{name}.run.json"
    path.write_text(json.dumps(record, indent=1, default=str))
    return WrittenPath(path)
