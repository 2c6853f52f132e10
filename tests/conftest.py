"""Shared test setup. Every test runs offline, with the embedding/LLM caches and the indexes in its own
``tmp_path``, so no test reads or writes ``results/cache`` and tests cannot see each other's caches.

Helpers for the fixture dataset (``tests/fixtures/data``: two small characters, labels, questionnaires):
``fixture_data`` (read-only), ``data_copy`` (a writable copy to break) and ``write_persona``.

``smoke_run``: every numbered notebook executed once per session with the smoke profile (each notebook starts a
kernel, the suite's dearest step), for every test that reads the notebooks' outputs. Read it, never write into it.
``make test`` runs the suite in two worker processes (pytest-xdist, one test file per worker at a time): the workers
share one smoke run, made by the first that needs it while the other waits for it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

# Two workers share two cores. torch starts one OpenMP thread per core, and those threads spin while they wait for
# the other worker's process to yield the core: loading MiniLM and placing two articles took 29 s inside the suite
# against 6 s alone. One thread per process (workers, the notebook kernels they start) keeps each core to one.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from rpa_lib.llm.answers import without_iri_grammars  # noqa: E402

without_iri_grammars()  # before the test modules import nbformat (and so jsonschema): ~1 s less per worker

FIXTURE_DATA = Path(__file__).resolve().parent / "fixtures" / "data"


def _isolate(mp: pytest.MonkeyPatch, root: Path) -> None:
    # Nothing from a developer's shell reaches a test: no key, endpoint, model, judge, plan, budget, price or timeout
    # (every RPA_* and OPENAI_* variable is cleared), and no .env; a test that needs one sets it.
    for name in [n for n in os.environ if n.startswith(("RPA_", "OPENAI_"))]:
        mp.delenv(name)
    mp.setattr("rpa_lib.settings.DOTENV", root / ".env")
    mp.setenv("RPA_CACHE_DIR", str(root / "cache"))
    mp.setenv("RPA_INDEX_DIR", str(root / "indexes"))
    mp.setenv("RPA_USER_DATA_DIR", str(root / "user_data"))  # an import never lands in the repository's user_data/
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _offline_session(tmp_path_factory):
    """The same for session- and module-scoped fixtures, which are set up before the per-test fixture below."""
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp("session"))
        yield


@pytest.fixture(autouse=True)
def _offline_and_isolated(tmp_path, monkeypatch):
    """Caches and indexes under ``tmp_path``; no RPA_* or OPENAI_* setting from the environment; Hugging Face
    stays offline."""
    _isolate(monkeypatch, tmp_path)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> tuple[Path, list[dict]]:
    """``reproduce.run("smoke")`` once for the session, caches and indexes in its output folder:
    (output folder, the runner's summary). Under pytest-xdist the workers' base folders share a parent, where the
    first worker to get the lock makes the run and the others read its summary."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out, done = root / "smoke", root / "smoke-summary.json"
    with open(root / "smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # what a failed run in another worker left
            done.write_text(json.dumps(_smoke(out)))
    return out, json.loads(done.read_text())


def _smoke(out: Path) -> list[dict]:
    from rpa_lib.run import reproduce

    saved = dict(os.environ)
    with pytest.MonkeyPatch.context() as mp:  # session scope: the per-test autouse fixture has not run yet
        mp.setenv("RPA_CACHE_DIR", str(out / "cache"))
        mp.setenv("RPA_INDEX_DIR", str(out / "indexes"))
        try:
            return reproduce.run("smoke", output_dir=out)
        finally:
            os.environ.clear()
            os.environ.update(saved)  # the runner sets the profile's env with setdefault


@pytest.fixture
def notebooks_in_this_process(monkeypatch) -> None:
    """The runner executes notebooks in this process, not in a kernel, for the tests of what it decides and counts
    (which notebooks run, the folders and parameters a notebook is given, a plan's counts): the cells run here with
    IPython's ``display``, the parameters set after the parameters cell as papermill sets them, the executed copy
    written, a failure reported as ``_papermill`` reports it. A kernel costs 2-4 s of CPU before the notebook's
    first line; the kernel path itself is tested by the smoke run, the plan of the smoke profile, a failing and a
    dying notebook and the kernel's folder."""
    import nbformat
    from IPython.display import display

    from rpa_lib.run import reproduce

    def run(nb: Path, executed: Path, params: dict) -> str | None:
        book, scope, failure, count = nbformat.read(nb, as_version=4), {"display": display}, None, 0
        for cell in [c for c in book.cells if c.cell_type == "code"]:
            count += 1  # papermill's execution count: the injected parameters cell is one too
            try:
                exec(cell.source, scope)
            except Exception as e:
                failure = f"cell {count} raised {type(e).__name__}: {e}"
                break
            if "parameters" in cell.metadata.get("tags", []):
                scope.update(params)
                count += 1
        nbformat.write(book, executed)
        return failure

    monkeypatch.setattr(reproduce, "_papermill", run)


@pytest.fixture
def fixture_data() -> Path:
    """The fixture dataset folder (``data_dir`` layout). Do not write into it; use ``data_copy``."""
    return FIXTURE_DATA


@pytest.fixture
def fixture_characters_dir() -> Path:
    return FIXTURE_DATA / "characters"


@pytest.fixture
def data_copy(tmp_path) -> Path:
    """A writable copy of the fixture dataset at ``tmp_path/data``."""
    return Path(shutil.copytree(FIXTURE_DATA, tmp_path / "data"))


@pytest.fixture
def write_persona(tmp_path):
    """Write ``persona.md`` (str or bytes) into ``tmp_path/characters/<slug>/`` and return its path.

    ``write_persona("# Ada\\n...", slug="ada").parent.parent`` is a ``characters_dir``.
    """

    def write(content: str | bytes, slug: str = "someone") -> Path:
        path = tmp_path / "characters" / slug / "persona.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write


# The files that take longest, in seconds of one worker within make test on the idle 2-core machine: the llama.cpp
# server's tests 99, the notebooks with their smoke run 66, the browser, the local model and plan and budget 12-13
# each, then 7 or less. The workers take files in collection order, so these go first, longest first, and the short
# files fill in beside them (the Makefile turns off pytest-xdist's own order, by test count, with
# --no-loadscope-reorder: in that order the server's file started after a minute and the browser's one test came
# last, and one worker ran alone for the last 13-18 s).
LONGEST_FIRST = ("test_server_llamacpp.py", "test_notebooks.py", "test_browser.py", "test_llm_local.py",
                 "test_plan_budget.py", "test_lightrag.py", "test_import_real_pages.py", "test_gs.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of :data:`LONGEST_FIRST` first, then the others by test count. pytest-xdist keeps this order only
    with ``--no-loadscope-reorder`` (``make test`` passes it); without it, it orders the files by test count."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        name = item.path.name
        return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST), -counts[name])

    items.sort(key=rank)  # stable: a file's tests keep their order
