"""Up-to-date stamps: ``reproduce`` skips a notebook whose inputs and outputs are unchanged since its last success.

A stamp (``<cache dir>/reproduce/<id>.json``) holds the digest of a notebook's inputs (:func:`inputs_digest`) and the
sha256 of each file it wrote. It cannot see a file elsewhere that a notebook reads, nor a server that answers
differently under the same URL and model: ``--force`` re-runs then. What counts as an input: ``docs/design/run.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path

from rpa_lib import paths
from rpa_lib.fingerprint import file_digest
from rpa_lib.settings import settings
from rpa_lib.text import write_whole

ENV_PREFIXES = ("RPA_", "OPENAI_")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# not inputs: where things are kept or written, and the budget (RPA_OUTPUT_DIR by content would be the outputs)
NOT_INPUTS = ("RPA_CACHE_DIR", "RPA_INDEX_DIR", "RPA_OUTPUT_DIR", "RPA_BUDGET_USD")
OUTPUT_PARAMETERS = ("figures_dir", "results_dir")
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints", "cache")


def json_sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def path_digest(path: Path) -> str:
    """sha256 of a file's bytes, or of a folder's files (names and bytes; hidden files, caches and READMEs, which no
    notebook reads, left out)."""
    path = Path(path)
    if path.is_file():
        return file_digest(path)
    files = sorted(f for f in path.rglob("*") if f.is_file() and not f.name.lower().startswith("readme") and not any(
        p.startswith(".") or p in SKIPPED_PARTS for p in f.relative_to(path).parts))
    return json_sha([[f.relative_to(path).as_posix(), file_digest(f)] for f in files])


def library_digest() -> str:
    """The ``rpa_lib`` sources, the installed distributions and the Python version (not memoised: a long-lived
    process may edit the library between runs)."""
    from importlib.metadata import distributions

    installed = sorted({f"{d.metadata['Name']}=={d.version}" for d in distributions() if d.metadata["Name"]})
    return json_sha([path_digest(paths.ROOT / "rpa_lib"), installed, platform.python_version()])


def named_path(value) -> Path | None:
    """The existing path a setting names, itself or after a ``backend:`` prefix (``local:/m.gguf``): absolute, or
    starting with ``.`` or ``~`` (relative: to ``notebooks/``, where the kernels start, as they read it)."""
    if not isinstance(value, str) or "://" in value:
        return None
    for candidate in (value, value.partition(":")[2]):
        if not candidate or not (os.path.isabs(candidate) or candidate.startswith((".", "~"))):
            continue
        path = paths.NOTEBOOKS_DIR / Path(candidate).expanduser()  # an absolute one stays itself
        if path.exists():
            return path
    return None


def named_paths(value) -> list[Path]:
    """:func:`named_path` of a value, or of each item of a list (``embedders: [minilm, ./my-model]``)."""
    return [p for v in (value if isinstance(value, list | tuple) else [value]) if (p := named_path(v)) is not None]


def _setting(value: str):
    """How an environment setting enters a stamp: a URL without credentials, a path by its content."""
    if "://" in value:
        from rpa_lib.llm.openai_backend import public_url

        return public_url(value)
    path = named_path(value)
    return {"value": value, "content": path_digest(path)} if path else value


def environment_settings() -> dict:
    """The ``RPA_*`` and ``OPENAI_*`` settings that can change a result, as :mod:`rpa_lib.settings` finds them (the
    environment, else ``.env``); a key or token only as set, since having one picks the default LLM; no storage
    setting; the user-data folder by the content of the folder it names (a relative one is under the repository)."""
    found = settings()
    if "RPA_USER_DATA_DIR" in found:
        found["RPA_USER_DATA_DIR"] = str(paths.user_data_dir())
    return {k: "set" if any(w in k.upper() for w in SECRET_WORDS) else _setting(v)
            for k, v in sorted(found.items()) if k.startswith(ENV_PREFIXES) and k not in NOT_INPUTS}


def inputs_digest(notebook: Path, params: dict, upstream: list[str | None], library: str | None = None) -> str:
    """One digest of everything a notebook's results depend on, as far as a stamp can see: the notebook, its
    parameters and the paths they name, ``data/``, the library, the settings and the ``upstream`` stamps."""
    named = {k: [path_digest(path) for path in found] for k, v in sorted(params.items())
             if k not in OUTPUT_PARAMETERS and (found := named_paths(v))}
    return json_sha({"notebook": file_digest(notebook), "parameters": params, "paths": named,
                     "data": path_digest(paths.DATA_DIR), "library": library or library_digest(),
                     "environment": environment_settings(), "upstream": upstream})


def stamp_path(executed: Path) -> Path:
    """The stamp of the executed copy ``executed`` (one per output folder)."""
    name = hashlib.sha256(str(Path(executed).resolve()).encode()).hexdigest()[:16]
    return paths.cache_dir() / "reproduce" / f"{Path(executed).stem}-{name}.json"


def read(executed: Path) -> dict | None:
    try:
        return json.loads(stamp_path(executed).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def up_to_date(executed: Path, inputs: str) -> dict | None:
    """The stamp when the inputs match and every recorded output is there with the same bytes, else None."""
    stamp = read(executed)
    if not stamp or stamp.get("inputs") != inputs:
        return None
    same = all(Path(p).is_file() and file_digest(Path(p)) == digest for p, digest in stamp.get("outputs", {}).items())
    return stamp if same else None


def write(executed: Path, inputs: str | None, written: list[Path], seconds: float) -> None:
    """Record a run: the inputs' digest (None before it runs: a failed run must not look done, nor count for the
    notebooks after it) and the sha256 of the files it wrote, now and in earlier runs (a file it keeps without
    rewriting stays recorded while it exists, a failed run between them or not)."""
    earlier = {p: d for p, d in (read(executed) or {}).get("outputs", {}).items() if Path(p).is_file()}
    if inputs is None:  # before a run: the record kept as it was, nothing hashed
        outputs = earlier
    else:
        files = sorted({str(Path(p).resolve()) for p in [*written, executed]} | set(earlier))
        outputs = {p: file_digest(Path(p)) for p in files if Path(p).is_file()}
    record = {"notebook": Path(executed).stem, "inputs": inputs, "seconds": round(seconds, 1),
              "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "outputs": outputs}
    write_whole(stamp_path(executed), json.dumps(record, indent=1))


def outputs_digest(stamp: dict | None) -> str | None:
    """The digest of a stamp's recorded outputs, as the notebooks after it see it (None: no stamp, or its notebook
    failed)."""
    return json_sha(stamp["outputs"]) if stamp and stamp.get("inputs") else None
