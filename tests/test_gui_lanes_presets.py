"""The lanes editor's preset menus: picking a preset adds a lane (+ Add) or replaces the selected one (Preset)."""

from __future__ import annotations

from decoding.spec import PRESETS
from gui.lanes import LanesEditor


def _pick(button, title: str) -> None:
    action = next(a for a in button.menu().actions() if a.data() == title)
    action.trigger()


def test_add_menu_lists_every_preset_and_adds_the_picked_one(qtbot):
    editor = LanesEditor()
    qtbot.addWidget(editor)
    titles = [a.data() for a in editor.add_button.menu().actions()]
    assert titles == list(PRESETS)
    before = len(editor.specs())
    _pick(editor.add_button, "Min-p 0.05")
    specs = editor.specs()
    assert len(specs) == before + 1
    assert specs[-1].min_p == 0.05


def test_preset_menu_replaces_the_selected_lanes_parameters(qtbot):
    editor = LanesEditor()
    qtbot.addWidget(editor)
    _pick(editor.add_button, "Greedy")
    editor.set_specs(editor.specs(), select=len(editor.specs()) - 1)
    _pick(editor.preset_button, "Top-p 0.9")
    assert editor.specs()[-1].top_p == 0.9
