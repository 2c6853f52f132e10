"""``fingerprint(path)``: 12 hex digits naming a model's weights by their bytes (a full sha256 of each weight and
configuration file, its path in the model and its size), so changed weights get a new one and copies keep theirs.
Each file's digest is memoized until it changes on disk. It loads no model and does not spell model ids."""

from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CONFIG_SUFFIXES = (".json", ".txt", ".model", ".tiktoken")
SKIPPED_FOLDERS = ("onnx", "openvino")  # other runtimes' copies of the weights

_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (resolved path, size, mtime_ns, inode) -> sha256 hex


def clear_caches() -> None:
    _DIGESTS.clear()


def file_digest(path: Path) -> str:
    """sha256 hex of the whole file, memoized while its size, modification time and inode stay the same."""
    real = path.resolve()  # a Hugging Face snapshot links to its blobs
    stat = real.stat()
    key = (str(real), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    digest = _DIGESTS.get(key)  # no lock: a dict get or set is atomic; two threads may both hash a new file
    if digest is None:
        with real.open("rb") as f:
            digest = _DIGESTS[key] = hashlib.file_digest(f, "sha256").hexdigest()
    return digest


def model_files(path: Path) -> list[Path]:
    """``[path]`` for a file, else the folder's weight and configuration files, sorted (hidden files, READMEs and
    :data:`SKIPPED_FOLDERS` left out)."""
    if path.is_file():
        return [path]
    return sorted(f for f in path.rglob("*")
                  if f.is_file() and f.suffix.lower() in WEIGHT_SUFFIXES + CONFIG_SUFFIXES
                  and not any(p.startswith(".") or p in SKIPPED_FOLDERS for p in f.relative_to(path).parts)
                  and not f.name.lower().startswith("readme"))


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
