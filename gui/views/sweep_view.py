"""Temperature, a view of the RunState: for the selected step, how the lane's processed distribution, entropy,
kept-set size and the chosen token's probability change with temperature from 0 to 2 (a sweep the model
computes once per step, stored with the run); and for a run with fan-outs of one lane at several temperatures,
their diversity against temperature."""

from __future__ import annotations

from collections import Counter

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from decoding.analysis.sweep import diversity_by_temperature
from decoding.records.trace import TemperatureSweep
from gui.i18n import translate
from gui.present.chart_rows import display_token
from gui.state.run_state import RunState
from gui.state.view_state import SweepViewState
from gui.views import style
from gui.views.figure import Figure

RIGHT_AXIS_PX = 64  # the kept-set axis (values up to 49,152 and its label); the other plots keep it empty
TOKEN_LINES = 6  # tokens drawn in the distribution plot: the most likely ones over the sweep
_TOKEN_COLOURS = ["#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#8C564B", "#7F7F7F"]


def sweep_lines(sweep: TemperatureSweep, count: int = TOKEN_LINES) -> dict[int, tuple[str, list[float]]]:
    """The tokens to draw (the chosen one and the most likely others over the whole sweep) -> (text, p at
    each temperature; 0 where a token is not in that temperature's recorded top)."""
    best: dict[int, float] = {}
    texts: dict[int, str] = {}
    for point in sweep.points:
        for token in point.top:
            best[token.id] = max(best.get(token.id, 0.0), token.prob)
            texts[token.id] = token.text
    others = sorted((i for i in best if i != sweep.token_id), key=lambda i: -best[i])[: count - 1]
    lines = {}
    for token_id in [sweep.token_id, *others]:
        probs = [next((t.prob for t in point.top if t.id == token_id), 0.0) for point in sweep.points]
        if token_id == sweep.token_id:
            probs = [point.prob for point in sweep.points]
        lines[token_id] = (texts.get(token_id, str(token_id)), probs)
    return lines


