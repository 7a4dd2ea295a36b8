"""Help → Tour: the tour's stops (gui.state.tour) with their explanations in the interface's language; Open runs
the selected one, Next the one after the stop opened last (shown selected when the dialog opens)."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui.i18n import translate
from gui.state import tour
from gui.state.tour import STOPS, TourStop


class TourDialog(QDialog):
    def __init__(self, open_stop, parent: QWidget | None = None, last_key: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("tour_dialog", "Tour — 导览"))
        self.resize(760, 420)
        self._open_stop = open_stop
        self.stops = QListWidget()
        for stop in STOPS:
            item = QListWidgetItem(tour.title(stop))
            item.setData(Qt.ItemDataRole.UserRole, stop.key)
            self.stops.addItem(item)
        self.stops.currentRowChanged.connect(self._show)
        self.stops.currentRowChanged.connect(self._show_next_state)
        self.stops.itemDoubleClicked.connect(lambda _item: self.accept())
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Close)
        self.open_button = buttons.button(QDialogButtonBox.StandardButton.Open)
        self.next_button = buttons.addButton(translate("tour_dialog", "Next ▸"),
                                             QDialogButtonBox.ButtonRole.ActionRole)
        self.next_button.setToolTip(translate("tour_dialog", "Open the stop after the selected one"))
        self.next_button.clicked.connect(self.open_next)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        body = QHBoxLayout()
        body.addWidget(self.stops, 2)
        body.addWidget(self.text, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(buttons)
        keys = [stop.key for stop in STOPS]
        self.stops.setCurrentRow(keys.index(last_key) if last_key in keys else 0)

    def _show(self, row: int) -> None:
        stop: TourStop = STOPS[row]
        lanes = ", ".join(f"{lane.spec.name}{f' ×{lane.fanout}' if lane.fanout > 1 else ''}" for lane in stop.lanes)
        chat = translate("tour_dialog", " (chat)") if stop.chat else ""
        text = translate("tour_dialog", "<h3>{title}</h3><p><b>Prompt</b> “{prompt}”{chat} · <b>lanes</b> {lanes}</p>"
                                        "<p>{text}</p>")
        self.text.setText(text.format(title=html.escape(tour.title(stop)), prompt=html.escape(stop.prompt), chat=chat,
                                      lanes=html.escape(lanes), text=html.escape(tour.text(stop))))

    def _show_next_state(self, row: int) -> None:
        self.next_button.setEnabled(row < len(STOPS) - 1)

    def open_next(self) -> None:
        """Select the stop after the selected one and open it."""
        self.stops.setCurrentRow(self.stops.currentRow() + 1)
        self.accept()

    def accept(self) -> None:
        row = self.stops.currentRow()
        super().accept()
        if row >= 0:
            self._open_stop(STOPS[row].key)
