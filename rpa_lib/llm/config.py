"""The settings lookup of the LLM layer: one value by name, from an explicit argument, else the environment, else a
git-ignored ``.env`` at the repository root (read when needed, never copied into ``os.environ``). A leaf module: it
builds no client and knows no backend.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from rpa_lib.paths import ROOT

DOTENV = ROOT / ".env"
DEFAULT_TIMEOUT = 60.0  # seconds per HTTP request (RPA_LLM_TIMEOUT)


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a .env file (``export``, quotes and ``#`` comments allowed); {} when missing."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        values[name.strip()] = value
    return values


def settings() -> dict[str, str]:
    """Every non-empty setting as :func:`setting` finds it: the environment over ``.env`` (the file read once)."""
    return {k: v for source in (read_dotenv(DOTENV), os.environ) for k, v in source.items() if v}


def setting(name: str, explicit: str | None = None) -> str | None:
    """``explicit``, else ``$name``, else ``name`` in ``.env``; None if empty everywhere."""
    return next((v for v in (explicit, os.environ.get(name), read_dotenv(DOTENV).get(name)) if v), None)


def request_timeout(explicit: float | None = None) -> float:
    """Seconds per HTTP request: ``explicit``, else ``RPA_LLM_TIMEOUT``, else 60; ValueError unless positive."""
    raw = explicit if explicit is not None else setting("RPA_LLM_TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"RPA_LLM_TIMEOUT (or timeout=) must be a positive number of seconds, got {raw!r}")
    return seconds
