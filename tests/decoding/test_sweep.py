"""Temperature sweeps: each point equals the lane's processors (temperature replaced) at that temperature, the
point at the lane's own temperature equals its recorded step, and fan-outs at several temperatures give
their diversity numbers in temperature order."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.analysis.fanout import edit_distance, mean_pairwise_edit_distance
from decoding.analysis.sweep import (
    DEFAULT_TEMPERATURES,
    SWEEP_TOP_N,
    diversity_by_temperature,
    processed_at,
    sweep_inputs,
    temperature_fanouts,
    temperature_sweep,
)
from decoding.chain.chain import build_processors
from decoding.chain.processors import apply_processors
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.records.stats import Softmax, distribution
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer

PROMPT = PromptInfo("p", [1, 2, 3])
LANES = [
    LaneSpec("greedy", repetition_penalty=1.3),
    LaneSpec("beam-2", num_beams=2, repetition_penalty=1.2),
    LaneSpec("top-p", do_sample=True, temperature=0.7, top_p=0.8, repetition_penalty=1.1, seed=3),
    LaneSpec("min-p", do_sample=True, min_p=0.1, top_k=8, seed=4, processor_order=("min_p", "top_k")),
]


def source() -> FakeSource:
    return FakeSource(vocab_size=40, peak=2.0)


@pytest.fixture(scope="module")
def trace():
    return Engine(source(), FakeTokenizer(), eos_token_ids=[3]).run(PROMPT, LANES, max_new_tokens=6)


def raw_logits(inputs) -> np.ndarray:
    """What the window gets by prefilling `inputs.ids` once: the fake source's logits are a function of the
    history, so this is the step's raw logits row exactly."""
    return source().logits_for(inputs.ids)


@pytest.mark.parametrize("lane", ["greedy", "top-p", "min-p"])
def test_every_point_equals_the_processors_at_that_temperature(trace, lane):
    inputs = sweep_inputs(trace, lane, 4)
    assert inputs.ids == [1, 2, 3, *trace.lane(lane).token_ids[:4]] and inputs.token_id == trace.lane(lane).token_ids[4]
    logits = raw_logits(inputs)
    sweep = temperature_sweep(logits, inputs)
    assert [p.temperature for p in sweep.points] == list(DEFAULT_TEMPERATURES)
    spec = inputs.spec
    for point in sweep.points[1:]:
        config = {**spec.to_config(), "do_sample": True, "temperature": point.temperature}
        order = None if spec.processor_order is None else ("temperature", *spec.processor_order)
        processors = build_processors(config, 3, [3], 1, order)
        expected = apply_processors(processors, np.array([inputs.ids]), logits[None])[0]
        found = distribution(expected, inputs.token_id, SWEEP_TOP_N)
        assert (point.prob, point.entropy, point.kept, point.margin, point.top) == (
            found.prob, found.entropy, found.kept, found.margin, found.top), point.temperature
    zero = sweep.points[0]
    assert zero.temperature == 0.0 and zero.kept == 1 and zero.entropy == 0.0
    assert zero.top[0].id == sweep.points[10].top[0].id and zero.top[0].prob == 1.0


@pytest.mark.parametrize("lane", ["greedy", "beam-2", "top-p", "min-p"])
def test_the_point_at_the_lanes_own_temperature_is_its_recorded_step(trace, lane):
    found = trace.lane(lane)
    own = found.config.get("temperature", 1.0)
    for step in range(len(found.steps)):
        inputs = sweep_inputs(trace, lane, step)
        (point,) = temperature_sweep(raw_logits(inputs), inputs, [own], top_n=20, text=FakeTokenizer().piece).points
        record = found.steps[step]
        assert point.kept == record.kept and point.top == record.top
        assert point.prob == pytest.approx(record.prob, rel=1e-6, abs=1e-12)
        assert point.entropy == pytest.approx(record.entropy, rel=1e-5, abs=1e-9)


def test_higher_temperature_flattens_the_distribution(trace):
    inputs = sweep_inputs(trace, "greedy", 2)
    entropies = [p.entropy for p in temperature_sweep(raw_logits(inputs), inputs).points]
    assert entropies == sorted(entropies) and entropies[0] == 0.0 < entropies[-1]


