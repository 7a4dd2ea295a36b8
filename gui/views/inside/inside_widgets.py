"""Pieces the inside views (attention, logit lens, tokens) share: the line above them naming the lane and
offering to explain it, and an axis of token labels written upright so that dozens of tokens fit under a
heatmap."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QWidget

from gui.i18n import translate
from gui.state.run_state import RunState
from gui.views import style

LABEL_CHARS = 12  # longer token labels are cut (their whole text is in the readouts)
LABEL_PX = 54  # the most a turned label takes below the heatmap (longer ones are elided): 110, then 76, left the
# step panel's heatmap under 100 px high at 1280×800


class TokenAxis(pg.AxisItem):
    """A bottom axis with one label per column (column i spans i..i+1) below its column: turned to read bottom
    to top, except labels about as narrow as a line is high (a Chinese character), which stay upright. When
    columns are narrower than a line of text, every n-th label only (and the highlighted ones, in bold)."""

    def __init__(self) -> None:
        super().__init__("bottom")
        self.labels: list[str] = []
        self.highlight: set[int] = set()  # columns whose labels are always drawn, in bold
        self.setStyle(tickTextHeight=0, tickLength=4)

    def set_labels(self, labels: list[str], highlight: set[int] = frozenset()) -> None:
        self.labels = [label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…" for label in labels]
        self.highlight = set(highlight)
        self.setTicks([[(i + 0.5, "") for i in range(len(labels))]])
        metrics = QFontMetricsF(style.ui_font(8.5))
        width = max((metrics.horizontalAdvance(label) for label in self.labels), default=0.0)
        self.setHeight(int(min(width, LABEL_PX)) + 12)
        self.picture = None
        self.update()

    def shown_every(self) -> int:
        """Every how many columns a label is drawn (1: all)."""
        view = self.linkedView()
        if view is None or not self.labels:
            return 1
        left = view.mapViewToScene(QPointF(0, 0)).x()
        right = view.mapViewToScene(QPointF(1, 0)).x()
        spacing = abs(right - left)
        line = QFontMetricsF(style.ui_font(8.5)).height()
        return max(1, math.ceil(line / spacing)) if spacing > 0 else len(self.labels)

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs) -> None:  # noqa: N802, N803 (pyqtgraph override)
        super().drawPicture(p, axisSpec, tickSpecs, [])
        view = self.linkedView()
        if view is None:
            return
        font = style.ui_font(8.5)
        bold = style.ui_font(8.5)
        bold.setBold(True)
        line = QFontMetricsF(font).height()
        length = self.height() - 8
        every = self.shown_every()
        metrics = QFontMetricsF(bold)
        # an upright label keeps to the room between two drawn labels (wider: turned, as the others)
        room = abs(view.mapViewToScene(QPointF(every, 0)).x() - view.mapViewToScene(QPointF(0, 0)).x()) - 2
        for index in self.drawn_columns(every):
            label = self.labels[index]
            x = self.mapFromScene(view.mapViewToScene(QPointF(index + 0.5, 0))).x()
            if not 0 <= x <= self.width():
                continue
            p.save()
            p.setFont(bold if index in self.highlight else font)
            p.translate(x, 6)
            if metrics.horizontalAdvance(label) <= min(1.3 * line, room):  # upright
                p.drawText(QRectF(-line, 0, 2 * line, line), int(Qt.AlignmentFlag.AlignCenter), label)
            else:
                p.rotate(-90)
                text = QFontMetricsF(p.font()).elidedText(label, Qt.TextElideMode.ElideRight, length)
                p.drawText(QRectF(-length, -line / 2, length, line),
                           int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), text)
            p.restore()

    def drawn_columns(self, every: int | None = None) -> list[int]:
        """The columns whose labels are drawn: every n-th (n: `every`, else shown_every()), and the highlighted
        ones (bold), without the n-th ones closer to a highlighted label than n columns (they overlapped it)."""
        every = every or self.shown_every()
        return [index for index in range(len(self.labels)) if index in self.highlight or (
            index % every == 0 and not any(0 < abs(index - other) < every for other in self.highlight))]


class InsideHeader(QWidget):
    """A title line, and a button explaining the shown lane when it is not explained yet."""

    explainRequested = Signal(int)  # lane

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.explain_button = QPushButton(translate("inside_widgets", "Explain this lane"))
        self.explain_button.setObjectName("explainLane")
        self.explain_button.setToolTip(translate("inside_widgets", "Run the lane's tokens through the model's "
                                                                   "inspection model once: every layer's attention "
                                                                   "per head and the logit lens (stored with the run)"))
        self.explain_button.clicked.connect(self._on_explain)
        self._lane: int | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title, 1)
        layout.addWidget(self.explain_button)

    def show_lane(self, state: RunState, lane: int | None, explained: bool, text: str) -> None:
        """`text` (HTML) as the title; the button when `lane` ran and is not explained."""
        self._lane = lane
        self.title.setText(text)
        ran = lane is not None and bool(state.lanes[lane].trace.token_ids) and state.trace is not None
        self.explain_button.setVisible(ran and not explained and not state.running)
        if lane is not None:
            self.explain_button.setText(translate("inside_widgets",
                                                  "Explain “{name}”").format(name=state.lanes[lane].name))

    def _on_explain(self) -> None:
        if self._lane is not None:
            self.explainRequested.emit(self._lane)


def readout_label(object_name: str) -> QLabel:
    """The selectable rich-text lines under an inside view's chart (what the selection shows, in numbers)."""
    label = QLabel()
    label.setObjectName(object_name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def capped_scroll(widget: QWidget, lines: int) -> QScrollArea:
    """`widget` in a frameless scroll area at most `lines` lines of text high: a long readout scrolls instead of
    taking the chart's height in a short panel."""
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setMaximumHeight(widget.fontMetrics().lineSpacing() * lines + 6)
    return area


def lane_swatch(state: RunState, lane: int) -> str:
    """The lane's colour square and name, as HTML."""
    import html

    entry = state.lanes[lane]
    return f'{style.lane_swatch(entry.colour)} {html.escape(entry.name)}'
