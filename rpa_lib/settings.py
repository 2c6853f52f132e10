"""Settings by name: an explicit argument, else the environment, else a git-ignored ``.env`` at the repository root
(read when needed, never copied into ``os.environ``). The lowest layer: the folders of :mod:`rpa_lib.paths` and the
LLM layer's settings are looked up here alike."""

from __future__ import annotations

import os
import re
from pathlib import Path

DOTENV = Path(__file__).resolve().parent.parent / ".env"


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a .env file (``export``, quotes and ``#`` comments allowed); {} when missing."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text(encoding="utf-8-sig").splitlines():  # -sig: a byte order mark is no part of a name
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = re.sub(r"^export\s+", "", line).split("=", 1)
        value = value.strip()
        quoted = re.fullmatch(r"""(["'])(.*?)\1(\s+#.*)?""", value)  # "value", 'value', either with a # comment
        values[name.strip()] = quoted[2] if quoted else re.split(r"\s#", value, maxsplit=1)[0].strip()
    return values


def settings() -> dict[str, str]:
    """Every non-empty setting as :func:`setting` finds it: the environment over ``.env`` (the file read once)."""
    return {k: v for source in (read_dotenv(DOTENV), os.environ) for k, v in source.items() if v}


def setting(name: str, explicit: str | None = None) -> str | None:
    """``explicit``, else ``$name``, else ``name`` in ``.env``; None if empty everywhere."""
    return explicit or os.environ.get(name) or read_dotenv(DOTENV).get(name) or None  # .env read only when needed
