"""OnnxDecoder on the tiny exported Llama: the IO-bound, row-gathered KV cache vs plain full recomputation."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.engine.protocol import PositionLimit, RowSummarizer
from runtime.decoder import OnnxDecoder
from runtime.session import DeviceError, cuda_unavailable_reason

ATOL = 1e-4
PROMPT = [5, 17, 42, 99, 7, 130]


@pytest.fixture(scope="module")
def decoder(tiny_model_dir) -> OnnxDecoder:
    return OnnxDecoder(tiny_model_dir, device="cpu")


def plain_run(
    decoder: OnnxDecoder,
    ids: list[int],
    past: list[np.ndarray] | None = None,
    mask: np.ndarray | None = None,
    positions: np.ndarray | None = None,
) -> list[np.ndarray]:
    """The model through a plain session.run with numpy inputs (no IO binding, no helper graphs)."""
    io = decoder.io
    count = len(ids)
    if past is None:
        past = [np.zeros((1, io.kv_heads, 0, io.head_dim), np.float32) for _ in io.past_names]
    past_len = past[0].shape[2]
    feeds = {
        "input_ids": np.asarray([ids], np.int64).reshape(past[0].shape[0], -1),
        "attention_mask": np.ones((1, past_len + count), np.int64) if mask is None else mask,
        "position_ids": np.arange(past_len, past_len + count, dtype=np.int64)[None] if positions is None else positions,
    }
    feeds.update(zip(io.past_names, past, strict=True))
    return decoder.session.run(["logits", *io.present_names], feeds)


def full_recompute(decoder: OnnxDecoder, ids: list[int]) -> np.ndarray:
    """Last-position logits of the whole sequence run from scratch, without any cache."""
    return plain_run(decoder, ids)[0][0, -1]


def greedy(logits: np.ndarray) -> int:
    return int(np.argmax(logits))


def test_prefill_returns_last_position_float32(decoder):
    state, logits = decoder.prefill(PROMPT)
    assert logits.shape == (decoder.vocab_size,) and logits.dtype == np.float32
    assert state.num_rows == 1 and decoder.row_lengths(state) == [len(PROMPT)]
    np.testing.assert_allclose(logits, full_recompute(decoder, PROMPT), atol=ATOL, rtol=0)


def test_cached_steps_equal_full_recomputation_over_20_steps(decoder):
    ids = list(PROMPT)
    state, logits = decoder.prefill(ids)
    for _ in range(20):
        ids.append(greedy(logits))
        state, batch_logits = decoder.step(state, [0], [ids[-1]])
        logits = batch_logits[0]
        np.testing.assert_allclose(logits, full_recompute(decoder, ids), atol=ATOL, rtol=0)
    assert decoder.row_lengths(state) == [len(ids)]


def test_fork_reorder_and_drop_equal_independent_rows(decoder):
    rng = np.random.default_rng(0)
    seqs = [list(PROMPT)]
    state, _ = decoder.prefill(PROMPT)
    plans = [
        [0, 0, 0, 0],
        [3, 1, 0, 2],
        [2, 2, 0, 1, 3],
        [4, 0],
        [1, 1, 0],
    ]  # fork, reorder, fork+reorder, drop...
    for rows in plans:
        tokens = rng.integers(3, decoder.vocab_size, len(rows)).tolist()
        seqs = [seqs[r] + [t] for r, t in zip(rows, tokens, strict=True)]
        state, logits = decoder.step(state, rows, tokens)
        assert logits.shape == (len(rows), decoder.vocab_size)
        for row, seq in enumerate(seqs):
            np.testing.assert_allclose(logits[row], full_recompute(decoder, seq), atol=ATOL, rtol=0)
    assert decoder.row_lengths(state) == [len(s) for s in seqs]


def test_truncated_rows_of_different_lengths_batch_like_single_rows(decoder):
    state, logits = decoder.prefill(PROMPT)
    seq = list(PROMPT)
    for _ in range(6):
        seq.append(greedy(logits if logits.ndim == 1 else logits[0]))
        state, logits = decoder.step(state, [0], [seq[-1]])
    # Branch from earlier steps: rows keep 7, 9 and all 12 tokens, then take different tokens; twice, so
    # masked holes from the first truncation sit under the second one.
    keeps = [[7, 9, None, 3], [None, 5, 10, 3]]
    rows_plan = [[0, 0, 0, 0], [0, 1, 2, 3]]
    seqs = [seq]
    for rows, keep in zip(rows_plan, keeps, strict=True):
        tokens = [11, 12, 13, 14]
        seqs = [seqs[r][: k if k is not None else None] + [t] for r, k, t in zip(rows, keep, tokens, strict=True)]
        state, logits = decoder.step(state, rows, tokens, keep)
        assert decoder.row_lengths(state) == [len(s) for s in seqs]
        for row, s in enumerate(seqs):
            np.testing.assert_allclose(logits[row], full_recompute(decoder, s), atol=ATOL, rtol=0)
    # and the rows keep stepping correctly afterwards
    state, logits = decoder.step(state, [3, 2, 1, 0], [20, 21, 22, 23])
    seqs = [seqs[r] + [t] for r, t in zip([3, 2, 1, 0], [20, 21, 22, 23], strict=True)]
    for row, s in enumerate(seqs):
        np.testing.assert_allclose(logits[row], full_recompute(decoder, s), atol=ATOL, rtol=0)


def test_numpy_arguments_are_accepted(decoder):
    state, _ = decoder.prefill(np.array(PROMPT))
    state, logits = decoder.step(state, np.array([0, 0]), np.array([3, 4]), np.array([3, 6]))
    np.testing.assert_allclose(logits[0], full_recompute(decoder, PROMPT[:3] + [3]), atol=ATOL, rtol=0)
    np.testing.assert_allclose(logits[1], full_recompute(decoder, PROMPT + [4]), atol=ATOL, rtol=0)


def test_io_binding_path_equals_plain_run(decoder):
    state, _ = decoder.prefill(PROMPT)
    state, _ = decoder.step(state, [0, 0], [3, 4])
    past = [value.numpy().copy() for value in state.tensors]
    new_state, logits = decoder.step(state, [0, 1], [8, 9], [None, 4])
    mask = new_state.mask
    positions = np.array([[len(PROMPT) + 1], [4]], np.int64)
    plain = plain_run(decoder, [8, 9], past, mask, positions)
    np.testing.assert_array_equal(logits, plain[0][:, -1])
    for value, expected in zip(new_state.tensors, plain[1:], strict=True):
        np.testing.assert_array_equal(value.numpy(), expected)


def test_old_state_is_not_modified_by_a_step(decoder):
    state, _ = decoder.prefill(PROMPT)
    mask_before = state.mask.copy()
    kv_before = [v.numpy().copy() for v in state.tensors]
    decoder.step(state, [0, 0], [3, 4], [2, None])
    np.testing.assert_array_equal(state.mask, mask_before)
    for value, before in zip(state.tensors, kv_before, strict=True):
        np.testing.assert_array_equal(value.numpy(), before)


@pytest.mark.parametrize(
    ("rows", "tokens", "lengths", "match"),
    [
        ([], [], None, "rows"),
        ([1], [3], None, "rows"),
        ([0, -1], [3, 3], None, "rows"),
        ([0], [3, 4], None, "tokens"),
        ([0], [10_000], None, "token ids"),
        ([0], [3], [99], "lengths"),
        ([0], [3], [-1], "lengths"),
        ([0], [3], [1, 2], "lengths"),
    ],
)
def test_invalid_step_arguments_raise_value_error(decoder, rows, tokens, lengths, match):
    state, _ = decoder.prefill(PROMPT)
    with pytest.raises(ValueError, match=match):
        decoder.step(state, rows, tokens, lengths)


def test_sequence_longer_than_the_model_raises(decoder):
    with pytest.raises(ValueError, match="exceeds the model's 512 positions"):
        decoder.prefill([5] * 513)
    state, _ = decoder.prefill([5] * 512)
    with pytest.raises(ValueError, match="sequence length 513"):
        decoder.step(state, [0], [5])


def test_empty_prompt_raises(decoder):
    with pytest.raises(ValueError, match="prompt_ids"):
        decoder.prefill([])


def test_model_facts_read_from_graph_and_config(decoder):
    assert decoder.vocab_size == 384
    assert decoder.eos_token_ids == (2,)
    assert (decoder.io.kv_heads, decoder.io.head_dim) == (2, 16)
    assert len(decoder.io.past_names) == 4 and decoder.io.past_names[1] == "past_key_values.0.value"
    assert decoder.provider == "CPUExecutionProvider" and decoder.device == "cpu"


def test_the_decoder_declares_its_optional_capabilities(decoder):
    """The engine uses a capability only when the source satisfies its protocol: the decoder has both."""
    assert isinstance(decoder, RowSummarizer) and isinstance(decoder, PositionLimit)


def test_warmup_runs_prefill_fork_and_truncation_and_changes_no_result(tiny_model_dir):
    warmed, fresh = OnnxDecoder(tiny_model_dir, device="cpu"), OnnxDecoder(tiny_model_dir, device="cpu")
    calls: list[tuple] = []
    prefill, step = warmed.prefill, warmed.step
    warmed.prefill = lambda ids: calls.append(("prefill",)) or prefill(ids)
    warmed.step = lambda state, rows, tokens, lengths=None: calls.append(("step", list(rows), lengths)) or step(
        state, rows, tokens, lengths)
    warmed.warmup()
    del warmed.prefill, warmed.step
    assert calls[0] == ("prefill",)
    steps = [call for call in calls if call[0] == "step"]
    assert any(len(set(rows)) < len(rows) for _, rows, _ in steps)  # a fork (one row continued twice)
    assert any(lengths and any(n is not None for n in lengths) for _, _, lengths in steps)  # a truncation

    def first_steps(decoder: OnnxDecoder) -> tuple[np.ndarray, np.ndarray]:
        state, first = decoder.prefill(PROMPT)
        return first, decoder.step(state, [0, 0], [7, 9])[1]

    for a, b in zip(first_steps(warmed), first_steps(fresh), strict=True):  # warm computes what fresh does
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="CUDA looks available here")
def test_cuda_request_without_cuda_raises_clear_device_error(tiny_model_dir):
    with pytest.raises(DeviceError, match="device 'cuda' requested but CUDA is not active"):
        OnnxDecoder(tiny_model_dir, device="cuda")


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="CUDA looks available here")
def test_auto_reports_cpu_without_cuda(tiny_model_dir):
    assert OnnxDecoder(tiny_model_dir, device="auto").provider == "CPUExecutionProvider"


def test_unknown_device_raises_value_error(tiny_model_dir):
    with pytest.raises(ValueError, match="device must be one of"):
        OnnxDecoder(tiny_model_dir, device="gpu")


def test_helper_sessions_run_on_the_calling_thread(decoder):
    # a helper with its own worker threads leaves them spinning into the main session's next run (measured:
    # an 8-row step after a beam reorder took 1.9x as long), so helpers get one intra-op thread, or workers
    # that do not spin
    gathers = [decoder.row_gather.graph(gather, padded)[0] for gather, padded in ((True, False), (False, True))]
    for helper in (*gathers, decoder._last):
        assert helper.get_session_options().intra_op_num_threads == 1
    entries = decoder._summary.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
    assert entries == "0"


def test_summarize_agrees_with_the_numpy_softmax(decoder):
    from decoding.records.stats import Softmax

    state, _ = decoder.prefill(PROMPT)
    _, logits = decoder.step(state, [0, 0, 0], [3, 9, 27])
    summary = decoder.summarize(logits, 25)
    assert summary.top_ids.shape == (3, 25) and summary.total.dtype == np.float64
    for row, logits_row in enumerate(logits):
        reference = Softmax.of(logits_row)
        assert summary.peak[row] == reference.peak
        np.testing.assert_allclose(summary.weights[row], reference.weights, rtol=1e-6)
        # summed in float32 chunks, then in float64: as close as a float32 softmax (a whole-row float32 sum: 2e-5)
        assert summary.total[row] == pytest.approx(reference.total, rel=1e-6)
        expected_shift = np.dot(reference.weights.astype(np.float64), reference.shifted.astype(np.float64))
        assert summary.weighted_shift[row] == pytest.approx(expected_shift, rel=1e-6)
        np.testing.assert_array_equal(summary.top_ids[row], reference.best(25))
    assert decoder.summarize(logits[:1], 10**6).top_ids.shape == (1, decoder.vocab_size)  # k capped at vocab


@pytest.mark.parametrize("vocab", [49152, 50257, 32000, 151936, 97, 1, 256, 257])
def test_summary_chunks_divide_the_vocabulary(vocab):
    from runtime.helper_graphs import SUMMARY_CHUNK, summary_parts

    parts = summary_parts(vocab)
    assert vocab % parts == 0 and vocab // parts <= SUMMARY_CHUNK
    assert all(vocab % fewer for fewer in range(-(-vocab // SUMMARY_CHUNK), parts))  # the fewest such


def test_summarize_a_vocabulary_no_chunk_divides(decoder):
    """A prime vocabulary is summed one value per chunk: the same numbers as any other."""
    from decoding.records.stats import Softmax

    logits = np.random.default_rng(3).normal(size=(2, 997)).astype(np.float32) * 4
    summary = decoder.summarize(logits, 10)
    for row, logits_row in enumerate(logits):
        reference = Softmax.of(logits_row)
        assert summary.total[row] == pytest.approx(reference.total, rel=1e-6)
        assert summary.weighted_shift[row] == pytest.approx(reference.shift_sum, rel=1e-5)
        np.testing.assert_array_equal(summary.top_ids[row], reference.best(10))
