"""The lanes editor's preset menus: picking a preset adds a lane (Add lane) or replaces the selected one
(Use preset)."""

from __future__ import annotations

from dataclasses import replace

from decoding.chain.spec import PRESETS, default_lanes
from gui.state.run_state import RunState
from gui.views.lanes_editor import LanesEditor, preset_for_window


def _pick(button, title: str) -> None:
    action = next(a for a in button.menu().actions() if a.data() == title)
    action.trigger()


def _editor(qtbot) -> LanesEditor:
    editor = LanesEditor(RunState(default_lanes()))
    qtbot.addWidget(editor)
    return editor


def test_add_menu_lists_every_preset_and_adds_the_picked_one(qtbot):
    editor = _editor(qtbot)
    actions = [a for a in editor.add_button.menu().actions() if not a.isSeparator()]
    assert [a.data() for a in actions[:-1]] == list(PRESETS)
    assert actions[-1].text() == "Order pair: transformers vs llama.cpp"  # two lanes at once (tests/gui/test_chain.py)
    before = len(editor.specs())
    _pick(editor.add_button, "Min-p 0.05")
    specs = editor.specs()
    assert len(specs) == before + 1
    assert specs[-1].min_p == 0.05
    assert editor.selected_index() == len(specs) - 1  # the new lane is selected for editing


def test_preset_menu_replaces_the_selected_lanes_parameters(qtbot):
    editor = _editor(qtbot)
    _pick(editor.add_button, "Min-p 0.05")  # min_p set: the preset below leaves it unset
    keys = [lane.key for lane in editor.state.lanes]
    _pick(editor.preset_button, "Top-p 0.9")
    assert editor.specs()[-1].top_p == 0.9
    assert [lane.key for lane in editor.state.lanes] == keys  # replaced in place: no lane added or removed
    assert editor.specs()[-1].name == "top-p 0.9 (2)"  # its name followed the strategy (top-p 0.9 is taken)
    # every parameter is the preset's: none of the old lane's is kept
    assert editor.specs()[-1] == replace(preset_for_window(PRESETS["Top-p 0.9"]), name="top-p 0.9 (2)")
