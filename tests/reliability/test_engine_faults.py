"""Bad input and faults at the engine (Qt-free, the window and the command line share it): logits a lane cannot
choose from (NaN, +inf, no finite value) stop that lane with the reason while the others go on; a run past the
model's positions is refused before any model work; every lane parameter out of range, NaN or of the wrong type
is refused with a message naming it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from decoding.chain.parameters import PARAMETERS
from decoding.chain.spec import LaneSpec, default_lanes, parse_lane
from decoding.engine.engine import Engine
from decoding.records import jsonio
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer

PROMPT = PromptInfo("fake prompt", [1, 17, 29, 5])


class PoisonedSource(FakeSource):
    """FakeSource whose rows after `bad_token` (the last token of the history) hold `poison`."""

    def __init__(self, bad_token: int | None, poison: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.bad_token, self.poison = bad_token, poison

    def logits_for(self, history):
        logits = super().logits_for(history)
        if self.bad_token is None or history[-1] == self.bad_token:
            if self.poison == "nan":
                logits[7] = np.nan
            elif self.poison == "+inf":
                logits[3] = np.inf
            else:
                logits[:] = -np.inf
        return logits


POISONS = {"nan": "1 NaN logits", "+inf": "1 +inf logits", "-inf": "no finite logit"}


SPECS = [LaneSpec("greedy"), *(LaneSpec(f"sample {seed}", do_sample=True, top_k=20, seed=seed) for seed in (1, 2, 3))]


@pytest.mark.parametrize("poison", list(POISONS))
def test_unusable_logits_stop_one_lane_with_the_reason_and_the_others_go_on(poison):
    clean = Engine(FakeSource(), FakeTokenizer(), []).run(PROMPT, SPECS, max_new_tokens=12)
    greedy = clean.lanes[0].token_ids
    fed = {token for lane in clean.lanes[1:] for token in lane.token_ids[:-1]}
    bad = next(token for token in greedy[2:-1] if token not in fed)  # only the greedy lane feeds it
    step = greedy.index(bad) + 1
    trace = Engine(PoisonedSource(bad, poison), FakeTokenizer(), []).run(PROMPT, SPECS, max_new_tokens=12)
    lane = trace.lanes[0]
    assert lane.finish_reason == "error" and trace.error is None
    assert lane.error == f"the model's logits at step {step} are not usable ({POISONS[poison]})"
    assert lane.token_ids == greedy[:step]  # what it generated before is kept
    for got, want in zip(trace.lanes[1:], clean.lanes[1:], strict=True):
        assert (got.token_ids, got.finish_reason) == (want.token_ids, want.finish_reason)
    assert jsonio.dumps(jsonio.loads(jsonio.dumps(trace))) == jsonio.dumps(trace)  # saved and reopened as is


def test_unusable_logits_stop_a_beam_lane_with_its_best_sequence_so_far():
    clean = Engine(FakeSource(), FakeTokenizer(), []).run(PROMPT, [LaneSpec("beam", num_beams=3)], max_new_tokens=8)
    bad = clean.lanes[0].token_ids[2]
    trace = Engine(PoisonedSource(bad, "nan"), FakeTokenizer(), []).run(
        PROMPT, [LaneSpec("beam", num_beams=3)], max_new_tokens=8)
    lane = trace.lanes[0]
    assert lane.finish_reason == "error" and lane.error.startswith("the model's logits at step ")
    assert lane.token_ids == [step.token_id for step in lane.steps] and lane.sequences
    assert jsonio.dumps(jsonio.loads(jsonio.dumps(trace))) == jsonio.dumps(trace)


def test_unusable_logits_from_the_prefill_stop_every_lane_without_raising():
    trace = Engine(PoisonedSource(None, "nan"), FakeTokenizer(), []).run(PROMPT, default_lanes(), max_new_tokens=5)
    assert all(lane.finish_reason == "error" and lane.token_ids == [] for lane in trace.lanes)
    assert {lane.error for lane in trace.lanes} == {"the model's logits at step 0 are not usable (1 NaN logits)"}


class LimitedSource(FakeSource):
    max_positions = 10


@pytest.mark.parametrize(("max_new_tokens", "lane_limit", "ok"), [(7, None, True), (8, None, False), (5, 8, False)])
def test_a_run_past_the_sources_positions_is_refused_before_the_prefill(max_new_tokens, lane_limit, ok):
    source = LimitedSource()
    engine = Engine(source, FakeTokenizer(), [])
    specs = [LaneSpec("greedy"), LaneSpec("long", max_new_tokens=lane_limit)]
    if ok:  # the prompt's 4 positions and 7 new tokens but the last: exactly the 10 positions
        assert len(engine.run(PROMPT, specs, max_new_tokens=max_new_tokens).lanes[0].token_ids) == max_new_tokens
        return
    with pytest.raises(ValueError, match=r"invalid max_new_tokens=8: after the prompt's 4 tokens it needs 11 "
                                         r"positions, the model has 10 \(allowed: max_new_tokens <= 7\)"):
        engine.start(PROMPT, specs, max_new_tokens=max_new_tokens)
    assert source.prefill_calls == 0


def test_the_position_limit_is_the_decoders_own(tiny_model_dir):
    """On the real decoder: exactly the room the check allows runs to the end; the decoder refuses one more."""
    from runtime import load_model

    model = load_model(tiny_model_dir, device="cpu")
    limit = model.decoder.max_positions
    prompt = PromptInfo("long", [5] * (limit - 6))
    engine = Engine(model.decoder, model.tokenizer, [])
    trace = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=7)
    assert trace.error is None and len(trace.lanes[0].token_ids) == 7
    state, _ = model.decoder.prefill(prompt.ids + [5] * 6)  # the positions are all taken
    with pytest.raises(ValueError, match="exceeds the model's"):
        model.decoder.step(state, [0], [5])


BAD_VALUES = [math.nan, math.inf, -math.inf, -1, 10**12, "0.5", True, [1]]


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.kind in ("int", "float")], ids=lambda p: p.name)
def test_every_number_parameter_refuses_nan_infinities_wrong_types_and_out_of_range(p):
    base = {"do_sample": True} if p.applies_to.value == "sampling" else {}
    if p.applies_to.value == "beam":
        base = {"num_beams": 4}
    refused = 0
    for value in BAD_VALUES:
        try:
            LaneSpec("lane", **base, **{p.name: value})
        except ValueError as error:
            assert str(error).startswith(f"invalid {p.name}={value!r}: allowed ")
            refused += 1
        else:
            assert p.range.contains(value)  # e.g. 10**12 for an unbounded integer, -1 for length_penalty
    assert refused >= 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sample:temperature=nan", "invalid temperature=nan: allowed a float in (0, inf)"),
        ("sample:temperature=inf", "invalid temperature=inf: allowed a float in (0, inf)"),
        ("sample:top_k=1.5", "invalid top_k='1.5': allowed an integer >= 0"),
        ("sample:seed=-1", "invalid seed=-1: allowed an integer >= 0"),
        ("beam:num_beams=x", "invalid num_beams='x': allowed an integer >= 1"),
        ("sample:do_sample=maybe", "invalid do_sample='maybe': allowed true or false"),
        ("greedy:early_stopping=soon", "invalid early_stopping='soon'"),
        ("sample:min_p=-0.1", "invalid min_p=-0.1: allowed a float in [0, 1]"),
    ],
)
def test_command_line_lane_values_are_refused_in_words(text, message):
    with pytest.raises(ValueError) as info:
        parse_lane(text)
    assert str(info.value).startswith(message)
