"""Why A, not B, a view of the RunState: for the selected step, the push of every earlier token on the choice
(the knock-out: each token hidden from every later one), the text shaded by it on a diverging scale with its
legend, the five strongest pushers each way with their numbers, and a layer × component grid of where in depth
the gap is made (gui.present.why_rows draws the numbers; the task: gui.state.tasks.why). While one runs: a
progress bar and Cancel."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsScene,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from decoding.analysis.why import WhyResult
from gui.i18n import translate
from gui.present import colours
from gui.present.why_rows import (
    DepthGrid,
    depth_grid,
    legend_html,
    method_text,
    pushers_html,
    summary_text,
    token_html,
    words_html,
)
from gui.state.run_state import RunState
from gui.views import style
from gui.views.figure import Figure

CELL_W, CELL_H, LABEL_W, HEAD_H = 34, 13, 40, 18
MIN_VALUE_W = 30  # narrower cells show their colour only (the tooltip-free grid keeps the caption's sums)
TEXT_MAX_PX = 220


class DepthChart(QWidget):
    """The depth split as a grid: a row per layer (the embedding first), columns attention, MLP and each head,
    each cell on the diverging scale of the strongest cell, its value written where it fits."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid: DepthGrid | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(LABEL_W + 60)

    def set_grid(self, grid: DepthGrid | None) -> None:
        self.grid = grid
        rows = len(grid.row_labels) if grid else 0
        self.setFixedHeight(HEAD_H + CELL_H * rows + 4 if grid else 0)
        self.update()

    def cell_width(self) -> float:
        """The columns share the width there is, at most CELL_W each (values are written from MIN_VALUE_W)."""
        columns = len(self.grid.column_labels) if self.grid else 1
        return min(CELL_W, (self.width() - LABEL_W - 4) / columns)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        grid = self.grid
        if grid is None:
            return
        scheme = colours.current()
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(scheme.background))
        painter.setFont(style.ui_font(7))
        painter.setPen(QColor(scheme.ink))
        width = self.cell_width()
        for column, label in enumerate(grid.column_labels):
            painter.drawText(QRectF(LABEL_W + column * width, 0, width, HEAD_H), Qt.AlignmentFlag.AlignCenter, label)
        for row, label in enumerate(grid.row_labels):
            top = HEAD_H + row * CELL_H
            painter.setPen(QColor(scheme.ink))
            painter.drawText(QRectF(0, top, LABEL_W - 4, CELL_H), Qt.AlignmentFlag.AlignRight, label)
            for column, value in enumerate(grid.values[row]):
                if value is None:
                    continue
                cell = QRectF(LABEL_W + column * width, top, width - 1, CELL_H - 1)
                painter.fillRect(cell, QColor(scheme.push(value / grid.scale)))
                if width >= MIN_VALUE_W and abs(value) >= 0.05 * grid.scale:
                    painter.drawText(cell, Qt.AlignmentFlag.AlignCenter, f"{value:+.2f}")
        painter.setPen(QPen(QColor(scheme.faint), 1))
        painter.drawLine(round(LABEL_W + 2 * width - 1), HEAD_H, round(LABEL_W + 2 * width - 1), self.height())
        painter.end()


