"""``get_llm(spec)``: which backend a spec names, built with the settings it needs; ``judge_llm``: the same for the
judge role.

Specs: ``"local"`` (the embedded SmolLM2-135M-Instruct on transformers), ``"local:/path/model.gguf"`` (or a model
folder), ``"llamacpp"`` / ``"llamacpp:/path/model.gguf"`` (the same GGUF on llama.cpp in-process),
``"openai:gpt-4.1"`` (or a bare model name), ``"fake"``. Settings come from :mod:`rpa_lib.llm.config`, per role:

- role ``"llm"`` (the role-play LLM): ``RPA_LLM_MODEL``, ``RPA_LLM_BASE_URL``, ``OPENAI_API_KEY``,
  ``RPA_LLM_CHOOSE_MODE``, ``RPA_LLM_STRUCTURED_MODE``. With no spec and no ``RPA_LLM_MODEL``: OpenAI when an API
  key is configured, else the embedded local model.
- role ``"judge"``: an explicit spec is built as for the role-play LLM; else ``RPA_JUDGE_MODEL`` with
  ``RPA_JUDGE_BASE_URL`` (an OpenAI-compatible server; else ``RPA_LLM_BASE_URL``), ``RPA_JUDGE_API_KEY`` (else
  ``OPENAI_API_KEY``), ``RPA_JUDGE_CHOOSE_MODE``, ``RPA_JUDGE_STRUCTURED_MODE``; with no ``RPA_JUDGE_MODEL``, the
  role-play LLM's settings: ``get_llm(default)``.

This module builds the backend object only: no client is connected and no model is loaded until the first call.
Under ``RPA_PLAN_FILE`` (set by ``reproduce --plan``) the backend is wrapped in a stand-in that records calls and
calls no model (:mod:`rpa_lib.run.plan`).
"""

from __future__ import annotations

from typing import Any

from rpa_lib.llm.config import setting
from rpa_lib.run.plan import planned

ROLES = {"llm": "RPA_LLM", "judge": "RPA_JUDGE"}


def get_llm(spec: str | None = None, *, role: str = "llm", default: str | None = None, base_url: str | None = None,
            api_key: str | None = None, cache: Any = True, max_workers: int | None = None, **options: Any):
    """The LLM named by ``spec`` for ``role`` (module docstring: which settings each role reads). ``options`` go
    to the backend (e.g. ``timeout=``, ``retry=``, ``choose_mode=``). ``default``: the role-play LLM's spec, which
    a judge with no spec and no ``RPA_JUDGE_MODEL`` uses.
    ``get_llm("fake")``, ``get_llm("openai:qwen3-32b", base_url="http://127.0.0.1:8000/v1")``,
    ``get_llm(role="judge", default="local")``"""
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    if max_workers is not None:
        options["max_workers"] = max_workers
    common = {"cache": cache, **options}
    if role == "judge" and not spec:
        model, url = setting("RPA_JUDGE_MODEL"), setting("RPA_JUDGE_BASE_URL", base_url)
        if url and not model:
            raise ValueError("RPA_JUDGE_BASE_URL is set but not RPA_JUDGE_MODEL: set it to the served model's name")
        if model and url:  # a served model: whatever its name, an OpenAI-compatible one
            model = model if model.startswith("openai:") else f"openai:{model}"
        if model:
            return _build(model, "RPA_JUDGE", url or setting("RPA_LLM_BASE_URL"), setting("RPA_JUDGE_API_KEY", api_key),
                          common)
        spec = default
    spec = spec or setting("RPA_LLM_MODEL")
    url = setting("RPA_LLM_BASE_URL", base_url)
    if spec is None:
        if url:
            raise ValueError("RPA_LLM_BASE_URL is set but not the model: set RPA_LLM_MODEL to the served model name")
        spec = "openai:gpt-4.1" if setting("OPENAI_API_KEY", api_key) else "local"
    return _build(spec, "RPA_LLM", url, api_key, common)


def judge_llm(spec: str | None = None, *, default: str | None = None, **options: Any):
    """The judge LLM: ``get_llm(spec, role="judge", default=default, **options)``. Notebooks call
    ``judge_llm(evaluator_llm, default=llm)``; ``reproduce`` prices exactly that."""
    return get_llm(spec, role="judge", default=default, **options)


def _build(spec: str, prefix: str, base_url: str | None, api_key: str | None, options: dict):
    kind, _, rest = spec.partition(":")
    if kind not in ("local", "llamacpp", "openai", "fake"):
        kind, rest = "openai", spec  # a bare model name: "gpt-4.1"
    if kind == "fake":
        from rpa_lib.llm.fake import FakeLLM

        return planned(FakeLLM(label=rest or "fake", **options))
    if kind == "local":
        from rpa_lib.llm.local import LocalLLM

        return planned(LocalLLM(rest or None, **options))
    if kind == "llamacpp":
        from rpa_lib.llm.llamacpp import LlamaCppLLM

        return planned(LlamaCppLLM(rest or None, **options))
    from rpa_lib.llm.openai_backend import OpenAILLM

    if not rest:
        raise ValueError(f"spec {spec!r} names no model: use e.g. 'openai:gpt-4.1'")
    for name in ("choose_mode", "structured_mode"):
        options.setdefault(name, setting(f"{prefix}_{name.upper()}"))
    return planned(OpenAILLM(rest, base_url=base_url, api_key=api_key, **options))
