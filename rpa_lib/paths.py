"""Every path the library uses, derived from the package's location (never the working directory). Four settings
(the environment, else ``.env``: :mod:`rpa_lib.settings`) move them: ``RPA_CACHE_DIR``, ``RPA_INDEX_DIR``,
``RPA_USER_DATA_DIR``, ``RPA_OUTPUT_DIR``; a relative one is taken under the repository root, so the runner, its
kernels (which start in ``notebooks/``) and JupyterLab find the same folder. Importing this module creates nothing;
call :func:`ensure` before writing."""

from __future__ import annotations

import os
from pathlib import Path

from rpa_lib.settings import setting

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
CHARACTERS_DIR = DATA_DIR / "characters"
PAPER_RESULTS_DIR = DATA_DIR / "paper_results"
NOTEBOOKS_DIR = ROOT / "notebooks"
FIGURES_DIR = ROOT / "figures"
RESULTS_DIR = ROOT / "results"
PROFILES_DIR = ROOT / "profiles"
SCRATCH_DIR = RESULTS_DIR / "scratch"  # interactive runs' figures and tables (git-ignored)


def _folder(name: str, default: Path) -> Path:
    value = setting(name)
    folder = ROOT / Path(value).expanduser() if value else default  # an absolute value replaces ROOT
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} ({name}{'=' + value if value else ' unset'}) is a file, where a folder belongs")
    return folder


def cache_dir() -> Path:
    """Where LLM and embedding caches live: ``$RPA_CACHE_DIR`` or ``results/cache``."""
    return _folder("RPA_CACHE_DIR", RESULTS_DIR / "cache")


def user_data_dir() -> Path:
    """Where imported characters live, apart from the paper's ``data/``: ``$RPA_USER_DATA_DIR`` or ``user_data/``."""
    return _folder("RPA_USER_DATA_DIR", ROOT / "user_data")


def index_dir() -> Path:
    """Where hnswlib indexes live: ``$RPA_INDEX_DIR`` or ``<cache_dir>/indexes``."""
    return _folder("RPA_INDEX_DIR", cache_dir() / "indexes")


def output_root() -> Path:
    """Where notebooks write their ``figures/`` and ``results/``: ``$RPA_OUTPUT_DIR``, else ``results/scratch``."""
    return _folder("RPA_OUTPUT_DIR", SCRATCH_DIR)


def ensure(path: Path) -> Path:
    """Create ``path`` (a folder) if needed and return it. ``ensure(FIGURES_DIR)``"""
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_writable(folder: Path, what: str) -> None:
    """ValueError, before anything is written, when ``folder`` (``what``: "output folder", ...) could not be made or
    written: its nearest existing folder is a file or not writable. Nothing is created."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    why = (f"{existing} is not a folder" if not existing.is_dir() else
           f"{existing} is not writable" if not os.access(existing, os.W_OK | os.X_OK) else None)
    if why:
        raise ValueError(f"{what} {folder}: cannot write there ({why})")


def check_cache_folders() -> None:
    """:func:`check_writable` for the cache and index folders (``RPA_CACHE_DIR``, ``RPA_INDEX_DIR``), which every run
    writes; ValueError also when a setting names a file."""
    check_writable(cache_dir(), "cache folder (RPA_CACHE_DIR)")
    check_writable(index_dir(), "index folder (RPA_INDEX_DIR)")
