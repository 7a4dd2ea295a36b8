"""A lane keeps its colour for its life in the window, and beyond: the run file records it, so a saved run
opened in a fresh window and a crashed instance's restored autosave show every lane in the colour it had, not
the colours of their positions (issue 23: "T 1.3 turned blue" after a restore).

The user's steps: run the default lanes, remove the second one (the lanes after it move up a position but keep
their colours), then save and open, or crash and restore. Checked in the state (each lane's colour index) and
on screen (each text column's swatch and each lane's timeline curve drawn in that colour)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from gui.views.style import lane_color_hex
from runfiles import run_file
from tests.gui_helpers import colour_counts, run_and_wait


@pytest.fixture(autouse=True)
def own_state_folder(monkeypatch, tmp_path):
    """This test's autosaves in a folder of its own (other tests' child processes may leave theirs)."""
    monkeypatch.setenv("BRANCHPOINT_STATE_DIR", str(tmp_path / "own-state"))


def _orphan_of(path: Path) -> Path:
    """The autosave as a killed instance leaves it: under a pid that no longer runs."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = path.with_name(f"autosave-{dead}.json")
    orphan.write_bytes(path.read_bytes())
    return orphan


def _run_and_remove_the_second_lane(qtbot, window) -> dict[str, int]:
    run_and_wait(qtbot, window, max_new_tokens=6)
    assert [lane.colour for lane in window.state.lanes] == list(range(len(window.state.lanes)))
    table = window.lanes.table
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=table.visualItemRect(table.item(1, 0)).center())
    removed = window.state.lanes[1].name
    qtbot.mouseClick(window.lanes.remove_button, Qt.MouseButton.LeftButton)
    assert removed not in window.state.names() and len(window.state.lanes) >= 3
    colours = {lane.name: lane.colour for lane in window.state.lanes}
    assert list(colours.values())[:2] == [0, 2]  # the lanes after it moved up, their colours did not
    _shows_each_lane_in_its_colour(qtbot, window, colours)
    return colours


def _shows_each_lane_in_its_colour(qtbot, window, colours: dict[str, int]) -> None:
    """The state's colour indexes are `colours`, and the window draws them: every column's swatch, every lane's
    timeline curve; a column does not show the colour of its position instead."""
    state = window.state
    assert {lane.name: lane.colour for lane in state.lanes} == colours
    view = window.show_view("timeline")
    qtbot.wait(100)
    timeline = colour_counts(view.grab().toImage())
    for index, lane in enumerate(state.lanes):
        title = colour_counts(window.text.columns[index].title.grab().toImage())
        own = QColor(lane_color_hex(colours[lane.name])).name()
        assert title.get(own, 0) >= 20, (lane.name, own)
        positional = QColor(lane_color_hex(index)).name()
        if positional != own:
            assert title.get(positional, 0) == 0, (lane.name, positional)
        # a 6-step curve (in strips from 5 lanes, thin): a few exact-colour pixels, the rest antialiased
        assert timeline.get(own, 0) >= 8, (lane.name, own)


def test_an_opened_run_shows_every_lane_in_the_colour_it_was_saved_with(qtbot, make_window, tiny_model_dir,
                                                                        tmp_path):
    window = make_window(tiny_model_dir)
    colours = _run_and_remove_the_second_lane(qtbot, window)
    path = tmp_path / "run.json"
    assert window.files.save(path)
    assert {lane.name: lane.colour for lane in run_file.load(path).lanes} == colours
    fresh = make_window(None)
    assert fresh.files.open(path)
    _shows_each_lane_in_its_colour(qtbot, fresh, colours)
    again = tmp_path / "again.json"
    assert fresh.files.save(again) and again.read_bytes() == path.read_bytes()  # saved again: the same file


def test_a_restored_autosave_shows_every_lane_in_the_colour_it_had(qtbot, make_window, tiny_model_dir):
    window = make_window(tiny_model_dir)
    colours = _run_and_remove_the_second_lane(qtbot, window)
    window.autosaver.flush()
    orphan = _orphan_of(window.autosaver.path)
    assert {lane.name: lane.colour for lane in run_file.load(orphan).lanes} == colours
    restored = make_window(None)
    assert restored.offer_restore(ask=lambda _path: True)
    _shows_each_lane_in_its_colour(qtbot, restored, colours)
