"""Add model… → a server: the address of a served model (llama.cpp's server, vLLM, SGLang; runtime.served) and a
"Test connection" that shows what it serves, its vocabulary and how many alternatives a step returns. OK adds a
lane on it (the lane's model field holds the address, options and all)."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gui.i18n import translate

EXAMPLE = "llamacpp+http://127.0.0.1:8080"


class _Relay(QObject):
    """Carries a test's result from its thread to the dialog's (a queued signal)."""

    done = Signal(object, str)  # the report (dict) or None, and the error's text


class ServerDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, address: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("server_dialog", "Add a served model"))
        self.address = QLineEdit(address)
        self.address.setPlaceholderText(EXAMPLE)
        self.address.setToolTip(translate(
            "server_dialog", "PROTOCOL+URL: llamacpp+, vllm+ or sglang+ then the server's address; options after ?: "
                             "alternatives=N or all (the top-N a step asks for), timeout=seconds, parallel=requests "
                             "at once, model=name, vocab=N, key_env=the environment variable holding an API key"))
        self.test_button = QPushButton(translate("server_dialog", "Test connection"))
        self.test_button.clicked.connect(self.test)
        self.result = QLabel()
        self.result.setWordWrap(True)
        form = QFormLayout()
        form.addRow(translate("server_dialog", "Address"), self.address)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.addButton(self.test_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.result)
        layout.addWidget(buttons)
        self._relay = _Relay(self)
        self._relay.done.connect(self._show)
        self.report: dict | None = None

    def name(self) -> str:
        return self.address.text().strip()

    @Slot()
    def test(self) -> None:
        """Ask the server on a thread of its own (a slow one never blocks the window)."""
        from runtime.served import test_connection

        name = self.name() or EXAMPLE
        self.test_button.setEnabled(False)
        self.result.setText(translate("server_dialog", "Asking {name}…").format(name=name))

        def ask() -> None:
            try:
                self._relay.done.emit(test_connection(name), "")
            except Exception as exc:  # noqa: BLE001 - every failure is shown in the dialog
                self._relay.done.emit(None, str(exc))

        threading.Thread(target=ask, daemon=True).start()

    @Slot(object, str)
    def _show(self, report: dict | None, error: str) -> None:
        self.test_button.setEnabled(True)
        self.report = report
        if report is None:
            self.result.setStyleSheet("color:#c62828")
            self.result.setText(translate("server_dialog", "No connection: {error}").format(error=error))
            return
        self.result.setStyleSheet("")
        exact = (translate("server_dialog", "the whole vocabulary: exact") if report["returned"] >= report["vocab_size"]
                 else translate("server_dialog", "partial: the rest held {mass:.2%}").format(
                     mass=report["unseen_mass"]))
        self.result.setText(translate(
            "server_dialog", "Model {model} · vocabulary {vocab:,} · {returned:,} alternatives returned ({exact}); "
                             "best next token {best!r}").format(model=report["model"], vocab=report["vocab_size"],
                                                               returned=report["returned"], exact=exact,
                                                               best=report["best"]))
