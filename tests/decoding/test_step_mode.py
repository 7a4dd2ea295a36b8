"""Step mode (decoding.engine.step_mode) with the tiny model: twenty tokens walked one step at a time with the user's
own picks (greedy and sampled lanes), each step showing the lane's processed distribution; the lanes' specs with
those picks forced replay the same tokens and draws in one ordinary run; a beam lane runs on to its end
(its steps one by one: tests/decoding/test_step_mode_beams.py)."""

from __future__ import annotations

import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.step_mode import StepSession
from models.open_model import open_model


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    return open_model(str(tiny_model_dir), "cpu")


LANES = [LaneSpec("greedy"), LaneSpec("hot", do_sample=True, temperature=1.3, top_k=30),
         LaneSpec("beam", num_beams=3)]


def test_twenty_steps_with_hand_picks_replay_exactly(model):
    prompt = model.encode_prompt("Once upon a time", chat=False, system=None)
    session = StepSession(model.engine(), prompt, LANES, max_new_tokens=24, base_seed=9)
    picks = {}
    for step in range(20):
        for name in ("greedy", "hot"):
            proposed = session.propose(name)
            assert proposed.step == step and not proposed.forced
            assert session.propose(name) is proposed  # asked again: the same step, no second draw
            assert len(proposed.top) >= 2
            if name == "greedy":  # greedy proposes its most likely token; hot one it drew
                assert proposed.token_id == proposed.top.ids[0]
                assert proposed.prob == pytest.approx(proposed.top.probs[0])
            else:
                assert proposed.draw is not None and proposed.draw_low <= proposed.draw < proposed.draw_high
            if step % 3 == 1:  # the user clicks another candidate: the third for greedy, the second for hot
                other = proposed.top[2 if name == "greedy" else 1]
                taken = session.take(name, other.id)
                assert taken.forced and taken.token_id == other.id and taken.top.rank_of(other.id) == other.rank
                assert taken.top == proposed.top  # the same distribution, another token
                picks.setdefault(name, {})[step] = other.id
            else:
                accepted = session.accept(name)
                assert accepted.token_id == proposed.token_id and accepted.draw == proposed.draw
    for name in ("greedy", "hot"):
        lane = session.lane(name)
        assert len(lane.steps) == 20 and lane.picks == picks[name]
        assert lane.trace.config["forced"] == {str(s): t for s, t in sorted(picks[name].items())}
    beam = session.run_to_end("beam")
    assert beam.finish_reason in ("eos", "length") and beam.steps[0].beams
    assert session.propose("beam") is None  # ended: nothing more to propose
    replayed = model.engine().run(prompt, [replace_limit(session.spec_of(n), 20) for n in ("greedy", "hot")],
                                  max_new_tokens=20, base_seed=9)
    for lane in replayed.lanes:
        stepped = session.lane(lane.name).steps
        assert lane.token_ids == [r.token_id for r in stepped], lane.name
        # the stepped records came from prefills of the tokens so far, the run's from one step at a time:
        # float32 sums in another order, the same numbers to ~1e-7
        assert [r.prob for r in lane.steps] == pytest.approx([r.prob for r in stepped], rel=1e-5, abs=1e-7)
        assert [r.draw for r in lane.steps] == [r.draw for r in stepped]
    hot = session.run_to_end("hot")  # the rest by itself: as a run of its spec to the end makes it
    alone = model.engine().run(prompt, [session.spec_of("hot")], max_new_tokens=24, base_seed=9).lanes[0]
    assert hot.token_ids == alone.token_ids and session.propose("hot") is None


def replace_limit(spec: LaneSpec, limit: int) -> LaneSpec:
    return spec.with_changes(max_new_tokens=limit)


def test_lanes_that_branch_are_refused_clearly(model):
    from decoding.chain.spec import Branch

    prompt = model.encode_prompt("Once", chat=False, system=None)
    with pytest.raises(ValueError, match="lane 'b' branches from another lane: step mode starts lanes at step 0"):
        StepSession(model.engine(), prompt, [LaneSpec("b", branch=Branch("greedy", 1, 5))], max_new_tokens=4)