class SweepView(QWidget):
    sweepRequested = Signal(int, int)  # lane index, step
    fanoutsRequested = Signal(int)  # lane index: add fan-outs of it at several temperatures

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._build_ui()
        for name in ("selection_changed", "sweeps_changed", "run_finished", "lanes_reset"):
            state.events.connect(name, lambda *_args: self.redraw())
        self.redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def shown_sweep(self) -> TemperatureSweep | None:
        return self._sweep

    def show_diversity(self, on: bool = True) -> None:
        self._mode.setCurrentIndex(1 if on else 0)

    def view_state(self) -> SweepViewState:
        return SweepViewState(self._mode.currentIndex() == 1)

    def set_view_state(self, state: SweepViewState) -> None:
        self.show_diversity(state.diversity)

    def prepare_export(self) -> None:
        """An export without a sweep to show draws the fan-outs' diversity."""
        if self.shown_sweep() is None:
            self.show_diversity()

    def figure(self) -> Figure | None:
        if self._sweep is None and not self._diversity_shown:
            return None
        canvas = self._canvas
        return Figure(self._title.text(), self._legend.text(), canvas.scene(), canvas.ci.sceneBoundingRect())

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel()
        self._title.setWordWrap(True)
        self._sweep_button = QPushButton(translate("sweep_view", "Sweep this step"))
        self._sweep_button.setToolTip(translate("sweep_view", "The model recomputes this step's logits once; the "
                                                              "lane's own processors then run at temperatures 0 to 2"))
        self._sweep_button.clicked.connect(self._request_sweep)
        self._fanout_button = QPushButton(translate("sweep_view", "Fan-outs over T"))
        self._fanout_button.setToolTip(translate("sweep_view", "Add lanes that run the selected sampled lane as 8 "
                                                               "seeds at T 0.3, 0.7, 1.0 and 1.5 (the same seeds): "
                                                               "after the next run, diversity against temperature"))
        self._fanout_button.clicked.connect(self._request_fanouts)
        self._mode = QComboBox()
        self._mode.addItems([translate("sweep_view", "this step"), translate("sweep_view", "diversity")])
        self._mode.setToolTip(translate("sweep_view", "The selected step's sweep, or the run's fan-outs at several "
                                                      "temperatures"))
        self._mode.currentIndexChanged.connect(lambda _index: self.redraw())
        buttons = QHBoxLayout()
        buttons.addWidget(self._mode)
        buttons.addWidget(self._sweep_button)
        buttons.addWidget(self._fanout_button)
        buttons.addStretch(1)
        self._legend = QLabel()
        self._legend.setWordWrap(True)
        self._legend.setFont(style.ui_font(8.5))
        self._canvas = style.make_canvas()
        self._dist = self._canvas.addPlot(row=0, col=0)
        self._stats = self._canvas.addPlot(row=1, col=0)
        self._diversity = self._canvas.addPlot(row=2, col=0)
        for plot in (self._dist, self._stats, self._diversity):
            style.style_plot(plot, ink=False)
            plot.showGrid(x=True, y=True, alpha=0.15)
        self._stats.setXLink(self._dist)
        self._dist.setLabel("left", translate("sweep_view", "p after processors"))
        self._stats.setLabel("bottom", translate("sweep_view", "temperature"))
        self._stats.setLabel("left", translate("sweep_view", "entropy (nats)"))
        self._kept = pg.ViewBox()  # kept-set size on its own axis, on the right
        self._stats.showAxis("right")
        self._stats.scene().addItem(self._kept)
        self._stats.getAxis("right").linkToView(self._kept)
        self._stats.getAxis("right").setLabel("kept set (tokens)", color="#D55E00")
        self._kept.setXLink(self._stats)
        # linked x axes line up only where the plots are equally wide: the kept set's axis takes room on the
        # right, so the other two keep the same room empty (else they showed more of the temperature axis)
        self._stats.getAxis("right").setWidth(RIGHT_AXIS_PX)
        for plot in (self._dist, self._diversity):
            plot.showAxis("right")
            plot.getAxis("right").setStyle(showValues=False, tickLength=0)
            plot.getAxis("right").setPen(pg.mkPen(None))
            plot.getAxis("right").setWidth(RIGHT_AXIS_PX)
        self._stats.vb.sigResized.connect(lambda: self._kept.setGeometry(self._stats.vb.sceneBoundingRect()))
        self._diversity.setLabel("bottom", translate("sweep_view", "temperature"))
        self._diversity.setLabel("left", translate("sweep_view", "members · step · tokens"))
        self._diversity.addLegend(offset=(-4, -4), labelTextSize="8pt")  # bottom right: clear of the lines
        self._lines: list = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._title)
        layout.addLayout(buttons)
        layout.addWidget(self._legend)
        layout.addWidget(self._canvas, 1)

    # ---- drawing -----------------------------------------------------------------------------------------
    def redraw(self) -> None:
        for plot, item in self._lines:
            plot.removeItem(item)
        self._lines = []
        self._kept.clear()
        selection = self.state.selection
        self._sweep = None if selection is None or selection.member else self.state.sweep_at(selection.lane,
                                                                                             selection.step)
        lane = self.state.lanes[selection.lane] if selection is not None else None
        self._sweep_button.setEnabled(selection is not None and not selection.member and not self.state.running)
        self._fanout_button.setEnabled(lane is not None and lane.spec.do_sample and not self.state.running)
        step_mode = self._mode.currentIndex() == 0
        for plot in (self._dist, self._stats):
            plot.setVisible(step_mode)
        self._diversity.setVisible(not step_mode)
        self._legend.setText("")
        self._diversity_shown = False
        if not step_mode:
            self._diversity_shown = self._draw_diversity()
        elif self._sweep is not None:
            self._draw_sweep(self._sweep, lane)
        elif selection is not None:
            self._title.setText(translate("sweep_view", "{name} · step {step}: no sweep yet — “Sweep this step” "
                                                        "computes it (the model recomputes this step once)")
                                                        .format(name=lane.name, step=selection.step))
        else:
            self._title.setText(translate("sweep_view", "Select a step to see its distribution at other temperatures"))

    def _add(self, plot, item) -> None:
        plot.addItem(item)
        self._lines.append((plot, item))

    def _draw_sweep(self, sweep: TemperatureSweep, lane) -> None:
        temperatures = [point.temperature for point in sweep.points]
        keys = []
        for (token_id, (text, probs)), colour in zip(sweep_lines(sweep).items(), _TOKEN_COLOURS, strict=False):
            chosen = token_id == sweep.token_id
            colour = style.CHOSEN_COLOUR if chosen else colour
            self._add(self._dist, pg.PlotDataItem(temperatures, probs, pen=pg.mkPen(colour, width=3 if chosen else 1.5),
                                                  symbol="o", symbolSize=4, symbolBrush=colour, symbolPen=None))
            label = display_token(text, 12)
            keys.append(f'<span style="color:{colour}">━━</span>&nbsp;{"<b>" if chosen else ""}“{label}”'
                        f'{" (chosen)</b>" if chosen else ""}')
        self._add(self._stats, pg.PlotDataItem(temperatures, [p.entropy for p in sweep.points],
                                               pen=pg.mkPen("#0072B2", width=2)))
        kept = pg.PlotDataItem(temperatures, [p.kept for p in sweep.points], pen=pg.mkPen("#D55E00", width=2,
                                                                                          style=Qt.PenStyle.DashLine))
        self._kept.addItem(kept)
        own = float(lane.trace.config.get("temperature") or 1.0) if lane.spec.do_sample else None
        if own is not None:
            for plot in (self._dist, self._stats):
                marker = pg.InfiniteLine(own, angle=90, movable=False,
                                         pen=pg.mkPen(style.FOREGROUND, width=1, style=Qt.PenStyle.DotLine))
                self._add(plot, marker)
        where = (translate("sweep_view", " (the lane's own T {temperature}: dotted)").format(temperature=f"{own:g}")
                 if own is not None else translate("sweep_view", " (greedy / beam: T is not applied)"))
        self._title.setText(translate("sweep_view", "<b>{name} · step {step}</b>: the distribution from T 0 (argmax) "
                                                    "to 2{where}").format(name=lane.name, step=sweep.step, where=where))
        keys += ['<span style="color:#0072B2">━━</span>&nbsp;' + translate("sweep_view", "entropy"),
                 '<span style="color:#D55E00">╍╍</span>&nbsp;' + translate("sweep_view", "kept set (right axis)")]
        self._legend.setText("&nbsp;&nbsp; ".join(keys))

    def _draw_diversity(self) -> bool:
        """The run's fan-outs of one size (those a temperature series made) against their temperature."""
        trace = self.state.shown_trace()
        points = diversity_by_temperature(trace) if trace is not None else []
        if points:
            size = Counter(p.members for p in points).most_common(1)[0][0]
            points = [p for p in points if p.members == size]
        if len({p.temperature for p in points}) < 2:
            self._title.setText(translate("sweep_view", "Diversity against temperature: “Fan-outs over T” adds "
                                                        "fan-outs of the selected sampled lane at T 0.3, 0.7, 1.0 and "
                                                        "1.5; run them, then look here"))
            return False
        self._title.setText(translate("sweep_view", "<b>{len} fan-outs of {members} seeds</b>: how many distinct "
                                                    "texts, how soon the members part, and how many tokens two "
                                                    "members' texts differ by, at each temperature")
                                                    .format(len=len(points), members=points[0].members))
        temperatures = [p.temperature for p in points]
        self._add(self._diversity, pg.PlotDataItem(temperatures, [p.distinct_continuations for p in points],
                                                   pen=pg.mkPen("#009E73", width=2), symbol="o",
                                                   symbolBrush="#009E73", name=translate("sweep_view",
                                                                                         "distinct continuations")))
        first = [p.mean_first_split_step if p.mean_first_split_step is not None else float("nan") for p in points]
        self._add(self._diversity, pg.PlotDataItem(temperatures, first, pen=pg.mkPen("#CC79A7", width=2),
                                                   symbol="s", symbolBrush="#CC79A7", name=translate("sweep_view",
                                                                                                     "mean first split "
                                                                                                     "step"),
                                                   connect="finite"))
        apart = [p.mean_edit_distance if p.mean_edit_distance is not None else float("nan") for p in points]
        name = translate("sweep_view", "mean pairwise edit distance (tokens)")
        self._add(self._diversity, pg.PlotDataItem(temperatures, apart, pen=pg.mkPen("#0072B2", width=2), symbol="t",
                                                   symbolBrush="#0072B2", connect="finite", name=name))
        return True

    # ---- commands ----------------------------------------------------------------------------------------
    def _request_sweep(self) -> None:
        selection = self.state.selection
        if selection is not None:
            self.sweepRequested.emit(selection.lane, selection.step)

    def _request_fanouts(self) -> None:
        selection = self.state.selection
        if selection is not None:
            self.fanoutsRequested.emit(selection.lane)
