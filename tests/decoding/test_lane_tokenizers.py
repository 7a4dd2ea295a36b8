"""Lanes on a model of another tokenizer (tiny models of 384 and 320 tokens): the lane reads the prompt as its own
tokenizer encodes it and gives the tokens of its model run alone; it is compared with the run's lanes by text (the
first differing character, in each lane's step holding it); its run file round-trips and replays, from the
engine and from the command line; a branch continuing the run tokenizer's ids onto it is refused."""

from __future__ import annotations

import json

import pytest

from decoding.analysis.analysis import first_divergence
from decoding.chain.parameters import ParameterError
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import branch_prefix
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from decoding.records.trace import LaneTrace, StepRecord
from models.open_model import LaneModels, open_model
from runfiles import run_file
from tests.cli.test_run import cli

PROMPT = "The capital of France is"
LANES = [LaneSpec("greedy"), LaneSpec("sampled", do_sample=True, top_k=50, seed=3), LaneSpec("beam", num_beams=2)]


@pytest.fixture(scope="module")
def models(tiny_model_dir, tiny_model_other_tokenizer_dir):
    return open_model(tiny_model_dir, "cpu"), open_model(tiny_model_other_tokenizer_dir, "cpu")


def run(model, specs, max_new_tokens=10):
    engine = model.engine(models=LaneModels(model, "cpu"))
    return engine.run(model.encode_prompt(PROMPT), specs, max_new_tokens=max_new_tokens, model=model.info)


def other(specs, model_dir):
    return [spec.with_changes(name=f"{spec.name} t", model=str(model_dir)) for spec in specs]


def test_a_lane_on_another_tokenizer_gives_the_tokens_of_its_model_run_alone(models, tiny_model_other_tokenizer_dir):
    a, t = models
    assert a.decoder.vocab_size != t.decoder.vocab_size
    trace = run(a, [*LANES, *other(LANES, tiny_model_other_tokenizer_dir)])
    alone = run(t, LANES)
    for spec in LANES:
        lane, own = trace.lane(f"{spec.name} t"), alone.lane(spec.name)
        assert lane.token_ids == own.token_ids and lane.text == own.text
        assert [r.token_text for r in lane.steps] == [r.token_text for r in own.steps]
        assert lane.prompt_ids == t.encode_prompt(PROMPT).ids != trace.prompt.ids
        assert lane.model.tokenizer and trace.lane(spec.name).model is None
    assert trace.lane("greedy").prompt_ids is None


def forced(name: str, model, text: str, model_dir=None) -> LaneSpec:
    """A lane that writes `text` in its model's tokens (forced at every step)."""
    ids = model.tokenizer.encode(text, add_special_tokens=False)
    return LaneSpec(name, forced=dict(enumerate(ids)), max_new_tokens=len(ids), model=model_dir)


def test_two_tokenizers_part_at_the_first_differing_character(models, tiny_model_other_tokenizer_dir):
    a, t = models
    # " Paris is big" / " Paris was big": they part at character 7 ("i" / "w"), in the steps holding it
    specs = [forced("a", a, " Paris is big"), forced("t", t, " Paris was big", str(tiny_model_other_tokenizer_dir))]
    trace = run(a, specs)
    assert [lane.text for lane in trace.lanes] == [" Paris is big", " Paris was big"]
    assert [len(lane.steps) for lane in trace.lanes] != [13, 14]  # tokens of several characters
    divergence = trace.analysis.divergences[0]
    assert divergence.char == 7
    for lane, step in zip(trace.lanes, (divergence.step, divergence.step_b), strict=True):
        before = "".join(r.token_text for r in lane.steps[:step])
        assert len(before) <= 7 < len(before) + len(lane.steps[step].token_text)
    assert first_divergence(trace.lanes[0], trace.lanes[0]).step is None


def steps(*pieces: str) -> list[StepRecord]:
    return [StepRecord(i, 10 + i, p, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1, 0.0, 0.0, [], [])
            for i, p in enumerate(pieces)]


