"""The engine against an independent reference, step by step, on the tiny exported model: for every lane of a
mixed run (greedy, sampled with each warper, penalties, a custom processor order, an in-run branch, a seed
fan-out) and every step, the recorded processed distribution and the chosen token equal what transformers'
own logits processors (the list its generate() builds from a GenerationConfig) make of the very logits the
engine was given, followed by a plain numpy draw by inverse CDF (Branchpoint's documented selector, which
transformers lacks: descending probability, equal ones by ascending id, u from the lane's PCG64(seed)). Beam
lanes with processors are checked against transformers' beam search. Both decision paths: batched rows and
lane by lane."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from decoding.analysis.fanout import fan_out
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import LaneTrace, PromptInfo, StepRecord
from tests.reference import apply_transformers, hf_generate, load_hf_model, transformers_processors

STEPS = 40
# words repeated in the prompt: the repetition penalty and no-repeat n-grams act on the prompt's ids too
PROMPT = "the cat and the dog and the cat and the"
SINGLE_ROW_LANES = [
    LaneSpec("greedy"),
    LaneSpec("greedy penalties", repetition_penalty=1.5, no_repeat_ngram_size=2, min_new_tokens=30),
    LaneSpec("hot", do_sample=True, temperature=1.7, seed=1),
    LaneSpec("top-k", do_sample=True, top_k=12, temperature=0.9, seed=2),
    LaneSpec("top-p", do_sample=True, top_p=0.6, seed=3),
    LaneSpec("min-p", do_sample=True, min_p=0.2, seed=4),
    LaneSpec("typical", do_sample=True, typical_p=0.7, seed=5),
    LaneSpec("sampled penalties", do_sample=True, repetition_penalty=1.8, no_repeat_ngram_size=3, top_p=0.8,
             seed=6),
    LaneSpec("every warper", do_sample=True, temperature=0.8, top_k=40, top_p=0.9, min_p=0.05, typical_p=0.95,
             seed=7),
    LaneSpec("custom order", do_sample=True, temperature=1.5, top_p=0.5, top_k=30, seed=8,
             processor_order=("top_p", "temperature", "top_k")),
    LaneSpec("branch", branch=Branch("greedy", 5, 17), repetition_penalty=1.3),
    *fan_out(LaneSpec("fan", do_sample=True, top_p=0.7, temperature=1.2, seed=20), 8),
]
BEAM_LANES = [
    LaneSpec("beam penalties", num_beams=3, repetition_penalty=1.4, no_repeat_ngram_size=2, length_penalty=0.7),
    LaneSpec("beam early", num_beams=2, num_return_sequences=2, early_stopping=True, min_new_tokens=8),
]


class RecordingSource:
    """The real decoder, passing through, keeping every logits row it returns under the row's whole token
    history (prompt + tokens): the logits each lane's step was decided from, whatever row the engine put it in."""

    def __init__(self, decoder) -> None:
        self.decoder = decoder
        self.logits: dict[tuple[int, ...], np.ndarray] = {}
        self._histories: list[tuple[int, ...]] = []

    def __getattr__(self, name: str):
        return getattr(self.decoder, name)

    def prefill(self, prompt_ids: Sequence[int], progress=None):
        state, logits = self.decoder.prefill(prompt_ids, progress)
        self._histories = [tuple(prompt_ids)]
        self.logits[self._histories[0]] = np.array(logits)
        return state, logits

    def step(self, state, rows, tokens, lengths=None):
        state, logits = self.decoder.step(state, rows, tokens, lengths)
        lengths = lengths or [None] * len(rows)
        self._histories = [(*self._histories[row][:length], int(token))
                           for row, token, length in zip(rows, tokens, lengths, strict=True)]
        for history, row in zip(self._histories, logits, strict=True):
            self.logits[history] = np.array(row)
        return state, logits


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from runtime.decoder import OnnxDecoder
    from runtime.tokenizer import Tokenizer

    return OnnxDecoder(tiny_model_dir, device="cpu"), Tokenizer.from_model_dir(tiny_model_dir)


@pytest.fixture(scope="module")
def hf_model(tiny_model_dir, tiny_hf_dir):
    return load_hf_model(tiny_model_dir, tiny_hf_dir)


def processed_probabilities(processors, history: Sequence[int], logits: np.ndarray) -> np.ndarray:
    scores = apply_transformers(processors, [list(history)], logits[None])[0].astype(np.float64)
    with np.errstate(under="ignore"):
        weights = np.exp(scores - scores.max())
    return weights / weights.sum()


def numpy_draw(u: float, probs: np.ndarray) -> tuple[int, float, float]:
    """Inverse CDF over the kept tokens in descending probability, equal ones by ascending id: (token, low, high)."""
    kept = np.flatnonzero(probs > 0)
    order = kept[np.lexsort((kept, -probs[kept]))]
    ends = np.cumsum(probs[order])
    index = min(int(np.searchsorted(ends, u, side="right")), order.size - 1)
    return int(order[index]), float(ends[index] - probs[order[index]]), float(ends[index])


