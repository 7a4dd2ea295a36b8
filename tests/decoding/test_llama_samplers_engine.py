"""The new lane parameters in whole runs: both decision paths give byte-identical run files, a run file
round-trips byte-identically and replays exactly, XTC's coins and mirostat's mu are recorded and follow their
rules, and a branch-not-taken replay of a lane with XTC draws what the original drew."""

from __future__ import annotations

import json

import numpy as np
import pytest

from decoding.analysis.fanout import fan_out
from decoding.chain.llama_samplers import Mirostat
from decoding.chain.spec import LaneSpec, ReplayOf, parse_lane
from decoding.engine.engine import Engine, Prefix, replay_prefix
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from decoding.records.trace import SCHEMA_VERSION, PromptInfo
from runfiles import run_file
from tests.decoding.test_row_batch import assert_same_both_ways
from tests.fake_source import FakeSource, FakeTokenizer
from tests.lane_oracle import FunctionSource, probs_of

PROMPT = PromptInfo("fake prompt", [1, 17, 29, 5])
XTC = LaneSpec("xtc", do_sample=True, xtc_probability=0.5, xtc_threshold=0.02, seed=21)
MIROSTAT = LaneSpec("mirostat 2", do_sample=True, mirostat=2, mirostat_tau=3.0, seed=22)
NEW_LANES = [
    LaneSpec("epsilon", do_sample=True, epsilon_cutoff=0.01, seed=1),
    LaneSpec("eta", do_sample=True, eta_cutoff=0.01, seed=2),
    LaneSpec("suppress", suppress_tokens=(3, 5, 9)),
    LaneSpec("bad words", bad_words_ids=((7,), (9, 11))),
    LaneSpec("bias", do_sample=True, sequence_bias=(((4,), 2.0), ((5, 6), -3.0)), seed=3),
    LaneSpec("penalties", frequency_penalty=0.4, presence_penalty=0.3, repetition_penalty=1.2, penalty_last_n=6),
    LaneSpec("dry", do_sample=True, dry_multiplier=0.8, dry_allowed_length=1, seed=4),
    LaneSpec("top-n-sigma", do_sample=True, top_n_sigma=1.5, seed=5),
    LaneSpec("dynatemp", do_sample=True, temperature=0.9, dynatemp_range=0.5, seed=6),
    XTC,
    MIROSTAT,
    LaneSpec("mirostat 1", do_sample=True, mirostat=1, mirostat_tau=4.0, seed=23),
    LaneSpec("adaptive", do_sample=True, adaptive=True, temperature=0.8, top_p=0.95, seed=8),
    LaneSpec("llama order", do_sample=True, top_k=20, top_p=0.9, temperature=0.8, repetition_penalty=1.1,
             processor_order="llama.cpp", seed=7),
]


def engine(vocab: int = 64) -> Engine:
    return Engine(FakeSource(vocab_size=vocab), FakeTokenizer(), eos_token_ids=[2])


@pytest.mark.parametrize("source_kind", ["plain", "summary"])
@pytest.mark.parametrize("vocab", [64, 3000])
def test_every_new_parameter_is_identical_both_ways_fanouts_included(source_kind, vocab):
    specs = NEW_LANES + fan_out(NEW_LANES[6].with_changes(name="dry fan"), 4) + fan_out(XTC.with_changes(
        name="xtc fan"), 3) + fan_out(NEW_LANES[0].with_changes(name="epsilon fan"), 4)
    assert_same_both_ways(specs, source_kind=source_kind, vocab=vocab)


def test_a_run_with_every_new_parameter_round_trips_and_replays_exactly(tmp_path):
    trace = engine().run(PROMPT, NEW_LANES, max_new_tokens=12, base_seed=0)
    path = run_file.save(trace, tmp_path / "run.json")
    loaded = run_file.load(path)
    assert jsonio.dumps(loaded) == path.read_text(encoding="utf-8")
    again = replay(engine(), loaded)
    assert compare(loaded, again) == []
    recorded = ("xtc_coin", "mirostat_mu", "draw", "adaptive", "stages", "varentropy", "varentropy_raw")
    for expected, got in zip(loaded.lanes, again.lanes, strict=True):
        assert [[getattr(r, key) for key in recorded] for r in expected.steps] == [
            [getattr(r, key) for key in recorded] for r in got.steps]


def test_the_config_says_everything_about_the_new_processors():
    dry = parse_lane("sample:dry_multiplier=0.8,seed=1").to_config()
    assert dry["dry_base"] == 1.75 and dry["dry_sequence_breakers"] == ["\n", ":", '"', "*"]
    config = LaneSpec("b", bad_words_ids=((7,), (9, 11)), sequence_bias=(((4,), 2.0),)).to_config()
    assert config["bad_words_ids"] == [[7], [9, 11]] and config["sequence_bias"] == [[[4], 2.0]]
    assert LaneSpec.from_config("b", json.loads(json.dumps(config))).to_config() == config


def test_xtc_records_its_coin_before_the_draw_and_acts_when_it_falls_below_p():
    trace = engine().run(PROMPT, [XTC, XTC.with_changes(name="no xtc", xtc_probability=None, xtc_threshold=0.1)],
                         max_new_tokens=10)
    xtc, plain = trace.lanes
    coins = [r.xtc_coin for r in xtc.steps]
    assert all(c is not None and 0.0 <= c < 1.0 for c in coins) and all(r.xtc_coin is None for r in plain.steps)
    generator = np.random.Generator(np.random.PCG64(XTC.seed))
    for record in xtc.steps:  # one generator: the coin, then the step's u
        assert record.xtc_coin == generator.random() and record.draw == generator.random()
    acted = [r for r in xtc.steps if r.xtc_coin <= XTC.xtc_probability]
    assert acted and all(r.top[0].prob < r.top_raw[0].prob or r.kept == 1 for r in acted)