class WhyView(QWidget):
    whyRequested = Signal(int, int)  # lane index, step: why its token and not the runner-up
    cancelRequested = Signal()

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._result: WhyResult | None = None
        self._build_ui()
        for name in ("selection_changed", "run_finished", "lanes_reset", "lane_removed"):
            state.events.connect(name, lambda *_args: self.redraw())
        state.events.connect("why_changed", self._on_why)
        state.events.connect("task_progress", self._on_progress)
        self.redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def shown(self) -> WhyResult | None:
        return self._result

    def figure(self) -> Figure | None:
        """The shown answer as drawn (text, pushers, grid) for the image export."""
        if self._result is None:
            return None
        image = self._content.grab()
        scene = QGraphicsScene()
        scene.addPixmap(image)
        return Figure(self._title.text(), "", scene, QRectF(0, 0, image.width(), image.height()))

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel()
        self._title.setWordWrap(True)
        title_font = style.ui_font(10)
        title_font.setBold(True)
        self._title.setFont(title_font)
        self._ask = QPushButton(translate("why", "Why this token? (Y)"))
        self._ask.setToolTip(translate("why", "For the selected step: every earlier token hidden from every later "
                                              "one, in turn; its token against the runner-up"))
        self._ask.clicked.connect(self._request)
        self._progress = QProgressBar()
        self._progress.setTextVisible(True)
        self._cancel = QPushButton(translate("why", "Cancel"))
        self._cancel.clicked.connect(self.cancelRequested.emit)
        bar = QHBoxLayout()
        bar.addWidget(self._ask)
        bar.addWidget(self._progress, 1)
        bar.addWidget(self._cancel)
        self._method = QLabel()
        self._method.setWordWrap(True)
        self._method.setFont(style.ui_font(8.5))
        self._text = QTextBrowser()
        self._text.setOpenLinks(False)
        self._text.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self._legend = QLabel()
        self._legend.setWordWrap(True)
        self._pushers = QLabel()
        self._pushers.setWordWrap(True)
        self._words = QLabel()
        self._words.setWordWrap(True)
        self._depth_caption = QLabel()
        self._depth_caption.setWordWrap(True)
        self._depth_caption.setFont(style.ui_font(8.5))
        self._chart = DepthChart()
        self._content = QWidget()
        inner = QVBoxLayout(self._content)
        for widget in (self._method, self._text, self._legend, self._pushers, self._words, self._depth_caption,
                       self._chart):
            inner.addWidget(widget)
        inner.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the texts wrap instead
        scroll.setWidget(self._content)
        layout = QVBoxLayout(self)
        layout.addWidget(self._title)
        layout.addLayout(bar)
        layout.addWidget(scroll, 1)
        self._show_progress(0, 0)

    # ---- events ------------------------------------------------------------------------------------------
    def _request(self) -> None:
        selection = self.state.selection
        if selection is not None:
            self.whyRequested.emit(selection.lane, selection.step)

    def _on_why(self, index: int, result: WhyResult) -> None:
        self._show(result)

    def _on_progress(self, done: int, total: int) -> None:
        self._show_progress(done, total)

    def _show_progress(self, done: int, total: int) -> None:
        running = total > 0
        self._progress.setVisible(running)
        self._cancel.setVisible(running)
        if running:
            self._progress.setRange(0, total)
            self._progress.setValue(done)
            self._progress.setFormat(translate("why", "knock-out: {done} / {total} positions").format(done=done,
                                                                                                     total=total))

    def redraw(self) -> None:
        selection = self.state.selection
        shown = self.state.whys_at(selection.lane, selection.step) if selection is not None else []
        if shown:
            self._show(shown[-1])
            return
        if self._result is not None and not self._still_there(self._result):
            self._result = None
        if self._result is None:
            self._show(None)

    def _fit_text(self) -> None:
        """The shaded text as tall as it is (up to TEXT_MAX_PX; then it scrolls)."""
        document = self._text.document()
        document.setTextWidth(max(self._text.viewport().width(), 200))
        self._text.setFixedHeight(min(int(document.size().height()) + 8, TEXT_MAX_PX))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if self._result is not None:
            self._fit_text()

    def _still_there(self, result: WhyResult) -> bool:
        return any(result in (lane.trace.why or []) for lane in self.state.lanes)

    def _show(self, result: WhyResult | None) -> None:
        self._result = result
        for widget in (self._legend, self._pushers, self._words, self._depth_caption, self._text):
            widget.setVisible(result is not None)
        if result is None:
            self._title.setText(translate("why", "Why A, not B?"))
            self._method.setText(translate("why", "Select a step and press Y, or right-click a candidate in the Step "
                                                  "tab: every earlier token is hidden from every later one in turn, "
                                                  "and the change of logit(A) − logit(B) is its push."))
            self._chart.set_grid(None)
            return
        self._title.setText(summary_text(result))
        self._method.setText(method_text(result))
        scheme = colours.current()
        self._text.setHtml(f'<div style="background-color:{scheme.background};color:{scheme.ink}">'
                           f"{token_html(result)}</div>")
        self._fit_text()
        self._legend.setText(legend_html(result))
        self._pushers.setText(pushers_html(result))
        words = words_html(result)
        self._words.setText(words)
        self._words.setVisible(bool(words))
        grid = depth_grid(result)
        self._depth_caption.setText(grid.caption if grid else translate("why", "no depth split: {reason}").format(
            reason=result.depth_note or "?"))
        self._chart.set_grid(grid)
