"""The inspection model of the real default model (SmolLM2-135M-Instruct; prepared lazily here the first time,
about 1.5 minutes): its attention and logit lens equal transformers' on the same dequantized GGUF weights, its
last lens row is the decoding model's own distribution, and the product's claim holds: the contrast word
("but", "但") has heads that look back at the concessive word ("Although", "虽然") far more than at any other
earlier token. Run with -s to see where each looks per layer."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.records.explain import ExplainResult, head_mean
from models.catalog import read_manifest
from models.inspection import Explainer, explain_sequence, prepare_inspection
from runtime.decoder import OnnxDecoder
from runtime.tokenizer import Tokenizer
from tests.reference import attention_and_lens, load_eager_reference

pytestmark = pytest.mark.slow

ENGLISH = "Although I was tired, I still went out, but"
CHINESE = "我虽然很累，但还是决定"


@pytest.fixture(scope="module")
def model_dir(default_model_dir):
    prepare_inspection(default_model_dir)
    return default_model_dir


@pytest.fixture(scope="module")
def tokenizer(model_dir) -> Tokenizer:
    return Tokenizer.from_model_dir(model_dir)


@pytest.fixture(scope="module")
def reference(model_dir):
    source = read_manifest(model_dir)["source"]
    return load_eager_reference(model_dir / source["gguf"])


def ids_of(tokenizer: Tokenizer, text: str, chat: bool) -> list[int]:
    return tokenizer.encode_chat(text) if chat else tokenizer.encode(text)


@pytest.mark.parametrize("text", [ENGLISH, CHINESE])
@pytest.mark.parametrize("chat", [False, True])
def test_outputs_equal_transformers(model_dir, tokenizer, reference, text, chat):
    ids = ids_of(tokenizer, text, chat)
    result = explain_sequence(model_dir, ids, len(ids), device="cpu")
    attentions, probs = attention_and_lens(reference, ids)
    assert result.attention.shape == attentions.shape == (30, 9, len(ids), len(ids))
    assert np.abs(result.attention - attentions).max() < 1e-4
    assert result.lens_ids.shape == (31, len(ids), 10)
    assert np.abs(np.take_along_axis(probs, result.lens_ids, -1) - result.lens_probs).max() < 1e-3
    assert np.abs(-np.sort(-probs, axis=-1)[..., :10] - result.lens_probs).max() < 1e-3
    rows, columns = np.triu_indices(len(ids), 1)
    assert np.all(result.attention[..., rows, columns] == 0)
    assert np.abs(result.attention.sum(axis=-1) - 1).max() < 1e-5


def test_last_lens_row_is_the_decoding_models_distribution(model_dir, tokenizer):
    ids = tokenizer.encode_chat(CHINESE)
    result = explain_sequence(model_dir, ids, len(ids), device="cpu")
    decoder = OnnxDecoder(model_dir, device="cpu")
    for position in (0, 24, len(ids) - 1):
        _, logits = decoder.prefill(ids[: position + 1])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        assert result.lens_ids[-1, position, 0] == int(np.argmax(logits))
        assert np.abs(probs[result.lens_ids[-1, position]] - result.lens_probs[-1, position]).max() < 1e-4


def test_the_lens_read_a_position_at_a_time_equals_every_position_at_once(model_dir, tokenizer):
    """The window reads the lens a position at a time (decoding.records.explain.LogitLens); saving reads every
    position at
    once, in calls of up to 256 rows: the same tokens and probabilities."""
    ids = tokenizer.encode_chat(ENGLISH)
    explainer = Explainer(model_dir, device="cpu")
    read, whole = explainer.explain(ids, len(ids)), explainer.explain(ids, len(ids))
    columns = {position: read.lens_column(position) for position in (len(ids) - 1, 0, 7)}
    for position, (column_ids, column_probs) in columns.items():
        assert np.array_equal(column_ids, whole.lens_ids[:, position])
        assert np.abs(column_probs - whole.lens_probs[:, position]).max() < 1e-6
    assert np.array_equal(read.lens_ids, whole.lens_ids) and read.to_json() == whole.to_json()


def token_span(result: ExplainResult, word: str, last: bool = False) -> list[int]:
    """Positions of the tokens whose bytes overlap the first (or last) occurrence of `word` (a Chinese
    character is often split over several byte-level tokens)."""
    starts = np.cumsum([0] + [len(t.bytes) for t in result.tokens])
    text, needle = b"".join(bytes(t.bytes) for t in result.tokens), word.encode()
    begin = text.rfind(needle) if last else text.find(needle)
    end = begin + len(needle)
    return [k for k in range(len(result.tokens)) if starts[k] < end and starts[k + 1] > begin]


@pytest.mark.parametrize("text, contrast, concessive", [(ENGLISH, " but", "Although"), (CHINESE, "但", "虽然")])
def test_the_contrast_word_looks_back_at_the_concessive_one(model_dir, tokenizer, text, contrast, concessive):
    """Chat form, so that the concessive word is not the first token (the first token takes most of every
    head's attention, an attention sink). Averaged over heads the sink and the neighbouring comma dominate;
    single heads carry the long-range look back."""
    ids = tokenizer.encode_chat(text)
    result = explain_sequence(model_dir, ids, len(ids), device="cpu")
    query = token_span(result, contrast, last=True)[-1]
    targets = token_span(result, concessive)
    others = [p for p in range(1, query) if p not in targets]
    weights = result.attention[:, :, query, :]  # [layers, heads, keys]
    on_targets = weights[:, :, targets].sum(axis=-1)
    per_other = weights[:, :, others].mean(axis=-1)
    layer, head = np.unravel_index(np.argmax(on_targets), on_targets.shape)
    pieces = [t.text for t in result.tokens]
    print(f"\n{text!r} (chat): {pieces[query]!r}@{query} -> {concessive!r} at {targets}")
    for lay in range(result.layers):
        mean = head_mean(result, lay, query)
        top = np.argsort(-mean[1:query])[:2] + 1
        listed = ", ".join(f"{pieces[p]!r}@{p} {mean[p]:.2f}" for p in top)
        print(f"  layer {lay:2d}: sink {mean[0]:.2f} | {listed} | on {concessive!r} {mean[targets].sum():.3f}")
    print(
        f"  strongest head: layer {layer} head {head}: {on_targets[layer, head]:.2f} on {concessive!r}, "
        f"{per_other[layer, head]:.3f} per other earlier token"
    )
    assert on_targets[layer, head] > 0.2
    assert on_targets[layer, head] > 10 * per_other[layer, head]
    assert weights[layer, head, targets].max() >= weights[layer, head, others].max()
