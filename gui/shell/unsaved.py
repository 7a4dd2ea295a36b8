"""Whether the shown run has results no file holds yet, and "Save changes?" before they would be lost: on quit,
on opening another run and on a new run (that one can be turned off: "Don't ask again before a new run", or
File → Ask to save before a new run).

A run, branch, replay or forced rerun that ends (or fails, keeping its text) and removing one of the run's
lanes leave unsaved results; saving the run or opening one clears that."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

from gui.i18n import translate
from gui.state.run_state import RunState


class Answer(Enum):
    SAVE = "save"
    DISCARD = "discard"
    CANCEL = "cancel"


def ask_to_save(parent: QWidget, before: str, offer_dont_ask: bool) -> tuple[Answer, bool]:
    """The modal question; (answer, whether "Don't ask again" was ticked). Tests replace this function."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle(translate("Unsaved", "Save changes?"))
    box.setText(translate("Unsaved", "The shown run has not been saved. Save it before you {action}?").format(
        action=before))
    box.setInformativeText(translate("Unsaved", "Otherwise its text and statistics are gone."))
    save = box.addButton(QMessageBox.StandardButton.Save)
    box.addButton(QMessageBox.StandardButton.Discard).setText(translate("Unsaved", "Don't save"))
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(save)
    dont_ask = QCheckBox(translate("Unsaved", "Don't ask again before a new run"))
    if offer_dont_ask:
        box.setCheckBox(dont_ask)
    box.exec()
    answer = {QMessageBox.ButtonRole.AcceptRole: Answer.SAVE,
              QMessageBox.ButtonRole.DestructiveRole: Answer.DISCARD}.get(box.buttonRole(box.clickedButton()),
                                                                         Answer.CANCEL)
    return answer, dont_ask.isChecked()


class UnsavedRun:
    """`save()` asks where and saves (File → Save…), whether it did; `parent` owns the question."""

    def __init__(self, state: RunState, save: Callable[[], bool], parent: QWidget) -> None:
        self.save, self.parent = save, parent
        self.unsaved = False
        self.ask_before_run = True
        self._job_ran = False
        events = state.events
        events.connect("run_started", self._on_run_started)
        events.connect("run_finished", self._on_run_finished)
        events.connect("lane_removed", self._on_lane_removed)

    def _on_run_started(self, _job) -> None:
        self._job_ran = True

    def _on_run_finished(self) -> None:
        if self._job_ran:  # a job's results (an opened run's "finished" comes without a job)
            self.unsaved = True
        self._job_ran = False

    def _on_lane_removed(self, _index, lane) -> None:
        if lane.trace.steps:
            self.unsaved = True

    def mark_saved(self) -> None:
        self.unsaved = False

    def may_discard(self, before: str, new_run: bool = False) -> bool:
        """True when the shown run may be replaced (saved, saved now, or the user lets it go); False to stop.
        `before` completes "Save it before you …?"."""
        if not self.unsaved or (new_run and not self.ask_before_run):
            return True
        answer, dont_ask = ask_to_save(self.parent, before, offer_dont_ask=new_run)
        if dont_ask:
            self.ask_before_run = False
        if answer is Answer.SAVE:
            return self.save()
        return answer is Answer.DISCARD
