"""``get_llm(spec)``: which backend a spec names, built with the settings it needs.

Specs: ``"local"`` (the embedded SmolLM2-135M-Instruct), ``"local:/path/model.gguf"`` (or a model folder),
``"openai:gpt-4.1"`` (or a bare model name), ``"fake"``. With no spec, ``RPA_LLM_MODEL``; with none either, OpenAI
when an API key is configured, else the embedded local model. Settings come from :mod:`rpa_lib.llm.config`.

This module builds the backend object only: no client is connected and no model is loaded until the first call.
Under ``RPA_PLAN_FILE`` (set by ``reproduce --plan``) the backend is wrapped in a stand-in that records calls and
calls no model (:mod:`rpa_lib.run.plan`).
"""

from __future__ import annotations

from typing import Any

from rpa_lib.llm.config import setting
from rpa_lib.run.plan import planned


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

        return planned(FakeLLM(label=rest or "fake", cache=cache, **options))
    if kind == "local":
        from rpa_lib.llm.local import LocalLLM

        return planned(LocalLLM(rest or None, cache=cache, **options))
    from rpa_lib.llm.openai_backend import OpenAILLM

    if not rest:
        raise ValueError(f"spec {spec!r} names no model: use e.g. 'openai:gpt-4.1'")
    return planned(OpenAILLM(rest, base_url=setting("RPA_LLM_BASE_URL", base_url), api_key=api_key, cache=cache,
                             **options))
