"""runtime.kv_cache.KVCache on the tiny exported Llama: row selection on the device, per-row truncation by the
mask, growth by a run, and what a run reads from it (mask, positions). CPU OrtValues, the code path CUDA runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnxruntime as ort
import pytest

from runtime.decoder import OnnxDecoder
from runtime.kv_cache import KVCache

ATOL = 1e-4
PROMPT = [5, 17, 42, 99, 7, 130]


@pytest.fixture(scope="module")
def decoder(tiny_model_dir) -> OnnxDecoder:
    return OnnxDecoder(tiny_model_dir, device="cpu")


class CountingGather:
    """Delegates to the real RowGather and counts its runs."""

    def __init__(self, gather):
        self.gather, self.calls = gather, 0
        self.placement, self.elem_type, self.num_tensors = gather.placement, gather.elem_type, gather.num_tensors

    def __call__(self, tensors, rows):
        self.calls += 1
        return self.gather(tensors, rows)


def three_rows(decoder: OnnxDecoder) -> KVCache:
    """Rows PROMPT+[3], PROMPT[:4]+[4] (a masked hole at positions 4-5) and PROMPT+[5]: different contents,
    lengths and masks, so every selection is visible."""
    cache, _ = decoder.prefill(PROMPT)
    cache, _ = decoder.step(cache, [0, 0, 0], [3, 4, 5], [None, 4, None])
    return dataclasses.replace(cache, gather=CountingGather(cache.gather))


def host(cache: KVCache) -> list[np.ndarray]:
    return [value.numpy() for value in cache.tensors]


def test_empty_cache_is_one_row_of_length_zero_on_the_device(decoder):
    cache = KVCache.empty(decoder.row_gather, kv_heads=2, head_dim=16, mask_dtype=np.int64)
    assert (cache.num_rows, cache.physical_length, cache.lengths.tolist()) == (1, 0, [0])
    assert len(cache.tensors) == 4
    assert all(value.shape() == [1, 2, 0, 16] and value.device_name() == "cpu" for value in cache.tensors)
    np.testing.assert_array_equal(cache.attention_mask(3), [[1, 1, 1]])
    np.testing.assert_array_equal(cache.position_ids(3), [[0, 1, 2]])


def test_rows_carry_their_own_lengths_masks_and_positions(decoder):
    cache = three_rows(decoder)
    assert cache.physical_length == len(PROMPT) + 1
    assert cache.lengths.tolist() == [7, 5, 7]
    np.testing.assert_array_equal(cache.mask, [[1] * 7, [1, 1, 1, 1, 0, 0, 1], [1] * 7])
    np.testing.assert_array_equal(cache.mask.sum(axis=1), cache.lengths)  # length = ones in the mask
    np.testing.assert_array_equal(cache.position_ids(), [[7], [5], [7]])  # = the next token's position
    np.testing.assert_array_equal(cache.position_ids(2), [[7, 8], [5, 6], [7, 8]])
    mask = cache.attention_mask(2)
    assert mask.shape == (3, 9) and mask.dtype == cache.mask.dtype
    np.testing.assert_array_equal(mask[:, :7], cache.mask)
    assert (mask[:, 7:] == 1).all()


@pytest.mark.parametrize(
    "rows", [[0, 0, 0, 2], [2, 0, 1], [1], [2, 1, 1, 0, 2]], ids=["fork", "reorder", "drop", "mixed"]
)
def test_select_rows_gathers_tensors_masks_and_lengths_on_the_device(decoder, rows):
    cache = three_rows(decoder)
    before = host(cache)
    selected = cache.select_rows(rows)
    assert cache.gather.calls == 1 and selected.num_rows == len(rows)
    for value, old in zip(selected.tensors, before, strict=True):
        assert value.device_name() == "cpu"
        np.testing.assert_array_equal(value.numpy(), old[rows])
    np.testing.assert_array_equal(selected.mask, cache.mask[rows])
    np.testing.assert_array_equal(selected.lengths, cache.lengths[rows])
    for value, old in zip(cache.tensors, before, strict=True):  # the source cache is untouched
        np.testing.assert_array_equal(value.numpy(), old)


def test_identity_selection_runs_no_gather(decoder):
    cache = three_rows(decoder)
    assert cache.select_rows([0, 1, 2]) is cache
    assert cache.select_rows(np.arange(3)) is cache
    assert cache.gather.calls == 0
    cache.select_rows([0, 1])  # a prefix is not the identity: the last row is dropped
    assert cache.gather.calls == 1


def test_selected_rows_step_like_their_sources(decoder):
    cache = three_rows(decoder)
    seqs = [PROMPT + [3], PROMPT[:4] + [4], PROMPT + [5]]
    _, logits = decoder.step(cache, [2, 1, 1], [8, 9, 10])
    for row, (source, token) in enumerate(zip([2, 1, 1], [8, 9, 10], strict=True)):
        _, expected = decoder.prefill(seqs[source] + [token])
        np.testing.assert_allclose(logits[row], expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("keep", [0, 1, 4, 8])
def test_truncate_then_grow_equals_a_fresh_prefill_of_the_shorter_sequence(decoder, keep):
    seq = PROMPT + [3, 4, 5, 6]
    cache, _ = decoder.prefill(seq)
    truncated = cache.truncate([keep])
    assert truncated.lengths.tolist() == [keep] and truncated.physical_length == len(seq)
    assert truncated.mask[0].tolist() == [1] * keep + [0] * (len(seq) - keep)
    assert cache.lengths.tolist() == [len(seq)] and (cache.mask == 1).all()  # the source cache is untouched
    grown, logits = decoder.step(truncated, [0], [11])
    assert grown.lengths.tolist() == [keep + 1] and grown.physical_length == len(seq) + 1
    _, expected = decoder.prefill(seq[:keep] + [11])
    np.testing.assert_allclose(logits[0], expected, atol=ATOL, rtol=0)
    _, logits = decoder.step(grown, [0], [12])  # and it keeps stepping right
    _, expected = decoder.prefill(seq[:keep] + [11, 12])
    np.testing.assert_allclose(logits[0], expected, atol=ATOL, rtol=0)


def test_truncate_to_the_full_length_or_none_returns_the_same_cache(decoder):
    cache = three_rows(decoder)
    assert cache.truncate([None, 5, 7]) is cache
    assert cache.truncate(np.array([7, 5, 7])) is cache


def test_truncate_counts_tokens_not_positions_across_earlier_holes(decoder):
    cache, _ = decoder.step(three_rows(decoder), [0, 1, 2], [8, 9, 10])  # row 1: PROMPT[:4] + [4, 9]
    np.testing.assert_array_equal(cache.mask[1], [1, 1, 1, 1, 0, 0, 1, 1])
    truncated = cache.truncate([None, 5, 2])
    np.testing.assert_array_equal(truncated.mask[1], [1, 1, 1, 1, 0, 0, 1, 0])  # the 5th token sits at position 6
    np.testing.assert_array_equal(truncated.mask[2], [1, 1, 0, 0, 0, 0, 0, 0])
    assert truncated.lengths.tolist() == [8, 5, 2]
    assert truncated.tensors is cache.tensors  # only the masks change
    np.testing.assert_array_equal(cache.mask[1], [1, 1, 1, 1, 0, 0, 1, 1])
    _, logits = decoder.step(truncated, [1, 2], [11, 12])
    for row, seq in enumerate([PROMPT[:4] + [4, 11], PROMPT[:2] + [12]]):
        _, expected = decoder.prefill(seq)
        np.testing.assert_allclose(logits[row], expected, atol=ATOL, rtol=0)


def test_grow_takes_the_presents_and_the_run_mask(decoder):
    cache = three_rows(decoder)
    mask = cache.attention_mask(2)
    presents = [
        ort.OrtValue.ortvalue_from_numpy(np.zeros((3, 2, cache.physical_length + 2, 16), np.float32))
        for _ in cache.tensors
    ]
    grown = cache.grow(presents, mask)
    assert grown.tensors == presents and grown.mask is mask
    assert grown.lengths.tolist() == [9, 7, 9] and grown.physical_length == 9
    assert cache.lengths.tolist() == [7, 5, 7]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: c.select_rows([]), r"rows must be a non-empty 1-D sequence, got \[\]"),
        (lambda c: c.select_rows([[0, 1]]), r"rows must be a non-empty 1-D sequence"),
        (lambda c: c.select_rows([0, 3]), r"rows must be in \[0, 3\), got \[0, 3\]"),
        (lambda c: c.select_rows([-1]), r"rows must be in \[0, 3\), got \[-1\]"),
        (lambda c: c.truncate([None, 2]), r"lengths must have one entry per row \(3\), got 2"),
        (lambda c: c.truncate([None, 6, None]), r"lengths\[1\] must be in \[0, 5\] \(row 1's length\), got 6"),
        (lambda c: c.truncate([-1, None, None]), r"lengths\[0\] must be in \[0, 7\] \(row 0's length\), got -1"),
        (lambda c: c.grow(c.tensors, c.mask), r"attention_mask must be \[3, 7 \+ S\] with S >= 1, got \[3, 7\]"),
        (lambda c: c.grow(c.tensors, c.attention_mask()[:2]), r"attention_mask must be \[3, 7 \+ S\]"),
        (lambda c: c.grow(c.tensors[:1], c.attention_mask()), r"presents must have one tensor per past input \(4\)"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_allowed_range(decoder, call, message):
    cache = three_rows(decoder)
    with pytest.raises(ValueError, match=message):
        call(cache)
    assert cache.gather.calls == 0  # nothing ran on the device
