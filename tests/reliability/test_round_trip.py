"""Real-model runs saved as the window saves them and opened again: export → import → export is byte-identical,
the file passes the JSON Schema, and replay (the command line's, over decoding.engine.replay) gives every token again.
The runs are made through the window's Qt-free controller (gui.state.controller.RunController with a synchronous
runner) so they hold what a user makes: every lane kind, a seed fan-out, stop strings, branches in the run and
after it, a branch of a branch, a branch of a beam lane, a branch-not-taken replay, and a Chinese run whose
tokens are byte-level pieces of characters. The first also runs on the tiny model in the quick loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import main
from decoding.chain.parameters import PARAMETERS, canonical
from decoding.chain.spec import LaneSpec
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from gui.state.controller import RunController
from gui.state.requests import RunRequest
from gui.state.run_state import RunState
from runfiles import run_file
from tests.gui.test_controller import SyncRunner

EVERY_KIND = [
    LaneSpec("greedy"),
    LaneSpec("beam-4", num_beams=4, num_return_sequences=2, length_penalty=0.8),
    LaneSpec("beam early", num_beams=3, early_stopping=True),
    LaneSpec("top-k", do_sample=True, top_k=50, seed=1),
    LaneSpec("top-p", do_sample=True, top_p=0.9, temperature=0.8, seed=2),
    LaneSpec("T 1.3", do_sample=True, temperature=1.3, seed=3),
    LaneSpec("min-p", do_sample=True, min_p=0.05, seed=4),
    LaneSpec("typical", do_sample=True, typical_p=0.9, seed=5),
    LaneSpec("penalties", repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=4),
    LaneSpec("stops", do_sample=True, top_k=20, seed=6, stop_strings=("\n", ".", "。")),
    LaneSpec("custom order", do_sample=True, top_p=0.8, temperature=0.7, seed=8,
             processor_order=("top_p", "temperature")),
    LaneSpec("epsilon eta", do_sample=True, epsilon_cutoff=0.001, eta_cutoff=0.002, seed=9, max_new_tokens=10),
    LaneSpec("lists", suppress_tokens=(5, 9), bad_words_ids=((7,), (11, 12)), sequence_bias=(((4,), 1.5),)),
    LaneSpec("llama penalties", frequency_penalty=0.4, presence_penalty=0.3, repetition_penalty=1.1,
             penalty_last_n=8),
    LaneSpec("dry", do_sample=True, dry_multiplier=0.8, dry_base=1.5, dry_allowed_length=1, dry_penalty_last_n=32,
             dry_sequence_breakers=("\n", "."), seed=10),
    LaneSpec("top-n-sigma", do_sample=True, top_n_sigma=1.5, seed=12),
    LaneSpec("xtc", do_sample=True, xtc_probability=0.7, xtc_threshold=0.05, seed=13),
    LaneSpec("dynatemp", do_sample=True, temperature=0.9, dynatemp_range=0.4, dynatemp_exponent=1.5, seed=14),
    LaneSpec("mirostat 2", do_sample=True, mirostat=2, mirostat_tau=3.0, mirostat_eta=0.2, seed=15),
    LaneSpec("mirostat 1", do_sample=True, mirostat=1, mirostat_tau=4.0, seed=16),
    LaneSpec("adaptive", do_sample=True, adaptive=True, seed=17),
    LaneSpec("llama order", do_sample=True, top_k=30, min_p=0.02, temperature=0.8, seed=18,
             processor_order="llama.cpp"),
]


def test_the_round_trip_kinds_set_every_lane_parameter():
    """Each parameter of decoding/chain/parameters.py is set to something that does anything on some lane saved,
    opened and replayed here: a parameter added to the table fails this until a lane round-trips it."""
    unset = [p.name for p in PARAMETERS
             if not any(p.is_set(canonical(p, getattr(spec, p.name))) for spec in EVERY_KIND)]
    assert unset == []


@pytest.fixture(scope="module", params=["tiny", pytest.param("default", marks=pytest.mark.slow)])
def model_dir(request) -> Path:
    return request.getfixturevalue("tiny_model_dir" if request.param == "tiny" else "default_model_dir")


@pytest.fixture(scope="module")
def holder(model_dir):
    from gui.state.model_holder import ModelHolder

    return ModelHolder(model_dir)


@pytest.fixture(scope="module")
def default_holder(default_model_dir):
    from gui.state.model_holder import ModelHolder

    return ModelHolder(default_model_dir)


def controller_for(holder, specs) -> RunController:
    runner = SyncRunner()
    controller = RunController(RunState(specs), runner)
    runner.controller = controller
    controller.holder = holder
    return controller


def runner_up(state: RunState, lane: int, step: int) -> int:
    record = state.step_record(lane, step)
    return next(entry.id for entry in record.top_raw if entry.id != record.token_id)


def index(state: RunState, name: str) -> int:
    return next(i for i, lane in enumerate(state.lanes) if lane.name == name)


def assert_round_trip_and_replay(path: Path, model_dir: Path, capsys) -> jsonio.RunTrace:
    text = path.read_text(encoding="utf-8")
    trace = jsonio.loads(text)
    assert jsonio.dumps(trace) == text  # export → import → export, byte for byte
    import jsonschema

    jsonschema.validate(json.loads(text), run_file.schema())
    code = main.main(["replay", str(path), "--model", str(model_dir), "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"replay identical: {len(trace.lanes)} lanes" in out
    return trace


def test_every_lane_kind_fanout_and_every_kind_of_branch(holder, model_dir, tmp_path, capsys):
    controller = controller_for(holder, EVERY_KIND)
    model = controller.state
    model.set_fanout(index(model, "T 1.3"), 3)
    request = RunRequest("Once upon a time, in a small village by the sea,", False, None, 14, seed=11)
    assert controller.run(request) and model.notice is None
    assert controller.branch(index(model, "greedy"), 3, runner_up(model, 0, 3))  # after the run
    beam = index(model, "beam-4")
    assert controller.branch(beam, 2, runner_up(model, beam, 2))  # of a beam lane
    branch = index(model, "greedy ↳3")
    assert controller.branch(branch, 6, runner_up(model, branch, 6))  # of a branch
    assert controller.replay_not_taken(index(model, "top-k"), 4)
    assert model.notice is None or model.notice.level == "info", model.notice
    assert controller.run(request)  # again: the greedy branch now runs inside the run, the others after it
    path = tmp_path / "run.json"
    assert controller.save(path)
    trace = assert_round_trip_and_replay(path, model_dir, capsys)
    names = [lane.name for lane in trace.lanes]
    assert {"greedy ↳3", "beam-4 ↳2", "greedy ↳3 ↳6", "T 1.3 #2"} <= set(names)
    assert any(lane.replay_of for lane in trace.lanes) and any(lane.fanout for lane in trace.lanes)
    assert all(lane.finish_reason in ("length", "eos", "stop_string") for lane in trace.lanes)
    reopened = controller_for(holder, [])
    assert reopened.open(path) is not None and reopened.state.notice is None
    again = tmp_path / "again.json"
    assert reopened.save(again)
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")  # opened and saved: the same file


@pytest.mark.slow
def test_chinese_with_byte_level_pieces_and_stop_strings(default_holder, default_model_dir, tmp_path, capsys):
    specs = [LaneSpec("greedy"), LaneSpec("zh stops", do_sample=True, top_k=40, seed=1, stop_strings=("。", "！")),
             LaneSpec("beam", num_beams=2)]
    controller = controller_for(default_holder, specs)
    assert controller.run(RunRequest("我虽然很累，但还是决定", False, None, 20, seed=2))
    path = tmp_path / "zh.json"
    assert controller.save(path)
    trace = assert_round_trip_and_replay(path, default_model_dir, capsys)
    pieces = [step.token_text for lane in trace.lanes for step in lane.steps]
    assert any("\\x" in piece for piece in pieces)  # a byte of a character that later tokens complete
    assert any(any("\u4e00" <= c <= "\u9fff" for c in lane.text) for lane in trace.lanes)
    stops = trace.lane("zh stops")
    assert stops.finish_reason == "stop_string" and stops.text.endswith(("。", "！"))


def test_a_replay_of_a_changed_file_says_where(holder, tmp_path):
    controller = controller_for(holder, [LaneSpec("beam", num_beams=2), LaneSpec("greedy")])
    assert controller.run(RunRequest("The capital of France is", False, None, 8))
    assert controller.branch(0, 2, runner_up(controller.state, 0, 2))
    path = tmp_path / "run.json"
    assert controller.save(path)
    trace = run_file.load(path)
    lane = trace.lane("beam ↳2")
    lane.token_ids[5] = lane.steps[5].token_id = (lane.token_ids[5] + 1) % holder.engine().source.vocab_size
    replayed = replay(holder.engine(), trace)
    described = [m.describe() for m in compare(trace, replayed)]
    got = replayed.lane("beam ↳2").token_ids[5]
    assert len(described) == 1 and described[0].startswith(  # and by how much: each token's raw probability
        f"lane 'beam ↳2' step 5: expected token {lane.token_ids[5]}, got {got} (p_raw(")
    assert "recorded" in described[0] and "replayed" in described[0]
