"""One client layer for every LLM call (chat, constrained choice, structured output; cache, retries, usage) over
OpenAI-compatible HTTP, an embedded local model or a deterministic fake: :func:`get_llm` builds the role-play LLM,
:func:`judge_llm` the judge. Importing it builds no client, loads no model and opens no file.
"""

from rpa_lib import fingerprint
from rpa_lib.llm import llamacpp as _llamacpp
from rpa_lib.llm import local as _local
from rpa_lib.llm import modes as _modes
from rpa_lib.llm.base import LLM
from rpa_lib.llm.budget import Budget, BudgetExceeded
from rpa_lib.llm.cache import Cache
from rpa_lib.llm.factory import RunMode, get_llm, judge_llm
from rpa_lib.llm.fake import FakeLLM
from rpa_lib.llm.local import LocalLLM
from rpa_lib.llm.openai_backend import OpenAILLM
from rpa_lib.llm.reply import LLMError, LLMFatalError, LLMNoValidAnswer, Outcome, Reply
from rpa_lib.llm.retry import RetryPolicy, Transient
from rpa_lib.llm.usage import PRICES, PRICES_AS_OF, Usage, save_usage


def clear_caches() -> None:
    """Forget the loaded local models, weight fingerprints and negotiated modes; the on-disk reply cache stays."""
    _local.clear_caches()
    _llamacpp.clear_caches()
    fingerprint.clear_caches()
    _modes.clear()


__all__ = ["LLM", "Budget", "BudgetExceeded", "Cache", "FakeLLM", "LLMError", "LLMFatalError", "LLMNoValidAnswer",
           "LocalLLM", "OpenAILLM", "Outcome", "PRICES", "PRICES_AS_OF", "Reply", "RetryPolicy", "RunMode", "Transient",
           "Usage", "clear_caches", "get_llm", "judge_llm", "save_usage"]
