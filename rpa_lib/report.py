"""Write tables (CSV + LaTeX) and figures (PDF + PNG + the CSV of their numbers) to explicit folders,
and label every output with the LLM and embedder that produced it.

Example (not run as a doctest: it writes files)::

    save_table(df, "table1_similarity", caption="...", results_dir=out)   # out/table1_similarity.{csv,tex}
    save_figure(fig, "table1_similarity", data=df, figures_dir=figs)      # figs/table1_similarity.{pdf,png,csv}

Also the notebook preamble: :func:`output_dirs` resolves a notebook's ``figures_dir``/``results_dir``
parameters. This module computes nothing.
"""

from __future__ import annotations

import json
import platform
import re
import time
from pathlib import Path

import pandas as pd

from rpa_lib import paths


def output_dirs(figures_dir: str | Path | None = None, results_dir: str | Path | None = None) -> tuple[Path, Path]:
    """The folders a notebook writes to (created): its parameters, or the repository's figures/ and results/."""
    return (paths.ensure(Path(figures_dir or paths.FIGURES_DIR)), paths.ensure(Path(results_dir or paths.RESULTS_DIR)))


def save_table(df: pd.DataFrame, name: str, results_dir: Path, caption: str = "", float_format: str = "{:.4f}",
               index: bool = False) -> dict[str, Path]:
    """``<name>.csv`` and ``<name>.tex`` (a booktabs table with ``caption``); returns the paths written."""
    results_dir.mkdir(parents=True, exist_ok=True)
    csv_path, tex_path = results_dir / f"{name}.csv", results_dir / f"{name}.tex"
    df.to_csv(csv_path, index=index)
    floats = set(df.select_dtypes("float").columns)
    shown = pd.DataFrame({_tex_escape(str(c)): [("-" if pd.isna(v) else float_format.format(v)) if c in floats
                                                else ("-" if pd.isna(v) else _tex_escape(str(v))) for v in df[c]]
                          for c in df.columns})
    tex = shown.style.hide(axis="index") if not index else shown.style
    tex_path.write_text(tex.to_latex(caption=_tex_escape(caption) or None, label=f"tab:{name}", hrules=True,
                                     position="t", column_format="l" * len(shown.columns)))
    return {"csv": csv_path, "tex": tex_path}


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex_escape(text: str) -> str:
    """Escape LaTeX's special characters in one pass. ``_tex_escape("sum_mu 5%") == r"sum\\_mu 5\\%"``"""
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _TEX[m.group(0)], text)


def save_figure(fig, name: str, figures_dir: Path, data: pd.DataFrame | None = None) -> dict[str, Path]:
    """``<name>.pdf`` and ``<name>.png`` (200 dpi), and ``<name>.csv`` with the numbers shown when given."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for ext in ("pdf", "png"):
        out[ext] = figures_dir / f"{name}.{ext}"
        fig.savefig(out[ext], dpi=200, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
    if data is not None:
        out["csv"] = figures_dir / f"{name}.csv"
        data.to_csv(out["csv"], index=False)
    return out


def run_label(llm: str | None = None, embedder: str | None = None) -> str:
    """A short "LLM: ... | embedder: ..." line for figure titles and table captions."""
    parts = []
    if llm:
        parts.append(f"LLM: {llm}")
    if embedder:
        parts.append(f"embedder: {embedder}")
    return " | ".join(parts)


def save_run_record(name: str, results_dir: Path, **fields) -> Path:
    """``<name>.run.json``: what produced a result (parameters, LLM and embedder labels, usage, timing)."""
    record = {"name": name, "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(), **fields}
    path = results_dir / f"{name}.run.json"
    path.write_text(json.dumps(record, indent=1, default=str))
    return path
