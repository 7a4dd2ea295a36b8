"""Add model → from Hugging Face: a hub id, an optional revision and an optional token (for this download only:
it goes to the download's process and is never saved), then the download in bytes with Cancel, the export and the
install (models.prepare.prepare_hub) in the shared PreparationDialog. A repository with only pickled weights is
refused with the reason, and read with torch's weights_only loader if the user confirms."""

from __future__ import annotations

import html
import re
from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gui.dialogs.setup_dialog import PreparationDialog
from gui.i18n import translate
from gui.present.variant_rows import human_size

BYTES = "bytes"  # the worker's progress payloads: (stage, fraction, message) or (BYTES, done, total)


class HubDialog(PreparationDialog):
    """`result_path`: the prepared folder once it accepted."""

    def __init__(self, parent: QWidget | None = None, model_id: str = "", name: str | None = None,
                 licence: dict | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("hub_dialog", "Add model from Hugging Face"))
        self.setMinimumWidth(560)
        self.result_path: Path | None = None
        self.error: str | None = None
        self.name = name
        self.licence = licence  # a catalog entry's licence record (accepted), for the manifest
        self.allow_pickled = False
        self.model_id = QLineEdit(model_id)
        self.model_id.setPlaceholderText("Qwen/Qwen2.5-0.5B-Instruct")
        self.revision = QLineEdit()
        self.revision.setPlaceholderText(translate("hub_dialog", "main (a branch, tag or commit)"))
        self.token = QLineEdit()
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText(translate("hub_dialog", "only for gated or private models"))
        self.token.setToolTip(translate("hub_dialog", "Used for this download only and never saved. Without one, "
                                                      "the HF_TOKEN variable or huggingface_hub's login is used. "
                                                      "Make one at https://huggingface.co/settings/tokens"))
        form = QFormLayout()
        form.addRow(translate("hub_dialog", "Model id"), self.model_id)
        form.addRow(translate("hub_dialog", "Revision"), self.revision)
        form.addRow(translate("hub_dialog", "Token"), self.token)
        note = QLabel(translate("hub_dialog", "Only the model's configuration, tokenizer and safetensors weights are "
                                              "downloaded — never its code. The download resumes where it stopped "
                                              "after a broken connection or Cancel."))
        note.setWordWrap(True)
        self.stage = QLabel(translate("hub_dialog", "Enter a model id and press Download."))
        self.stage.setObjectName("hubStage")
        self.stage.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bytes_bar = QProgressBar()  # the download, in bytes
        self.bytes_bar.setObjectName("hubBytes")
        self.bytes_bar.setRange(0, 1000)
        self.bytes_bar.setFormat(translate("hub_dialog", "download"))
        self.failure = QLabel()
        self.failure.setObjectName("hubFailure")
        self.failure.setWordWrap(True)
        self.failure.setOpenExternalLinks(True)
        self.failure.setStyleSheet("color:#c62828")
        self.failure.hide()
        self.download_button = QPushButton(translate("hub_dialog", "Download"))
        self.download_button.setDefault(True)
        self.download_button.clicked.connect(self.start)
        self.cancel_button = QPushButton(translate("setup_dialog", "Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        buttons = QDialogButtonBox()
        buttons.addButton(self.download_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.cancel_button, QDialogButtonBox.ButtonRole.RejectRole)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        for widget in (note, self.stage, self.bytes_bar, self.bar, self.failure, buttons):
            layout.addWidget(widget)

    def run(self) -> Path | None:
        """Show modally until the model is prepared or the user closes the dialog; the prepared folder or None.
        The token typed is forgotten then (it was for that download only)."""
        self.exec()
        self._worker.stop_and_wait()
        self.token.clear()
        self.deleteLater()
        return self.result_path

    @Slot()
    def start(self) -> None:
        model_id = self.model_id.text().strip()
        if not model_id:
            self.show_failure(translate("hub_dialog", "Enter a model id: owner/name, as on its hub page."))
            return
        self.error = None
        self.failure.hide()
        self.set_editing(False)
        self.cancel_button.setText(translate("setup_dialog", "Cancel"))
        self.cancel_button.setEnabled(True)
        self.bar.setValue(0)
        revision = self.revision.text().strip() or None
        token, name, allow, licence = self.token.text().strip() or None, self.name, self.allow_pickled, self.licence

        def job(emit, cancelled):
            from models.prepare import prepare_hub

            return prepare_hub(model_id, revision=revision, name=name, token=token, allow_pickled_weights=allow,
                               licence=licence,
                               progress=lambda stage, fraction, message: emit((stage, fraction, message)),
                               cancel=cancelled, on_bytes=lambda done, total: emit((BYTES, done, total)))

        self._worker.start(job)

    def set_editing(self, editable: bool) -> None:
        for widget in (self.model_id, self.revision, self.token, self.download_button):
            widget.setEnabled(editable)

    @Slot(object)
    def _on_progress(self, payload: object) -> None:
        if payload[0] == BYTES:
            _, done, total = payload
            self.bytes_bar.setValue(round(1000 * done / max(total, 1)))
            self.bytes_bar.setFormat(translate("hub_dialog", "{done} of {total}").format(
                done=human_size(done), total=human_size(total)))
            return
        super()._on_progress(payload)

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        self.result_path = Path(result)
        self.bar.setValue(1000)
        self.accept()

    @Slot(str, str)
    def _on_failed(self, message: str, details: str) -> None:
        # the message is the error's words (the worker leaves a ValueError's class out): its kind is in the details
        if "PickledWeightsRefused" in f"{message}\n{details}" and not self.allow_pickled:
            if self.ask_pickled(re.sub(r"^.*?stage 'download': ", "", message)):
                self.allow_pickled = True
                self.start()
                return
        self.show_failure(message)
        self.stage.setText(translate("setup_dialog", "cancelled") if "cancelled" in message else
                           translate("setup_dialog", "failed"))
        self.cancel_button.setText(translate("setup_dialog", "Close"))
        self.download_button.setText(translate("setup_dialog", "Retry"))
        self.set_editing(True)

    def ask_pickled(self, message: str) -> bool:
        answer = QMessageBox.question(
            self, translate("hub_dialog", "Pickled weights"),
            translate("hub_dialog", "{reason}\n\nRead them with torch's weights_only loader (tensors only, no "
                                    "code) and go on?").format(reason=message))
        return answer == QMessageBox.StandardButton.Yes

    def show_failure(self, message: str) -> None:
        self.error = message
        self.failure.setText(failure_html(message))
        self.failure.show()


def failure_html(message: str) -> str:
    """The cause alone (the stage line says it failed), its web addresses as links."""
    cause = re.sub(r"^\w+: prepare (failed|cancelled) at stage '[\w-]+': ", "", message)
    return re.sub(r"https?://[^\s;,)]+", lambda m: f'<a href="{m[0]}">{m[0]}</a>', html.escape(cause, quote=False))
