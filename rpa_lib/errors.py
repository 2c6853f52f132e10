"""``DataError``, the root of every bad-input error: ``except DataError`` catches them all (``PersonaError`` and the
loaders' errors derive from it), ``except ValueError`` still works. Imports nothing of the library."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path


class DataError(ValueError):
    """``<file>[:<line>]: <problem>``; ``path``, ``line`` and ``problem`` are kept as attributes."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem


def closed_pipe() -> int:
    """What a command line returns after a BrokenPipeError (its output piped to ``head``, which stopped reading): 141,
    as a shell reports it, with standard output sent to /dev/null so that Python's flush at exit is quiet too."""
    with contextlib.suppress(OSError, ValueError):  # a stdout with no descriptor (a test's capture) is quiet already
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141
