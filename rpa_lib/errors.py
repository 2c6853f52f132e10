"""``DataError``, the root of every bad-input error: ``except DataError`` catches them all (``PersonaError`` and the
loaders' errors derive from it), ``except ValueError`` still works; the "did you mean" of a misspelt name; the exit
status of a closed pipe. Imports nothing of the library."""

from __future__ import annotations

import contextlib
import difflib
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


def did_you_mean(given, valid) -> str:
    """`` (did you mean 'embedder'?)`` for misspelt names, else ``""``: ``did_you_mean(["embeder"], ["embedder"])``;
    it ends a message, after the list of valid ones."""
    close = [m for g in given for m in difflib.get_close_matches(str(g), list(valid), 1)]
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
