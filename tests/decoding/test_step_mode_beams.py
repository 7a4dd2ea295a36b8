"""Beam lanes in step mode (decoding.engine.step_mode): the search taken one step at a time, each step showing every
beam
it extended with that beam's candidates, equals the uninterrupted beam run token for token and number for number
(tiny model and the default model); a beam lane's step is accepted or run on, never forced; stopped early it
keeps the search of that many tokens."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.step_mode import StepSession
from models.open_model import open_model


def comparable(trace) -> dict:
    """A lane's trace without its clock (time_ms), every other field exact."""
    data = asdict(trace)
    for step in data["steps"]:
        step.pop("time_ms")
    return data


def walk_beam_lane(session: StepSession, name: str, num_beams: int) -> int:
    """Accept the beam lane's proposed step until it ends, checking what each step shows; returns the steps."""
    steps = 0
    while (proposed := session.propose(name)) is not None:
        assert session.propose(name) is proposed  # asked again: the same step, the search not advanced
        beams = session.beams(name)
        assert [b.beam for b in beams] == list(range(1 if steps == 0 else num_beams)) or session.lane(name).walk.ended
        for beam in beams:
            assert beam.record.step == steps and len(beam.token_ids) == steps
            assert beam.record.top.probs[0] >= beam.record.top.probs[-1] > 0.0  # its processed candidates
        if not session.lane(name).walk.ended:
            kept = [h for h in proposed.beams if h.kept]
            assert len(kept) == num_beams and {h.parent for h in kept} <= {b.beam for b in beams}
            best = next(h for h in kept if h.beam == 0)
            assert proposed.token_id == best.token_id
            assert session.shown(name).token_ids[:-1] == beams[best.parent].token_ids  # the best beam's path
        session.accept(name)
        steps += 1
    return steps


@pytest.mark.parametrize("spec", [LaneSpec("beam", num_beams=3), LaneSpec("wide", num_beams=4, length_penalty=0.5,
                                                                          repetition_penalty=1.3)])
def test_a_beam_lane_stepped_equals_its_uninterrupted_run(tiny_model_dir, spec):
    model = open_model(str(tiny_model_dir), "cpu")
    prompt = model.encode_prompt("Once upon a time", chat=False, system=None)
    session = StepSession(model.engine(), prompt, [spec], max_new_tokens=20, base_seed=3)
    steps = walk_beam_lane(session, spec.name, spec.num_beams)
    stepped = session.lane(spec.name).trace
    alone = model.engine().run(prompt, [spec], max_new_tokens=20, base_seed=3).lanes[0]
    assert steps >= len(alone.steps) and stepped.finish_reason == alone.finish_reason
    assert comparable(stepped) == comparable(alone)
    assert session.propose(spec.name) is None and session.running() == []


def test_with_other_lanes_a_beam_lane_steps_with_them_and_is_never_forced(tiny_model_dir):
    model = open_model(str(tiny_model_dir), "cpu")
    prompt = model.encode_prompt("Once upon a time", chat=False, system=None)
    lanes = [LaneSpec("greedy"), LaneSpec("hot", do_sample=True, temperature=1.2), LaneSpec("beam", num_beams=3)]
    session = StepSession(model.engine(), prompt, lanes, max_new_tokens=24, base_seed=5)
    for _ in range(6):
        for name in session.running():
            session.propose(name)
        session.step_all()
    assert {name: len(session.lane(name).steps) for name in ("greedy", "hot", "beam")} == {
        "greedy": 6, "hot": 6, "beam": 6}
    record = session.propose("beam")
    with pytest.raises(ValueError, match="'beam' is a beam lane: in step mode its step is accepted or run on"):
        session.take("beam", record.top[1].id)
    spec, kept = session.kept("beam")  # stopped after 6 steps: the search of 6 tokens, made again
    assert spec.max_new_tokens == 6 and kept.config["max_new_tokens"] == 6 and kept.finish_reason in ("eos", "length")
    six = model.engine().run(prompt, [spec], max_new_tokens=24, base_seed=5).lanes[0]
    assert comparable(kept) == comparable(six)
    ended = session.run_to_end("beam")  # on from the proposed step: the uninterrupted run's end
    alone = model.engine().run(prompt, [lanes[2]], max_new_tokens=24, base_seed=5).lanes[0]
    assert comparable(ended) == comparable(alone)


def test_on_the_default_model_a_stepped_beam_lane_equals_its_run(default_model_dir):
    model = open_model(str(default_model_dir), "cpu")
    prompt = model.encode_prompt("The sea is", chat=False, system=None)
    spec = LaneSpec("beam", num_beams=3)
    session = StepSession(model.engine(), prompt, [spec], max_new_tokens=20, base_seed=1)
    walk_beam_lane(session, "beam", 3)
    alone = model.engine().run(prompt, [spec], max_new_tokens=20, base_seed=1).lanes[0]
    stepped = session.lane("beam").trace
    assert stepped.token_ids == alone.token_ids and stepped.sequences == alone.sequences
    assert comparable(stepped) == comparable(alone)
