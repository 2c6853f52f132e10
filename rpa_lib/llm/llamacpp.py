"""``LlamaCppLLM``: a GGUF model in this process through llama.cpp (package ``llama-cpp-python``, installed by
``make setup-server``); by default the embedded SmolLM2-135M-Instruct. Spec ``"llamacpp"`` or
``"llamacpp:/path/model.gguf"``. Choices are grammar-constrained and scored, structured output schema-constrained
(docs/design/llm.md). It does not download, quantize or batch; one call at a time per model instance.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any

from rpa_lib.fingerprint import fingerprint
from rpa_lib.llm.answers import choice_instruction, first_token_scores, schema_instruction, with_instruction
from rpa_lib.llm.base import LLM, Request, sample_seed
from rpa_lib.llm.local import smollm2_path
from rpa_lib.llm.reply import LLMError, Raw

N_CTX = 4096  # tokens of context: the longest prompts of the notebooks (AMADEUS with k=5 chunks) fit
_LOADED: dict[str, tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()


def clear_caches() -> None:
    """Close and forget the loaded models (also at exit, before the interpreter's teardown: docs/design/llm.md)."""
    with _LOAD_LOCK:
        for model, _ in _LOADED.values():
            model.close()
        _LOADED.clear()


def load(path: Path, weights: str, scores: bool = False) -> tuple[Any, threading.Lock]:
    """(``llama_cpp.Llama``, lock) for ``path``, loaded once per process. ``scores``: the instance that keeps every
    position's logits, for a choice's option scores (chat and structured calls use one without)."""
    key = f"{path.resolve()}@{weights}{'+scores' if scores else ''}"
    with _LOAD_LOCK:
        if key not in _LOADED:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise LLMError("the llamacpp engine needs llama-cpp-python: run make setup-server") from None
            threads = max(1, min(os.cpu_count() or 1, 8))
            if not _LOADED:
                atexit.register(clear_caches)
            _LOADED[key] = (Llama(model_path=str(path), n_ctx=N_CTX, n_threads=threads, logits_all=scores,
                                  verbose=False), threading.Lock())
        return _LOADED[key]


class LlamaCppLLM(LLM):
    """``LlamaCppLLM()`` (SmolLM2-135M-Instruct) or ``LlamaCppLLM("/models/qwen2.5-0.5b-instruct-q8_0.gguf")``."""

    backend = "llamacpp"
    scores_choices = True

    def __init__(self, path: str | Path | None = None, *, cache: Any = True, max_workers: int = 1, retry=None,
                 repeat_penalty: float = 1.3):
        self.repeat_penalty = repeat_penalty  # small models loop without it
        self.path = Path(path).expanduser() if path else smollm2_path()
        if not self.path.is_file():
            raise LLMError(f"no GGUF model file at {self.path}")
        self.weights = fingerprint(self.path)
        name, _, quant = self.path.stem.rpartition(".")
        self.label = f"{name or self.path.stem} (llama.cpp{', ' + quant if name else ''})"
        self.model_id = f"llamacpp:{self.path.name}@{self.weights}"
        super().__init__(cache=cache, max_workers=max_workers, retry=retry)

    def _key_extra(self) -> dict:
        return {"repeat_penalty": self.repeat_penalty}

    def _complete(self, req: Request, messages: list[dict], max_tokens: int, **params: Any) -> Raw:
        scored = req.kind == "choose"
        model, lock = load(self.path, self.weights, scores=scored)
        with lock:
            out = model.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=req.temperature,
                                               seed=sample_seed(req.seed, req.sample),
                                               repeat_penalty=self.repeat_penalty, **params)
            usage = out.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            # the first answer token's distribution: the logits after the last prompt token, before the grammar
            top = _top_logprobs(model, model.scores[prompt_tokens - 1]) if scored and prompt_tokens else None
        text = out["choices"][0]["message"].get("content") or ""
        raw = Raw(text.strip(), prompt_tokens, int(usage.get("completion_tokens") or 0))
        if top is not None:
            raw.scores = first_token_scores([{"top_logprobs": top}], req.options or [])
        return raw

    def _chat(self, req: Request) -> Raw:
        return self._complete(req, req.messages, req.max_tokens)

    def _choose(self, req: Request) -> Raw:
        """One of the options exactly (a grammar of their texts), scored as a ``logprobs`` server scores them."""
        from llama_cpp import LlamaGrammar

        options = req.options or []
        grammar = LlamaGrammar.from_string("root ::= " + " | ".join(_gbnf_literal(o) for o in options), verbose=False)
        return self._complete(req, with_instruction(req.messages, choice_instruction(options)),
                              8 + max(len(o) for o in options), grammar=grammar)

    def _structured(self, req: Request) -> Raw:
        return self._complete(req, with_instruction(req.messages, schema_instruction(req.schema or {})),
                              req.max_tokens, response_format={"type": "json_object", "schema": req.schema or {}})


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal: backslashes, quotes and line breaks escaped."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _top_logprobs(model: Any, logits: Any, n: int = 20) -> list[dict]:
    """The ``n`` likeliest next tokens of one row of ``logits``, as OpenAI-style ``top_logprobs`` entries."""
    import numpy as np
    from scipy.special import log_softmax

    logprobs = log_softmax(np.asarray(logits, dtype=np.float64))
    best = np.argpartition(-logprobs, n)[:n]
    best = best[np.argsort(-logprobs[best])]
    return [{"token": model.detokenize([int(i)]).decode("utf-8", errors="ignore"), "logprob": float(logprobs[i])}
            for i in best]
