"""Rows at batch speed (decoding.engine.row_batch) against the per-row reference path: the same run decided both ways
gives byte-identical run JSON apart from timings (tokens, draws with their u and intervals, statistics, top
lists, analysis), with and without a source RowSummary; and the batched pieces (draws among the best tokens,
spreads of many rows) equal the per-row functions bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoding.analysis.fanout import fan_out
from decoding.chain.selectors import WalkedTokens, draw_among_best, draw_with
from decoding.chain.spec import Branch, LaneSpec, ReplayOf, assign_seeds
from decoding.engine.engine import Engine, Prefix, replay_prefix
from decoding.records import jsonio
from decoding.records.stats import Softmax, spread_of, spreads_of
from decoding.records.trace import PromptInfo, RunTrace
from tests.decoding.test_selectors_stats import rows
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource

PROMPT = PromptInfo("fake prompt", [1, 17, 29, 5])
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def run_json(specs, *, source_kind="plain", vocab=64, eos=(2,), max_new_tokens=12, batched=True, top_n=20,
             prefix=None, **source_kwargs) -> str:
    """The run file of `specs` decided batched or lane by lane, its timings zeroed."""
    source_class = {"plain": FakeSource, "summary": SummarizingSource, "holes": HolesSource,
                    "poisoned": PoisonedSource, "poisoned summary": PoisonedSummarizingSource}[source_kind]
    source = source_class(vocab_size=vocab, **source_kwargs)
    engine = Engine(source, FakeTokenizer(), eos_token_ids=list(eos), top_n=top_n, batched_rows=batched)
    trace = engine.run(PROMPT, specs, max_new_tokens=max_new_tokens, base_seed=0, prefix=prefix)
    return without_timings(trace)


def without_timings(trace: RunTrace) -> str:
    trace.timing.prefill_ms = trace.timing.total_ms = trace.timing.tokens_per_s = 0.0
    for lane in trace.lanes:
        for record in lane.steps:
            record.time_ms = 0.0
    return jsonio.dumps(trace)


def assert_same_both_ways(specs, **kwargs) -> str:
    batched = run_json(specs, batched=True, **kwargs)
    assert batched == run_json(specs, batched=False, **kwargs)
    return batched


class HolesSource(FakeSource):
    """Raw logits with -inf at some ids (a padded vocabulary): raw rows that are filtered already."""

    def logits_for(self, history):
        row = super().logits_for(history)
        row[3 :: 7] = -np.inf
        return row


class PoisonedSource(FakeSource):
    """Rows whose history ends in a multiple of 5 are NaN, of 7 +inf: the lanes reading them fail."""

    def logits_for(self, history):
        row = super().logits_for(history)
        if len(history) > len(PROMPT.ids) and history[-1] % 5 == 0:
            row[::3] = np.nan
        elif len(history) > len(PROMPT.ids) and history[-1] % 7 == 0:
            row[1] = np.inf
        return row


class PoisonedSummarizingSource(PoisonedSource, SummarizingSource):
    """PoisonedSource with a RowSummary (NaN where a logit is not finite)."""


HOT = LaneSpec("hot", do_sample=True, temperature=1.3, seed=3)
MIXED = [
    LaneSpec("greedy"),
    LaneSpec("beam-3", num_beams=3),
    LaneSpec("top-k", do_sample=True, top_k=10, seed=1),
    LaneSpec("top-p", do_sample=True, top_p=0.9, seed=2),
    HOT,
    LaneSpec("min-p", do_sample=True, min_p=0.05, seed=4),
    LaneSpec("typical", do_sample=True, typical_p=0.8, seed=5),
    LaneSpec("penalised", repetition_penalty=1.3, no_repeat_ngram_size=2),
    LaneSpec("penalised sample", do_sample=True, repetition_penalty=1.3, no_repeat_ngram_size=2, seed=6),
    LaneSpec("long", do_sample=True, min_new_tokens=8, seed=7),
    LaneSpec("plain sample", do_sample=True, seed=12),  # no processor, as greedy: one group, two selectors
    LaneSpec("greedy twin"),
]


# ------------------------------------------------------------------------------------------------ engine runs


@pytest.mark.parametrize("source_kind", ["plain", "summary", "holes"])
@pytest.mark.parametrize("vocab", [64, 3000])
def test_fanouts_with_beams_and_every_processor_are_identical_both_ways(source_kind, vocab):
    specs = (MIXED + fan_out(HOT.with_changes(name="fan"), 8)
             + fan_out(LaneSpec("fan top-p", do_sample=True, top_p=0.8, min_new_tokens=5, seed=40), 6))
    assert_same_both_ways(specs, source_kind=source_kind, vocab=vocab)


@pytest.mark.parametrize("source_kind", ["plain", "summary"])
def test_a_32_member_fanout_at_the_default_vocabulary_is_identical_both_ways(source_kind):
    lane = LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11, min_new_tokens=6)
    assert_same_both_ways(fan_out(lane, 32), source_kind=source_kind, vocab=49152, max_new_tokens=6, peak=2.0)


def test_branches_forced_steps_and_replays_are_identical_both_ways():
    specs = [
        LaneSpec("greedy"),
        HOT,
        LaneSpec("branch", branch=Branch("greedy", 3, 9)),
        LaneSpec("sampled branch", do_sample=True, temperature=1.3, seed=8, branch=Branch("hot", 2, 4)),
        LaneSpec("forced", do_sample=True, top_k=20, seed=9, forced={0: 3, 4: 11}),
        LaneSpec("forced greedy", forced={1: 5}),
        HOT.with_changes(name="hot replay", replay_of=ReplayOf("hot", 5, 13), forced={}),
    ]
    for kind in ("plain", "summary"):
        assert_same_both_ways(specs, source_kind=kind)


def test_a_run_from_a_prefix_with_skipped_draws_is_identical_both_ways():
    first = Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[]).run(PROMPT, [HOT], max_new_tokens=10)
    replay = HOT.with_changes(name="replay", replay_of=ReplayOf("hot", 4, 21))
    prefix = replay_prefix(first, replay)
    assert prefix.draws == 4
    assert_same_both_ways([replay, replay.with_changes(name="twin", replay_of=None, forced={4: 21})],
                          prefix=Prefix(prefix.token_ids, prefix.records, prefix.draws), eos=())


def test_lanes_finishing_at_different_steps_and_stop_strings_are_identical_both_ways():
    specs = [*fan_out(HOT, 6), LaneSpec("stop", do_sample=True, seed=1, stop_strings=("<9>",)),
             LaneSpec("short", do_sample=True, seed=2, max_new_tokens=3)]
    text = assert_same_both_ways(specs, eos=(2, 3, 4, 5, 6), max_new_tokens=20)
    reasons = {lane.finish_reason for lane in jsonio.loads(text).lanes}
    assert {"eos", "length"} <= reasons


@pytest.mark.parametrize("source_kind", ["poisoned", "poisoned summary"])
def test_nan_and_inf_rows_fail_their_lanes_identically_both_ways(source_kind):
    specs = fan_out(HOT, 8) + [LaneSpec("greedy")]
    text = assert_same_both_ways(specs, source_kind=source_kind, max_new_tokens=16)
    errors = [lane.error for lane in jsonio.loads(text).lanes if lane.error]
    assert any("NaN" in error for error in errors) and any("+inf" in error for error in errors)


def test_a_row_filtered_entirely_by_the_processors_is_left_to_the_per_row_path():
    # every id is an eos id and min_new_tokens bans them all: greedy takes id 0 with an empty distribution
    specs = [LaneSpec("greedy", min_new_tokens=3), LaneSpec("also", min_new_tokens=3)]
    text = assert_same_both_ways(specs, vocab=4, eos=(0, 1, 2, 3), max_new_tokens=4)
    assert jsonio.loads(text).lanes[0].steps[0].kept == 0


def test_identical_rows_are_processed_once_and_the_top_lists_shared():
    engine = Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[])
    trace = engine.run(PROMPT, fan_out(HOT, 4), max_new_tokens=1)
    firsts = [lane.steps[0] for lane in trace.lanes]  # every member reads the prefill row
    assert all(record.top is firsts[0].top and record.top_raw is firsts[0].top_raw for record in firsts)
    assert len({record.draw for record in firsts}) == 4


LANE_KINDS = st.sampled_from([
    {},
    {"do_sample": True},
    {"do_sample": True, "temperature": 0.7},
    {"do_sample": True, "top_k": 5},
    {"do_sample": True, "top_p": 0.85, "temperature": 1.4},
    {"do_sample": True, "min_p": 0.1},
    {"do_sample": True, "typical_p": 0.9},
    {"repetition_penalty": 1.2},
    {"do_sample": True, "no_repeat_ngram_size": 2, "min_new_tokens": 4},
    {"num_beams": 2},
])


@st.composite
def lane_mixes(draw) -> list[LaneSpec]:
    specs = []
    for index in range(draw(st.integers(1, 5))):
        kind = draw(LANE_KINDS)
        spec = LaneSpec(f"lane {index}", seed=draw(st.integers(0, 50)) if kind.get("do_sample") else None, **kind)
        if draw(st.booleans()) and not spec.is_beam:
            spec = spec.with_changes(forced={draw(st.integers(0, 5)): draw(st.integers(0, 39))})  # < every vocab
        fanout = draw(st.sampled_from([1, 1, 3, 7])) if spec.do_sample else 1
        specs.extend(fan_out(spec, fanout) if fanout > 1 else [spec])
    return assign_seeds(specs, 0)


@SETTINGS
@given(specs=lane_mixes(), source_kind=st.sampled_from(["plain", "summary", "holes"]),
       vocab=st.sampled_from([40, 64, 2600]), peak=st.sampled_from([0.5, 3.0, 12.0]),
       eos=st.sampled_from([(), (2,), (2, 7, 11)]))
def test_any_lane_mix_is_identical_both_ways(specs, source_kind, vocab, peak, eos):
    assert_same_both_ways(specs, source_kind=source_kind, vocab=vocab, peak=peak, eos=eos, max_new_tokens=8)


# ------------------------------------------------------------------------------------------------ the pieces


@st.composite
def matrices(draw) -> np.ndarray:
    """Rows of one vocabulary (LM-like, flat, tied, peaked, mostly filtered), some with a few -inf, some
    repeated."""
    first = draw(rows(min_vocab=2))
    matrix = [first]
    for _ in range(draw(st.integers(0, 5))):
        row = draw(rows(min_vocab=2))
        matrix.append(np.resize(row, first.size))
    matrix = np.stack(matrix).astype(np.float32)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    for row in matrix:
        if draw(st.booleans()) and np.isfinite(row).sum() > 3:
            row[rng.integers(0, row.size, 3)] = -np.inf
    return matrix[[np.isfinite(row).any() for row in matrix]]


@SETTINGS
@given(matrix=matrices(), data=st.data(), top_n=st.sampled_from([20, 40]))
def test_draws_among_the_best_tokens_equal_draw_with_bit_for_bit(matrix, data, top_n):
    softmaxes = [Softmax.of(row) for row in matrix]
    bests = [sm.best(min(top_n, sm.kept)) for sm in softmaxes]
    u_values = st.one_of(st.floats(0, 1, exclude_max=True), st.sampled_from([0.0, 0.3, 0.97, 1 - 2**-53]))
    us = [data.draw(u_values) for _ in softmaxes]
    for u, sm, best in zip(us, softmaxes, bests, strict=True):
        assert draw_among_best(u, WalkedTokens(sm), best) == draw_with(u, sm.row, sm)


def test_draws_among_the_best_tokens_both_end_there_and_walk_on():
    rng = np.random.default_rng(1)
    matrix = (rng.standard_normal((4, 49152)) * 2).astype(np.float32)
    matrix[1, [0, 5, 2000]] = -np.inf  # a mostly kept row: its draws walk the finite tokens only
    softmaxes = [Softmax.of(row) for row in matrix]
    bests = [sm.best(20) for sm in softmaxes]
    for u in (0.0, 0.05, 0.12, 0.9, 0.999, 1 - 2**-53):
        for sm, best in zip(softmaxes, bests, strict=True):
            assert draw_among_best(u, WalkedTokens(sm), best) == draw_with(u, sm.row, sm)

    def mass(count):
        return [float(np.exp(sm.values[sm.best(count)] - sm.peak).sum() / sm.total) for sm in softmaxes]

    # u = 0.05 ends among the best 20, 0.12 among the best 64, 0.9 walks on
    assert 0.05 < min(mass(20)) and max(mass(20)) < 0.12 < min(mass(64)) and max(mass(64)) < 0.9


@SETTINGS
@given(matrix=matrices(), top_n=st.sampled_from([20, 40]))
def test_spreads_of_many_rows_equal_spread_of_each_bit_for_bit(matrix, top_n):
    softmaxes = [Softmax.of(row) for row in matrix]
    bests = [sm.best(min(top_n, sm.kept)) for sm in softmaxes]
    entropies = [sm.entropy() for sm in softmaxes]
    want = [spread_of(sm, top_n, str, best) for sm, best in zip(softmaxes, bests, strict=True)]
    assert spreads_of(softmaxes, bests, entropies, top_n, str) == want


def assert_same_softmax(got: Softmax, want: Softmax) -> None:
    for name in ("row", "ids", "values", "weights", "shifted"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        assert a is None or (a.dtype == b.dtype and np.array_equal(a, b)), name
    for name in ("peak", "total", "kept", "filtered", "clamp_for_entropy"):
        assert type(getattr(got, name)) is type(getattr(want, name)), name
        assert getattr(got, name) == getattr(want, name), name


@SETTINGS
@given(matrix=matrices(), data=st.data())
def test_a_softmax_from_its_filtered_positions_equals_softmax_of_bit_for_bit(matrix, data):
    for row in matrix:
        if data.draw(st.booleans()):
            row[data.draw(st.integers(0, row.size - 1))] = data.draw(st.sampled_from([np.nan, np.inf]))
        filtered = row == -np.inf
        want = Softmax.of(row)
        dense = Softmax.of_dense(row, np.flatnonzero(filtered))
        sparse = Softmax.of_sparse(row, np.flatnonzero(~filtered))
        usual = want is not None and np.isfinite(want.peak) and not np.isnan(row).any()
        kept_few = want is not None and want.ids is not None
        for got, fits in ((dense, want is not None and not kept_few), (sparse, kept_few)):
            if usual and fits:
                assert_same_softmax(got, want)
                assert got.entropy() == want.entropy()
            else:
                assert got is None
