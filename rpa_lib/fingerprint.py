"""A short fingerprint of a model's weights, so that a model id names the bytes and not only a file name.

``fingerprint(path)`` is 12 hex digits of a sha256 over each weight or configuration file of a model (one file,
such as a GGUF, or a folder: ``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``, ``*.gguf``, ``*.json``, ``*.txt``,
``*.model``, ``*.tiktoken``, in sorted order; hidden files, READMEs and the other runtimes' copies under
``onnx/`` and ``openvino/`` left out): its path inside the model, its size and the sha256 of its whole content.
Full hashes, not samples: a fine-tune that changes a few tensors changes the fingerprint. They cost one read of
the weights (sha256 runs at about 1.3 GB/s here: 0.08 s for SmolLM2-135M's 98 MB, about 2 s for a 2.3 GB
model), once per process: each file's digest is memoized by (path, size, modification time, inode) until the
file changes on disk or :func:`clear_caches` is called.

Changed weights get a new fingerprint; two models in folders of the same name get different ones unless their
bytes are identical; the same weights copied to another place or machine keep theirs. This module does not
load models, and does not decide how a model id is spelled (the embedders and the local LLM do).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CONFIG_SUFFIXES = (".json", ".txt", ".model", ".tiktoken")
SKIPPED_FOLDERS = ("onnx", "openvino")

_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (resolved path, size, mtime_ns, inode) -> sha256 hex
_DIGESTS_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget every memoized file digest (the next fingerprint reads the files again)."""
    with _DIGESTS_LOCK:
        _DIGESTS.clear()


def file_digest(path: Path) -> str:
    """sha256 hex of the whole file, memoized while its size, modification time and inode stay the same."""
    real = path.resolve()  # a Hugging Face snapshot links to its blobs
    stat = real.stat()
    key = (str(real), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    with _DIGESTS_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    with real.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest
    return digest


def model_files(path: Path) -> list[Path]:
    """The files :func:`fingerprint` covers: ``path`` itself when it is a file, else its weight and configuration
    files (see the module docstring), sorted."""
    if path.is_file():
        return [path]
    files = []
    for f in path.rglob("*"):
        parts = f.relative_to(path).parts
        if (f.is_file() and f.suffix.lower() in WEIGHT_SUFFIXES + CONFIG_SUFFIXES
                and not any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts)
                and not f.name.lower().startswith("readme")):
            files.append(f)
    return sorted(files)


def fingerprint(path: str | Path) -> str:
    """12 hex digits naming the weights at ``path`` (a model file or folder). FileNotFoundError when it is
    missing, ValueError when a folder holds no weight file."""
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"no model at {path}")
    files = model_files(path)
    if not any(f.suffix.lower() in WEIGHT_SUFFIXES for f in files):
        raise ValueError(f"no weight file ({', '.join(WEIGHT_SUFFIXES)}) in {path}")
    h = hashlib.sha256()
    for f in files:
        name = "" if f == path else f.relative_to(path).as_posix()  # a lone file: its name is not its content
        h.update(f"{name}\0{f.resolve().stat().st_size}\0{file_digest(f)}\n".encode())
    return h.hexdigest()[:12]
