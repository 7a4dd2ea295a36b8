"""Hugging Face generation_config.json files in the lane editor: "From generation_config.json…" in its Add lane
menu makes a lane that decodes as transformers would with that file (runfiles.read_generation_config,
transformers' implicit defaults included), and a lane's right-click menu exports it as one
(decoding.chain.spec.generation_config_of), which transformers' GenerationConfig reads back as the same strategy."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog, QMenu

from decoding.chain.spec import generation_config_of
from gui.i18n import translate
from gui.state.refusals import error_text
from gui.views.lanes_editor import LanesEditor, preset_for_window
from runfiles.atomic_write import write_text_atomic
from runfiles.generation_config import read_generation_config

FILE_FILTER = "generation_config.json (*.json);;JSON (*.json)"


def import_generation_config(editor: LanesEditor, path: Path) -> int:
    """A new lane from the file, named after its folder (a model's folder, usually). Returns its index, or -1
    with the reason shown under the lane form."""
    try:
        spec = read_generation_config(path)
    except ValueError as error:
        editor.show_message(translate("GenerationConfigs", "Refused: {error}").format(error=error_text(error)))
        return -1
    index = editor.add_spec(preset_for_window(spec))
    if index >= 0:
        editor.show_message(translate("GenerationConfigs", "Added “{name}” from {path}: it decodes as "
                                      "transformers does with this file.").format(name=spec.name, path=path),
                            error=False)
    return index


def export_generation_config(editor: LanesEditor, index: int, path: Path) -> bool:
    """Write lane `index` as a generation_config.json; False with the reason shown if it cannot be."""
    spec = editor.state.lanes[index].spec
    try:
        text = json.dumps(generation_config_of(spec), indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(Path(path), text)
    except (ValueError, OSError) as error:
        editor.show_message(translate("GenerationConfigs", "Could not export “{name}”: {error}").format(
            name=spec.name, error=error))
        return False
    left_out = [name for name, on in (("seed", spec.seed is not None), ("forced", bool(spec.forced)),
                                      ("branch", spec.branch is not None)) if on]
    note = translate("GenerationConfigs", " (not part of a generation config: {keys})").format(
        keys=", ".join(left_out)) if left_out else ""
    editor.show_message(translate("GenerationConfigs", "Exported “{name}” to {path}{note}.").format(
        name=spec.name, path=path, note=note), error=False)
    return True


def import_dialog(editor: LanesEditor) -> int:
    path, _ = QFileDialog.getOpenFileName(editor, translate("GenerationConfigs", "Add a lane from a generation "
                                                            "config"), "", FILE_FILTER)
    return import_generation_config(editor, Path(path)) if path else -1


def export_dialog(editor: LanesEditor, index: int | None = None) -> bool:
    index = editor.selected_index() if index is None else index
    if index < 0:
        editor.show_message(translate("GenerationConfigs", "Select the lane to export first."))
        return False
    path, _ = QFileDialog.getSaveFileName(editor, translate("GenerationConfigs", "Export the lane as a "
                                                            "generation config"), "generation_config.json",
                                          FILE_FILTER)
    return export_generation_config(editor, index, Path(path)) if path else False


def add_to_lanes_editor(editor: LanesEditor) -> None:
    """The Add lane menu's "From generation_config.json…" and the lane table's right-click menu."""
    menu = editor.add_button.menu()
    menu.addSeparator()
    action = menu.addAction(translate("GenerationConfigs", "From generation_config.json…"))
    action.setToolTip(translate("GenerationConfigs", "A lane that decodes as transformers does with a model's "
                                "generation_config.json"))
    action.triggered.connect(lambda: import_dialog(editor))
    editor.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    editor.table.customContextMenuRequested.connect(lambda pos: lane_menu(editor, pos).popup(
        editor.table.viewport().mapToGlobal(pos)))


def lane_menu(editor: LanesEditor, pos: QPoint) -> QMenu:
    """Right-click on a lane in the table: its actions."""
    row = editor.table.rowAt(pos.y())
    menu = QMenu(editor)
    if row >= 0:
        editor.table.selectRow(row)
        menu.addAction(translate("GenerationConfigs", "Rename"),
                       lambda: editor.table.editItem(editor.table.item(row, 0)))
        menu.addAction(translate("GenerationConfigs", "Duplicate"), editor.duplicate_selected)
        menu.addAction(translate("GenerationConfigs", "Remove"), editor.remove_selected)
        menu.addSeparator()
        menu.addAction(translate("GenerationConfigs", "Export as generation_config.json…"),
                       lambda: export_dialog(editor, row))
    menu.addAction(translate("GenerationConfigs", "Add from generation_config.json…"), lambda: import_dialog(editor))
    return menu
