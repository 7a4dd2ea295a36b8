"""Faults and odd input in the window (tiny model): Stop and close while the prompt is prefilled, every lane
field fuzzed with typed values (never a traceback, the lanes always valid), and two instances restoring the
same autosave (one wins)."""

from __future__ import annotations

import math
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from decoding.chain.spec import LaneSpec, default_lanes
from gui.present.lane_fields import FIELDS, display_value
from gui.shell import restore
from gui.views.lanes_editor import preset_for_window
from tests.gui_helpers import wait_idle


def _slow_prefill(window, seconds: float = 0.6) -> None:
    decoder = window.controller.holder.get().decoder
    real = decoder.prefill

    def slow(ids, progress=None):
        time.sleep(seconds)
        return real(ids, progress)

    decoder.prefill = slow


def test_stop_during_prefill_stops_cleanly(qtbot, window):
    _slow_prefill(window)
    window.prompt.max_new_tokens.setValue(50)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    qtbot.wait(100)
    assert window.worker.is_running()
    qtbot.keyClick(window.prompt.editor, Qt.Key.Key_Escape)
    wait_idle(qtbot, window)
    assert window.status.currentMessage() == "stopped" and window.state.notice is None
    assert all(len(lane.trace.steps) <= 1 for lane in window.state.lanes)
    assert {lane.trace.finish_reason for lane in window.state.lanes} == {"cancelled"}


def test_closing_during_prefill_leaves_no_thread(qtbot, window):
    _slow_prefill(window)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    qtbot.wait(100)
    thread = window.worker._thread
    window.close()
    assert not thread.isRunning() and not window.worker.is_running()


_VALUES = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=12), st.booleans())


@pytest.fixture
def editor_window(make_window):
    return make_window(None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from([f.name for f in FIELDS]), _VALUES), min_size=1, max_size=6))
def test_typed_lane_values_never_break_the_editor(editor_window, edits):
    window = editor_window
    window.state.set_specs(preset_for_window(spec) for spec in default_lanes())
    editor = window.lanes
    for row in (2, 1):  # a sampled lane, then the beam lane
        editor.table.selectRow(row)
        for name, value in edits:
            before = window.state.lanes[row].spec
            _type_into(editor.form.widgets[name], value)
            lane = window.state.lanes[row]
            assert isinstance(lane.spec, LaneSpec)  # never an invalid spec: refused edits are reverted
            LaneSpec.from_config(lane.name, lane.spec.to_config())
            message = editor.message.text()
            assert not message or message.startswith(("Refused:", "Note:"))
            if message.startswith("Refused:"):
                assert lane.spec == before, message  # the lane keeps what it had
            assert_the_form_shows(editor, lane.spec)  # a refused value is gone from the form too


def assert_the_form_shows(editor, spec: LaneSpec) -> None:
    shown = editor.form.values()
    assert {f.name: shown[f.name] for f in FIELDS} == {f.name: display_value(spec, f) for f in FIELDS}


def test_a_valid_typed_value_is_applied_and_a_refused_one_reverted(editor_window):
    window = editor_window
    window.state.set_specs(preset_for_window(spec) for spec in default_lanes())
    editor = window.lanes
    editor.table.selectRow(3)  # top-p 0.9
    _type_into(editor.form.widgets["top_p"], 0.5)
    assert window.state.lanes[3].spec.top_p == 0.5 and not editor.message.text().startswith("Refused:")
    assert_the_form_shows(editor, window.state.lanes[3].spec)
    editor.table.selectRow(1)  # beam-4
    before = window.state.lanes[1].spec
    _type_into(editor.form.widgets["num_return_sequences"], before.num_beams + 1)  # more than it has beams
    assert editor.message.text().startswith("Refused:") and "num_return_sequences" in editor.message.text()
    assert window.state.lanes[1].spec == before
    assert editor.form.widgets["num_return_sequences"].value() == before.num_return_sequences


def _type_into(widget, value) -> None:
    """What a user can put into the widget: text into a text field, a number into a spin box (the box's own
    validator keeps it in its range, as typing would), a state into a check box, a choice into a combo box."""
    if isinstance(widget, QCheckBox):
        widget.setChecked(bool(value))
    elif isinstance(widget, QComboBox):
        widget.setCurrentIndex(abs(hash(str(value))) % widget.count())
    elif isinstance(widget, QLineEdit):
        widget.setText(str(value))
        widget.editingFinished.emit()
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        value = min(max(value, widget.minimum()), widget.maximum())  # the box's validator refuses the rest
        widget.setValue(int(value) if isinstance(widget, QSpinBox) else float(value))


def test_two_instances_restoring_the_same_autosave_one_wins(qtbot, make_window, tiny_model_dir, tmp_path,
                                                           monkeypatch):
    from tests.gui.test_autosave import _orphan_of
    from tests.gui_helpers import run_and_wait

    # a folder of its own: the session's shared one holds what other tests' app processes left when they ended
    # without a clean exit, which a restore rightly offers too
    monkeypatch.setenv("BRANCHPOINT_STATE_DIR", str(tmp_path / "own-state"))
    source = make_window(tiny_model_dir)
    run_and_wait(qtbot, source, max_new_tokens=6)
    source.autosaver.flush()
    _orphan_of(source.autosaver.path)
    first, second = make_window(None), make_window(None)
    found = []
    results = [first.offer_restore(ask=lambda path: found.append(path) or True),
               second.offer_restore(ask=lambda path: True)]
    assert results == [True, False] and len(found) == 1
    assert second.trace is None and not second.state.notice  # nothing half-restored, nothing said


def test_a_preparation_killed_half_way_is_cleaned_up_at_start_and_said(qtbot, make_window, tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    from models.catalog import models_dir

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stale = models_dir() / f".partial-SmolLM2-{dead}-abcd1234"
    stale.mkdir(parents=True)
    (stale / "model.onnx").write_bytes(b"half")
    model_folder = models_dir() / "some-model"
    stale_inspection = model_folder / f".partial-inspection-{dead}-0000ffff"
    stale_inspection.mkdir(parents=True)
    alive = models_dir() / f".partial-other-{os.getpid()}-11112222"  # a build still being written: kept
    alive.mkdir()
    window = make_window(None)
    removed = restore.report_stale_builds(window.state)
    assert sorted(removed) == sorted([stale, stale_inspection]) and alive.is_dir()
    assert not stale.exists() and window.state.notice.level == "info"
    assert "Removed 2 unfinished preparation folder(s)" in window.state.notice.text


def test_the_preloaded_model_shows_its_provider_before_the_first_run(qtbot, window):
    assert window.status.provider.text() in ("", "not loaded")
    window.preload_model()
    qtbot.waitUntil(lambda: window.status.provider.text() == "CPU", timeout=60_000)
    assert window.controller.holder.loaded is not None and not window.worker.is_running()
