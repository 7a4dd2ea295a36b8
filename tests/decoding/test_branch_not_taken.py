"""The branch not taken: the replay spec, its run beside the lane it replays and after the run (same tokens,
same later draws), a direct step-by-step decode forcing the runner-up, and the comparison of continuations."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.analysis.branch_not_taken import compare_continuations, levenshtein, not_taken_spec, replay_spec
from decoding.chain.chain import build_processors
from decoding.chain.processors import apply_processors
from decoding.chain.selectors import Sampler
from decoding.chain.spec import Branch, LaneSpec, ReplayOf, lane_spec
from decoding.engine.engine import Engine, replay_prefix
from decoding.engine.replay import compare, replay, replay_not_taken
from decoding.records.trace import CriticalPoint, PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer

PROMPT = PromptInfo("p", [1, 2, 3])
HOT = LaneSpec("hot", do_sample=True, temperature=1.2, top_k=6, seed=5)


def engine() -> Engine:
    return Engine(FakeSource(vocab_size=16, peak=1.0), FakeTokenizer(), eos_token_ids=[])


def point(step: int, runner_up: int) -> CriticalPoint:
    return CriticalPoint(step, "draw", 0, runner_up, 0.3, 0.3, distance=0.01)


def test_replay_spec_is_the_lane_with_a_marker():
    spec = replay_spec(HOT.with_changes(name="hot #2", seed=7), point(3, 9))
    assert spec.name == "hot #2 ↳3 runner-up" and spec.replay_of == ReplayOf("hot #2", 3, 9)
    assert spec.to_config() == HOT.with_changes(seed=7).to_config() and spec.fanout is None
    assert not_taken_spec(HOT, 2, 4, name="mine").name == "mine"
    branch = HOT.with_changes(branch=Branch("greedy", 4, 1))
    with pytest.raises(ValueError, match="invalid replay step=4 .* after its branch step 4"):
        not_taken_spec(branch, 4, 2)
    with pytest.raises(ValueError, match="invalid replay of lane 'hot ↳3 runner-up': it replays lane 'hot'"):
        not_taken_spec(replay_spec(HOT, point(3, 9)), 5, 1)


def direct_forced_run(source: FakeSource, spec: LaneSpec, steps: int, step: int, token: int) -> list[int]:
    """The lane decoded step by step without the engine: its processors, one draw per step, the draw at
    `step` made and `token` taken instead."""
    processors = build_processors(spec.to_config(), len(PROMPT.ids), [], spec.num_beams)
    sampler = Sampler(spec.seed) if spec.do_sample else None
    history = list(PROMPT.ids)
    tokens = []
    for index in range(steps):
        scores = apply_processors(processors, np.array([history]), source.logits_for(history)[None])[0]
        chosen = sampler.draw(scores).token_id if sampler else int(np.argmax(scores))
        tokens.append(token if index == step else chosen)
        history.append(tokens[-1])
    return tokens


@pytest.mark.parametrize("spec", [HOT, LaneSpec("greedy", repetition_penalty=1.3)])
def test_replay_in_run_after_the_run_and_decoded_directly_agree(spec):
    original = engine().run(PROMPT, [spec], max_new_tokens=10)
    lane = original.lanes[0]
    step = 4
    runner_up = next(t.id for t in lane.steps[step].top if t.id != lane.token_ids[step])
    replay = not_taken_spec(lane_spec(lane), step, runner_up)
    together = engine().run(PROMPT, [lane_spec(lane), replay], max_new_tokens=10)
    beside = together.lane(replay.name)
    assert together.lanes[0].token_ids == lane.token_ids
    assert beside.token_ids[:step] == lane.token_ids[:step] and beside.token_ids[step] == runner_up
    assert beside.steps[step].forced and beside.replay_of == {"lane": spec.name, "step": step, "token_id": runner_up}
    after = replay_not_taken(engine(), original, replay)
    assert after.token_ids == beside.token_ids and after.replay_of == beside.replay_of
    assert beside.token_ids == direct_forced_run(FakeSource(vocab_size=16, peak=1.0), spec, 10, step, runner_up)
    if spec.do_sample:  # every later step drew the number the original drew there
        assert [r.draw for r in beside.steps[step + 1 :]] == [r.draw for r in lane.steps[step + 1 :]]


def test_a_replay_of_a_branch_lane_runs_in_the_run_and_after_it():
    specs = [LaneSpec("greedy"), HOT.with_changes(name="b", branch=Branch("greedy", 2, 7))]
    original = engine().run(PROMPT, specs, max_new_tokens=9)
    branch = original.lane("b")
    replay = not_taken_spec(lane_spec(branch), 5, (branch.token_ids[5] + 1) % 16)
    assert replay_prefix(original, replay).draws == 2  # steps 3 and 4: before 2 copied, 2 forced
    together = engine().run(PROMPT, [*specs, replay], max_new_tokens=9).lane(replay.name)
    after = replay_not_taken(engine(), original, replay)
    assert after.token_ids == together.token_ids and after.branch == together.branch == branch.branch
    assert together.token_ids[:5] == branch.token_ids[:5]


def test_a_file_with_replays_replays_identically_and_is_compared():
    original = engine().run(PROMPT, [HOT], max_new_tokens=8)
    lane = original.lanes[0]
    replay_lane = replay_not_taken(engine(), original, not_taken_spec(lane_spec(lane), 3, (lane.token_ids[3] + 1) % 16))
    original.lanes.append(replay_lane)
    from decoding.analysis.analysis import analyze

    original.analysis = analyze(original)
    (found,) = original.analysis.replays
    assert (found.lane, found.of, found.step, found.original_token_id) == (
        replay_lane.name, "hot", 3, lane.token_ids[3])
    expected = compare_continuations(lane.token_ids, replay_lane.token_ids, 4)
    assert (found.first_difference, found.shared_prefix, found.edit_distance, found.distance) == (
        expected.first_difference, expected.shared_prefix, expected.edit_distance, expected.distance)
    assert compare(original, replay(engine(), original)) == []


def test_compare_continuations():
    a, b = [1, 2, 3, 4, 5], [1, 2, 3, 9, 5, 6]
    found = compare_continuations(a, b)
    assert (found.first_difference, found.shared_prefix, found.edit_distance) == (3, 3, 2)
    assert found.distance == pytest.approx(2 / 6)
    after = compare_continuations(a, b, start=4)
    assert (after.first_difference, after.shared_prefix, after.edit_distance) == (None, 1, 1)  # [5] vs [5, 6]
    same = compare_continuations([1, 2], [1, 2])
    assert (same.first_difference, same.shared_prefix, same.edit_distance, same.distance) == (None, 2, 0, 0.0)
    assert compare_continuations([], [], 0).distance == 0.0
    assert compare_continuations([1], [2]).distance == 1.0


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [([], [], 0), ([1, 2, 3], [], 3), ([1, 2, 3], [1, 3], 1), ([1, 2, 3], [3, 2, 1], 2), ([5, 6], [6, 5, 6], 1)],
)
def test_levenshtein(a, b, distance):
    assert levenshtein(a, b) == distance == levenshtein(b, a)
