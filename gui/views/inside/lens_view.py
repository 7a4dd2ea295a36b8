"""Logit lens, a view of the RunState over an explained lane ("the token's journey"): for one position, what the
model would predict next if it stopped after each layer (that layer's output through the final norm and
lm_head), as a table of rows (embeddings, then layer 0 … the last layer, which is the model's own distribution)
× the most likely tokens (the best 10, or as many as the panel's width shows readably), coloured by
probability. The model's final choice is framed wherever it appears, its probability is drawn layer by layer
beside the table, and the readout says after which layer it first becomes top-1 and from which layer on it
stays there.
"""

from __future__ import annotations

import html
import math
from dataclasses import replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from decoding.records.explain import ExplainResult
from gui.i18n import translate
from gui.present.inside_data import (
    explained_start,
    inside_lane,
    journey,
    lens_row_label,
    lens_rows,
    position_label,
    token_labels,
    token_probability,
)
from gui.present.lane_html import piece_label
from gui.state.run_state import RunState
from gui.state.view_state import LensViewState
from gui.views import style
from gui.views.figure import Figure
from gui.views.inside.inside_widgets import InsideHeader, lane_swatch, readout_label

ROW_PX = 19  # a table row: one line of text
MIN_CELL_PX = 52  # a cell's least width: a short word at 8 pt (ten cells in the step panel read "·P…")
MIN_RANKS = 3
CELL_CHARS = 9
FINAL_COLOUR = "#C62828"  # the frame around the model's final choice
ACTUAL_COLOUR = "#6A1B9A"  # the token that really followed, when it is not the final top-1 (a sampled lane)
# white → green, light enough at 1 for black text: most lens probabilities are small, and they stay quiet
_COLOURS = ["#ffffff", "#e5f5e0", "#c7e9c0", "#a1d99b", "#74c476", "#41ab5d"]
COLOUR_MAP = pg.ColorMap(np.linspace(0.0, 1.0, len(_COLOURS)), [pg.mkColor(c) for c in _COLOURS])