def check_step(record: StepRecord, probs: np.ndarray, spec: LaneSpec, u: float | None, where: str) -> None:
    kept = np.flatnonzero(probs > 0)
    assert record.kept == kept.size, f"{where}: kept {record.kept}, reference {kept.size}"
    best = kept[np.lexsort((kept, -probs[kept]))][: len(record.top)]
    np.testing.assert_allclose(record.top.probs, probs[best], atol=2e-6, err_msg=f"{where}: top probabilities")
    np.testing.assert_allclose(record.top.probs, probs[list(record.top.ids)], atol=2e-6, err_msg=f"{where}: top ids")
    assert record.prob == pytest.approx(probs[record.token_id], abs=2e-6), where
    with np.errstate(divide="ignore"):
        entropy = -np.sum(probs[kept] * np.log(probs[kept]))
    assert record.entropy == pytest.approx(entropy, abs=2e-5), where
    if record.forced:
        return
    if not spec.do_sample:
        assert record.token_id == int(np.argmax(probs)), f"{where}: greedy chose {record.token_id}"
        return
    assert record.draw == u, f"{where}: draw {record.draw}, the lane's generator gives {u}"
    token, low, high = numpy_draw(u, probs)
    assert record.token_id == token, f"{where}: u={u} chose {record.token_id}, reference {token}"
    assert (record.draw_low, record.draw_high) == pytest.approx((low, high), abs=2e-6), where


def check_lane(lane: LaneTrace, spec: LaneSpec, prompt: list[int], source: RecordingSource, hf_model,
               eos: list[int]) -> int:
    processors = transformers_processors(hf_model, spec, len(prompt), eos)
    draws = np.random.Generator(np.random.PCG64(lane.config["seed"])) if spec.do_sample else None
    checked = 0
    for record in lane.steps:
        u = float(draws.random()) if draws is not None else None
        if spec.branch is not None and record.step < spec.branch.step:
            continue  # the parent's record, copied (checked as the parent's)
        history = (*prompt, *lane.token_ids[: record.step])
        probs = processed_probabilities(processors, history, source.logits[history])
        check_step(record, probs, spec, u, f"lane {lane.name!r} step {record.step}")
        checked += 1
    return checked


@pytest.mark.parametrize("batched_rows", [True, False], ids=["batched rows", "lane by lane"])
def test_every_step_of_every_lane_equals_transformers_processors_and_a_numpy_draw(tiny, hf_model, batched_rows):
    decoder, tokenizer = tiny
    source = RecordingSource(decoder)
    eos = list(decoder.eos_token_ids)
    engine = Engine(source, tokenizer, eos, batched_rows=batched_rows)
    prompt = tokenizer.encode(PROMPT)
    trace = engine.run(PromptInfo(PROMPT, prompt), SINGLE_ROW_LANES, max_new_tokens=STEPS)
    specs = {spec.name: spec for spec in SINGLE_ROW_LANES}
    checked = sum(check_lane(lane, specs[lane.name], prompt, source, hf_model, eos) for lane in trace.lanes)
    assert checked > 0.9 * STEPS * len(SINGLE_ROW_LANES)  # lanes that end early on eos are the exception
    assert len({tuple(lane.token_ids) for lane in trace.lanes if lane.fanout}) > 1  # the fan-out parts


@pytest.mark.parametrize("batched_rows", [True, False], ids=["batched rows", "lane by lane"])
def test_beam_lanes_with_processors_beside_others_equal_transformers_beam_search(tiny, hf_model, batched_rows):
    decoder, tokenizer = tiny
    eos = list(decoder.eos_token_ids)
    engine = Engine(decoder, tokenizer, eos, batched_rows=batched_rows)
    # the prompt ends with what the model likes to say: the penalties on the prompt's ids decide the beams
    favourites = engine.run(PromptInfo(PROMPT, tokenizer.encode(PROMPT)), [LaneSpec("greedy")], max_new_tokens=16)
    prompt = [*tokenizer.encode(PROMPT), *favourites.lanes[0].token_ids]
    trace = engine.run(PromptInfo(PROMPT, prompt), [*BEAM_LANES, *SINGLE_ROW_LANES[:3]], max_new_tokens=16)
    for spec in BEAM_LANES:
        lane = trace.lane(spec.name)
        sequences, scores = hf_generate(
            hf_model, prompt, 16, eos, do_sample=False, num_beams=spec.num_beams,
            num_return_sequences=spec.num_return_sequences, length_penalty=spec.length_penalty,
            early_stopping=spec.early_stopping, repetition_penalty=spec.repetition_penalty,
            no_repeat_ngram_size=spec.no_repeat_ngram_size, min_new_tokens=spec.min_new_tokens)
        assert lane.sequences == sequences, spec.name
        np.testing.assert_allclose(lane.sequence_scores, scores, atol=1e-4, err_msg=spec.name)
