"""Lanes on a model of another tokenizer with fake sources (fast): its own prompt ids, vocabulary and token texts;
step mode walks it with its tokenizer's prefix; a temperature sweep of it reads its prompt; the reference lane and
a lane of the run's tokenizer stay token-aligned."""

from __future__ import annotations

from decoding.analysis.sweep import sweep_inputs
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.engine.step_mode import StepSession
from decoding.records.trace import ModelInfo, PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, OtherWeightsSource, fake_models

PROMPT = PromptInfo("a prompt", [1, 4, 9])
MODEL = ModelInfo("fake")


def engine() -> Engine:
    models = fake_models({"other": OtherWeightsSource(2, vocab_size=40)}, other_tokenizer=["other"])
    return Engine(FakeSource(vocab_size=32), FakeTokenizer(), eos_token_ids=[3], models=models)


SPECS = [LaneSpec("g"), LaneSpec("s", do_sample=True, seed=4), LaneSpec("t", model="other"),
         LaneSpec("t sampled", do_sample=True, seed=4, model="other")]


def test_a_lane_of_another_tokenizer_reads_its_own_prompt_and_names_its_own_tokens():
    trace = engine().run(PROMPT, SPECS, max_new_tokens=6, model=MODEL)
    lane, alone = trace.lane("t"), OtherWeightsSource(2, vocab_size=40)
    assert lane.prompt_ids == [2, 1, 4, 9] and trace.lane("g").prompt_ids is None
    assert lane.model.tokenizer == "other-tokenizer"
    assert lane.steps[0].token_id == int(alone.logits_for([2, 1, 4, 9]).argmax())  # its model read its prompt
    assert all(r.token_text == f"[{r.token_id}]" for r in lane.steps) and lane.text.startswith("[")
    divergences = {(d.a, d.b): d for d in trace.analysis.divergences}
    assert divergences[("g", "s")].char is None  # token-aligned
    by_text = divergences[("g", "t")]
    assert (by_text.char, by_text.step, by_text.step_b) == (0, 0, 0)  # "<" against "["


def test_step_mode_walks_a_lane_of_another_tokenizer_to_its_one_run_tokens():
    run = engine().run(PROMPT, SPECS[2:], max_new_tokens=6, model=MODEL)
    session = StepSession(engine(), PROMPT, SPECS[2:], max_new_tokens=6, base_seed=None, model=MODEL)
    for name in ("t", "t sampled"):
        for _ in range(3):
            session.accept(name)
        assert session.run_to_end(name).token_ids == run.lane(name).token_ids


def test_a_sweep_of_a_lane_of_another_tokenizer_reads_its_prompt():
    trace = engine().run(PROMPT, SPECS, max_new_tokens=4, model=MODEL)
    inputs = sweep_inputs(trace, "t", 2)
    assert inputs.ids == [2, 1, 4, 9, *trace.lane("t").token_ids[:2]] and inputs.prompt_len == 4
