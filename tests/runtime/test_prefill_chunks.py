"""Chunked prefill on the tiny exported Llama (KVCache.extend through OnnxDecoder.prefill): the same logits and
KV cache as one run over the whole prompt at any chunk size, progress after every chunk, and a cancel between
chunks that leaves the decoder and every earlier cache usable. The engine's prefill hook (Engine.start's
on_prefill, cancel during the prefill) on the same model."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.engine.protocol import PrefillCancelled
from decoding.records.trace import PromptInfo
from runtime.decoder import OnnxDecoder

ATOL = 1e-5
PROMPT = [(7 * i + 3) % 380 + 3 for i in range(45)]  # 45 tokens: no chunk size below divides it evenly


@pytest.fixture(scope="module")
def decoder(tiny_model_dir) -> OnnxDecoder:
    return OnnxDecoder(tiny_model_dir, device="cpu")


@pytest.fixture(scope="module")
def whole(decoder):
    """The prompt in one run: the reference cache and last logits."""
    decoder.chunk = len(PROMPT)
    return decoder.prefill(PROMPT)


def host(cache) -> list[np.ndarray]:
    return [value.numpy() for value in cache.tensors]


@pytest.mark.parametrize("chunk", [1, 4, 7, 16, 44, 45, 512])
def test_chunked_prefill_gives_the_logits_and_cache_of_one_run(decoder, whole, chunk):
    decoder.chunk = chunk
    cache, logits = decoder.prefill(PROMPT)
    whole_cache, whole_logits = whole
    np.testing.assert_allclose(logits, whole_logits, atol=ATOL, rtol=0)
    assert cache.lengths.tolist() == [len(PROMPT)] and cache.mask.tolist() == whole_cache.mask.tolist()
    for got, expected in zip(host(cache), host(whole_cache), strict=True):
        np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0)
    _, step = decoder.step(cache, [0, 0], [11, 12])  # and the rows it forks step like the reference's
    _, expected = decoder.step(whole_cache, [0, 0], [11, 12])
    np.testing.assert_allclose(step, expected, atol=ATOL, rtol=0)


def test_progress_hears_zero_then_every_chunk_end(decoder):
    decoder.chunk = 16
    heard = []
    decoder.prefill(PROMPT, progress=lambda done, total: heard.append((done, total)))
    assert heard == [(0, 45), (16, 45), (32, 45), (45, 45)]


def test_a_stop_between_chunks_raises_and_leaves_everything_usable(decoder, whole):
    decoder.chunk = 7
    heard = []

    def stop_at_14(done, total):
        heard.append(done)
        return done >= 14

    earlier, _ = decoder.prefill(PROMPT[:10])
    with pytest.raises(PrefillCancelled, match="14 of 45"):
        decoder.prefill(PROMPT, progress=stop_at_14)
    assert heard == [0, 7, 14]  # no chunk read after the stop
    cache, logits = decoder.prefill(PROMPT)
    np.testing.assert_allclose(logits, whole[1], atol=ATOL, rtol=0)
    _, step = decoder.step(earlier, [0], [PROMPT[10]])  # a cache made before the cancel still steps right
    _, expected = decoder.prefill(PROMPT[:11])
    np.testing.assert_allclose(step[0], expected, atol=ATOL, rtol=0)


def test_an_exception_raised_by_progress_goes_through(decoder):
    def broken(done, total):
        if done:
            raise KeyboardInterrupt

    decoder.chunk = 5
    with pytest.raises(KeyboardInterrupt):
        decoder.prefill(PROMPT, progress=broken)


def test_chunk_must_be_positive(decoder, whole):
    decoder.chunk = 0
    with pytest.raises(ValueError, match="chunk must be >= 1, got 0"):
        decoder.prefill(PROMPT)


def engine(decoder) -> Engine:
    return Engine(decoder, tokenizer=FakeText(), eos_token_ids=[])


class FakeText:
    def piece(self, token_id: int) -> str:
        return f"<{token_id}>"

    def decode(self, token_ids) -> str:
        return "".join(self.piece(t) for t in token_ids)


def test_engine_reports_prefill_progress_and_runs_as_unchunked(decoder):
    lanes = [LaneSpec("greedy")]
    decoder.chunk = len(PROMPT)
    reference = engine(decoder).run(PromptInfo("p", PROMPT), lanes, max_new_tokens=4)
    decoder.chunk = 8
    heard = []
    trace = engine(decoder).start(PromptInfo("p", PROMPT), lanes, max_new_tokens=4,
                                  on_prefill=lambda done, total: heard.append(done))
    records = list(trace)
    assert heard == [0, 8, 16, 24, 32, 40, 45] and len(records) == 4
    assert trace.trace.lanes[0].token_ids == reference.lanes[0].token_ids
    assert trace.trace.lanes[0].finish_reason == reference.lanes[0].finish_reason


def test_engine_cancel_during_prefill_ends_lanes_cancelled_without_steps(decoder):
    decoder.chunk = 8
    cancel = threading.Event()

    def cancel_at_16(done, total):
        if done >= 16:
            cancel.set()  # as the CLI's Ctrl-C handler or the window's Esc would, from anywhere

    lanes = [LaneSpec("greedy"), LaneSpec("sample", do_sample=True, seed=1)]
    run = engine(decoder).start(PromptInfo("p", PROMPT), lanes, max_new_tokens=4, cancel=cancel,
                                on_prefill=cancel_at_16)
    assert list(run) == []
    assert [lane.finish_reason for lane in run.trace.lanes] == ["cancelled", "cancelled"]
    assert run.trace.error is None and all(lane.steps == [] for lane in run.trace.lanes)
    again = engine(decoder).run(PromptInfo("p", PROMPT), lanes[:1], max_new_tokens=2)  # the decoder still runs
    assert len(again.lanes[0].token_ids) == 2
