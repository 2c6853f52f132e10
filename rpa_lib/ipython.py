"""IPython extension (``%load_ext rpa_lib.ipython``; ``make setup`` loads it in every kernel of ``.venv``): Ctrl-C
ends a cell with one short line instead of a long traceback. It changes nothing else."""

from __future__ import annotations

import sys

MESSAGE = ("Interrupted: the cell stopped here. LLM replies received so far are in the cache, so running the cell "
           "again resumes where it stopped.")


def _interrupted(shell, etype, value, tb, tb_offset=None) -> None:
    print(MESSAGE, file=sys.stderr)


def load_ipython_extension(ipython) -> None:
    ipython.set_custom_exc((KeyboardInterrupt,), _interrupted)


def unload_ipython_extension(ipython) -> None:
    ipython.set_custom_exc((), None)
