"""Benchmark how long a notebook run waits for its kernel to exit: jupyter_client's default against the runner's.

``python -m benchmarks kernel_exit`` prints a Markdown table. It runs a one-cell notebook (``1 + 1``) ``--runs``
times (20) through papermill, as :mod:`rpa_lib.run.reproduce` does, once with jupyter_client's default
``shutdown_wait_time`` (5 s) and once with the runner's :data:`~rpa_lib.run.reproduce.KERNEL_SHUTDOWN_SECONDS`.
A run whose kernel hangs after its shutdown reply (ipykernel 7.4, now and then) waits half the setting before
jupyter_client signals it; "slow runs" counts the runs over 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rpa_lib.run.reproduce import KERNEL_ARGUMENTS, KERNEL_SHUTDOWN_SECONDS

DEFAULT_WAIT = 5.0  # jupyter_client's KernelManager.shutdown_wait_time


def run_times(notebook: Path, wait: float, runs: int) -> list[float]:
    """Seconds of each of ``runs`` executions of ``notebook`` with ``wait`` seconds for the kernel to exit."""
    import papermill
    from traitlets.config import Config

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        papermill.execute_notebook(str(notebook), str(notebook.with_suffix(".out.ipynb")), kernel_name="python3",
                                   progress_bar=False, log_output=False, extra_arguments=KERNEL_ARGUMENTS,
                                   config=Config(KernelManager={"shutdown_wait_time": wait}))
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kernel_exit", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per setting (default 20)")
    args = parser.parse_args(argv)
    import nbformat

    lines = ["| kernel exit wait | runs | total s | median s | max s | slow runs (> 2 s) |",
             "|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="rpa-kernel-exit-") as tmp:
        notebook = Path(tmp) / "one_cell.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
        nbformat.write(nb, notebook)
        for wait, label in ((DEFAULT_WAIT, "jupyter_client's default"), (KERNEL_SHUTDOWN_SECONDS, "the runner's")):
            times = run_times(notebook, wait, args.runs)
            lines.append(f"| {wait:g} s ({label}) | {len(times)} | {sum(times):.1f} | {statistics.median(times):.2f} | "
                         f"{max(times):.2f} | {sum(t > 2 for t in times)} |")
            print(lines[-1] if len(lines) > 3 else "\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
