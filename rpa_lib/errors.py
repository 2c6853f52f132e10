"""The root of every data error: a file (or item) that breaks the format, named with its line and the problem.

``PersonaError`` (a persona document) and the loaders' errors (QA pairs, labels, questionnaires) derive from
:class:`DataError`, so ``except DataError`` catches every bad-input problem and ``except ValueError`` still works.
This module imports nothing of the library.
"""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """``<file>[:<line>]: <problem>``; ``path``, ``line`` and ``problem`` are kept as attributes."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem
