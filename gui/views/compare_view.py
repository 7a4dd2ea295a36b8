"""Divergence side by side, a view of the RunState: at the selected step, the selected lane's processed
distribution beside another lane's (the reference lane by default, e.g. at a ◆ divergence): each lane's chosen
token, where the other lane's token stands in it, and for sampled lanes where the draw fell. Lanes of different
tokenizers are compared by text: the other lane's step is the one at the same place of the text, and its token,
of another vocabulary, is not looked for in this lane's distribution; the header says which comparison it shows."""

from __future__ import annotations

import html
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from decoding.records.trace import StepRecord
from gui.i18n import translate
from gui.present.chart_rows import display_token
from gui.present.lane_html import comparison_words, format_prob
from gui.state.run_state import RunState, Selection
from gui.state.view_state import CompareViewState
from gui.views import style
from gui.views.figure import Figure

ROWS = 10
OTHER_COLOUR = "#7B3294"  # the other lane's token, in both distributions


@dataclass(frozen=True)
class CompareRow:
    token_id: int
    text: str
    prob: float | None  # processed probability in this lane's distribution (None: outside its recorded top-N)
    own: bool  # this lane chose it
    other: bool  # the other lane chose it


def compare_rows(record: StepRecord, other_token: int | None, count: int = ROWS) -> list[CompareRow]:
    """A lane's processed top `count` at a step, plus its chosen token and the other lane's if not among them
    (`other_token` None: the other lane's token is of another tokenizer)."""
    top = [t for t in sorted(record.top, key=lambda t: t.rank) if t.prob > 0.0][:count]
    rows = [CompareRow(t.id, t.text, t.prob, t.id == record.token_id, t.id == other_token) for t in top]
    ids = {row.token_id for row in rows}
    if record.token_id not in ids:
        rows.append(CompareRow(record.token_id, record.token_text, record.prob, True, record.token_id == other_token))
    if other_token is not None and other_token not in ids | {record.token_id}:
        known = next((t for t in record.top if t.id == other_token), None)
        rows.append(CompareRow(other_token, known.text if known else "", known.prob if known else None, False, True))
    return rows


def describe_other(record: StepRecord, other_token: int | None, other_text: str) -> str:
    """Where the other lane's token stands in this lane's distribution, in words (`other_token` None: it is of
    another tokenizer)."""
    if other_token is None:
        return translate("compare_view", "the other lane's “{token}” is a token of another tokenizer").format(
            token=display_token(other_text, 20))
    if other_token == record.token_id:
        return translate("compare_view", "both lanes chose the same token here")
    known = next((t for t in record.top if t.id == other_token), None)
    token = f"“{display_token(other_text, 20)}”"
    if known is None or known.prob <= 0.0:
        return translate("compare_view", "the other lane's {token} is filtered out or outside the recorded top "
                                         "{count} here").format(token=token, count=len(record.top))
    return translate("compare_view", "the other lane's {token} has p {p} (rank {rank}) here").format(
        token=token, p=format_prob(known.prob), rank=known.rank + 1)

