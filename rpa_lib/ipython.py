"""An IPython extension for the project's kernels: Ctrl-C (Kernel > Interrupt) ends a cell with one short line
instead of a traceback several screens long, down into torch or a thread pool.

``make setup`` / ``make lab`` load it in every kernel of ``.venv`` (``.venv/etc/ipython/ipython_kernel_config.py``);
elsewhere: ``%load_ext rpa_lib.ipython``. It changes nothing else: other errors keep their tracebacks and
warnings still show. Importing it does nothing until IPython calls :func:`load_ipython_extension`.
"""

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
