"""Settings by name: an explicit argument, else the environment, else a git-ignored ``.env`` at the repository root
(read when needed, never copied into ``os.environ``). The lowest layer: the folders of :mod:`rpa_lib.paths` and the
LLM layer's settings are looked up here alike."""

from __future__ import annotations

import os
from pathlib import Path

DOTENV = Path(__file__).resolve().parent.parent / ".env"


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
    return explicit or os.environ.get(name) or read_dotenv(DOTENV).get(name) or None  # .env read only when needed