def test_a_constructed_pair_parts_at_the_character_checked_by_hand(models):
    _, t = models
    # "Paris is big" vs "Paris was big": the texts part at character 6 ("i" / "w"), in step 1 of the first lane
    # (" is") and step 2 of the second ("Par" "is" " was"); a split UTF-8 character is the same text
    a = LaneTrace("a", {}, [], [10, 11, 12], steps=steps("Paris", " is", " big"))
    b = LaneTrace("b", {}, [], [10, 11, 12, 13], steps=steps("Par", "is", " was", " big"))
    b.model = type("Info", (), {"tokenizer": "other"})()
    divergence = first_divergence(a, b)
    assert (divergence.char, divergence.step, divergence.step_b, divergence.token_a, divergence.token_b) == \
        (6, 1, 2, 11, 12)
    c = LaneTrace("c", {}, [], [10, 11, 12], steps=steps("\\xe4\\xb8", "\\xad", "!"))
    d = LaneTrace("d", {}, [], [10, 11], steps=steps("中", "?"))
    d.model = b.model
    assert (first_divergence(c, d).char, first_divergence(c, d).step, first_divergence(c, d).step_b) == (1, 2, 1)
    assert first_divergence(a, LaneTrace("e", {}, [], [1], steps=steps("Paris is"), model=b.model)).step is None


def test_the_run_file_round_trips_and_replays_exactly(models, tiny_model_other_tokenizer_dir, tmp_path):
    a, _ = models
    trace = run(a, [LaneSpec("greedy"), *other(LANES, tiny_model_other_tokenizer_dir)])
    path = run_file.save(trace, tmp_path / "run.json")
    opened = run_file.load(path)
    assert jsonio.dumps(opened) == path.read_text(encoding="utf-8")
    assert opened.lane("greedy t").prompt_ids == trace.lane("greedy t").prompt_ids
    assert opened.analysis.divergences[0].char == trace.analysis.divergences[0].char is not None
    again = replay(a.engine(models=LaneModels(a, "cpu")), opened)
    assert compare(opened, again) == []
    opened.lane("greedy t").prompt_ids = [5, 6]
    assert "tokenizer encodes the prompt to other ids" in compare(opened, again)[0].describe()


def test_a_branch_continues_a_lane_on_its_own_tokenizer_and_refuses_another(models, tiny_model_other_tokenizer_dir):
    a, t = models
    model_t = str(tiny_model_other_tokenizer_dir)
    trace = run(a, [LaneSpec("greedy"), LaneSpec("greedy t", model=model_t)])
    engine = a.engine(models=LaneModels(a, "cpu"))
    token = trace.lane("greedy t").steps[2].top[1].id
    spec = LaneSpec("b", model=model_t, branch=Branch("greedy t", 2, token))
    branch = engine.run(a.encode_prompt(PROMPT), [spec], max_new_tokens=10, model=a.info,
                        prefix=branch_prefix(trace, "greedy t", 2)).lanes[0]
    forced = LaneSpec("b", forced={**dict(enumerate(trace.lane("greedy t").token_ids[:2])), 2: token})
    assert branch.token_ids == run(t, [forced]).lane("b").token_ids  # its model alone, the same tokens forced
    for parent, onto in (("greedy", model_t), ("greedy t", None)):  # the run's ids onto another tokenizer, and back
        with pytest.raises(ParameterError, match="a model of the tokenizer of the tokens it continues"):
            engine.start(a.encode_prompt(PROMPT), [LaneSpec("b", model=onto, branch=Branch(parent, 2, 5))],
                         max_new_tokens=6, model=a.info, prefix=branch_prefix(trace, parent, 2))


def test_the_command_line_runs_and_replays_a_lane_on_another_tokenizer(capsys, tiny_model_dir,
                                                                        tiny_model_other_tokenizer_dir, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", PROMPT, "--max-new-tokens", "6",
                         "--lane", "greedy", "--lane", f"greedy:model={tiny_model_other_tokenizer_dir},name=t",
                         "--json", str(path), "--device", "cpu")
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert "prompt_ids" not in data["lanes"][0] and data["lanes"][1]["prompt_ids"]
    assert data["lanes"][1]["model"]["tokenizer"]
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0 and "replay identical: 2 lanes" in out, err
