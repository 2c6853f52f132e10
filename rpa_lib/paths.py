"""Every path the library uses, derived from the package's location (never the working directory).

A notebook, a test and papermill all see the same folders. Environment variables move the caches:
``RPA_CACHE_DIR`` (LLM and embedding caches) and ``RPA_INDEX_DIR`` (hnswlib indexes).
Importing this module creates nothing; call :func:`ensure` before writing.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
CHARACTERS_DIR = DATA_DIR / "characters"
QUESTIONNAIRES_DIR = DATA_DIR / "questionnaires"
PAPER_RESULTS_DIR = DATA_DIR / "paper_results"
NOTEBOOKS_DIR = ROOT / "notebooks"
FIGURES_DIR = ROOT / "figures"
RESULTS_DIR = ROOT / "results"
PROFILES_DIR = ROOT / "profiles"


def cache_dir() -> Path:
    """Where LLM and embedding caches live: ``$RPA_CACHE_DIR`` or ``results/cache``."""
    return Path(os.environ.get("RPA_CACHE_DIR") or RESULTS_DIR / "cache")


def index_dir() -> Path:
    """Where hnswlib indexes live: ``$RPA_INDEX_DIR`` or ``<cache_dir>/indexes``."""
    return Path(os.environ.get("RPA_INDEX_DIR") or cache_dir() / "indexes")


def ensure(path: Path) -> Path:
    """Create ``path`` (a folder) if needed and return it. ``ensure(FIGURES_DIR)``"""
    path.mkdir(parents=True, exist_ok=True)
    return path
