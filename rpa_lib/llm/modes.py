"""How an OpenAI-compatible server is asked for a constrained choice or a JSON object, and which mode it turned out
to accept, remembered per server, model and kind for the process. ``auto`` walks :data:`CHAINS` on each rejection;
an explicit mode is never changed (its rejection is an :class:`LLMFatalError`). It sends nothing itself.
"""

from __future__ import annotations

import logging
import re
import threading

from rpa_lib.llm.reply import LLMFatalError
from rpa_lib.llm.roles import mode_setting

log = logging.getLogger("rpa_lib.llm")

CHAINS = {"choose": ("json_schema", "logprobs", "text"),
          "structured": ("json_schema", "json_object_schema", "json_object", "text")}
_CAPABILITY = re.compile(r"response_format|json_schema|json_object|logprobs|grammar", re.I)
_VALIDATION = re.compile(r"input should be|validation|not supported|unsupported|invalid|unknown|extra", re.I)
_NEGOTIATED: dict[tuple[str, str, str], str] = {}  # (server, model, kind) -> the mode that server gets now
_LOCK = threading.Lock()  # held to move past a mode: a dict's single reads and writes need none


class Rejected(Exception):
    """The server cannot serve the mode asked for (its message, scrubbed)."""


def checked(kind: str, mode: str | None, role: str = "RPA_LLM") -> str:
    """``mode`` (None: ``"auto"``), or ValueError naming the setting of ``role`` and the allowed values."""
    mode = mode or "auto"
    if mode != "auto" and mode not in CHAINS[kind]:
        raise ValueError(f"{kind}_mode ({mode_setting(role, kind)} or {kind}_mode=) must be auto or one of "
                         f"{', '.join(CHAINS[kind])}; got {mode!r}")
    return mode


def key_mode(mode: str) -> str:
    """The mode's part of the cache key: ``auto`` keys as ``json_schema``. ``key_mode("auto") == "json_schema"``"""
    return "json_schema" if mode == "auto" else mode


def is_rejection(status: int, detail: str, params: dict) -> bool:
    """Is an HTTP error the server's answer that it cannot serve the ``response_format`` or ``logprobs`` asked?"""
    asked = "response_format" in params or "logprobs" in params
    if not asked or not _CAPABILITY.search(detail):
        return False
    return status in (400, 422) or (status == 500 and bool(_VALIDATION.search(detail)))


def current(server: str, model: str, kind: str, configured: str) -> str:
    """The mode to ask ``server`` in now: ``configured``, or for ``auto`` the negotiated one."""
    if configured != "auto":
        return configured
    return _NEGOTIATED.get((server, model, kind), CHAINS[kind][0])


def fall_back(server: str, model: str, kind: str, configured: str, rejected: str, why: str,
              role: str = "RPA_LLM") -> None:
    """Move past the rejected mode (once, however many calls were rejected in it); LLMFatalError for an explicit
    mode (naming the setting of ``role``) or the chain's last."""
    chain = CHAINS[kind]
    if configured != "auto":
        raise LLMFatalError(f"{why} -- this server does not support {kind}_mode {configured!r}; set "
                            f"{mode_setting(role, kind)} to auto or another of "
                            f"{', '.join(chain)} (model {model!r} at {server})")
    key = (server, model, kind)
    with _LOCK:
        now = _NEGOTIATED.get(key, chain[0])
        if now != rejected:  # another call moved it already
            return
        if rejected == chain[-1]:
            raise LLMFatalError(f"{why} -- the server rejected every {kind} mode (model {model!r} at {server})")
        nxt = _NEGOTIATED[key] = chain[chain.index(rejected) + 1]
    log.warning("%s at %s rejected %s mode %s (%s); using %s for the rest of the run", model, server, kind, rejected,
                why[:160], nxt)


def clear() -> None:
    """Forget what every server accepted."""
    _NEGOTIATED.clear()
