"""File → Open, Save and Export images: the dialogs (each opening where the last one was left), "Save changes?"
before a run is replaced, Open Recent kept up to date."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from gui.i18n import translate
from gui.shell.recent_files import RecentFiles
from gui.shell.unsaved import UnsavedRun
from gui.state.controller import RunController
from gui.state.run_state import RunState


class RunFiles:
    def __init__(self, parent: QWidget, state: RunState, controller: RunController, unsaved: UnsavedRun,
                 recent: RecentFiles, export_images: Callable[[Path], list[Path]]) -> None:
        self.parent, self.state, self.controller = parent, state, controller
        self.unsaved, self.recent, self.export_images = unsaved, recent, export_images
        self.last_folder = Path.home()  # where the file dialogs open

    def save_dialog(self) -> bool:
        """Ask where and save; whether the run was saved."""
        if self.state.trace is None:
            self.state.show_notice(translate("RunFiles", "Nothing to save yet: run or open a run first."))
            return False
        path, _ = QFileDialog.getSaveFileName(self.parent, translate("RunFiles", "Save run"),
                                              str(self.last_folder / "run.json"),
                                              translate("RunFiles", "Branchpoint run (*.json)"))
        if not path:
            return False
        self.last_folder = Path(path).parent
        return self.save(Path(path))

    def save(self, path: Path) -> bool:
        saved = self.controller.save(path)
        if saved:
            self.unsaved.mark_saved()
            self.recent.add(path)
        return saved

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent, translate("RunFiles", "Open run"), str(self.last_folder),
                                              translate("RunFiles", "Branchpoint run (*.json);;All files (*)"))
        if path:
            self.last_folder = Path(path).parent
            self.open(Path(path))

    def open(self, path: Path) -> bool:
        """Show a saved run (no model needed); its prompt and lanes fill the editors for Replay."""
        if not self.unsaved.may_discard(translate("RunFiles", "open another run")):
            return False
        request = self.controller.open(path)
        if request is not None:
            self.unsaved.mark_saved()
            self.recent.add(path)
        return request is not None

    def export_dialog(self) -> None:
        dialog = QFileDialog(self.parent, translate("RunFiles", "Export images into folder"), str(self.last_folder))
        dialog.setFileMode(QFileDialog.FileMode.Directory)  # the dialog's own button creates a new folder
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if dialog.exec():
            folder = Path(dialog.selectedFiles()[0])
            self.last_folder = folder
            paths = self.export_images(folder)
            if paths:
                self.state.set_status(translate("RunFiles", "exported {len} images to {folder}").format(
                    len=len(paths), folder=folder))
