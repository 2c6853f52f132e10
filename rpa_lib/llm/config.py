"""Which LLM to use: ``get_llm(spec)`` and the settings behind it, looked up lazily.

Settings (``RPA_LLM_MODEL``, ``RPA_LLM_BASE_URL``, ``OPENAI_API_KEY``) come from an explicit argument, else the
environment, else a git-ignored ``.env`` at the repository root, read when a setting is first needed (never on
import, and never copied into ``os.environ``). Specs: ``"local"``, ``"local:/path/model.gguf"``,
``"openai:gpt-4.1"`` (or a bare model name), ``"fake"``. With no spec and no endpoint configured the embedded
local model is used. This module does not build clients or load models itself; the backends do, on first call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rpa_lib.paths import ROOT

DOTENV = ROOT / ".env"


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a .env file (``export``, quotes and ``#`` comments allowed); {} when missing."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        values[name.strip()] = value
    return values


def setting(name: str, explicit: str | None = None) -> str | None:
    """``explicit``, else ``$name``, else ``name`` in ``.env``; None if empty everywhere."""
    for value in (explicit, os.environ.get(name), read_dotenv(DOTENV).get(name)):
        if value:
            return value
    return None


def get_llm(spec: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
            cache: Any = True, max_workers: int | None = None, **options: Any):
    """The LLM named by ``spec`` (default: ``RPA_LLM_MODEL``, else OpenAI when an endpoint or key is configured,
    else the embedded local model). ``options`` go to the backend (e.g. ``timeout=``, ``retry=``, ``choose_mode=``).
    ``get_llm("fake")``, ``get_llm("openai:qwen3-32b", base_url="http://127.0.0.1:8000/v1")``"""
    spec = spec or setting("RPA_LLM_MODEL")
    if spec is None:
        if setting("RPA_LLM_BASE_URL", base_url):
            raise ValueError("RPA_LLM_BASE_URL is set but not the model: set RPA_LLM_MODEL to the served model name")
        spec = "openai:gpt-4.1" if setting("OPENAI_API_KEY", api_key) else "local"
    kind, _, rest = spec.partition(":")
    if kind not in ("local", "openai", "fake"):
        kind, rest = "openai", spec  # a bare model name: "gpt-4.1"
    if max_workers is not None:
        options["max_workers"] = max_workers
    if kind == "fake":
        from rpa_lib.llm.fake import FakeLLM

        return FakeLLM(label=rest or "fake", cache=cache, **options)
    if kind == "local":
        from rpa_lib.llm.local import LocalLLM

        return LocalLLM(rest or None, cache=cache, **options)
    from rpa_lib.llm.openai_backend import OpenAILLM

    if not rest:
        raise ValueError(f"spec {spec!r} names no model: use e.g. 'openai:gpt-4.1'")
    return OpenAILLM(rest, base_url=setting("RPA_LLM_BASE_URL", base_url), api_key=api_key, cache=cache, **options)
