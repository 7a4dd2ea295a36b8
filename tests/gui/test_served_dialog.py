"""Add model… → a server: the dialog's "Test connection" shows the served model, its vocabulary and how many
alternatives a step returned (a fake llama.cpp server on 127.0.0.1), says why when nothing answers, and OK adds a
lane on the server; the lane's header marks a partial lane with its entropy as bounds; a whole run made on a server
opens marked partial, and its replay says where it runs."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.records.model_info import LaneModelInfo
from decoding.records.trace import LaneTrace, StepRecord, TokenProb
from gui.app import make_application
from tests.fake_server import FakeModelServer


@pytest.fixture
def server():
    fake = FakeModelServer("llamacpp").start()
    yield fake
    fake.stop()


def dialog(qtbot, address: str):
    from gui.dialogs.server_dialog import ServerDialog

    make_application([])
    shown = ServerDialog(address=address)
    qtbot.addWidget(shown)
    return shown


def test_test_connection_shows_model_vocabulary_and_alternatives(qtbot, server):
    shown = dialog(qtbot, server.name + "?alternatives=10")
    shown.test_button.click()
    qtbot.waitUntil(lambda: shown.report is not None, timeout=10_000)
    text = shown.result.text()
    assert "fake-model" in text and "vocabulary 64" in text and "10 alternatives returned" in text
    assert "partial" in text and shown.test_button.isEnabled()


def test_test_connection_says_why_nothing_answers(qtbot):
    shown = dialog(qtbot, "llamacpp+http://127.0.0.1:9")
    shown.test_button.click()
    qtbot.waitUntil(lambda: "No connection" in shown.result.text(), timeout=10_000)
    assert "connection refused" in shown.result.text()


def test_ok_adds_a_lane_on_the_server(qtbot, server, monkeypatch):
    from gui.state.run_state import RunState
    from gui.views.lanes_editor import LanesEditor
    from gui.views.model_picker import ModelPicker

    make_application([])
    picker, lanes = ModelPicker(), LanesEditor(RunState())
    qtbot.addWidget(picker)
    qtbot.addWidget(lanes)
    picker.serverAdded.connect(lanes.add_served)
    shown = dialog(qtbot, server.name)
    monkeypatch.setattr(shown, "exec", lambda: True)
    monkeypatch.setattr(picker, "server_dialog", lambda: shown)
    picker._on_activated(picker.findData("add-server"))
    assert lanes.specs()[-1].model == server.name and lanes.specs()[-1].name == "served greedy"


def test_a_partial_lane_s_header_says_so_with_its_entropy_as_bounds():
    from gui.present.lane_html import lane_summary

    top = np.array([0.6, 0.2])
    q = top / top.sum()
    step = StepRecord(0, 1, "a", float(q[0]), float(q[0]), 0.0, 0.0, 0.5, 0.56, 0.5, 0.5, 2, 0.0, 0.0, [],
                      [TokenProb(1, "a", float(q[0]), 0), TokenProb(2, "b", float(q[1]), 1)], unseen_mass=0.2)
    lane = LaneTrace("s", {}, [], steps=[step], finish_reason="length",
                     model=LaneModelInfo("llamacpp+http://h:1", served={"alternatives": 2, "vocab_size": 100}))
    text, tip = lane_summary(lane, None, 0)
    assert "partial: top 2 of 100; tail ≤ 20.0%" in text and "H̄ 0.9" in text and "–" in text
    assert "renormalised" in tip


def test_the_windows_run_check_takes_a_server_lane_and_refuses_a_bad_address_in_words():
    """The window checks lane models before a run (folders and addresses only): a lane on a server passes
    (it is not a prepared model), a malformed address is refused naming the lane (a real run was refused as
    "not a prepared model" before)."""
    from decoding.chain.parameters import ParameterError
    from decoding.chain.spec import LaneSpec
    from gui.state.model_holder import check_lane_models

    check_lane_models([LaneSpec("served", model="llamacpp+http://127.0.0.1:8080")], "SmolLM2-135M-Instruct")
    with pytest.raises(ParameterError, match="invalid port.*lane 'bad'"):
        check_lane_models([LaneSpec("bad", model="llamacpp+http://127.0.0.1:99999")], "SmolLM2-135M-Instruct")
    with pytest.raises(ParameterError, match="a prepared model.*lane 'missing'"):
        check_lane_models([LaneSpec("missing", model="no-such-model")], "SmolLM2-135M-Instruct")


def test_a_whole_run_made_on_a_server_opens_partial_in_every_lane_and_replay_says_where_it_runs(
        qtbot, server, window, tmp_path):
    """A run file from `run --model llamacpp+URL`: the window shows its lanes, each header marked partial; Replay
    starts nothing and says the run is the server's (the window runs served models as lanes)."""
    from decoding.chain.spec import LaneSpec
    from models.open_model import LaneModels, open_model
    from runfiles import run_file

    served = open_model(server.name + "?alternatives=8")
    trace = served.engine(models=LaneModels(served)).run(
        served.encode_prompt("<1><2>"), [LaneSpec("greedy"), LaneSpec("sample", do_sample=True, seed=4)],
        max_new_tokens=5, model=served.info, provider=served.provider)
    window.show()
    window.files.open(run_file.save(trace, tmp_path / "served.json"))
    assert [len(lane.trace.token_ids) for lane in window.state.lanes] == [5, 5]
    for column in window.text.columns[:2]:
        assert "partial: top 8 of 64" in column.summary.text(), column.summary.text()
    assert window.controller.replay() is None
    assert "made on the server " + server.name in window.state.notice.text
    assert not window.worker.is_running() and [len(lane.trace.token_ids) for lane in window.state.lanes] == [5, 5]
