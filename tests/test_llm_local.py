"""The local transformers backend. The fast tests use a tiny random Llama saved to ``tmp_path`` (a model "by
path"); ``slow`` loads the embedded SmolLM2-135M-Instruct once (8-11 s on this machine) and makes two short
calls. Deselect it with ``-m "not slow"``."""

from __future__ import annotations

import functools
import re

import numpy
import pytest

from rpa_lib.llm import LLMError, LLMNoValidAnswer, LocalLLM, get_llm, local


def test_default_local_model_is_found_but_not_loaded():
    llm = get_llm("local")
    assert isinstance(llm, LocalLLM) and llm.max_workers == 1
    assert llm.label == "SmolLM2-135M-Instruct (local, Q4_1)"
    assert re.fullmatch(r"local:SmolLM2-135M-Instruct\.Q4_1\.gguf@[0-9a-f]{12}", llm.model_id)
    assert llm.usage.cost_usd is None


def test_labels_and_missing_models(tmp_path):
    assert local._label(tmp_path / "Qwen2.5-0.5B-Instruct") == "Qwen2.5-0.5B-Instruct (local)"
    assert local._label(tmp_path / "tiny.Q8_0.gguf") == "tiny (local, Q8_0)"
    with pytest.raises(LLMError, match="no local model"):
        get_llm(f"local:{tmp_path / 'missing.gguf'}")


WORDS = ["<unk>", "<pad>", "<eos>", "<user>", "<assistant>", "<system>",
         *"yes no maybe hello world is the sky blue answer with exactly one of".split()]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 2-layer Llama with a word-level tokenizer and a chat template, saved as a Hugging Face folder."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("models") / "tiny-llama"
    words = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<pad>",
                                        eos_token="<eos>")
    tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} <eos> {% endfor %}"
                               "{% if add_generation_prompt %}<assistant> {% endif %}")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                         eos_token_id=2, pad_token_id=1, bos_token_id=None)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_model_by_path_chat_is_greedy_or_seeded(tiny_model):
    llm = get_llm(f"local:{tiny_model}", cache=False)
    assert llm.label == "tiny-llama (local)" and llm.model_id == f"local:tiny-llama@{llm.weights}"
    say = [{"role": "user", "content": "hello world"}]
    chat = functools.partial(llm.chat, allow_empty=True)  # a random model may well say nothing
    assert chat(say, max_tokens=4).text == chat(say, max_tokens=4).text
    first = chat(say, max_tokens=6, temperature=1.0, seed=1)
    assert first.text == chat(say, max_tokens=6, temperature=1.0, seed=1).text
    samples = {chat(say, max_tokens=6, temperature=1.0, seed=1, sample=i).text for i in range(1, 6)}
    assert len(samples | {first.text}) > 1
    assert f"{tiny_model.resolve()}@{llm.weights}" in local._LOADED  # loaded once, kept for the process

    # invalid JSON is "no valid answer", the one failure AMADEUS' Attribute Extractor falls back to free text on
    with pytest.raises(LLMNoValidAnswer, match=r"structured call 'hello world': no valid JSON object after 2 attempts"):
        llm.structured(say, {"type": "object"}, max_tokens=4, max_retries=1)  # this vocabulary has no "{"


def test_choose_scores_each_option_as_the_whole_reply(tiny_model):
    import torch

    llm = LocalLLM(tiny_model, cache=False)
    options = ["yes", "no", "maybe hello"]
    question = [{"role": "user", "content": "is the sky blue"}]
    reply = llm.choose(question, options)
    assert reply.text == max(options, key=reply.scores.__getitem__)

    tokenizer, model, _ = local.load(tiny_model)  # recompute without the KV cache: the full sequence at once
    prompt = llm._prompt_ids(tokenizer, local.with_instruction(question, local.choice_instruction(options)))
    for option in options:
        cont = tokenizer(option, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([prompt + cont])).logits[0].float(), dim=-1)
        expected = sum(logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(cont))
        assert reply.scores[option] == pytest.approx(expected, abs=1e-4)


@pytest.mark.slow
def test_smollm2_chat_and_choose(tmp_path):
    llm = get_llm("local", cache=tmp_path / "llm.sqlite")
    reply = llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=5)
    assert reply.text and 0 < reply.completion_tokens <= 5 and reply.prompt_tokens > 0
    assert llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=5).text == reply.text  # cached

    other = LocalLLM(cache=False)  # a second object shares the model loaded once per process
    choice = other.choose([{"role": "user", "content": "Is Paris the capital of France? Answer yes or no."}],
                          ["yes", "no"])
    assert choice.text in ("yes", "no") and set(choice.scores) == {"yes", "no"}
    assert choice.scores[choice.text] == max(choice.scores.values()) and choice.scores["no"] < 0
    assert [k for k in local._LOADED if ".gguf@" in k] == [f"{local.smollm2_path().resolve()}@{other.weights}"]
    from gguf import gguf_reader  # its reader parsed the file from memory during the load, and only then
    assert gguf_reader.np is numpy


def test_a_gguf_file_is_parsed_from_memory_only_below_the_size_limit(tmp_path, monkeypatch):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" * 4)
    reading = local._NumpyReadingWhole(numpy)
    assert type(reading.memmap(path)) is numpy.ndarray and reading.uint8 is numpy.uint8
    monkeypatch.setattr(local, "READ_WHOLE_BELOW", 8)  # a large model: mapped, not read whole
    assert isinstance(reading.memmap(path, mode="r"), numpy.memmap)