class CompareView(QWidget):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._other_key: int | None = None  # the lane compared with (None: the reference lane)
        self._rows: dict[str, list[CompareRow]] = {"a": [], "b": []}
        self._build_ui()
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed", "run_finished"):
            state.events.connect(name, self._on_lanes_event)
        state.events.connect("selection_changed", lambda _selection: self.redraw())
        self._on_lanes_event()

    # ---- public API --------------------------------------------------------------------------------------
    def set_other(self, index: int) -> None:
        self._combo.setCurrentIndex(index)

    def view_state(self) -> CompareViewState:
        return CompareViewState(self._combo.currentIndex())

    def set_view_state(self, state: CompareViewState) -> None:
        self.set_other(state.other)

    def rows(self, side: str) -> list[CompareRow]:
        """The rows drawn for the selected lane ("a") or the other ("b")."""
        return list(self._rows[side])

    def texts(self) -> tuple[str, str]:
        return self._captions["a"].text(), self._captions["b"].text()

    def comparison_text(self) -> str:
        """Which comparison it shows: "token-aligned" or "by text: other tokenizer" (empty without one)."""
        return self._comparison.text()

    def figure(self) -> Figure | None:
        if not self._rows["a"]:
            return None
        return Figure(self._title.text(), self._legend.text(), self._canvas.scene(),
                      self._canvas.ci.sceneBoundingRect(), "<br>".join(self.texts()))

    # ---- state events ------------------------------------------------------------------------------------
    def _on_lanes_event(self, *_args) -> None:
        self._combo.blockSignals(True)
        self._combo.clear()
        for lane in self.state.lanes:
            self._combo.addItem(lane.name, lane.key)
        keys = [lane.key for lane in self.state.lanes]
        if self._other_key not in keys:
            self._other_key = None
        self._combo.setCurrentIndex(keys.index(self._other_key) if self._other_key in keys else
                                    min(self.state.reference, len(keys) - 1))
        self._combo.blockSignals(False)
        self.redraw()

    def _on_other_chosen(self, index: int) -> None:
        self._other_key = self._combo.itemData(index)
        self.redraw()

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel(translate("compare_view", "Select a step to compare two lanes there"))
        self._title.setWordWrap(True)
        self._combo = QComboBox()
        self._combo.setToolTip(translate("compare_view", "The lane the selected lane is compared with (the reference "
                                                         "lane by default)"))
        self._combo.currentIndexChanged.connect(self._on_other_chosen)
        header = QHBoxLayout()
        self._comparison = QLabel()
        self._comparison.setToolTip(translate("compare_view", "token-aligned: both lanes share a tokenizer and are "
                                                              "compared step by step; by text: the lanes' tokenizers "
                                                              "differ, and the other lane's step is the one at the "
                                                              "same place of the text"))
        header.addWidget(self._title, 1)
        header.addWidget(QLabel(translate("compare_view", "compare with")))
        self._combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self._combo.setMinimumContentsLength(14)  # not as wide as the longest lane name
        header.addWidget(self._combo)
        header.addWidget(self._comparison)
        self._legend = QLabel(
            translate("compare_view", "<span style=\"color:{CHOSEN_COLOUR}\">■</span>&nbsp;this lane's choice &nbsp; "
                                      "<span style=\"color:{OTHER_COLOUR}\">■</span>&nbsp;the other lane's choice "
                                      "&nbsp; <span style=\"color:{PROCESSED_COLOUR}\">■</span>&nbsp;p after "
                                      "processors &nbsp; <span style=\"color:{DRAW_COLOUR}\">┃</span>&nbsp;draw u "
                                      "(cumulative)")
            .format(CHOSEN_COLOUR=style.CHOSEN_COLOUR, OTHER_COLOUR=OTHER_COLOUR,
                    PROCESSED_COLOUR=style.PROCESSED_COLOUR, DRAW_COLOUR=style.DRAW_COLOUR))
        self._legend.setFont(style.ui_font(8.5))
        self._canvas = style.make_canvas()
        self._plots = {"a": self._canvas.addPlot(row=0, col=0), "b": self._canvas.addPlot(row=0, col=1)}
        for column in (0, 1):  # both distributions as wide, whatever their lanes are named
            self._canvas.ci.layout.setColumnStretchFactor(column, 1)
        self._bars, self._draws = {}, {}
        for side, plot in self._plots.items():
            style.style_plot(plot, ink=False)
            plot.invertY(True)
            plot.setLabel("bottom", translate("compare_view", "probability"))
            self._bars[side] = pg.BarGraphItem(x0=[], y=[], width=[], height=0.7)
            plot.addItem(self._bars[side])
            self._draws[side] = pg.ScatterPlotItem(symbol="|", size=22, pen=pg.mkPen(style.DRAW_COLOUR, width=3))
            self._draws[side].setZValue(5)
            plot.addItem(self._draws[side])
        # each plot's lane above it, as wide as the plot whatever its name (a pyqtgraph title asks for its text's
        # width: a long name squeezed the other plot to a sliver)
        self._heads = {side: QLabel() for side in self._plots}
        heads = QHBoxLayout()
        for label in self._heads.values():
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            heads.addWidget(label, 1)
        self._captions = {side: QLabel() for side in self._plots}
        captions = QHBoxLayout()
        for label in self._captions.values():
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
            captions.addWidget(label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self._legend)
        layout.addLayout(heads)
        layout.addWidget(self._canvas, 1)
        layout.addLayout(captions)

    # ---- drawing -----------------------------------------------------------------------------------------
    def _other_index(self, selected: int) -> int | None:
        keys = [lane.key for lane in self.state.lanes]
        if self._other_key in keys:
            other = keys.index(self._other_key)
        else:
            other = self.state.reference
        if other == selected:  # compare with something else than itself
            other = next((i for i in range(len(keys)) if i != selected), None)
        return other

    def redraw(self) -> None:
        selection: Selection | None = self.state.selection
        other = None if selection is None else self._other_index(selection.lane)
        records, aligned = None, None
        if selection is not None and other is not None:
            aligned = self.state.aligned_with(selection.lane, other)
            other_step = self.state.other_step(selection.lane, selection.step, other)
            records = (self.state.step_record(selection.lane, selection.step),
                       None if other_step is None else self.state.step_record(other, other_step))
        self._comparison.setText("" if aligned is None else comparison_words(aligned))
        if records is None or None in records:
            self._clear(selection is not None and other is not None)
            return
        a, b = records
        lanes = (self.state.lanes[selection.lane], self.state.lanes[other])
        title = (translate("compare_view", "step {step}: {lane} chose “{token}”, {other} chose “{other_token}”")
                 if aligned else
                 translate("compare_view", "step {step}: {lane} chose “{token}”; at the same place of the text "
                                           "(its step {other_step}) {other} chose “{other_token}”"))
        self._title.setText(title.format(step=selection.step, lane=lanes[0].name,
                                         token=display_token(a.token_text, 20), other=lanes[1].name,
                                         other_token=display_token(b.token_text, 20), other_step=b.step))
        for side, record, other_record, lane in (("a", a, b, lanes[0]), ("b", b, a, lanes[1])):
            self._draw_side(side, record, other_record.token_id if aligned else None)
            # a long lane name would widen its plot's title and squeeze the other plot: cut, in full above
            self._heads[side].setText(f'{style.lane_swatch(lane.colour)} {html.escape(lane.name)}')
            self._heads[side].setToolTip(lane.name)
            chose = translate("compare_view", "<b>{name}</b>: chose “{token}” p {p}; ").format(
                name=html.escape(lane.name), token=html.escape(display_token(record.token_text, 20)),
                p=format_prob(record.prob))
            self._captions[side].setText(
                chose + html.escape(describe_other(record, other_record.token_id if aligned else None,
                                                   other_record.token_text))
                + (translate("compare_view", "; draw u = {draw}").format(draw=f"{record.draw:.3f}")
                   if record.draw is not None else ""))

    def _draw_side(self, side: str, record: StepRecord, other_token: int | None) -> None:
        rows = compare_rows(record, other_token)
        self._rows[side] = rows
        colours = [style.CHOSEN_COLOUR if row.own else OTHER_COLOUR if row.other else style.PROCESSED_COLOUR
                   for row in rows]
        labels = [f"{'▶ ' if row.own else ''}{display_token(row.text)}" for row in rows]
        plot = self._plots[side]
        style.draw_token_bars(plot, self._bars[side], [row.prob or 0.0 for row in rows], colours, labels)
        # the draw: where u fell inside the chosen token's slice of the cumulative distribution, marked on its bar
        if record.draw is None or record.draw_low is None:
            self._draws[side].setData([], [])
        else:
            share = (record.draw - record.draw_low) / max(record.draw_high - record.draw_low, 1e-12)
            row = next(i for i, r in enumerate(rows) if r.own)
            self._draws[side].setData([share * (record.prob or 0.0)], [row])

    def _clear(self, has_selection: bool) -> None:
        self._title.setText(translate("compare_view", "The other lane has no step here") if has_selection else
                            translate("compare_view", "Select a step (e.g. a ◆ divergence) to compare two lanes there"))
        for side in self._plots:
            self._rows[side] = []
            self._bars[side].setOpts(x0=[], y=[], width=[], height=0.7)
            self._plots[side].getAxis("left").setTicks([[]])
            self._heads[side].setText("")
            self._draws[side].setData([], [])
            self._captions[side].setText("")
