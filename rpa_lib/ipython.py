"""IPython extension (``%load_ext rpa_lib.ipython``; ``make setup`` loads it in every kernel of ``.venv``): Ctrl-C
ends a cell with one short line instead of a long traceback, and the kernel's log drops the one line a harmless
interrupt at shutdown writes. It changes nothing else."""

from __future__ import annotations

import sys

MESSAGE = ("Interrupted: the cell stopped here. LLM replies received so far are in the cache, so running the cell "
           "again resumes where it stopped.")
# jupyter_client interrupts a kernel before it asks it to shut down; when the interrupt lands while the kernel
# handles a message, ipykernel logs this at ERROR (into a headless run's progress lines) and carries on to exit
SHUTDOWN_NOISE = "KeyboardInterrupt caught in kernel"


def _interrupted(shell, etype, value, tb, tb_offset=None) -> None:
    print(MESSAGE, file=sys.stderr)


def _not_shutdown_noise(record) -> bool:
    return not record.getMessage().startswith(SHUTDOWN_NOISE)


def load_ipython_extension(ipython) -> None:
    ipython.set_custom_exc((KeyboardInterrupt,), _interrupted)
    kernel = getattr(ipython, "kernel", None)  # absent in a terminal IPython
    if kernel is not None:
        kernel.log.addFilter(_not_shutdown_noise)


def unload_ipython_extension(ipython) -> None:
    ipython.set_custom_exc((), None)
    kernel = getattr(ipython, "kernel", None)
    if kernel is not None:
        kernel.log.removeFilter(_not_shutdown_noise)
