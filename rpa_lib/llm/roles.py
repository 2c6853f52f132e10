"""The settings (environment or ``.env``) an LLM role is built from, by the role's prefix: ``RPA_LLM`` (role-play, and
a judge given a spec), ``RPA_JUDGE`` (a judge from ``RPA_JUDGE_MODEL``) and ``RPA_GS`` (Guided Selection and the
Attribute Extractor). Named here once, for the backends that read them and the messages that tell a user which one
to change."""

from __future__ import annotations

from rpa_lib.settings import setting

SETTINGS = ("RPA_LLM_MODEL", "RPA_LLM_BASE_URL", "RPA_LLM_TIMEOUT", "RPA_LLM_CHOOSE_MODE", "RPA_LLM_STRUCTURED_MODE",
            "RPA_JUDGE_MODEL", "RPA_JUDGE_BASE_URL", "RPA_JUDGE_API_KEY", "RPA_JUDGE_CHOOSE_MODE",
            "RPA_JUDGE_STRUCTURED_MODE", "RPA_GS_BASE_URL", "RPA_GS_API_KEY", "RPA_GS_CHOOSE_MODE",
            "RPA_GS_STRUCTURED_MODE", "RPA_PRICE_IN", "RPA_PRICE_OUT", "RPA_BUDGET_USD")  # every one read
_URL_FALLBACK = {"RPA_JUDGE": "RPA_LLM"}  # a judge with no URL of its own uses the role-play LLM's server
_MODEL = {"RPA_LLM": "RPA_LLM_MODEL or the spec", "RPA_JUDGE": "RPA_JUDGE_MODEL", "RPA_GS": "the gs_llm parameter"}


def connection(prefix: str, base_url: str | None = None, api_key: str | None = None) -> tuple[str | None, str | None]:
    """(base URL, API key) of role ``prefix``: each explicit, else ``{prefix}_BASE_URL`` and ``{prefix}_API_KEY``; the
    judge's URL falls back to the role-play LLM's; a key left None is ``OPENAI_API_KEY``, which the backend looks up."""
    fallback = _URL_FALLBACK.get(prefix)
    url = setting(f"{prefix}_BASE_URL", base_url) or (setting(f"{fallback}_BASE_URL") if fallback else None)
    return url, api_key if prefix == "RPA_LLM" else setting(f"{prefix}_API_KEY", api_key)


def url_setting(prefix: str) -> str:
    """Where role ``prefix``'s base URL comes from, for a message. ``url_setting("RPA_JUDGE")``"""
    fallback = f", else {_URL_FALLBACK[prefix]}_BASE_URL," if prefix in _URL_FALLBACK else ""
    return f"the base URL ({prefix}_BASE_URL{fallback} or base_url=)"


def key_setting(prefix: str) -> str:
    """Where role ``prefix``'s API key comes from, for a message. ``key_setting("RPA_JUDGE")``"""
    own = "" if prefix == "RPA_LLM" else f"{prefix}_API_KEY, else "
    return f"the API key ({own}OPENAI_API_KEY, or api_key=)"


def model_setting(prefix: str) -> str:
    """Where role ``prefix``'s model name comes from, for a message. ``model_setting("RPA_GS")``"""
    return f"the model name ({_MODEL[prefix]})"


def mode_setting(prefix: str, kind: str) -> str:
    """The setting of role ``prefix``'s ``kind`` mode (``choose``, ``structured``). ``mode_setting("RPA_GS", "choose")``"""
    return f"{prefix}_{kind.upper()}_MODE"
