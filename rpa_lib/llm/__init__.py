"""One client layer for every LLM call: chat, constrained choice, structured output; cache, retries, concurrency
and usage accounting. Backends: OpenAI-compatible HTTP, embedded local transformers model, deterministic fake.

Importing this package builds no client, loads no model and opens no file.
"""

from rpa_lib.llm.base import LLM
from rpa_lib.llm.cache import Cache
from rpa_lib.llm.config import get_llm
from rpa_lib.llm.fake import FakeLLM
from rpa_lib.llm.local import LocalLLM
from rpa_lib.llm.mock_server import MockServer
from rpa_lib.llm.openai_backend import OpenAILLM
from rpa_lib.llm.reply import LLMError, Outcome, Reply
from rpa_lib.llm.retry import RetryPolicy, Transient
from rpa_lib.llm.usage import PRICES, PRICES_AS_OF, Usage, save_usage

__all__ = ["LLM", "Cache", "FakeLLM", "LLMError", "LocalLLM", "MockServer", "OpenAILLM", "Outcome", "PRICES",
           "PRICES_AS_OF", "Reply", "RetryPolicy", "Transient", "Usage", "get_llm", "save_usage"]
