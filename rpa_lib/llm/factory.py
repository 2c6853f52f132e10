"""``get_llm(spec)``: the backend a spec names (``local``, ``local:PATH``, ``llamacpp``, ``llamacpp:PATH``,
``openai:MODEL`` or a bare model name, ``fake``), built with its role's settings (docs/design/llm.md); ``judge_llm``
the same for the judge. A :class:`RunMode` wraps it for a budget, a dry run or batch rounds. It connects no client,
loads no model and reads no mode from the environment.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from rpa_lib.llm.base import LLM
from rpa_lib.llm.budget import dollars, shared_budget
from rpa_lib.llm.fake import FakeLLM
from rpa_lib.llm.llamacpp import LlamaCppLLM
from rpa_lib.llm.local import LocalLLM
from rpa_lib.llm.openai_backend import OPENAI_URL, OpenAILLM
from rpa_lib.llm.plan import PlanLLM
from rpa_lib.llm.roles import SETTINGS, connection, mode_setting
from rpa_lib.llm.rounds import BatchLLM
from rpa_lib.settings import setting, settings

ROLES = ("llm", "judge", "gs")
KINDS = ("local", "llamacpp", "openai", "fake")  # what a spec starts with; anything else is an OpenAI model name
_PREFIXES = ("RPA_LLM", "RPA_JUDGE", "RPA_GS", "RPA_PRICE", "RPA_BUDGET")  # a name so begun must be one of SETTINGS
_INSTEAD = {"RPA_LLM_API_KEY": "the role-play LLM's key is OPENAI_API_KEY",
            "RPA_GS_MODEL": "GS's model is the gs_llm parameter of a notebook or profile",
            "RPA_JUDGE_TIMEOUT": "RPA_LLM_TIMEOUT holds for every role",
            "RPA_GS_TIMEOUT": "RPA_LLM_TIMEOUT holds for every role",
            "RPA_LLM_MAX_WORKERS": "the calls sent at once are get_llm's max_workers="}


@dataclass(frozen=True)
class RunMode:
    """How the LLMs of a run are wrapped: ``plan_file`` (a dry run recording calls there), ``budget_usd`` (a limit
    for uncached calls, shared by processes through ``budget_ledger``), ``batch_store`` (batch rounds answering from
    that folder, misses to ``batch_misses``, the rounds so far in ``batch_log``). ``RunMode.of({"budget_usd": 5})``"""

    plan_file: str | None = None
    budget_usd: float | None = None
    budget_ledger: str | None = None
    batch_store: str | None = None
    batch_misses: str | None = None
    batch_log: str | None = None

    @classmethod
    def of(cls, value: RunMode | dict | None) -> RunMode:
        """A RunMode from a notebook's ``run_mode`` parameter; ValueError naming an unknown key or a bad amount."""
        if isinstance(value, RunMode):
            return value
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(f"run_mode must be a dict such as {{'budget_usd': 5}}, got {type(value).__name__} "
                             f"{value!r}")
        value = dict(value or {})
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"run_mode: unknown key(s) {unknown}; known: {known}")
        if value.get("budget_usd") is not None:
            value["budget_usd"] = dollars("run_mode budget_usd", value["budget_usd"])
        return cls(**value)

    def wrap(self, llm: LLM) -> LLM:
        """``llm`` under this mode: a :class:`PlanLLM`, a :class:`BatchLLM`, else ``llm`` under the budget if any."""
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
    """The LLM ``spec`` names for ``role`` (``"llm"``, ``"judge"``, ``"gs"``), wrapped as ``mode`` says; ``options``
    go to the backend (``timeout=``, ``retry=``, ``choose_mode=`` ...); ``default``: the role-play LLM's spec, for a
    judge with no spec and no ``RPA_JUDGE_MODEL``. ``get_llm("openai:m", base_url="http://127.0.0.1:8000/v1")``"""
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    mode = RunMode.of(mode)
    check_setting_names()
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
            return mode.wrap(_build(model, "RPA_JUDGE", *connection("RPA_JUDGE", base_url, api_key), common))
        spec = default
    if role == "gs" and spec:  # GS and AE's own LLM: its own server, never the role-play LLM's by accident
        return mode.wrap(_build(spec, "RPA_GS", *connection("RPA_GS", base_url, api_key), common))
    spec = spec or setting("RPA_LLM_MODEL")
    url, key = connection("RPA_LLM", base_url, api_key)
    if spec is None:
        if url:
            raise ValueError("RPA_LLM_BASE_URL is set but not the model: set RPA_LLM_MODEL to the served model name")
        spec = "openai:gpt-4.1" if setting("OPENAI_API_KEY", api_key) else "local"
    return mode.wrap(_build(spec, "RPA_LLM", url, key, common))


def setting_problem(name: str) -> str | None:
    """Why ``name`` is no setting, when it begins as the LLM layer's do but nothing reads it; None otherwise."""
    if not name.startswith(_PREFIXES) or name in SETTINGS:
        return None
    close = difflib.get_close_matches(name, SETTINGS, n=1, cutoff=0.75)
    hint = _INSTEAD.get(name) or (f"did you mean {close[0]}?" if close else "")
    return f"is not a setting{f' ({hint})' if hint else ''}; the LLM settings are {', '.join(SETTINGS)}"


def check_setting_names() -> None:
    """ValueError naming a setting (environment or ``.env``) that begins as the LLM layer's do but that nothing reads:
    a typo such as ``RPA_LLM_BASEURL`` would otherwise run another model, or ``RPA_BUDGET_US`` run without a limit."""
    unknown = sorted(n for n in settings() if setting_problem(n))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} (environment or .env) {setting_problem(unknown[0])}")


def judge_llm(spec: str | None = None, *, default: str | None = None, **options: Any):
    """``get_llm(spec, role="judge", default=default, **options)``. ``judge_llm(evaluator_llm, default=llm)``"""
    return get_llm(spec, role="judge", default=default, **options)


def role_backend(prefix: str, model: str, server: str, **options: Any) -> OpenAILLM:
    """The backend of ``model`` at ``server`` (its URL without credentials, as a batch miss records it) with the key
    and URL credentials that settings ``prefix`` give, so a batch of that role's calls goes as its calls would; the
    server as recorded when the settings name another (a URL given in code)."""
    url, key = connection(prefix)
    backend = OpenAILLM(model, base_url=url, api_key=key, role=prefix, **options)
    if backend.base_url == server:
        return backend
    return OpenAILLM(model, base_url=None if server == OPENAI_URL else server, api_key=key, role=prefix, **options)


def _build(spec: str, prefix: str, base_url: str | None, api_key: str | None, options: dict):
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if base_url is None and kind not in KINDS and (close := difflib.get_close_matches(kind.lower(), KINDS, 1, 0.8)):
        raise ValueError(f"spec {spec!r}: did you mean {close[0]!r}? As written it names a model of OpenAI's API; a "
                         "spec is local, local:PATH, llamacpp, llamacpp:PATH, openai:MODEL, a model name or fake")
    if kind == "fake":
        return FakeLLM(label=rest or "fake", **options)
    if kind in ("local", "llamacpp"):
        return (LocalLLM if kind == "local" else LlamaCppLLM)(rest or None, **options)
    if kind != "openai":
        rest = spec  # a bare model name: "gpt-4.1"
    if not rest:
        raise ValueError(f"spec {spec!r} names no model: use e.g. 'openai:gpt-4.1'")
    for kind in ("choose", "structured"):
        options.setdefault(f"{kind}_mode", setting(mode_setting(prefix, kind)))
    return OpenAILLM(rest, base_url=base_url, api_key=api_key, role=prefix, **options)
