"""The runtime on the real default model (SmolLM2-135M-Instruct): greedy decoding token-identical to
transformers' generate() on the same dequantized GGUF weights, and its tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from runtime import load_model
from runtime.tokenizer import REPLACEMENT

pytestmark = pytest.mark.slow

NEW_TOKENS = 24
ROUND_TRIP = [
    "我虽然很累，但还是决定出去散步。今天天气很好！",
    "Emoji: 🙂🚀👍🏽 and 👨‍👩‍👧 family",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # 0123456789\n",
]


@pytest.fixture(scope="module")
def model(default_model_dir):
    return load_model(default_model_dir, device="cpu")


@pytest.fixture(scope="module")
def reference(default_model_dir):
    from tests.reference import load_reference_model

    return load_reference_model(default_model_dir)


def onnx_greedy(model, prompt_ids: list[int], new_tokens: int) -> list[int]:
    decoder = model.decoder
    state, logits = decoder.prefill(prompt_ids)
    out: list[int] = []
    while len(out) < new_tokens:
        out.append(int(np.argmax(logits)))
        if out[-1] in model.eos_token_ids:
            break
        state, batch = decoder.step(state, [0], [out[-1]])
        logits = batch[0]
    return out


def transformers_greedy(reference, prompt_ids: list[int], new_tokens: int, eos_ids) -> list[int]:
    import torch

    ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = reference.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=new_tokens,
            eos_token_id=list(eos_ids),
            pad_token_id=eos_ids[0],
        )
    return out[0, len(prompt_ids) :].tolist()


def test_capital_of_france_ids(model):
    assert model.tokenizer.encode("The capital of France is") == [504, 3575, 282, 4649, 314]


@pytest.mark.parametrize(
    ("prompt", "chat", "ends", "starts"),
    [
        ("The capital of France is", False, "length", " Paris."),
        ("Although I was tired, I still decided to", False, "length", " take a nap."),
        ("What is the capital of France? Answer in one sentence.", True, "eos", "The capital of France is Paris."),
        ("我虽然很累，但还是决定", False, "length", ""),
    ],
)
def test_greedy_token_identical_to_transformers(model, reference, prompt, chat, ends, starts):
    """Same ids as generate(); how each continuation ends is pinned (the chat answer ends with <|im_end|> after
    8 tokens, the others run the whole NEW_TOKENS), so both sides ending early or never alike cannot pass."""
    tokenizer = model.tokenizer
    ids = tokenizer.encode_chat(prompt) if chat else tokenizer.encode(prompt)
    ours = onnx_greedy(model, ids, NEW_TOKENS)
    theirs = transformers_greedy(reference, ids, NEW_TOKENS, model.eos_token_ids)
    assert ours == theirs, (tokenizer.decode(ours), tokenizer.decode(theirs))
    eos_at = [i for i, token in enumerate(ours) if token in model.eos_token_ids]
    if ends == "eos":
        assert eos_at == [len(ours) - 1] and len(ours) < NEW_TOKENS
    else:
        assert eos_at == [] and len(ours) == NEW_TOKENS
    assert tokenizer.decode(ours).startswith(starts)


def test_greedy_in_a_batch_of_forked_rows_equals_alone(model):
    ids = model.tokenizer.encode("Once upon a time")
    alone = onnx_greedy(model, ids, 12)
    state, logits = model.decoder.prefill(ids)
    tokens = [int(np.argmax(logits))] * 3
    rows: list[list[int]] = [[], [], []]
    source_rows = [0, 0, 0]  # fork the prompt's row once, then step the three rows together
    for _ in range(12):
        for row, token in zip(rows, tokens, strict=True):
            row.append(token)
        state, logits = model.decoder.step(state, source_rows, tokens)
        tokens = np.argmax(logits, axis=1).tolist()
        source_rows = [0, 1, 2]
    assert rows == [alone] * 3


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_tokenizer_round_trip_and_stream(model, text):
    tokenizer = model.tokenizer
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    stream = tokenizer.incremental()
    deltas = [stream.add(i) for i in ids] + [stream.finish()]
    assert all(REPLACEMENT not in d for d in deltas)
    assert "".join(deltas) == text


def test_chat_prompt_matches_transformers_apply_chat_template(model, default_model_dir):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(default_model_dir)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "你好，今天怎么样？"}]
    expected = hf.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    assert model.tokenizer.encode_chat("你好，今天怎么样？", system="Be brief.") == list(expected)


@pytest.mark.parametrize(
    ("system", "chatml"),
    [
        ("Be brief.", "<|im_start|>system\nBe brief.<|im_end|>\n"),
        (None, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"),
    ],
)
def test_chat_prompt_is_the_exact_chatml_string(model, system, chatml):
    """Independent of any template file: the ChatML text SmolLM2 was trained on, with its default system prompt
    when none is given; <|im_start|> (1) and <|im_end|> (2) are single special tokens."""
    user = "你好，今天怎么样？"
    expected = chatml + f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    assert model.tokenizer.render_chat(user, system) == expected
    ids = model.tokenizer.encode_chat(user, system)
    assert ids.count(1) == 3 and ids.count(2) == 2 and ids[0] == 1
    assert model.tokenizer.decode(ids, skip_special_tokens=False) == expected


LONG_TEXT = (
    "The lighthouse keeper wrote in his log every evening: the weather, the ships that passed, the birds that "
    "rested on the gallery rail, and the small repairs the old lamp needed. "
)


def test_a_long_prompt_read_in_chunks_matches_transformers(model, reference):
    """A prompt of several chunks (and a part chunk) through the fused attention graph: the last logits as
    transformers' forward over the whole prompt gives them, and the same greedy continuation."""
    import torch

    ids = model.tokenizer.encode(LONG_TEXT * 18 + "One evening he wrote that")
    assert len(ids) > 2 * model.decoder.chunk and len(ids) % model.decoder.chunk
    with torch.no_grad():
        expected = reference(torch.tensor([ids]), logits_to_keep=1).logits[0, -1].numpy()
    _, logits = model.decoder.prefill(ids)
    assert np.abs(logits - expected).max() < 1e-3
    ours = onnx_greedy(model, ids, 12)
    assert ours == transformers_greedy(reference, ids, 12, model.eos_token_ids)
