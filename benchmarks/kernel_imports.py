"""Benchmark what a notebook kernel spends importing, before its first result: the CPU seconds of each heavy package,
and of notebook 05's import cell with and without ``rpa_lib``'s bytecode.

``python -m benchmarks kernel_imports`` prints a Markdown table. Each row is a fresh ``python -c`` process, run
``--runs`` times (6) in turn with the others; a row's figure is the mean user + system CPU of its processes less that
of a bare interpreter. Every process runs with ``PYTHONDONTWRITEBYTECODE=1``, as on a machine that sets it (the
suite's notebook kernels then compile whatever has no ``.pyc`` yet). The two ``rpa_lib`` rows import two temporary
copies of the library, one compiled with ``compileall`` as ``make test`` does (bytecode checked by the source's hash)
and one without bytecode.
"""

from __future__ import annotations

import argparse
import compileall
import os
import py_compile
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from rpa_lib import paths

PACKAGES = ("numpy", "pandas", "matplotlib.pyplot", "scipy.stats")


def import_cell(notebook: Path) -> str:
    """The code cell after the parameters cell: the notebook's imports."""
    cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    return cells[tagged[0] + 1].source


def cpu_seconds(code: str, library: Path | None = None) -> float:
    """User + system CPU seconds of one ``python -c code`` (``library``: a folder put first on its path)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="agg")
    if library is not None:
        env["PYTHONPATH"] = str(library)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kernel_imports", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="processes per row, run in turn (default 6)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cell = import_cell(paths.NOTEBOOKS_DIR / "05_qa_evaluation.ipynb")
    with tempfile.TemporaryDirectory(prefix="rpa-kernel-imports-") as tmp:
        plain, compiled = Path(tmp) / "plain", Path(tmp) / "compiled"
        for copy in (plain, compiled):
            shutil.copytree(paths.ROOT / "rpa_lib", copy / "rpa_lib", ignore=shutil.ignore_patterns("__pycache__"))
        checked = py_compile.PycInvalidationMode.CHECKED_HASH  # as the Makefile compiles it
        compileall.compile_dir(compiled / "rpa_lib", quiet=1, invalidation_mode=checked)
        rows = {"a bare interpreter": ("pass", None)}
        rows |= {f"import {p}": (f"import {p}", None) for p in PACKAGES}
        rows["notebook 05's import cell, rpa_lib without bytecode"] = (cell, plain)
        rows["notebook 05's import cell, rpa_lib compiled"] = (cell, compiled)
        seconds: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(args.runs):
            for name, (code, library) in rows.items():
                seconds[name].append(cpu_seconds(code, library))
    bare = sum(seconds["a bare interpreter"]) / args.runs
    print(f"| process (python -c, {args.runs} runs each, in turn) | CPU s, mean | less a bare interpreter |")
    print("|---|---:|---:|")
    for name, values in seconds.items():
        mean = sum(values) / len(values)
        print(f"| {name} | {mean:.3f} | {mean - bare:+.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