def test_mirostat_records_its_running_mu_from_the_chosen_tokens():
    lane = engine().run(PROMPT, [MIROSTAT], max_new_tokens=10).lanes[0]
    follower = Mirostat(2, MIROSTAT.mirostat_tau, MIROSTAT.mirostat_eta)
    for record in lane.steps:
        assert record.mirostat_mu == follower.mu
        assert all(-np.log2(entry.prob) <= follower.mu + 1e-5 for entry in record.top[1:])  # the cut by mu
        follower.mu = follower.next_mu(record.prob)
    assert lane.steps[0].mirostat_mu == 2 * MIROSTAT.mirostat_tau


def test_a_replay_of_a_lane_with_xtc_skips_its_coins_and_draws_as_the_original():
    first = engine().run(PROMPT, [XTC], max_new_tokens=10)
    replay_spec = XTC.with_changes(name="replay", replay_of=ReplayOf("xtc", 4, 21))
    prefix = replay_prefix(first, replay_spec)
    assert prefix.draws == 8  # four coins and four draws
    alone = engine().run(PROMPT, [replay_spec], max_new_tokens=10,
                         prefix=Prefix(prefix.token_ids, prefix.records, prefix.draws))
    beside = engine().run(PROMPT, [XTC, replay_spec], max_new_tokens=10).lanes[1]
    assert alone.lanes[0].token_ids == beside.token_ids
    assert [r.xtc_coin for r in alone.lanes[0].steps] == [r.xtc_coin for r in beside.steps]
    original = first.lanes[0].steps
    assert [(r.xtc_coin, r.draw) for r in beside.steps[5:]] == [(r.xtc_coin, r.draw) for r in original[5:]]


def test_a_version_2_file_opens_and_saves_as_version_3():
    plain = LaneSpec("sample", do_sample=True, seed=3)
    data = jsonio.to_dict(engine().run(PROMPT, [LaneSpec("greedy"), plain], max_new_tokens=6))
    data["schema_version"] = 2
    for lane in data["lanes"]:
        for step in lane["steps"]:
            del step["xtc_coin"], step["mirostat_mu"]
    trace = jsonio.loads(json.dumps(data))
    assert trace.schema_version == SCHEMA_VERSION
    assert all(r.xtc_coin is None for lane in trace.lanes for r in lane.steps)


def looping_logits(history: list[int]) -> np.ndarray:
    """A source that loops: after token t, t + 1 (mod 8) at logit 6 and t + 2 at 5.5 (p ~ 0.59 and 0.36 of 32
    tokens), every other token 0. So the text repeats itself (DRY's target), two tokens stand above any XTC
    threshold below 0.19, and mirostat's mu of a few bits cuts the tail."""
    logits = np.zeros(32, np.float32)
    last = history[-1]
    logits[(last + 1) % 8], logits[(last + 2) % 8] = 6.0, 5.5
    return logits


def test_xtc_dry_and_mirostat_change_what_a_lane_does_then_replay_exactly(tmp_path):
    """On distributions that cross their thresholds each sampler acts: XTC removes the best token at every step
    its coin falls below p, DRY moves probability off the token that would extend the loop, mirostat cuts the
    tail with a mu that moves; each lane's tokens differ from the same seed without its sampler, and the run
    file replays exactly."""
    lanes = [LaneSpec("xtc", do_sample=True, xtc_probability=0.8, xtc_threshold=0.15, seed=3),
             LaneSpec("dry", do_sample=True, dry_multiplier=1.0, dry_allowed_length=2, seed=3),
             LaneSpec("mirostat", do_sample=True, mirostat=2, mirostat_tau=1.2, mirostat_eta=0.3, seed=3),
             LaneSpec("plain", do_sample=True, seed=3)]
    source_engine = Engine(FunctionSource(looping_logits, 32), FakeTokenizer(), eos_token_ids=[], top_n=32)
    trace = source_engine.run(PromptInfo("loop", [0, 1, 2]), lanes, max_new_tokens=24)
    xtc, dry, mirostat, plain = trace.lanes
    acted = [r for r in xtc.steps if r.xtc_coin <= 0.8]
    assert len(acted) >= 10 and all(r.top[0].id != r.top_raw[0].id for r in acted)
    assert all(r.top[0].id == r.top_raw[0].id for r in xtc.steps if r.xtc_coin > 0.8)
    penalised = [r for r in dry.steps if r.top_raw[0].prob - probs_of(r.top, 32)[r.top_raw[0].id] > 0.05]
    assert len(penalised) >= 3  # the loop's next token loses probability to DRY
    assert all(r.kept < 32 for r in mirostat.steps) and len({r.mirostat_mu for r in mirostat.steps}) > 10
    assert all(r.kept == 32 for r in plain.steps)
    for lane in (xtc, dry, mirostat):
        assert lane.token_ids != plain.token_ids, lane.name
    path = run_file.save(trace, tmp_path / "run.json")
    loaded = run_file.load(path)
    again = replay(Engine(FunctionSource(looping_logits, 32), FakeTokenizer(), eos_token_ids=[], top_n=32), loaded)
    assert compare(loaded, again) == []
    assert [[(r.xtc_coin, r.mirostat_mu, r.draw) for r in lane.steps] for lane in again.lanes] == [
        [(r.xtc_coin, r.mirostat_mu, r.draw) for r in lane.steps] for lane in loaded.lanes]
