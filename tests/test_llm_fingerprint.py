"""Model identity: a local LLM's id names its weights (so changed weights never reuse cached replies, and two
models in folders of the same name never share them); its label stays readable; memos can be cleared."""

from __future__ import annotations

import shutil

import pytest

from rpa_lib.llm import FakeLLM, LocalLLM, clear_caches, fingerprint, local


def fake_weights(folder, weights: bytes, gguf: bool = False):
    folder.mkdir(parents=True, exist_ok=True)
    if gguf:
        path = folder / "tiny.Q8_0.gguf"
        path.write_bytes(weights)
        return path
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / ".gitattributes").write_text("*.safetensors filter=lfs")
    return folder


def test_fingerprint_covers_weights_and_config_but_not_docs(tmp_path):
    model = fake_weights(tmp_path / "m", b"w" * 5000)
    base = fingerprint.fingerprint(model)
    assert len(base) == 12 and base == fingerprint.fingerprint(shutil.copytree(model, tmp_path / "copy"))
    (model / "README.md").write_text("card")
    (model / "onnx").mkdir()
    (model / "onnx" / "model.onnx_data.bin").write_bytes(b"other runtime")
    assert fingerprint.fingerprint(model) == base
    assert [f.name for f in fingerprint.model_files(model)] == ["config.json", "model.safetensors"]
    (model / "config.json").write_text('{"model_type": "mistral"}')
    fingerprint.clear_caches()
    assert fingerprint.fingerprint(model) != base
    with pytest.raises(FileNotFoundError):
        fingerprint.fingerprint(tmp_path / "missing")


def test_local_model_ids_change_with_the_weights(tmp_path):
    a = fake_weights(tmp_path / "one" / "Qwen-tiny", b"A" * 5000)
    b = fake_weights(tmp_path / "two" / "Qwen-tiny", b"B" * 5000)
    la, lb = LocalLLM(a, cache=False), LocalLLM(b, cache=False)
    assert la.label == lb.label == "Qwen-tiny (local)"
    assert la.model_id != lb.model_id and la.model_id == f"local:Qwen-tiny@{la.weights}"

    gguf = fake_weights(tmp_path / "g", b"G" * 5000, gguf=True)
    first = LocalLLM(gguf, cache=False)
    assert first.label == "tiny (local, Q8_0)" and first.model_id.startswith("local:tiny.Q8_0.gguf@")
    gguf.write_bytes(b"H" * 5000)  # new weights, same size (and maybe the same modification time)
    clear_caches()
    assert LocalLLM(gguf, cache=False).model_id != first.model_id


def test_changed_weights_never_reuse_cached_replies(tmp_path):
    calls = []
    cache = tmp_path / "llm.sqlite"

    def rule(kind, messages, spec):
        calls.append(kind)
        return "hello"

    old, new = FakeLLM(rule, cache=cache), FakeLLM(rule, cache=cache)
    old.model_id, new.model_id = "local:m@aaaaaaaaaaaa", "local:m@bbbbbbbbbbbb"  # what LocalLLM would set
    old.chat([{"role": "user", "content": "hi"}])
    assert not new.chat([{"role": "user", "content": "hi"}]).cached and len(calls) == 2


def test_loaded_models_are_keyed_by_weights_and_clearable(tmp_path, monkeypatch):
    loads = []

    class Loaded:
        @staticmethod
        def from_pretrained(folder, **kwargs):
            loads.append((folder, kwargs))
            return Loaded()

        def eval(self):
            return self

    import transformers

    monkeypatch.setattr(transformers, "AutoModelForCausalLM", Loaded)
    monkeypatch.setattr(transformers, "AutoTokenizer", Loaded)
    clear_caches()
    model = fake_weights(tmp_path / "m", b"A" * 5000)
    llm = LocalLLM(model, cache=False)
    local.load(model, llm.weights)
    local.load(model, llm.weights)
    assert len(loads) == 2 and all(kw == {"local_files_only": True} for _, kw in loads)  # tokenizer + model, once
    assert list(local._LOADED) == [f"{model.resolve()}@{llm.weights}"]
    clear_caches()
    assert local._LOADED == {}
