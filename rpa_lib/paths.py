"""Every path the library uses, derived from the package's location (never the working directory).

A notebook, a test and papermill all see the same folders. Environment variables move the caches:
``RPA_CACHE_DIR`` (LLM and embedding caches) and ``RPA_INDEX_DIR`` (hnswlib indexes); ``RPA_USER_DATA_DIR`` moves
the user's own characters (:func:`user_data_dir`). ``RPA_OUTPUT_DIR``
decides where a notebook writes its figures and tables (:func:`output_root`): ``make reproduce`` sets it to the
repository, so only a reproduce run (or an explicit ``figures_dir``/``results_dir``) overwrites the committed
``figures/`` and ``results/``; a notebook run in JupyterLab writes under ``results/scratch/`` (git-ignored).
Importing this module creates nothing; call :func:`ensure` before writing.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
CHARACTERS_DIR = DATA_DIR / "characters"
PAPER_RESULTS_DIR = DATA_DIR / "paper_results"
NOTEBOOKS_DIR = ROOT / "notebooks"
FIGURES_DIR = ROOT / "figures"
RESULTS_DIR = ROOT / "results"
PROFILES_DIR = ROOT / "profiles"
SCRATCH_DIR = RESULTS_DIR / "scratch"  # interactive runs' figures and tables (git-ignored)


def cache_dir() -> Path:
    """Where LLM and embedding caches live: ``$RPA_CACHE_DIR`` or ``results/cache``."""
    return Path(os.environ.get("RPA_CACHE_DIR") or RESULTS_DIR / "cache")


def user_data_dir() -> Path:
    """Where imported characters live (a dataset folder of their own, apart from the paper's ``data/``):
    ``$RPA_USER_DATA_DIR`` or ``user_data/`` at the repository root (git-ignored). The paper's profiles, tests and
    ``make validate`` read ``data/`` only; a notebook or command reads this folder when asked to."""
    return Path(os.environ.get("RPA_USER_DATA_DIR") or ROOT / "user_data")


def index_dir() -> Path:
    """Where hnswlib indexes live: ``$RPA_INDEX_DIR`` or ``<cache_dir>/indexes``."""
    return Path(os.environ.get("RPA_INDEX_DIR") or cache_dir() / "indexes")


def output_root() -> Path:
    """Where notebooks write by default: ``$RPA_OUTPUT_DIR`` (its ``figures/`` and ``results/``; the repository
    itself for the committed outputs), else ``results/scratch`` so exploring never overwrites committed results."""
    return Path(os.environ.get("RPA_OUTPUT_DIR") or SCRATCH_DIR)


def ensure(path: Path) -> Path:
    """Create ``path`` (a folder) if needed and return it. ``ensure(FIGURES_DIR)``"""
    path.mkdir(parents=True, exist_ok=True)
    return path
