"""Where an embedding model's weights are: the paper's models by short name, their local folders, and one error
naming every missing model, the profile key that asks for it and the command that fetches it. Loads no model and
downloads nothing (:mod:`rpa_lib.embeddings` loads them)."""

from __future__ import annotations

from pathlib import Path

# Query instructions are facts about each model's training, documented on its model card.
_INSTRUCT = ("Instruct: Given a question to a character, retrieve passages of the character's profile that answer it"
             "\nQuery:")
KNOWN_MODELS = {
    "bge-m3": ("BAAI/bge-m3", "", ""),
    "qwen3-0.6b": ("Qwen/Qwen3-Embedding-0.6B", _INSTRUCT, ""),
    "me5-large-instruct": ("intfloat/multilingual-e5-large-instruct", _INSTRUCT + " ", ""),  # "Query: ", as on its card
}
PAPER_EMBEDDERS = ("bge-m3", "qwen3-0.6b", "me5-large-instruct")  # AMADEUS Table 1 and its retrieval settings
PAPER_PROFILE_KEYS = "profiles/paper.yaml: defaults.embedder, notebooks.02_similarity_scores.embedders"


def model_folder(name_or_path: str) -> Path:
    """``name_or_path`` itself when it is a folder, else its snapshot in the Hugging Face cache (never downloaded);
    RuntimeError, saying what to do, when it is neither."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return path
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception as e:  # not cached, or not a valid repository id
        paper = {KNOWN_MODELS[n][0] for n in PAPER_EMBEDDERS}
        asked = f" (asked for by {PAPER_PROFILE_KEYS})" if name_or_path in paper else ""
        raise RuntimeError(
            f"embedding model {name_or_path!r}{asked} is neither a folder nor in the Hugging Face cache "
            f"({type(e).__name__}): download it once with network access: `hf download {name_or_path}`"
            " (huggingface_hub's command), or pass a local folder"
        ) from None


def is_local(name: str) -> bool:
    """Are this embedder's weights (short name, Hugging Face id or folder) on this machine? True for tfidf, hash and
    MiniLM (a package)."""
    if name in ("minilm", "tfidf") or name.startswith("hash"):
        return True
    try:
        model_folder(KNOWN_MODELS[name][0] if name in KNOWN_MODELS else name)
        return True
    except RuntimeError:
        return False


def require_models(names, where) -> None:
    """One RuntimeError naming every embedder of ``names`` whose weights are missing, ``where`` (the profile key
    that asks for them, or a function of the missing names that says it) and the commands that fetch them.

    >>> require_models(["minilm", "tfidf", "hash-64"], "profiles/smoke.yaml: defaults.embedder")
    """
    missing = [n for n in dict.fromkeys(names) if n and not is_local(n)]
    if missing:
        ids = [KNOWN_MODELS[n][0] if n in KNOWN_MODELS else n for n in missing]
        where = where(missing) if callable(where) else where
        raise RuntimeError(
            f"embedding model(s) {', '.join(ids)} (asked for by {where}) are not in the local Hugging Face cache; "
            "download them once with network access: " + ", ".join(f"`hf download {i}`" for i in ids)
            + " (or point the profile at embedders you have; `--plan` runs without them, on a labelled stand-in)")
