"""Model preparation in a dialog: runs a `models.prepare` function on a worker thread with a progress bar, the
current stage's name, Cancel, and the failure's cause if it fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gui.dialogs.worker import Worker
from gui.i18n import translate

# prepare_fn(progress=callback(stage, fraction, message), cancel=callable) -> model folder
PrepareFn = Callable[..., Path]


def stage_label(stage: str, message: str) -> str:
    """'export — exporting to ONNX' (the message alone when it only repeats the stage name)."""
    if not message or message == stage:
        return stage
    return f"{stage} — {message}"


class PreparationDialog(QDialog):
    """A dialog preparing something on a worker thread: its stage line (`self.stage`) and progress bar (`self.bar`)
    follow the preparation's progress, its Cancel button (`self.cancel_button`) stops it, and nothing is left
    running when it closes. Subclasses build those widgets and take `_on_finished` and `_on_failed`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._worker = Worker(self)
        self._worker.progress.connect(self._on_progress)
        self._worker.finished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)

    def _prepare(self, prepare_fn: PrepareFn) -> None:
        """Start `prepare_fn` on the worker, its progress (stage, fraction, message) shown here."""
        self._worker.start(lambda emit, cancelled: prepare_fn(
            progress=lambda stage, fraction, message: emit((stage, fraction, message)), cancel=cancelled))

    @Slot()
    def cancel(self) -> None:
        if self._worker.is_running():
            # a stage (an export, a quantization pass) is not interrupted part-way: say what is still running
            text = translate("setup_dialog", "cancelling: finishing the current stage first ({stage}); nothing of it "
                                             "will be kept…")
            self.stage.setText(text.format(stage=self.stage.text()))
            self.cancel_button.setEnabled(False)
            self._worker.cancel()
        else:
            self.reject()

    @Slot(object)
    def _on_progress(self, payload: object) -> None:
        stage, fraction, message = payload
        self.stage.setText(stage_label(stage, message))
        self.bar.setValue(round(1000 * min(max(fraction, 0.0), 1.0)))

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        raise NotImplementedError

    @Slot(str, str)
    def _on_failed(self, message: str, details: str) -> None:
        raise NotImplementedError

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self._stop_worker()
        super().closeEvent(event)

    def reject(self) -> None:
        self._stop_worker()
        super().reject()

    def _stop_worker(self) -> None:
        """Cancel the preparation, wait for its thread, then take the reports it queued on the way (progress, its
        end) now, while the dialog is open: none reaches the dialog later, once its owner may have deleted it,
        and an end that installed something is still shown and announced."""
        self._worker.stop_and_wait()
        QCoreApplication.sendPostedEvents(self._worker)


class SetupDialog(PreparationDialog):
    """Runs `prepare_fn` once when shown. `result_path` is the prepared folder after it accepted."""

    def __init__(self, title: str, explanation: str, prepare_fn: PrepareFn,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(520)
        self.result_path: Path | None = None
        self.error: str | None = None
        self._prepare_fn = prepare_fn
        self.explanation = QLabel(explanation)
        self.explanation.setWordWrap(True)
        self.stage = QLabel(translate("setup_dialog", "starting…"))
        self.stage.setObjectName("setupStage")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        self.failure = QLabel()
        self.failure.setObjectName("setupFailure")
        self.failure.setWordWrap(True)
        self.failure.setStyleSheet("color:#c62828")
        self.failure.hide()
        self.buttons = QDialogButtonBox()
        self.cancel_button = QPushButton(translate("setup_dialog", "Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        self.retry_button = QPushButton(translate("setup_dialog", "Retry"))
        self.retry_button.clicked.connect(self.start)
        self.retry_button.hide()
        self.buttons.addButton(self.retry_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.addButton(self.cancel_button, QDialogButtonBox.ButtonRole.RejectRole)
        layout = QVBoxLayout(self)
        for widget in (self.explanation, self.stage, self.bar, self.failure, self.buttons):
            layout.addWidget(widget)

    def run(self) -> Path | None:
        """Show modally until the preparation ends or is cancelled; the worker thread has ended on return.
        The prepared folder, or None."""
        self.exec()
        self._worker.stop_and_wait()
        return self.result_path

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._worker.is_running() and self.result_path is None and self.error is None:
            self.start()

    @Slot()
    def start(self) -> None:
        self.error = None
        self.failure.hide()
        self.retry_button.hide()
        self.cancel_button.setText(translate("setup_dialog", "Cancel"))
        self.bar.setValue(0)
        self._prepare(self._prepare_fn)

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        self.result_path = Path(result)
        self.bar.setValue(1000)
        self.accept()

    @Slot(str, str)
    def _on_failed(self, message: str, _details: str) -> None:
        self.error = message
        self.failure.setText(message)
        self.failure.show()
        self.stage.setText(translate("setup_dialog",
                                     "failed") if "cancelled" not in message else translate("setup_dialog",
                                                                                            "cancelled"))
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText(translate("setup_dialog", "Close"))
        self.retry_button.show()


def prepare_inspection(parent: QWidget, path: Path) -> str | None:
    """The setup dialog preparing the model's inspection model (its own worker thread: the window keeps
    drawing); None when prepared, else why not."""
    from functools import partial

    from models.inspection import prepare_inspection as prepare

    dialog = SetupDialog(
        "Preparing the inspection model",
        "Explaining a lane needs the model's inspection model: a second export of the same weights that "
        "returns every layer's attention per head and the logit lens. It is prepared once per model into its "
        "folder (about 1.5 minutes and 650 MB for the default model).",
        partial(prepare, path), parent)
    if dialog.run() is not None:
        return None
    return f"preparing its inspection model failed: {dialog.error}" if dialog.error else \
        "preparing its inspection model was cancelled"
