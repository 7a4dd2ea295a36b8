"""Timeline, a view of the RunState: one curve per lane over the steps (chosen-token probability, entropy or
top-1/top-2 margin) in the lane's own colour, overlaid in one plot or (from six lanes, or when chosen) as small
multiples: one strip per lane on the shared step axis, named on the left. Divergence points (◆), critical
points (▲) and branch points (↳) are marked, with a cursor on the selected step, click-to-select and Left/Right
scrubbing. Clicking a lane in the legend hides or shows its line; the wheel zooms the step axis. Items are
created once; streaming steps only appends to per-lane buffers and re-sets one curve."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QKeyEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from decoding.records.trace import StepRecord
from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import TIMELINE_METRICS, display_token, metric_label, metric_values
from gui.present.lane_html import BRANCH_GLYPH, MARK_COLOURS, mark_legend
from gui.state.run_state import RunState, Selection
from gui.state.view_state import STRIPS_FROM, TIMELINE_LAYOUTS, TimelineViewState
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import RedrawScheduler

FADED_ALPHA = 0.3  # the other lanes' curves while one is selected
_BOUNDED = {"prob", "prob_raw", "margin", "margin_raw"}  # metrics that live in [0, 1]


class _LaneSeries:
    """One lane's records and the current metric's values in a growing buffer (amortised O(1) appends)."""

    def __init__(self, key: int, curve: pg.PlotDataItem) -> None:
        self.key = key
        self.curve = curve
        self.records: list[StepRecord] = []
        self.values = np.zeros(64)

    def append(self, records: Sequence[StepRecord], metric: str) -> None:
        start = len(self.records)
        self.records.extend(records)
        if len(self.records) > len(self.values):
            self.values = np.resize(self.values, max(len(self.records), 2 * len(self.values)))
        self.values[start : len(self.records)] = metric_values(list(records), metric)

    def shows(self, records: Sequence[StepRecord]) -> bool:
        """Whether this series already holds exactly these record objects (its values are then current)."""
        return len(records) == len(self.records) and all(a is b for a, b in zip(records, self.records, strict=True))

    def recompute(self, metric: str) -> None:
        self.values = np.zeros(max(64, len(self.records)))
        self.values[: len(self.records)] = metric_values(self.records, metric)

    def refresh_curve(self, band: _Band) -> None:
        n = len(self.records)
        self.curve.setData(np.arange(n, dtype=float), band.place(self.values[:n]))


class _Band:
    """Where a lane's values are drawn: as they are (overlaid), or scaled into the lane's own strip."""

    HEIGHT = 0.8  # of a strip's unit height: the rest separates it from the next

    def __init__(self, base: float = 0.0, factor: float = 1.0) -> None:
        self.base, self.factor = base, factor

    def place(self, values: np.ndarray) -> np.ndarray:
        return self.base + np.asarray(values, dtype=float) * self.factor


OVERLAID = _Band()


def _style_curve(curve: pg.PlotDataItem, lane, emphasised: bool, faded: bool) -> None:
    colour = QColor(style.lane_color(lane.colour))
    if faded:
        colour.setAlphaF(FADED_ALPHA)
    curve.setPen(pg.mkPen(colour, width=3.5 if emphasised else 2, style=style.lane_pen_style(lane.colour)))
    curve.setSymbolBrush(colour)
    curve.setZValue(2 if emphasised else 0)


class Timeline(QWidget):
    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self._metric = "prob"
        self._layout = "auto"  # TIMELINE_LAYOUTS
        self._strip_scale = 1.0  # the value at the top of every strip
        self._series: list[_LaneSeries] = []
        self._divergences: list[tuple[int, int]] = []
        self._criticals: list[tuple[int, int]] = []
        self._branches: list[tuple[int, int]] = []  # where a branched lane took its token
        self._selected: tuple[int, int] | None = None
        self._hovered: tuple[int, int] | None = None
        self._streaming = False  # see begin_stream
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._build_ui()
        events = state.events
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved"):
            events.connect(name, self._on_lanes_event)
        events.connect("lane_changed", self._on_lane_changed)
        events.connect("step_added", self._on_step_added)
        events.connect("run_started", self._on_run_started)
        events.connect("run_finished", self._on_run_finished)
        events.connect("selection_changed", self._on_selection_changed)
        events.connect("marks_changed", self._set_markers)
        self.set_lanes()

    # ---- state events ------------------------------------------------------------------------------------
    def _on_lanes_event(self, *_args) -> None:
        self.set_lanes()

    def _on_lane_changed(self, index: int) -> None:
        self._series[index].curve.setVisible(not self.state.lanes[index].hidden)
        self._update_legend()

    def _on_step_added(self, index: int, _record: StepRecord) -> None:
        key = self.state.lanes[index].key
        self._scheduler.mark("charts", ("timeline", key), lambda: self._sync_key(key))

    def _on_run_started(self, _job) -> None:
        self.begin_stream(self.state.run_limit)

    def _on_run_finished(self) -> None:
        self.end_stream()
        for index in range(len(self._series)):
            self._sync(index)
        self._set_markers()

    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is None:
            self._clear_selected()
        else:
            self.set_selected(selection.lane, selection.step)

    # ---- public API --------------------------------------------------------------------------------------
    def set_lanes(self) -> None:
        """Redraw every lane of the model (each in its own colour, every step recorded so far). The existing
        curves are reused (making plot items is most of the cost) and one already showing exactly a lane's
        records (a finished run's streamed lanes) is left as it is."""
        self._clear_selected()
        lanes = self.state.lanes
        previous = {series.key: series for series in self._series}
        for series in self._series:
            if series.key not in {lane.key for lane in lanes}:
                self._plot.removeItem(series.curve)
        self._series = []
        for lane in lanes:
            self._series.append(self._series_for(lane, previous.get(lane.key)))
        if self.strips():
            self._redraw_curves()  # a strip's place follows the lane's index and the number of lanes
        self._apply_axis()
        self._update_legend()
        self._set_markers()
        if self.state.selection is not None:
            self.set_selected(self.state.selection.lane, self.state.selection.step)

    def _series_for(self, lane, previous: _LaneSeries | None) -> _LaneSeries:
        if previous is not None and previous.shows(lane.trace.steps):
            series = previous
        else:
            curve = previous.curve if previous is not None else self._new_curve()
            series = _LaneSeries(lane.key, curve)
            series.append(lane.trace.steps, self._metric)
            series.refresh_curve(OVERLAID)
        series.curve.setVisible(not lane.hidden)
        _style_curve(series.curve, lane, emphasised=False, faded=False)  # set_lanes selects again after
        return series

    def _new_curve(self) -> pg.PlotDataItem:
        curve = pg.PlotDataItem([], [], pen=pg.mkPen("k", width=2), symbol=None if self._streaming else "o",
                                symbolSize=5, symbolPen=None)
        self._plot.addItem(curve)
        return curve

    def _sync_key(self, key: int) -> None:
        try:
            self._sync(self.state.index_of(key))
        except KeyError:
            return

    def _sync(self, index: int) -> None:
        """Bring a lane's curve up to its recorded steps: append what is new, or redo it if earlier steps were
        replaced (a streaming beam lane's best path changed)."""
        series, steps = self._series[index], self.state.lanes[index].trace.steps
        done = len(series.records)
        if done <= len(steps) and all(a is b for a, b in zip(series.records, steps[:done], strict=True)):
            if done == len(steps):
                return
            series.append(steps[done:], self._metric)
        else:
            series.records = []
            series.append(steps, self._metric)
        if self.strips() and self._strip_scale != self._scale_of_strips():
            self._redraw_curves()  # a new highest value: every strip is scaled to it
        else:
            series.refresh_curve(self._band(index))
        if self._divergences or self._criticals or self._branches:
            self._update_markers()

    def begin_stream(self, max_steps: int) -> None:
        """While a run streams: the step axis is fixed to the run's length and points have no symbols, so a
        streamed step neither re-ticks the axis nor re-renders every symbol (a third of the repaint cost).
        end_stream() restores both."""
        self._streaming = True
        self._plot.disableAutoRange(axis="x")
        self._plot.setXRange(-0.5, max(max_steps, 1) - 0.5, padding=0.02)
        for series in self._series:
            series.curve.setSymbol(None)

    def end_stream(self) -> None:
        self._streaming = False
        for series in self._series:
            series.curve.setSymbol("o")
        self._plot.enableAutoRange(axis="x")

    def _set_markers(self) -> None:
        """◆ where a lane first departs from the reference (or its branch point ↳), ▲ critical points."""
        state = self.state
        self._divergences, self._criticals, self._branches = [], [], []
        for index in range(len(state.lanes)):
            branch = state.branch_step(index)
            divergence = state.divergence_step(index)
            if branch is not None:
                self._branches.append((index, branch))
            elif divergence is not None:
                self._divergences.append((index, divergence))
            self._criticals += [(index, i) for i, m in enumerate(state.marks(index)) if m.critical]
        self._update_markers()

    def markers(self) -> dict[str, list[tuple[int, int]]]:
        return {"divergence": list(self._divergences), "critical": list(self._criticals),
                "branch": list(self._branches)}

    def current_metric(self) -> str:
        return self._metric

    def view_state(self) -> TimelineViewState:
        return TimelineViewState(self._metric, self._layout)

    def set_view_state(self, state: TimelineViewState) -> None:
        self.set_metric(state.metric)
        self.set_layout(state.layout)

    def set_layout(self, layout: str) -> None:
        """"overlay", "strips" or "auto" (strips from STRIPS_FROM lanes)."""
        if layout not in TIMELINE_LAYOUTS:
            raise ValueError(f"layout={layout!r} is not one of {TIMELINE_LAYOUTS}")
        self._layout_combo.setCurrentIndex(TIMELINE_LAYOUTS.index(layout))

    def strips(self) -> bool:
        """Whether each lane is drawn in a strip of its own."""
        return self._layout == "strips" or (self._layout == "auto" and len(self.state.lanes) >= STRIPS_FROM)

    def _on_layout_changed(self, index: int) -> None:
        self._layout = TIMELINE_LAYOUTS[index]
        self._redraw_curves()
        self._apply_axis()

    def _scale_of_strips(self) -> float:
        """The value at a strip's top: 1 for metrics in [0, 1], else the highest value of any lane."""
        if self._metric in _BOUNDED:
            return 1.0
        highest = max((float(series.values[: len(series.records)].max(initial=0.0)) for series in self._series),
                      default=0.0)
        return highest if highest > 0 else 1.0

    def _band(self, index: int) -> _Band:
        if not self.strips():
            return OVERLAID
        return _Band(base=len(self._series) - 1 - index, factor=_Band.HEIGHT / self._strip_scale)

    def _redraw_curves(self) -> None:
        self._strip_scale = self._scale_of_strips()
        for index, series in enumerate(self._series):
            series.refresh_curve(self._band(index))
        self._update_markers()

    def set_metric(self, metric: str) -> None:
        if metric not in TIMELINE_METRICS:
            raise ValueError(f"metric={metric!r} is not one of {sorted(TIMELINE_METRICS)}")
        self._combo.setCurrentIndex(list(TIMELINE_METRICS).index(metric))

    def selected(self) -> tuple[int, int] | None:
        return self._selected

    def set_selected(self, lane_index: int, step: int) -> None:
        """Move the cursor to a step selected elsewhere."""
        previous = self._selected[0] if self._selected else None
        self._selected = (lane_index, step)
        if previous != lane_index:
            self._emphasise(lane_index)
        self._cursor.setValue(step)
        self._cursor.setVisible(True)
        self._update_selected_point()

    def _clear_selected(self) -> None:
        if self._selected:
            self._emphasise(None)
        self._selected = None
        self._cursor.setVisible(False)
        self._update_selected_point()

    def _emphasise(self, lane_index: int | None) -> None:
        """The selected lane's curve is drawn thicker and on top, the others faded behind it: five lanes of
        p(chosen) zig-zag across one another, and the selected one must read through them."""
        for index, (series, lane) in enumerate(zip(self._series, self.state.lanes, strict=False)):
            _style_curve(series.curve, lane, emphasised=index == lane_index, faded=lane_index not in (None, index))

    def curve_data(self, lane_index: int) -> tuple[np.ndarray, np.ndarray]:
        return self._series[lane_index].curve.getData()

    def scene_pos_of(self, lane_index: int, step: int) -> QPointF:
        """Where a lane's point at a step is drawn, in scene coordinates (tests click there)."""
        value = float(self._band(lane_index).place(self._series[lane_index].values[step]))
        return self._plot.vb.mapViewToScene(QPointF(step, value))

    def export_png(self, path: str | Path) -> Path:
        return style.export_widget_png(self, path)

    def figure(self) -> Figure:
        """The plot with its axes, a title and the lanes' legend, for export (no controls)."""
        keys = [f'{style.lane_key(lane.colour)}&nbsp;{html.escape(lane.name)}'
                for lane in self.state.lanes if lane.trace.steps and not lane.hidden]
        keys += mark_legend(short=True)
        title = translate("timeline", "{metric} per step").format(metric=metric_label(self._metric))
        return Figure(title, "&nbsp;&nbsp; ".join(keys), self._view.scene(), self._plot.sceneBoundingRect())

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._combo = QComboBox()
        self._combo.addItems([metric_label(metric) for metric in TIMELINE_METRICS])
        self._combo.currentIndexChanged.connect(self._on_metric_changed)
        self._layout_combo = QComboBox()
        self._layout_combo.addItems([translate("timeline", "auto: strips from {n} lanes").format(n=STRIPS_FROM),
                                     translate("timeline", "lines overlaid"),
                                     translate("timeline", "one strip per lane")])
        self._layout_combo.setToolTip(translate("timeline", "Draw every lane in one plot, or each lane in a strip "
                                                            "of its own on the shared step axis"))
        self._layout_combo.currentIndexChanged.connect(self._on_layout_changed)
        self._hover = QLabel(translate("timeline", "click a point to select its step · ←/→ move through steps"))
        self._hover.setStyleSheet(f"color: {colours.current().muted}")
        # the hover line gives way (cut) before the combo boxes do: a cut "auto: strips from (" named nothing
        self._hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._zoom_reset = QToolButton()
        self._zoom_reset.setText(translate("timeline", "all steps"))
        self._zoom_reset.setToolTip(translate("timeline", "Show every step (the mouse wheel zooms the step axis, "
                                                          "dragging pans it)"))
        self._zoom_reset.clicked.connect(self.reset_zoom)
        header = QHBoxLayout()
        header.addWidget(self._combo)
        header.addWidget(self._layout_combo)
        header.addWidget(self._hover, 1)
        header.addWidget(self._zoom_reset)
        self._legend = QLabel()
        self._legend.setWordWrap(True)
        self._legend.setFont(style.ui_font(8.5))
        self._legend.setToolTip(translate("timeline", "Click a lane to hide or show its line"))
        self._legend.linkActivated.connect(self._on_legend_link)

        self._view = style.make_plot_widget()
        self._view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._plot = self._view.getPlotItem()
        self._plot.setMouseEnabled(x=True, y=False)
        # No grid: pyqtgraph paints it into the axes at every repaint, most of the cost of a streamed step.
        self._plot.setLabel("bottom", translate("timeline", "step"))
        self._create_items()
        self._apply_axis()
        self._view.scene().sigMouseClicked.connect(self._on_click)
        self._view.scene().sigMouseMoved.connect(self._on_hover)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self._legend)
        layout.addWidget(self._view, 1)

    def _create_items(self) -> None:
        divergence, critical = MARK_COLOURS["divergence"], MARK_COLOURS["critical"]
        self._divergence_marks = pg.ScatterPlotItem(
            symbol="d", size=11, brush=pg.mkBrush(divergence), pen=pg.mkPen(style.FOREGROUND, width=1)
        )
        self._critical_marks = pg.ScatterPlotItem(
            symbol="t1", size=9, brush=pg.mkBrush(critical), pen=pg.mkPen(style.FOREGROUND, width=1)
        )
        self._branch_marks = pg.ScatterPlotItem(
            symbol=style.glyph_symbol(BRANCH_GLYPH), size=16, brush=pg.mkBrush(MARK_COLOURS["branch"]),
            pen=pg.mkPen(style.FOREGROUND)
        )
        self._selected_mark = pg.ScatterPlotItem(
            symbol="o", size=15, brush=None, pen=pg.mkPen(style.FOREGROUND, width=2)
        )
        self._cursor = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen(style.FOREGROUND, width=1, style=Qt.PenStyle.DashLine)
        )
        self._cursor.setVisible(False)
        self._strip_lines: list[pg.InfiniteLine] = []
        for item in (self._divergence_marks, self._critical_marks, self._branch_marks, self._selected_mark):
            item.setZValue(10)
            self._plot.addItem(item)
        self._plot.addItem(self._cursor, ignoreBounds=True)

    def _update_legend(self) -> None:
        """Lanes (click one to hide or show its line) and the marks."""
        keys = []
        hidden_key = f'<span style="color:{colours.current().hidden_lane}">━━</span>'
        for lane in self.state.lanes:
            name = f"<s>{lane.name}</s>" if lane.hidden else lane.name
            keys.append(f'<a href="lane:{lane.key}" style="text-decoration:none;color:{style.FOREGROUND}">'
                        f'{hidden_key if lane.hidden else style.lane_key(lane.colour)}&nbsp;{name}</a>')
        keys += mark_legend(short=True)
        self._legend.setText("&nbsp;&nbsp; ".join(keys))

    def _on_legend_link(self, link: str) -> None:
        key = int(link.split(":", 1)[1])
        try:
            index = self.state.index_of(key)
        except KeyError:
            return
        self.state.set_hidden(index, not self.state.lanes[index].hidden)

    def reset_zoom(self) -> None:
        self._plot.enableAutoRange(axis="x")

    def _on_metric_changed(self, index: int) -> None:
        self._metric = list(TIMELINE_METRICS)[index]
        for series in self._series:
            series.recompute(self._metric)
        self._redraw_curves()
        self._apply_axis()
        self._show_hover()

    def _apply_axis(self) -> None:
        """Overlaid: the metric's own scale. Strips: each lane's name at its strip, the scale in the axis title,
        a dotted baseline under every strip."""
        axis = self._plot.getAxis("left")
        if not self.strips():
            axis.setTicks(None)
            self._set_strip_lines(0)
            self._plot.setLabel("left", metric_label(self._metric))
            if self._metric in _BOUNDED:
                self._plot.setYRange(0, 1, padding=0.04)
            else:
                self._plot.enableAutoRange(axis="y")
            return
        count = len(self.state.lanes)
        axis.setTicks([[(count - 1 - index + _Band.HEIGHT / 2, lane.name)
                        for index, lane in enumerate(self.state.lanes)], []])
        label = translate("timeline", "{metric} 0–{top:.3g}")  # each strip's range
        self._plot.setLabel("left", label.format(metric=metric_label(self._metric), top=self._strip_scale))
        self._set_strip_lines(count)
        self._plot.setYRange(-0.1, max(count, 1), padding=0)

    def _set_strip_lines(self, count: int) -> None:
        """A dotted baseline under each of `count` strips."""
        while len(self._strip_lines) > count:
            self._plot.removeItem(self._strip_lines.pop())
        pen = pg.mkPen(colours.current().faint, width=1, style=Qt.PenStyle.DotLine)
        while len(self._strip_lines) < count:
            line = pg.InfiniteLine(pos=len(self._strip_lines), angle=0, movable=False, pen=pen)
            self._plot.addItem(line, ignoreBounds=True)
            self._strip_lines.append(line)

    def _points(self, pairs: list[tuple[int, int]]) -> tuple[list[float], list[float]]:
        xs, ys = [], []
        for lane, step in pairs:
            if 0 <= lane < len(self._series) and 0 <= step < len(self._series[lane].records):
                xs.append(step)
                ys.append(float(self._band(lane).place(self._series[lane].values[step])))
        return xs, ys

    def _update_markers(self) -> None:
        self._divergence_marks.setData(*self._points(self._divergences))
        self._critical_marks.setData(*self._points(self._criticals))
        self._branch_marks.setData(*self._points(self._branches))
        self._update_selected_point()

    def _update_selected_point(self) -> None:
        self._selected_mark.setData(*self._points([self._selected] if self._selected else []))

    # ---- interaction -------------------------------------------------------------------------------------
    def _nearest(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """The lane point nearest to a scene position at the step under it (by pixel distance)."""
        if not self._plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        step = round(self._plot.vb.mapSceneToView(scene_pos).x())
        best, best_distance = None, float("inf")
        for lane, series in enumerate(self._series):
            if 0 <= step < len(series.records) and series.curve.isVisible():
                distance = abs(self.scene_pos_of(lane, step).y() - scene_pos.y())
                if distance < best_distance:
                    best, best_distance = (lane, step), distance
        return best

    def _on_click(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        self.setFocus(Qt.FocusReason.MouseFocusReason)
        hit = self._nearest(event.scenePos())
        if hit is not None:
            self._select(*hit)

    def _on_hover(self, scene_pos: QPointF) -> None:
        hit = self._nearest(scene_pos)
        if hit is not None:
            self._hovered = hit
            self._show_hover()

    def _show_hover(self) -> None:
        """The hovered point's readout, in the current metric."""
        hit = self._hovered
        if hit is None or not 0 <= hit[0] < len(self._series) or hit[1] >= len(self._series[hit[0]].records):
            self._hover.setText(translate("timeline", "click a point to select its step · ←/→ move through steps"))
            return
        lane, step = hit
        record = self._series[lane].records[step]
        value = self._series[lane].values[step]
        hover = translate("timeline", "{name} · step {step} · “{token}” · {metric} = {value:.4f}")
        self._hover.setText(hover.format(name=self.state.lanes[lane].name, step=step,
                                         token=display_token(record.token_text, 20),
                                         metric=metric_label(self._metric), value=value))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        moves = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}
        if event.key() not in moves and event.key() not in (Qt.Key.Key_Home, Qt.Key.Key_End):
            super().keyPressEvent(event)
            return
        lane, step = self._selected or (0, -1)
        if not 0 <= lane < len(self._series) or not self._series[lane].records:
            return
        last = len(self._series[lane].records) - 1
        target = {Qt.Key.Key_Home: 0, Qt.Key.Key_End: last}.get(event.key(), step + moves.get(event.key(), 0))
        self._select(lane, min(max(target, 0), last))
        event.accept()

    def _select(self, lane: int, step: int) -> None:
        self.state.select(lane, step)
