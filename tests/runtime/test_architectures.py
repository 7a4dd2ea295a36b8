"""OnnxDecoder on other optimum exports than Llama (GPT-2: multi-head, learned positions; Qwen2: GQA with
q/k/v biases): I/O discovery, cached stepping and branched rows against full recomputation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runtime.decoder import OnnxDecoder
from tests.runtime.test_decoder import ATOL, full_recompute

pytestmark = pytest.mark.slow  # two exports, ~10 s each on a busy machine


def build(kind: str, out_dir: Path) -> Path:
    import torch
    from optimum.exporters.onnx import main_export
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=256, initializer_range=0.2)
        model = GPT2LMHeadModel(config)
    else:
        config = Qwen2Config(
            vocab_size=300,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            initializer_range=0.2,
        )
        model = Qwen2ForCausalLM(config)
    hf_dir = out_dir.parent / (out_dir.name + "-hf")
    model.eval().save_pretrained(hf_dir)
    main_export(str(hf_dir), output=str(out_dir), task="text-generation-with-past", device="cpu", do_validation=False)
    return out_dir


@pytest.fixture(scope="module", params=["gpt2", "qwen2"])
def decoder(request, tmp_path_factory) -> OnnxDecoder:
    return OnnxDecoder(build(request.param, tmp_path_factory.mktemp(request.param) / "model"), device="cpu")


def test_discovers_graph_io(decoder):
    assert decoder.vocab_size == 300
    assert len(decoder.io.past_names) == 4 and decoder.io.has_position_ids
    assert decoder.io.head_dim == 8


def test_cached_and_branched_rows_equal_full_recomputation(decoder):
    seq = [5, 17, 42, 99, 7]
    state, logits = decoder.prefill(seq)
    for _ in range(8):
        seq.append(int(np.argmax(logits)))
        state, batch = decoder.step(state, [0], [seq[-1]])
        logits = batch[0]
        np.testing.assert_allclose(logits, full_recompute(decoder, seq), atol=ATOL, rtol=0)
    rows, keep, tokens = [0, 0, 0], [6, None, 9], [11, 12, 13]
    seqs = [seq[:k] + [t] for k, t in zip(keep, tokens, strict=True)]
    state, batch = decoder.step(state, rows, tokens, keep)
    for row, expected_seq in enumerate(seqs):
        np.testing.assert_allclose(batch[row], full_recompute(decoder, expected_seq), atol=ATOL, rtol=0)
