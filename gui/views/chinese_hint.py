"""Chinese first: a bar above the text when the interface is Chinese or the prompt has Chinese and the run's model
does not write Chinese (gui.present.model_offers.chinese_hint), naming the model that does (a prepared one first,
else the catalog's) with one button that switches to it (preparing it first when it is not)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QLocale, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from gui.dialogs import add_model
from gui.i18n import translate
from gui.present import colours
from gui.present.model_offers import ChineseHint, chinese_hint
from gui.state.run_state import RunState


class ChineseHintBar(QWidget):
    """`model_path()`: the run's model folder now; `switch(path)`: make that the run's model."""

    def __init__(self, state: RunState, model_path: Callable[[], Path | None], switch: Callable[[Path], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state, self.model_path, self.switch = state, model_path, switch
        self.hint: ChineseHint | None = None
        self.dismissed = False  # closed by the user: not shown again this session
        self.label = QLabel()
        self.label.setObjectName("chineseHint")
        self.label.setWordWrap(True)
        self.button = QPushButton()
        self.button.setObjectName("chineseHintSwitch")
        self.button.clicked.connect(self.take)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip(translate("notice_bar", "Dismiss"))
        close.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        layout.addWidget(close)
        for event in ("request_changed", "model_changed"):
            state.events.connect(event, lambda *_: self.update_hint())
        self.hide()

    @staticmethod
    def chinese_interface() -> bool:
        return QLocale().language() == QLocale.Language.Chinese

    def update_hint(self) -> None:
        self.hint = None if self.dismissed else chinese_hint(self.model_path(), self.state.request.text,
                                                              self.chinese_interface())
        if self.hint is None:
            self.hide()
            return
        self.label.setStyleSheet(f"{colours.current().notice_info};padding:4px")
        self.label.setText(self.hint.text)
        self.button.setText(self.hint.button)
        self.show()

    @Slot()
    def take(self) -> None:
        """Switch to the hint's model, preparing it first (licence, download, export) if it is not prepared."""
        if self.hint is None:
            return
        folder = self.hint.entry.folder if self.hint.prepared else add_model.prepare_entry(self, self.hint.entry)
        if folder is not None:
            self.switch(folder)
        self.update_hint()

    @Slot()
    def dismiss(self) -> None:
        self.dismissed = True
        self.update_hint()
