"""The prepared default model (SmolLM2-135M-Instruct): repaired tokenizer, ids, chat template, manifest."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from models import catalog, prepare
from models.sources import GGUF_NAME, GGUF_SHA256, WHEEL_SHA256
from tests.reference import load_reference_model

pytestmark = pytest.mark.slow

TEXTS = [
    "The capital of France is",
    "Hello , world ! It's 2024: 3.14159 and 1,000,000 items.",
    "我虽然很累，但还是决定出去散步。",
    "Emoji 🙂🚀 and code:\ndef f(x):\n    return x ** 2\n",
    "  leading spaces\tand tabs  ",
]


@pytest.fixture(scope="module")
def tokenizer(default_model_dir: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(default_model_dir / "tokenizer.json"))


# The original tokenizer's ids for TEXTS: computed by tests/gguf_bpe.py (byte-level BPE over the GGUF's own
# vocabulary and merges, split as llama.cpp's `smollm` pre-tokenizer splits), which shares nothing with the
# repaired tokenizer.json; the first also is llama.cpp's own output for that sentence.
ORIGINAL_IDS = [
    [504, 3575, 282, 4649, 314],
    [19556, 3297, 905, 5728, 657, 506, 216, 34, 32, 34, 36, 42, 216, 35, 30, 33, 36, 33, 37, 41, 284, 216, 33, 28,
     32, 32, 32, 28, 32, 32, 32, 3723, 30],  # digits one by one, each after its own space token 216
    [19805, 235, 179, 243, 138, 178, 222, 131, 29157, 226, 178, 129, 124, 12831, 18645, 224, 18276, 242, 27830,
     33031, 128, 36076, 37579, 44652, 136, 15683, 113, 34978, 115, 19076],  # byte-level pieces of characters
    [10809, 33777, 47526, 10813, 244, 218, 284, 2909, 42, 198, 1604, 275, 24, 104, 727, 472, 1003, 1792, 1903, 216,
     34, 198],  # 🚀 = 10813, 244, 218: three byte-level tokens
    [216, 2899, 5600, 197, 397, 29416, 256],  # leading spaces, a tab, trailing spaces
]


@pytest.fixture(scope="module")
def gguf_reference(default_model_dir: Path):
    from tests.gguf_bpe import GgufBpe

    reference = GgufBpe(default_model_dir / GGUF_NAME)
    assert (reference.model, reference.pre, reference.add_bos) == ("gpt2", "smollm", False)
    return reference


@pytest.mark.parametrize(("text", "ids"), list(zip(TEXTS, ORIGINAL_IDS, strict=True)))
def test_encodings_match_the_original_tokenizer(tokenizer, gguf_reference, text, ids):
    assert gguf_reference.encode(text) == ids  # the pinned ids are the GGUF's
    assert tokenizer.encode(text).ids == ids


def test_more_texts_match_the_gguf_reference(tokenizer, gguf_reference):
    texts = [
        "Emoji: 🙂🚀👍🏽 and 👨‍👩‍👧 family",
        "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # 0123456789\n",
        "Don't stop—it's 3×4=12 ½ ①②, naïve café, Привет, こんにちは。\r\n\n\n  \t end",
    ]
    for text in texts:
        assert tokenizer.encode(text).ids == gguf_reference.encode(text), text


def test_no_bos_is_added_and_special_ids(tokenizer):
    for text in TEXTS:
        assert 1 not in tokenizer.encode(text).ids
    assert tokenizer.token_to_id("<|im_start|>") == 1
    assert tokenizer.token_to_id("<|im_end|>") == 2


def test_digits_are_split_one_by_one(tokenizer):
    pieces = tokenizer.encode("12345").tokens
    assert pieces == ["1", "2", "3", "4", "5"]


@pytest.mark.parametrize("text", TEXTS)
def test_decode_round_trips_exactly(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=False) == text


def test_transformers_sees_the_same_tokenizer(default_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(default_model_dir)
    assert tok("The capital of France is")["input_ids"] == [504, 3575, 282, 4649, 314]
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (1, 2, 2)
    assert tok.decode(tok("Hello , world !")["input_ids"]) == "Hello , world !"  # no space clean-up
    chat = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert chat.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert chat == (  # ChatML with SmolLM2's default system prompt
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_generation_config_and_chat_template(default_model_dir):
    generation = json.loads((default_model_dir / "generation_config.json").read_text())
    assert (generation["bos_token_id"], generation["eos_token_id"], generation["pad_token_id"]) == (1, 2, 2)
    assert "<|im_start|>" in (default_model_dir / "chat_template.jinja").read_text()
    import gguf

    field = gguf.GGUFReader(str(default_model_dir / GGUF_NAME)).fields["tokenizer.chat_template"]
    assert (default_model_dir / "chat_template.jinja").read_text() == bytes(field.parts[field.data[0]]).decode()


def test_manifest_is_complete(default_model_dir):
    manifest = catalog.read_manifest(default_model_dir)
    assert catalog.manifest_is_valid(default_model_dir)
    assert manifest["graph_edits"] == ["last_position_lm_head", "grouped_attention", "fused_attention"]
    assert manifest["name"] == catalog.DEFAULT_MODEL_NAME and manifest["created"]
    assert manifest["source"]["gguf_sha256"] == GGUF_SHA256
    assert manifest["source"].get("wheel_sha256", WHEEL_SHA256) == WHEEL_SHA256
    assert manifest["files"][GGUF_NAME]["sha256"] == GGUF_SHA256
    assert {k: manifest["model"][k] for k in ("num_layers", "num_kv_heads", "head_dim", "vocab_size")} == {
        "num_layers": 30,
        "num_kv_heads": 3,
        "head_dim": 64,
        "vocab_size": 49152,
    }
    assert manifest["tokens"] == {"eos_token_ids": [2], "bos_token_id": 1, "pad_token_id": 2}
    assert manifest["dtype"] == "float32"
    inputs = {i["name"]: i for i in manifest["graph"]["inputs"]}
    assert len(inputs) == 3 + 60 and inputs["past_key_values.29.value"]["shape"][1:] == [
        3,
        "past_sequence_length",
        64,
    ]
    outputs = {o["name"] for o in manifest["graph"]["outputs"]}
    assert "logits" in outputs and "present.29.key" in outputs
    assert manifest["smoke_test"]["continuation"].startswith(" Paris")
    assert {"python", "torch", "transformers", "optimum-onnx", "tokenizers"} <= set(manifest["tools"])
    assert not (default_model_dir / "model.safetensors").exists()  # the intermediate HF folder is dropped


def test_second_prepare_is_instant(default_model_dir):
    started = time.monotonic()
    assert prepare.prepare_default() == default_model_dir
    assert time.monotonic() - started < 2.0


def test_reference_model_from_the_kept_gguf(default_model_dir):
    import torch

    model = load_reference_model(default_model_dir)
    assert not model.training and model.dtype == torch.float32
    with torch.no_grad():
        logits = model(torch.tensor([[504, 3575, 282, 4649, 314]])).logits
    assert int(logits[0, -1].argmax()) == catalog.read_manifest(default_model_dir)["smoke_test"]["generated_ids"][0]
