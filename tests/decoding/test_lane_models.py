"""Lanes on their own models (LaneSpec.model) on fake sources: each lane's tokens are those of a run of it alone
on its model, one batched call per model per step, refusals before any work, run files and replay."""

from __future__ import annotations

import json

import pytest

from decoding.chain.parameters import ParameterError
from decoding.chain.spec import Branch, LaneSpec, lane_spec, parse_lane
from decoding.engine.engine import Engine
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from decoding.records.trace import SCHEMA_VERSION, ModelInfo, PromptInfo
from runfiles import run_file
from tests.decoding.test_row_batch import without_timings
from tests.fake_source import FakeSource, FakeTokenizer, OtherWeightsSource, fake_models

PROMPT = PromptInfo("fake prompt", [1, 17, 29, 5])
RUN_MODEL = ModelInfo("fake", {"model.onnx": "fake-hash"}, "/models/fake")
LANES = [
    LaneSpec("greedy"),
    LaneSpec("greedy int4", model="fake-int4"),
    LaneSpec("beam int4", num_beams=3, model="fake-int4"),
    LaneSpec("sampled", do_sample=True, top_k=10, seed=1),
    LaneSpec("sampled int4", do_sample=True, top_k=10, seed=1, model="fake-int4"),
    LaneSpec("sampled int4 #2", do_sample=True, top_k=10, seed=2, model="fake-int4"),
]


def engines() -> tuple[Engine, FakeSource, OtherWeightsSource]:
    source, other = FakeSource(), OtherWeightsSource()
    engine = Engine(source, FakeTokenizer(), eos_token_ids=[], models=fake_models({"fake-int4": other}))
    return engine, source, other


def run(engine: Engine, specs, **kwargs):
    return engine.run(PROMPT, specs, max_new_tokens=10, model=RUN_MODEL, base_seed=3, **kwargs)


def test_each_lane_gives_the_tokens_of_a_run_on_its_own_model_alone():
    engine, _, other = engines()
    trace = run(engine, LANES)
    alone_engine = Engine(OtherWeightsSource(), FakeTokenizer(), eos_token_ids=[])
    for spec in LANES:
        alone = alone_engine if spec.model else Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[])
        expected = run(alone, [spec.with_changes(model=None)]).lanes[0]
        lane = trace.lane(spec.name)
        assert lane.token_ids == expected.token_ids, spec.name
        assert [r.prob for r in lane.steps] == [r.prob for r in expected.steps]
    assert trace.lane("greedy").token_ids != trace.lane("greedy int4").token_ids  # the models really differ


def test_lanes_of_one_model_share_one_batched_call_per_step():
    engine, source, other = engines()
    trace = run(engine, LANES)
    assert source.prefill_calls == other.prefill_calls == 1
    assert source.step_calls == other.step_calls == trace.timing.steps == 9  # ten tokens: nine calls each
    for model, source_of_model in ((None, source), ("fake-int4", other)):  # the calls of its lanes run alone
        alone_source = OtherWeightsSource() if model else FakeSource()
        alone = Engine(alone_source, FakeTokenizer(), eos_token_ids=[])
        run(alone, [spec.with_changes(model=None) for spec in LANES if spec.model == model])
        assert source_of_model.batch_sizes == alone_source.batch_sizes
    assert max(other.batch_sizes) > 3  # beams and lanes in one call


def test_records_stream_in_the_lanes_order_whatever_their_model():
    engine, _, _ = engines()
    specs = [LaneSpec("a", model="fake-int4"), LaneSpec("b"), LaneSpec("c", model="fake-int4")]
    streamed = []
    trace = run(engine, specs, on_step=lambda index, record: streamed.append((record.step, index)))
    assert streamed == sorted(streamed)
    assert streamed == [(step, index) for step in range(10) for index in range(3)]  # each lane's every step once
    assert [len(lane.steps) for lane in trace.lanes] == [10, 10, 10]


