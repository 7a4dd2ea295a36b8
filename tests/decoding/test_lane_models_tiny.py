"""Lanes on their own models with the real runtime: two tiny models of one tokenizer (other weights) in one run,
token-exact against each lane run alone on its model; the command line's lane key, its refusals and replay."""

from __future__ import annotations

import json

import pytest

from decoding.chain.spec import LaneSpec
from models.open_model import LaneModels, open_model
from runfiles import run_file
from tests.cli.test_run import cli

PROMPT = "The capital of France is"
LANES = [
    LaneSpec("greedy"),
    LaneSpec("sampled", do_sample=True, top_k=50, seed=3),
    LaneSpec("beam", num_beams=3),
]


def own(specs, model_dir):
    return [spec.with_changes(name=f"{spec.name} b", model=str(model_dir)) for spec in specs]


@pytest.fixture(scope="module")
def models(tiny_model_dir, tiny_model_b_dir):
    a = open_model(tiny_model_dir, "cpu")
    return a, open_model(tiny_model_b_dir, "cpu")


def run(model, specs):
    engine = model.engine(models=LaneModels(model, "cpu"))
    prompt = model.encode_prompt(PROMPT)
    return engine.run(prompt, specs, max_new_tokens=8, model=model.info)


def test_a_two_model_run_gives_each_lane_the_tokens_of_its_model_alone(models, tiny_model_b_dir):
    a, b = models
    trace = run(a, [*LANES, *own(LANES, tiny_model_b_dir)])
    alone_a, alone_b = run(a, LANES), run(b, LANES)
    for spec in LANES:
        assert trace.lane(spec.name).token_ids == alone_a.lane(spec.name).token_ids
        assert trace.lane(f"{spec.name} b").token_ids == alone_b.lane(spec.name).token_ids
    assert trace.lane("greedy").token_ids != trace.lane("greedy b").token_ids  # other weights
    info = trace.lane("greedy b").model
    assert (info.name, info.precision, info.path) == ("tiny-random-llama-b", "fp32", str(tiny_model_b_dir))
    assert trace.lane("greedy").model is None


def test_each_model_takes_one_batched_call_per_step(models, tiny_model_b_dir, monkeypatch):
    a, _ = models
    engine = a.engine(models=LaneModels(a, "cpu"))
    calls: dict[str, list[int]] = {"a": [], "b": []}
    for key, source in (("a", a.decoder), ("b", engine.models(str(tiny_model_b_dir)).source)):
        monkeypatch.setattr(source, "step", counted(source.step, calls[key]))
    specs = [LaneSpec("g"), LaneSpec("t", do_sample=True, temperature=1.5, seed=1), *own(LANES[:2], tiny_model_b_dir)]
    trace = engine.run(a.encode_prompt(PROMPT), specs, max_new_tokens=6, model=a.info)
    assert len(calls["a"]) == len(calls["b"]) == trace.timing.steps == 5
    assert max(calls["a"]) == max(calls["b"]) == 2  # both lanes of a model in its one call


def counted(step, calls: list[int]):
    """A source's step that records how many rows each call advances."""

    def counting(state, rows, tokens, *rest):
        calls.append(len(rows))
        return step(state, rows, tokens, *rest)

    return counting


def test_the_command_line_runs_a_lane_on_its_model_and_replays_it(capsys, tiny_model_dir, tiny_model_b_dir,
                                                                   tmp_path):
    path = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", PROMPT, "--max-new-tokens",
                         "6", "--lane", "greedy", "--lane", f"greedy:model={tiny_model_b_dir},name=greedy b",
                         "--json", str(path), "--device", "cpu")
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["lanes"][0]["model"] is None
    assert data["lanes"][1]["model"]["name"] == "tiny-random-llama-b"
    assert data["lanes"][1]["config"]["model"] == str(tiny_model_b_dir)
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0, err
    assert "replay identical: 2 lanes" in out
    data["lanes"][1]["config"]["model"] = "no-such-model"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 2 and "invalid model='no-such-model'" in err and "lane 'greedy b'" in err


def test_the_command_line_refuses_an_unprepared_model_naming_the_lane(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", PROMPT, "--lane",
                         "greedy:model=no-such-model", "--json", str(path), "--device", "cpu")
    assert code == 2
    assert "invalid model='no-such-model'" in err and "lane 'greedy · no-such-model'" in err and "prepared:" in err
    assert len(err.strip().splitlines()) == 1 and not path.exists()


def test_an_older_file_replays_with_every_lane_on_the_run_model(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    code, _, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", PROMPT, "--max-new-tokens", "4",
                       "--json", str(path), "--device", "cpu")
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    data["schema_version"] = 4
    for lane in data["lanes"]:
        del lane["model"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert run_file.load(path).lanes[0].model is None
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0 and "replay identical" in out, err


def test_on_the_default_model_an_fp32_and_a_q4_1_greedy_lane_in_one_run_equal_each_run_alone(default_model_dir):
    variant = default_model_dir.parent / f"{default_model_dir.name}-q4_1"
    if not (variant / "model.onnx").is_file():
        pytest.skip(f"the q4_1 variant is not prepared at {variant}")
    fp32 = open_model(default_model_dir, "cpu")
    specs = [LaneSpec("fp32"), LaneSpec("q4_1", model=variant.name)]
    trace = run(fp32, specs)
    assert trace.lane("fp32").token_ids == run(fp32, specs[:1]).lane("fp32").token_ids
    assert trace.lane("q4_1").token_ids == run(open_model(variant, "cpu"), [LaneSpec("q4_1")]).lane("q4_1").token_ids
    assert trace.lane("q4_1").model.precision == "q4_1" and trace.lane("q4_1").model.hashes["model.onnx"]


def test_a_temperature_sweep_of_a_lane_on_its_own_model_reads_that_models_logits(tiny_model_dir, tiny_model_b_dir):
    from gui.state.model_holder import ModelHolder
    from gui.state.tasks.sweep import SweepTask

    holder = ModelHolder(tiny_model_dir, "cpu")
    model = holder.get()
    specs = [LaneSpec("s"), LaneSpec("s b", do_sample=True, seed=5, model=str(tiny_model_b_dir))]
    trace = holder.engine().run(model.encode_prompt(PROMPT), specs, max_new_tokens=4, model=model.info)
    sweep = SweepTask(holder, trace, "s b", 2).work(lambda _message: None, lambda: False)
    (point,) = [point for point in sweep.points if point.temperature == 1.0]
    record = trace.lane("s b").steps[2]
    assert point.top.ids == record.top.ids[:len(point.top)]  # the sweep's top 10 of the record's top 20
    assert point.prob == pytest.approx(record.prob, rel=1e-5)  # a prefill, not the run's steps: float noise
