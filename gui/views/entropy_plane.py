"""Entropy × varentropy, a view of the RunState: every step of every lane as a point on the plane of its
distribution's entropy and varentropy (raw, as the adaptive strategy decides by, or after the lane's
processors), in the lane's colour, both axes logarithmic. The adaptive strategy's corners are shaded and the four
regimes of entropix-style sampling named; an adaptive lane's steps show its decision by their symbol (■ argmax,
● sample, ▲ widen). Click a point to select its step; the selected step is ringed."""

from __future__ import annotations

import html
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox, QGraphicsRectItem, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from decoding.records.trace import StepRecord
from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import decision_name
from gui.present.entropy_plane import (
    CORNERS,
    REGIMES,
    TICKS,
    PlanePoint,
    log_position,
    plane_points,
    regime_text,
    tick_text,
    two_lines,
)
from gui.state.run_state import RunState, Selection
from gui.state.view_state import EntropyPlaneViewState
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import DrawnWhenShown, RedrawScheduler

SYMBOLS = {None: "o", "sample": "o", "argmax": "s", "widen": "t1"}  # t1: a triangle pointing up
_GLYPHS = {"argmax": "■", "sample": "●", "widen": "▲"}


class EntropyPlane(DrawnWhenShown, QWidget):
    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self._raw = True
        self._points: list[list[PlanePoint]] = []  # per lane
        self._build_ui()
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed", "run_finished"):
            state.events.connect(name, self._on_lanes_event)
        state.events.connect("step_added", self._on_step_added)
        state.events.connect("selection_changed", self._on_selection_changed)

    # ---- state events ------------------------------------------------------------------------------------
    def _on_lanes_event(self, *_args) -> None:
        self.redraw()

    def _on_step_added(self, _index: int, _record: StepRecord) -> None:
        self._scheduler.mark("charts", "entropy_plane", self.redraw)

    def _on_selection_changed(self, _selection: Selection | None) -> None:
        self._draw_selected()

    # ---- public API --------------------------------------------------------------------------------------
    def view_state(self) -> EntropyPlaneViewState:
        return EntropyPlaneViewState(self._raw)

    def set_view_state(self, state: EntropyPlaneViewState) -> None:
        self._distribution.setCurrentIndex(0 if state.raw else 1)

    def points(self, lane_index: int) -> list[PlanePoint]:
        """A lane's points as drawn."""
        self._draw_if_stale()
        return list(self._points[lane_index])

    def scene_pos_of(self, lane_index: int, step: int) -> QPointF:
        """Where a lane's step is drawn, in scene coordinates (tests click there)."""
        point = next(p for p in self.points(lane_index) if p.step == step)
        return self._plot.vb.mapViewToScene(QPointF(*point.xy))

    def selected_ring(self) -> tuple[float, float] | None:
        xs, ys = self._ring.getData()
        return (float(xs[0]), float(ys[0])) if xs is not None and len(xs) else None

    def export_png(self, path: str | Path) -> Path:
        return style.export_widget_png(self, path)

    def figure(self) -> Figure | None:
        self._draw_if_stale()
        if not any(self._points):
            return None
        return Figure(self._title(), self._legend.text(), self._view.scene(), self._plot.sceneBoundingRect())

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._distribution = QComboBox()
        self._distribution.addItems([translate("entropy_plane", "raw distribution (what adaptive decides by)"),
                                     translate("entropy_plane", "after the lane's processors")])
        self._distribution.currentIndexChanged.connect(self._on_distribution_changed)
        self._hint = QLabel(translate("entropy_plane", "click a point to select its step"))
        self._hint.setStyleSheet(f"color: {colours.current().muted}")
        header = QHBoxLayout()
        header.addWidget(self._distribution)
        header.addWidget(self._hint, 1)
        self._legend = QLabel()
        self._legend.setWordWrap(True)
        self._legend.setFont(style.ui_font(8.5))
        self._view = style.make_plot_widget()
        self._plot = self._view.getPlotItem()
        self._plot.setMenuEnabled(False)
        self._plot.setLabel("bottom", translate("entropy_plane", "entropy H (nats)"))
        self._plot.setLabel("left", translate("entropy_plane", "varentropy V (nats²)"))
        ticks = [[(log_position(value), tick_text(value)) for value in TICKS]]
        for axis in ("bottom", "left"):
            self._plot.getAxis(axis).setTicks(ticks)
        self._plot.setXRange(log_position(TICKS[0]), log_position(TICKS[-1]), padding=0.02)
        self._plot.setYRange(log_position(TICKS[0]), log_position(TICKS[-1]), padding=0.02)
        self._plot.setMouseEnabled(x=False, y=False)
        self._plot.hideButtons()
        self._add_regimes()
        self._scatters: list[pg.ScatterPlotItem] = []
        self._ring = pg.ScatterPlotItem(symbol="o", size=17, brush=None, pen=pg.mkPen(style.FOREGROUND, width=2))
        self._ring.setZValue(10)
        self._plot.addItem(self._ring)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self._legend)
        layout.addWidget(self._view, 1)

    def _add_regimes(self) -> None:
        """The adaptive strategy's two corners shaded, the thresholds dashed, each regime named."""
        self.regime_labels: list[pg.TextItem] = []
        shade = QColor(style.FOREGROUND)
        shade.setAlphaF(0.07)
        for (low_h, high_h), (low_v, high_v) in CORNERS.values():
            x0, y0 = log_position(low_h), log_position(low_v)
            corner = QGraphicsRectItem(QRectF(x0, y0, log_position(high_h) - x0, log_position(high_v) - y0))
            corner.setBrush(shade)
            corner.setPen(pg.mkPen(None))
            self._plot.addItem(corner, ignoreBounds=True)
        dash = pg.mkPen(colours.current().muted, width=1, style=Qt.PenStyle.DashLine)
        (_, low_entropy), (_, low_varentropy) = CORNERS["sure"]
        (high_entropy, _), (high_varentropy, _) = CORNERS["lost"]
        thresholds = [(low_entropy, 90), (high_entropy, 90), (low_varentropy, 0), (high_varentropy, 0)]
        for value, angle in thresholds:
            self._plot.addItem(pg.InfiniteLine(log_position(value), angle=angle, pen=dash), ignoreBounds=True)
        for key, (_, (x, y), end) in REGIMES.items():
            # the corner's name over its words, on two lines: side by side on one line the top two overlapped
            label = pg.TextItem(two_lines(regime_text(key)), color=colours.current().muted, anchor=(end, 0.5))
            label.setFont(style.ui_font(8))
            label.setPos(x, y)
            self._plot.addItem(label, ignoreBounds=True)
            self.regime_labels.append(label)

    # ---- drawing -----------------------------------------------------------------------------------------
    def _draw(self) -> None:
        lanes = self.state.lanes
        while len(self._scatters) < len(lanes):
            scatter = pg.ScatterPlotItem(size=8, hoverable=True)
            scatter.sigClicked.connect(self._on_points_clicked)
            self._plot.addItem(scatter)
            self._scatters.append(scatter)
        self._points = [[] if lane.hidden else plane_points(lane.trace.steps, self._raw) for lane in lanes]
        for index, (lane, points) in enumerate(zip(lanes, self._points, strict=True)):
            colour = QColor(style.lane_color(lane.colour))
            self._scatters[index].setData(
                pos=[p.xy for p in points], data=[(index, p.step) for p in points],
                symbol=[SYMBOLS[p.decision] for p in points], brush=pg.mkBrush(colour),
                pen=pg.mkPen(colour.darker(140), width=1), tip=self._tip(lane.name, points),
            )
        for scatter in self._scatters[len(lanes):]:  # lanes removed since
            scatter.setData(pos=[])
        self._legend.setText(self._legend_html())
        self._draw_selected()

    def _tip(self, name: str, points: list[PlanePoint]):
        by_step = {p.step: p for p in points}

        def tip(x: float, y: float, data) -> str:
            point = by_step[data[1]]
            text = translate("entropy_plane", "{lane} · step {step}: H {entropy} nats, V {varentropy} nats²").format(
                lane=name, step=point.step, entropy=f"{point.entropy:.3f}", varentropy=f"{point.varentropy:.3f}")
            return text + (f" · {decision_name(point.decision)}" if point.decision else "")

        return tip

    def _legend_html(self) -> str:
        keys = [f'<span style="color:{style.lane_color_hex(lane.colour)}">●</span>&nbsp;{html.escape(lane.name)}'
                for lane, points in zip(self.state.lanes, self._points, strict=True) if points]
        if any(p.decision for points in self._points for p in points):
            keys += [f"{glyph}&nbsp;{html.escape(decision_name(decision))}" for decision, glyph in _GLYPHS.items()]
        return "&nbsp;&nbsp; ".join(keys)

    def _draw_selected(self) -> None:
        selection = self.state.selection
        points = self._points[selection.lane] if selection and selection.lane < len(self._points) else []
        point = next((p for p in points if p.step == selection.step), None) if selection else None
        self._ring.setData(pos=[point.xy] if point else [])

    def _title(self) -> str:
        which = (translate("entropy_plane", "raw") if self._raw else
                 translate("entropy_plane", "after the lane's processors"))
        return translate("entropy_plane", "Entropy × varentropy per step ({which})").format(which=which)

    # ---- interaction -------------------------------------------------------------------------------------
    def _on_distribution_changed(self, index: int) -> None:
        self._raw = index == 0
        self.redraw()

    def _on_points_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            lane, step = points[0].data()
            self.state.select(lane, step)