def test_a_lane_records_its_model_and_a_lane_on_the_run_model_none():
    engine, _, _ = engines()
    trace = run(engine, [LaneSpec("a"), LaneSpec("b", model="fake-int4"), LaneSpec("c", model="fake")])
    assert trace.lane("a").model is None and trace.lane("c").model is None  # "fake" is the run's model
    model = trace.lane("b").model
    assert (model.name, model.hashes, model.precision) == ("fake-int4", {"model.onnx": "fake-int4-hash"}, "int4")
    assert trace.lane("b").config["model"] == "fake-int4"
    assert lane_spec(trace.lane("b")).model == "fake-int4"


def test_an_unprepared_model_is_refused_naming_the_lane_the_model_and_the_prepared_ones():
    engine, source, _ = engines()
    with pytest.raises(ParameterError) as refused:
        engine.start(PROMPT, [LaneSpec("g"), LaneSpec("mine", model="nope")], max_new_tokens=4, model=RUN_MODEL)
    message = str(refused.value)
    assert "model='nope'" in message and "'mine'" in message and "fake-int4" in message
    assert source.prefill_calls == 0
    plain = Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[])
    with pytest.raises(ParameterError, match="lane 'mine'"):
        plain.start(PROMPT, [LaneSpec("mine", model="fake-int4")], max_new_tokens=4)


def test_a_model_of_another_vocabulary_and_an_in_run_branch_across_models_are_refused():
    other = FakeSource(vocab_size=32)
    engine = Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[], models=fake_models({"small": other}))
    with pytest.raises(ParameterError, match="vocabulary of 64 tokens"):
        engine.start(PROMPT, [LaneSpec("s", model="small")], max_new_tokens=4)
    engine, _, _ = engines()
    branch = LaneSpec("b", model="fake-int4", branch=Branch("greedy", 2, 7))
    with pytest.raises(ParameterError, match="parent 'greedy'"):
        engine.start(PROMPT, [LaneSpec("greedy"), branch], max_new_tokens=4, model=RUN_MODEL)


def test_the_command_line_lane_key_names_the_model():
    lane = parse_lane("greedy:model=SmolLM2-135M-Instruct-int4")
    assert lane.model == "SmolLM2-135M-Instruct-int4" and lane.name == "greedy · SmolLM2-135M-Instruct-int4"
    assert parse_lane("beam:num_beams=2,model=/m/x-q4_1").name == "beam-2 · x-q4_1"
    assert LaneSpec("g", model="x").to_config() == {"do_sample": False, "num_beams": 1, "model": "x"}
    with pytest.raises(ParameterError, match="model"):
        LaneSpec("g", model=" ")


def test_a_run_file_keeps_each_lanes_model_and_an_older_file_reads_as_every_lane_on_the_run_model(tmp_path):
    engine, _, _ = engines()
    trace = run(engine, LANES)
    opened = run_file.load(run_file.save(trace, tmp_path / "run.json"))
    assert opened.lane("beam int4").model == trace.lane("beam int4").model
    assert jsonio.dumps(opened) == jsonio.dumps(trace)
    data = json.loads(jsonio.dumps(run(engines()[0], [LaneSpec("greedy")])))
    data["schema_version"] = 4
    del data["lanes"][0]["model"]
    older = jsonio.loads(json.dumps(data))
    assert older.lanes[0].model is None
    assert json.loads(jsonio.dumps(older))["schema_version"] == SCHEMA_VERSION


def test_replay_reruns_each_lane_on_its_own_model_and_refuses_an_unprepared_one():
    engine, _, _ = engines()
    trace = run(engine, LANES)
    assert compare(trace, replay(engines()[0], trace)) == []
    only_run_model = Engine(FakeSource(), FakeTokenizer(), eos_token_ids=[], models=fake_models({}))
    with pytest.raises(ParameterError, match="'greedy int4'"):
        replay(only_run_model, trace)


def test_lanes_decided_one_by_one_give_the_same_records_on_several_models():
    traces = []
    for batched in (True, False):
        source, other = FakeSource(), OtherWeightsSource()
        engine = Engine(source, FakeTokenizer(), eos_token_ids=[], batched_rows=batched,
                        models=fake_models({"fake-int4": other}))
        traces.append(without_timings(run(engine, LANES)))
    assert traces[0] == traces[1]
