"""``get_llm(spec)``: which backend a spec names, built with the settings it needs; ``judge_llm``: the same for the
judge role.

Specs: ``"local"`` (the embedded SmolLM2-135M-Instruct on transformers), ``"local:/path/model.gguf"`` (or a model
folder), ``"llamacpp"`` / ``"llamacpp:/path/model.gguf"`` (the same GGUF on llama.cpp in-process),
``"openai:gpt-4.1"`` (or a bare model name), ``"fake"``. Settings come from :mod:`rpa_lib.llm.config`, per role:

- role ``"llm"`` (the role-play LLM): ``RPA_LLM_MODEL``, ``RPA_LLM_BASE_URL``, ``OPENAI_API_KEY``,
  ``RPA_LLM_CHOOSE_MODE``, ``RPA_LLM_STRUCTURED_MODE``. With no spec and no ``RPA_LLM_MODEL``: OpenAI when an API
  key is configured, else the embedded local model.
- role ``"gs"`` (the LLM of Guided Selection and the Attribute Extractor, e.g. the paper's
  ``openai:gpt-4.1-2025-04-14``): an explicit spec at ``RPA_GS_BASE_URL`` (else OpenAI's API, never the role-play
  LLM's server) with ``RPA_GS_API_KEY`` (else ``OPENAI_API_KEY``); no spec: the role-play LLM's settings.
- role ``"judge"``: an explicit spec is built as for the role-play LLM; else ``RPA_JUDGE_MODEL`` with
  ``RPA_JUDGE_BASE_URL`` (an OpenAI-compatible server; else ``RPA_LLM_BASE_URL``), ``RPA_JUDGE_API_KEY`` (else
  ``OPENAI_API_KEY``), ``RPA_JUDGE_CHOOSE_MODE``, ``RPA_JUDGE_STRUCTURED_MODE``; with no ``RPA_JUDGE_MODEL``, the
  role-play LLM's settings: ``get_llm(default)``.

This module builds the backend object only: no client is connected and no model is loaded until the first call.
A :class:`RunMode` (declared by the caller; ``reproduce`` passes one to each notebook) wraps it: under a budget it
holds each round trip's cost (:mod:`rpa_lib.llm.budget`), in a dry run it becomes a stand-in that records calls and
calls no model (:mod:`rpa_lib.llm.plan`), in batch rounds it answers from the rounds' results and records what is
missing (:mod:`rpa_lib.llm.rounds`). Nothing here reads a mode from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from rpa_lib.llm.base import LLM
from rpa_lib.llm.budget import dollars, shared_budget
from rpa_lib.llm.config import setting
from rpa_lib.llm.plan import PlanLLM
from rpa_lib.llm.rounds import BatchLLM

ROLES = {"llm": "RPA_LLM", "judge": "RPA_JUDGE", "gs": "RPA_GS"}


@dataclass(frozen=True)
class RunMode:
    """How the LLMs of a run are wrapped: ``plan_file`` (a dry run: each LLM is a :class:`PlanLLM` recording its
    calls there), ``budget_usd`` (a spending limit for uncached calls) and ``budget_ledger`` (the file that lets the
    processes of one run share it), ``batch_store`` (batch rounds: each LLM is a :class:`BatchLLM` answering from
    the results in that folder and recording what is missing to ``batch_misses``; ``batch_log``: the rounds so far,
    for the run record). The default runs normally. ``RunMode.of({"budget_usd": 5})``"""

    plan_file: str | None = None
    budget_usd: float | None = None
    budget_ledger: str | None = None
    batch_store: str | None = None
    batch_misses: str | None = None
    batch_log: str | None = None

    @classmethod
    def of(cls, value: RunMode | dict | None) -> RunMode:
        """A RunMode from a notebook's ``run_mode`` parameter (a dict; None or {}: the default); ValueError naming
        an unknown key or a bad amount."""
        if isinstance(value, RunMode):
            return value
        value = dict(value or {})
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"run_mode: unknown key(s) {unknown}; known: {known}")
        if value.get("budget_usd") is not None:
            value["budget_usd"] = dollars("run_mode budget_usd", value["budget_usd"])
        return cls(**value)

    def wrap(self, llm: LLM) -> LLM:
        """``llm`` under this mode: the recording stand-in for a dry run (which spends nothing), the batch-round
        wrapper (whose spending the rounds count), else ``llm`` limited by the budget when there is one."""
        if self.plan_file:
            return PlanLLM(llm, self.plan_file)
        if self.batch_store:
            if not self.batch_misses:
                raise ValueError("run_mode: batch_store needs batch_misses (the file a round's misses go to)")
            return BatchLLM(llm, self.batch_store, self.batch_misses)
        if self.budget_usd is not None:
            llm.with_budget(shared_budget(self.budget_usd, self.budget_ledger))
        return llm


def get_llm(spec: str | None = None, *, role: str = "llm", default: str | None = None, base_url: str | None = None,
            api_key: str | None = None, cache: Any = True, max_workers: int | None = None,
            mode: RunMode | dict | None = None, **options: Any):
    """The LLM named by ``spec`` for ``role`` (module docstring: which settings each role reads), wrapped as
    ``mode`` says (:class:`RunMode`). ``options`` go to the backend (e.g. ``timeout=``, ``retry=``,
    ``choose_mode=``). ``default``: the role-play LLM's spec, which a judge with no spec and no ``RPA_JUDGE_MODEL``
    uses.
    ``get_llm("fake")``, ``get_llm("openai:qwen3-32b", base_url="http://127.0.0.1:8000/v1")``,
    ``get_llm(role="judge", default="local")``"""
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    mode = RunMode.of(mode)
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
            return mode.wrap(_build(model, "RPA_JUDGE", url or setting("RPA_LLM_BASE_URL"),
                                    setting("RPA_JUDGE_API_KEY", api_key), common))
        spec = default
    if role == "gs" and spec:  # GS and AE's own LLM: its own server, never the role-play LLM's by accident
        return mode.wrap(_build(spec, "RPA_GS", setting("RPA_GS_BASE_URL", base_url),
                                setting("RPA_GS_API_KEY", api_key), common))
    spec = spec or setting("RPA_LLM_MODEL")
    url = setting("RPA_LLM_BASE_URL", base_url)
    if spec is None:
        if url:
            raise ValueError("RPA_LLM_BASE_URL is set but not the model: set RPA_LLM_MODEL to the served model name")
        spec = "openai:gpt-4.1" if setting("OPENAI_API_KEY", api_key) else "local"
    return mode.wrap(_build(spec, "RPA_LLM", url, api_key, common))


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

        return FakeLLM(label=rest or "fake", **options)
    if kind == "local":
        from rpa_lib.llm.local import LocalLLM

        return LocalLLM(rest or None, **options)
    if kind == "llamacpp":
        from rpa_lib.llm.llamacpp import LlamaCppLLM

        return LlamaCppLLM(rest or None, **options)
    from rpa_lib.llm.openai_backend import OpenAILLM

    if not rest:
        raise ValueError(f"spec {spec!r} names no model: use e.g. 'openai:gpt-4.1'")
    for name in ("choose_mode", "structured_mode"):
        options.setdefault(name, setting(f"{prefix}_{name.upper()}"))
    return OpenAILLM(rest, base_url=base_url, api_key=api_key, **options)
