"""``DataError``, the root of every bad-input error: ``except DataError`` catches them all (``PersonaError`` and the
loaders' errors derive from it), ``except ValueError`` still works. Imports nothing of the library."""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """``<file>[:<line>]: <problem>``; ``path``, ``line`` and ``problem`` are kept as attributes."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem
