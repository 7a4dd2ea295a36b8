"""Add model… → a server: the dialog's "Test connection" shows the served model, its vocabulary and how many
alternatives a step returned (a fake llama.cpp server on 127.0.0.1), says why when nothing answers, and OK adds a
lane on the server; the lane's header marks a partial lane with its entropy as bounds."""

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