class LensView(QWidget):
    explainRequested = Signal(int)  # lane (its header's Explain button)

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._lane: int | None = None
        self._result: ExplainResult | None = None
        self._labels: list[str] = []
        self._position = 0  # the lens reads what follows this position
        self._probs = np.zeros((0, 0))
        self._texts: list[list[str]] = []
        self._cell_items: list[pg.TextItem] = []
        self._title = ""
        self._build_ui()
        for name in ("lanes_reset", "lane_removed", "lane_moved", "run_finished", "explanations_changed"):
            state.events.connect(name, self._on_change)
        state.events.connect("selection_changed", self._on_change)
        self._on_change()

    # ---- public API --------------------------------------------------------------------------------------
    def set_position(self, position: int) -> None:
        """Read what the model predicts after the token at `position` (the prediction of position + 1)."""
        if self._result is None or not 0 <= position < len(self._result.tokens):
            raise ValueError(f"position={position} is outside the explained sequence")
        self._combo.setCurrentIndex(position)

    @property
    def position(self) -> int:
        return self._position

    def cell(self, row: int, rank: int) -> tuple[str, float]:
        """The token label and probability drawn in a cell."""
        return self._texts[row][rank], float(self._probs[row, rank])

    def cell_colour(self, row: int, rank: int) -> str:
        return self._image.getColorMap().map(float(self._probs[row, rank]), mode="qcolor").name()

    def drawn_texts(self) -> list[str]:
        """The text of every cell label item in the scene, row by row."""
        return [item.toPlainText() for item in self._cell_items if item.isVisible()]

    def final_cells(self) -> list[tuple[int, int]]:
        """(row, rank) of the framed cells: where the model's final choice stands."""
        return [(int(y), int(x)) for x, y in zip(self._frames.opts["x0"], self._frames.opts["y0"], strict=True)]

    def journey_curve(self) -> list[float | None]:
        """The final choice's probability per row as drawn (None: outside the row's top 10, no point)."""
        xs, _ys = self._curve.getData()
        return [None if math.isnan(x) else float(x) for x in xs]

    def readout(self) -> str:
        return self._readout.text()

    def figure(self) -> Figure | None:
        if self._result is None:
            return None
        return Figure(self._title, self._legend.text(), self._canvas.scene(), self._canvas.ci.sceneBoundingRect(),
                      self._readout.text())

    def view_state(self) -> LensViewState:
        return LensViewState(self._position)

    def set_view_state(self, state: LensViewState) -> None:
        if self._result is not None:
            self.set_position(state.position)

    # ---- state events ------------------------------------------------------------------------------------
    def _on_change(self, *_args) -> None:
        """Any change of the lanes, their explanations or the selection: show the inside lane's explanation, at
        the position where the selected step's token was predicted when there is one."""
        self._lane = inside_lane(self.state)
        result = self.state.explanation(self._lane) if self._lane is not None else None
        if result is not self._result:
            self._result = result
            self._labels = token_labels(result, explained_start(self.state, result)) if result is not None else []
            self._fill_combo()
        selection = self.state.selection
        if result is not None and selection is not None:
            position = result.prompt_length + selection.step - 1
            if 0 <= position < len(result.tokens) - 1 and position != self._position:
                self._position = position
                self._combo.blockSignals(True)
                self._combo.setCurrentIndex(position)
                self._combo.blockSignals(False)
        self.redraw()

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.header = InsideHeader()
        self.header.explainRequested.connect(self.explainRequested)
        self._combo = QComboBox()
        self._combo.setMinimumContentsLength(16)
        self._combo.setToolTip(translate("lens_view", "The position whose next token the lens reads; selecting a step "
                                                      "in the text picks the position before it (where that token was "
                                                      "predicted)"))
        self._combo.currentIndexChanged.connect(self._on_position)
        controls = QHBoxLayout()
        controls.addWidget(QLabel(translate("lens_view", "what follows")))
        controls.addWidget(self._combo)
        controls.addStretch(1)
        self._legend = QLabel(
            translate("lens_view", "each row: the prediction from that layer's output (final norm and lm_head), best "
                                   "first; colour: probability · <span style=\"color:{FINAL_COLOUR}\">□</span> the "
                                   "model's final choice · <span style=\"color:{ACTUAL_COLOUR}\">□</span> the token "
                                   "that followed, when another").format(FINAL_COLOUR=FINAL_COLOUR,
                                                                         ACTUAL_COLOUR=ACTUAL_COLOUR))
        self._legend.setFont(style.ui_font(8.5))
        self._legend.setWordWrap(True)
        self._canvas = style.make_canvas()
        self._table = self._canvas.addPlot(row=0, col=0)
        self._track = self._canvas.addPlot(row=0, col=1)
        self._canvas.ci.layout.setColumnStretchFactor(0, 5)
        self._canvas.ci.layout.setColumnStretchFactor(1, 1)
        for plot in (self._table, self._track):
            style.style_plot(plot, ("left", "bottom", "top"))
            plot.invertY(True)
        self._track.setYLink(self._table)
        self._table.showAxis("top")
        self._table.hideAxis("bottom")
        self._table.setLabel("top", translate("lens_view", "rank"))
        self._table.getAxis("left").setWidth(78)
        self._track.hideAxis("left")
        self._track.hideAxis("bottom")
        self._track.showAxis("top")  # as the table's: the rows of both stay level
        self._track.setLabel("top", translate("lens_view", "p(final choice)"))
        self._track.setXRange(0, 1, padding=0.1)  # room for the end ticks' labels
        self._track.getAxis("top").setTicks([[(0.0, "0"), (0.5, "0.5"), (1.0, "1")]])  # a narrow column: 3 fit
        self._table.vb.sigResized.connect(self._fit_cells)
        self._track.showGrid(x=True, alpha=0.25)
        self._image = pg.ImageItem(axisOrder="row-major")
        self._image.setColorMap(COLOUR_MAP)
        self._image.follows_theme = True  # gui.shell.theme turns its scale with the palette
        self._table.addItem(self._image)
        self._frames = _frame_item(FINAL_COLOUR)
        self._actual = _frame_item(ACTUAL_COLOUR)
        self._settled = pg.InfiniteLine(angle=0, pen=pg.mkPen(FINAL_COLOUR, width=1, style=Qt.PenStyle.DashLine))
        for item in (self._frames, self._actual, self._settled):
            self._table.addItem(item)
        self._curve = pg.PlotDataItem(pen=pg.mkPen(FINAL_COLOUR, width=2), symbol="o", symbolSize=5,
                                      symbolBrush=FINAL_COLOUR, symbolPen=None)
        self._track.addItem(self._curve)
        self._track_settled = pg.InfiniteLine(angle=0, pen=pg.mkPen(FINAL_COLOUR, width=1,
                                                                    style=Qt.PenStyle.DashLine))
        self._track.addItem(self._track_settled)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setWidget(self._canvas)
        self._readout = readout_label("lensReadout")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addLayout(controls)
        layout.addWidget(self._legend)
        layout.addWidget(self._readout)
        layout.addWidget(self._scroll, 1)

    def _fill_combo(self) -> None:
        self._combo.blockSignals(True)
        self._combo.clear()
        if self._result is not None:
            for position in range(len(self._result.tokens)):
                self._combo.addItem(position_label(self._result, position, self._labels))
            self._position = min(self._position, len(self._result.tokens) - 1)
            self._combo.setCurrentIndex(self._position)
        self._combo.blockSignals(False)

    def _on_position(self, index: int) -> None:
        if index >= 0:
            self._position = index
            self.redraw()

    # ---- drawing -----------------------------------------------------------------------------------------
    def redraw(self) -> None:
        result, lane = self._result, self._lane
        if result is None:
            self._probs, self._texts = np.zeros((0, 0)), []
            self._image.clear()
            for item in self._cell_items:
                item.hide()
            self._frames.setOpts(x0=[], y0=[])
            self._actual.setOpts(x0=[], y0=[])
            self._curve.setData([], [])
            self._readout.setText("")
            not_explained = translate("lens_view", "{lane} is not explained yet: explaining runs its tokens through "
                                                   "the model's inspection model once (prepared the first time).")
            no_lane = translate("lens_view", "Run the lanes, then explain one: what every layer would predict next.")
            why = no_lane if lane is None else not_explained.format(lane=lane_swatch(self.state, lane))
            self.header.show_lane(self.state, lane, False, why)
            return
        rows = lens_rows(result, self._position)
        shown = self._ranks_that_fit(max((len(row.entries) for row in rows), default=0))
        rows = [replace(row, entries=row.entries[:shown]) for row in rows]
        self._probs = np.array([[entry.prob for entry in row.entries] for row in rows], dtype=np.float64)
        self._texts = [[_cell_text(entry.text) for entry in row.entries] for row in rows]
        count, ranks = self._probs.shape
        self._canvas.setMinimumHeight(count * ROW_PX + 70)
        self._image.setImage(self._probs, levels=(0.0, 1.0))
        self._image.setRect(0, 0, ranks, count)
        self._draw_cells(rows)
        left = self._table.getAxis("left")
        left.setTicks([[(row + 0.5, lens_row_label(row)) for row in range(count)]])
        self._table.getAxis("top").setTicks([[(rank + 0.5, str(rank + 1)) for rank in range(ranks)]])
        self._table.setXRange(0, ranks, padding=0)
        self._table.setYRange(0, count, padding=0)
        self._draw_journey(rows)

    def _draw_cells(self, rows) -> None:
        needed = sum(len(row.entries) for row in rows)
        while len(self._cell_items) < needed:
            item = pg.TextItem(color=style.FOREGROUND, anchor=(0.5, 0.5))
            item.setFont(style.ui_font(8))
            self._table.addItem(item)
            self._cell_items.append(item)
        items = iter(self._cell_items)
        for row, entries in enumerate(self._texts):
            for rank in range(len(entries)):
                item = next(items)
                item.setPos(rank + 0.5, row + 0.5)
                item.show()
        for item in items:
            item.hide()
        self._fit_cells()

    def _ranks_that_fit(self, available: int) -> int:
        """How many ranks the table shows: every one the lens has where each cell gets MIN_CELL_PX, else as many
        as do (at least MIN_RANKS)."""
        width = self._table.vb.width()
        fitting = int(width // MIN_CELL_PX) if width > 0 else available
        return min(available, max(MIN_RANKS, fitting))

    def _fit_cells(self) -> None:
        """Each cell's text cut to its cell's width in pixels (the table narrows with its panel: long pieces
        of the embeddings' row ran into their neighbours); a new width that fits more or fewer ranks redraws."""
        ranks = max((len(entries) for entries in self._texts), default=0)
        if not ranks:
            return
        available = self._result.lens_k if self._result is not None else ranks
        if self._ranks_that_fit(available) != ranks:
            QTimer.singleShot(0, self.redraw)  # not inside the resize that asked
            return
        width = max(int(self._table.vb.width() / ranks) - 2, 8)
        metrics = QFontMetrics(style.ui_font(8))
        texts = (text for entries in self._texts for text in entries)  # the cells' items, in _draw_cells' order
        for item, text in zip(self._cell_items, texts, strict=False):
            item.setText(metrics.elidedText(text, Qt.TextElideMode.ElideRight, width))

    def _draw_journey(self, rows) -> None:
        result, position = self._result, self._position
        path = journey(result, position)
        final_cells = [(row.row, rank) for row in rows for rank, entry in enumerate(row.entries)
                       if entry.id == path.final.id]
        self._frames.setOpts(x0=[rank for _, rank in final_cells], y0=[row for row, _ in final_cells])
        other = path.actual if path.actual is not None and path.actual != path.final.id else None
        actual_cells = [(row.row, rank) for row in rows for rank, entry in enumerate(row.entries)
                        if other is not None and entry.id == other]
        self._actual.setOpts(x0=[rank for _, rank in actual_cells], y0=[row for row, _ in actual_cells])
        probs = token_probability(result, position, path.final.id)
        self._curve.setData([math.nan if p is None else p for p in probs], [row + 0.5 for row in range(len(probs))],
                            connect="finite")
        for line in (self._settled, self._track_settled):
            line.setValue(path.settled)
        after = self._labels[position]
        title = translate("lens_view", "the token's journey after “{token}”@{position}: what each layer would "
                                       "predict · lane {lane}")
        self._title = title.format(token=after, position=position, lane=self.state.lanes[self._lane].name)
        header = translate("lens_view", "{lane}: what each layer would predict after {token}")
        token = html.escape(position_label(result, position, self._labels))
        self.header.show_lane(self.state, self._lane, True,
                              header.format(lane=lane_swatch(self.state, self._lane), token=token))
        self._readout.setText(self._journey_words(path, probs))
        entered = next(row for row, p in enumerate(probs) if p is not None)
        QTimer.singleShot(0, lambda: self._reveal(entered, len(probs) - 1))

    def _reveal(self, first: int, last: int) -> None:
        """Scroll the table so that rows first..last show (as many as fit, the last one first): where the final
        choice enters the top 10 and where it ends."""
        for row in (last, first):
            scene = self._table.vb.mapViewToScene(QPointF(0, row + 0.5))
            point = self._canvas.mapFromScene(scene)
            self._scroll.ensureVisible(point.x(), point.y(), 0, ROW_PX * 2)

    def _journey_words(self, path, probs: list[float | None]) -> str:
        last = self._result.layers
        final = html.escape(piece_label(path.final.text))
        if path.settled == last:
            top1 = translate("lens_view", "top-1 only at the last layer ({layer}: the model's own output)").format(
                layer=last - 1)
            if path.first_top1 < last:
                top1 += translate("lens_view", ", after being top-1 {where} for a while").format(
                    where=_after(path.first_top1))
        elif path.first_top1 == path.settled:
            top1 = translate("lens_view", "top-1 {where} and from there on").format(where=_after(path.settled))
        else:
            top1 = translate("lens_view", "top-1 first {first}, for good {settled}").format(
                first=_after(path.first_top1), settled=_after(path.settled))
        entered = next(row for row, p in enumerate(probs) if p is not None)
        choice = translate("lens_view", "<b>“{token}”</b> is the model's choice (p {prob}): {top1}; first among the "
                                        "10 best {where}.")
        words = [choice.format(token=final, prob=f"{path.final.prob:.2f}", top1=top1, where=_after(entered))]
        if path.actual is not None and path.actual != path.final.id:
            actual = html.escape(piece_label(self._result.tokens[self._position + 1].text))
            words.append(translate("lens_view", "The lane took “{token}” here instead (it samples or was "
                                                "steered).").format(token=actual))
        return " ".join(words)


def _frame_item(colour: str) -> pg.BarGraphItem:
    """Unfilled cell outlines (one per x0, y0)."""
    item = pg.BarGraphItem(x0=[], y0=[], width=1.0, height=1.0, brush=pg.mkBrush(None),
                           pen=pg.mkPen(colour, width=2))
    item.setZValue(8)
    return item


def _cell_text(text: str) -> str:
    label = piece_label(text, compact=True)
    return label if len(label) <= CELL_CHARS else label[: CELL_CHARS - 1] + "…"


def _after(row: int) -> str:
    """Where in the lens a row is, in words."""
    if row == 0:
        return translate("lens_view", "at the embeddings already")
    return translate("lens_view", "after layer {layer}").format(layer=row - 1)

