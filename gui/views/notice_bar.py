"""The notice above the text, a view of the RunState's notice: errors in red, information in blue. It goes away
when its cause does (the controller clears it), or with its close button."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from gui.i18n import translate
from gui.present import colours
from gui.state.run_state import Notice, RunState


class NoticeBar(QWidget):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.label = QLabel()
        self.label.setObjectName("errorBanner")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip(translate("notice_bar", "Dismiss"))
        close.setAutoRaise(True)
        close.clicked.connect(lambda: state.clear_notice())
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.label, 1)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        state.events.connect("notice_changed", self._on_notice)
        self.hide()

    def _on_notice(self, notice: Notice | None) -> None:
        if notice is None:
            self.hide()
            return
        look = colours.current().notice_error if notice.level == "error" else colours.current().notice_info
        self.label.setStyleSheet(f"{look};padding:4px")
        self.label.setText(notice.text)
        self.show()

    def text(self) -> str:
        return self.label.text()
