"""Prompt area, a view of the run state's request: multi-line prompt, chat toggle with optional system prompt,
max new tokens, the run's seed, Run and Stop. Edits go into the request at once (gui.state.requests); a
request set elsewhere (an opened run, a tour stop, the settings) shows here."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from decoding.chain.parameters import parameter
from gui.i18n import translate
from gui.state.requests import RunRequest
from gui.state.run_state import RunState
from gui.views.spin_boxes import CheckedSpinBox

# One limit for the run's box and every lane's own field: the parameter table's.
MAX_NEW_TOKENS_LIMIT = int(parameter("max_new_tokens").editor_max)


class PromptPanel(QWidget):
    runRequested = Signal()
    stopRequested = Signal()

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.editor = QPlainTextEdit(state.request.text)
        self.editor.setObjectName("promptEditor")
        self.editor.setPlaceholderText(translate("prompt_panel", "Prompt — Ctrl+Enter runs all lanes"))
        self.editor.setToolTip(translate("prompt_panel",
                                         "The prompt every lane continues (Ctrl+Enter: Run, Esc: Stop)"))
        self.editor.setTabChangesFocus(True)  # Tab / Shift+Tab leave the prompt, as in other forms' editors
        self.editor.setMinimumHeight(60)
        self.editor.setMaximumHeight(130)
        self.chat = QCheckBox(translate("prompt_panel", "chat"))
        self.chat.setToolTip(translate("prompt_panel",
                                       "Wrap the prompt in the model's chat template as a user message"))
        self.chat.toggled.connect(self._on_chat_toggled)
        self.system = QLineEdit()
        self.system.setPlaceholderText(translate("prompt_panel", "system prompt (optional; the template's default if "
                                                                 "empty)"))
        self.system.setToolTip(translate("prompt_panel", "System message for the chat template"))
        self.system.setVisible(False)
        self.max_new_tokens = QSpinBox()
        self.max_new_tokens.setRange(1, MAX_NEW_TOKENS_LIMIT)
        self.max_new_tokens.setValue(64)
        self.max_new_tokens.setToolTip(translate("prompt_panel", "max_new_tokens: how many tokens each lane generates "
                                                                 "at most"))
        self.seed = CheckedSpinBox()  # emptied, it reads "auto" (not the seed it had)
        self.seed.setSpecialValueText(translate("prompt_panel", "auto"))
        self.seed.allow(-1, 2**31 - 1)
        self.seed.setValue(-1)
        self.seed.setToolTip(translate("prompt_panel", "Base seed of the run: sampled lanes whose seed is auto get one "
                                                       "derived from it and their name, so the same seed repeats the "
                                                       "run. auto = random each run."))
        self.run_button = QPushButton(translate("prompt_panel", "Run"))
        self.run_button.setToolTip(translate("prompt_panel", "Run every lane on this prompt (Ctrl+Enter)"))
        self.run_button.clicked.connect(self.runRequested)
        self.stop_button = QPushButton(translate("prompt_panel", "Stop"))
        self.stop_button.setToolTip(translate("prompt_panel", "Stop at the next step, keeping the text so far (Esc)"))
        self.stop_button.clicked.connect(self.stopRequested)
        self.stop_button.setEnabled(False)
        self._layout()
        self.show_request(state.request)
        for signal in (self.editor.textChanged, self.chat.toggled, self.system.textChanged,
                       self.max_new_tokens.valueChanged, self.seed.valueChanged):
            signal.connect(self._on_edited)
        state.events.connect("request_changed", self.show_request)
        state.events.connect("run_started", lambda _job: self.set_running(True))
        state.events.connect("run_finished", lambda: self.set_running(False))

    def _layout(self) -> None:
        controls = QHBoxLayout()
        controls.addWidget(self.chat)
        controls.addWidget(QLabel(translate("prompt_panel", "max new tokens")))
        controls.addWidget(self.max_new_tokens)
        controls.addWidget(QLabel(translate("prompt_panel", "seed")))
        controls.addWidget(self.seed)
        controls.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.system)
        layout.addLayout(controls)
        layout.addLayout(buttons)

    @Slot(bool)
    def _on_chat_toggled(self, on: bool) -> None:
        self.system.setVisible(on)  # only the chat template uses it

    @Slot()
    def _on_edited(self) -> None:
        system = self.system.text().strip() if self.chat.isChecked() else ""
        self.state.update_request(text=self.editor.toPlainText(), chat=self.chat.isChecked(), system=system or None,
                                  max_new_tokens=self.max_new_tokens.value(),
                                  seed=None if self.seed.value() < 0 else self.seed.value())

    def show_request(self, request: RunRequest) -> None:
        widgets = (self.editor, self.chat, self.system, self.max_new_tokens, self.seed)
        for widget in widgets:
            widget.blockSignals(True)  # the request is already the state's: no edit to write back
        try:
            if self.editor.toPlainText() != request.text:
                self.editor.setPlainText(request.text)
            self.chat.setChecked(request.chat)
            self._on_chat_toggled(request.chat)
            if (self.system.text().strip() or None) != request.system:
                self.system.setText(request.system or "")
            self.max_new_tokens.setValue(request.max_new_tokens)
            self.seed.setValue(-1 if request.seed is None else request.seed)
        finally:
            for widget in widgets:
                widget.blockSignals(False)

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