def test_processed_at_zero_is_the_argmax_of_the_processors():
    spec = LaneSpec("x", do_sample=True, top_k=3, repetition_penalty=2.0, seed=1)
    inputs = sweep_inputs(Engine(source(), FakeTokenizer(), [3]).run(PROMPT, [spec], max_new_tokens=3), "x", 2)
    logits = raw_logits(inputs)
    penalised = apply_processors(build_processors(spec.to_config(), 3, [3]), np.array([inputs.ids]), logits[None])
    row = processed_at(logits, inputs, 0.0)
    assert np.flatnonzero(row == 0.0).tolist() == [int(np.argmax(penalised))] and np.isinf(row).sum() == 39
    assert Softmax.of(row).kept == 1


def test_bad_sweep_input_is_refused(trace):
    with pytest.raises(ValueError, match="invalid sweep step=6: allowed 0..5"):
        sweep_inputs(trace, "greedy", 6)
    inputs = sweep_inputs(trace, "greedy", 0)
    for bad in ([], [-0.5], [float("inf")], [True]):
        with pytest.raises(ValueError, match="invalid temperatures"):
            temperature_sweep(raw_logits(inputs), inputs, bad)


def test_fanouts_at_several_temperatures_and_their_diversity():
    base = LaneSpec("hot", do_sample=True, top_k=10, seed=21)
    specs = temperature_fanouts(base, [1.5, 0.3], 6)
    assert [s.name for s in specs[:2]] == ["hot · T 1.5 #0", "hot · T 1.5 #1"] and len(specs) == 12
    assert [s.seed for s in specs] == [21, 22, 23, 24, 25, 26] * 2  # the same draws at each temperature
    trace = Engine(FakeSource(vocab_size=40, peak=3.0), FakeTokenizer(), []).run(PROMPT, specs, max_new_tokens=8)
    points = diversity_by_temperature(trace)
    assert [(p.temperature, p.group, p.members) for p in points] == [(0.3, "hot · T 0.3", 6), (1.5, "hot · T 1.5", 6)]
    for found in points:
        group = trace.analysis.fanouts[found.group]
        assert found.distinct_continuations == group.distinct_continuations
        assert found.mean_pairwise_divergence_step == group.mean_pairwise_divergence_step
    assert points[0].distinct_continuations <= points[1].distinct_continuations


def test_a_branch_lanes_copied_steps_are_swept_through_its_parents_processors():
    specs = [LANES[2], LaneSpec("b", repetition_penalty=1.5, branch=Branch("top-p", 3, 7))]
    trace = Engine(source(), FakeTokenizer(), eos_token_ids=[3]).run(PROMPT, specs, max_new_tokens=6)
    copied, own = sweep_inputs(trace, "b", 2), sweep_inputs(trace, "b", 4)
    assert copied.lane == "b" and copied.spec.name == "top-p" and copied.ids == sweep_inputs(trace, "top-p", 2).ids
    assert own.spec.name == "b"
    trace.lanes = trace.lanes[1:]
    with pytest.raises(ValueError, match="it copies lane 'top-p', not in this run"):
        sweep_inputs(trace, "b", 2)


def _levenshtein(a: list[int], b: list[int]) -> int:
    """The textbook dynamic programme, cell by cell: what decoding.analysis.fanout.edit_distance must agree with."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1][-1]


def test_edit_distance_agrees_with_the_textbook_programme():
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, b = (list(rng.integers(0, 4, size=rng.integers(0, 12))) for _ in range(2))
        assert edit_distance(a, b) == _levenshtein(a, b)
    assert mean_pairwise_edit_distance([[1, 2, 3]]) is None
    assert mean_pairwise_edit_distance([[1, 2, 3], [1, 2, 4], [1, 2, 3]]) == pytest.approx(2 / 3)


def test_edit_distance_separates_temperatures_when_every_member_differs():
    """Eight members at each of four temperatures all differ, so "distinct continuations" is 8 at every
    temperature; the mean pairwise edit distance still rises with T."""
    specs = temperature_fanouts(LaneSpec("hot", do_sample=True, seed=5), [0.7, 1.0, 1.5, 2.0], 8)
    trace = Engine(FakeSource(vocab_size=40, peak=3.0), FakeTokenizer(), []).run(PROMPT, specs, max_new_tokens=12)
    points = diversity_by_temperature(trace)
    assert [p.distinct_continuations for p in points] == [8, 8, 8, 8]
    distances = [p.mean_edit_distance for p in points]
    assert distances == sorted(distances) and distances[-1] - distances[0] > 2
    members = trace.analysis.fanouts[points[0].group].members
    assert distances[0] == pytest.approx(mean_pairwise_edit_distance([trace.lane(m).token_ids for m in members]))
