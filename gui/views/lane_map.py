"""Lane × step map, a view of the RunState that stays readable with 10+ lanes and fan-outs: one row per lane, one
cell per step, coloured by the chosen token's probability (or entropy, or margin — a selector), with the
divergence (◆), critical point (▲) and branch (↳) marks on top. A fan-out lane's members are grouped under it,
collapsed to the lane's own row ("▸ ×16") until its name is clicked (or one of its members selected elsewhere).
Hover a cell for its token; click it to select the step everywhere. The line chart stays for a few chosen lanes."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from decoding.analysis.critical import critical_point
from decoding.records.trace import StepRecord
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.chart_rows import display_token
from gui.present.lane_html import BRANCH_GLYPH, MARK_COLOURS, mark_legend, probability_colour
from gui.state.run_state import RunState, Selection
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import DrawnWhenShown, RedrawScheduler

# metric -> (label, fixed colour range or None for the data's own range)
METRICS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "prob": (QT_TRANSLATE_NOOP("chart_data", "p(chosen)"), (0.0, 1.0)),
    "entropy": (QT_TRANSLATE_NOOP("chart_data", "entropy (nats)"), None),
    "margin": (QT_TRANSLATE_NOOP("chart_data", "margin top1−top2"), (0.0, 1.0)),
}
_EMPTY = float("nan")  # a step a lane did not reach


def map_rows(state: RunState, expanded: set[int] = frozenset()) -> list[tuple[int, int]]:
    """(lane index, member) of every row: each lane, then, for a fan-out lane whose key is in `expanded`, its
    other members under it."""
    return [(index, member) for index, lane in enumerate(state.lanes)
            for member in range(max(len(lane.members), 1) if lane.key in expanded else 1)]


def row_label(state: RunState, index: int, member: int, expanded: set[int]) -> str:
    """A row's name on the left axis: a lane, ▸/▾ and its member count for a fan-out lane, "#k" for a member."""
    if member:
        return f"#{member}"
    lane = state.lanes[index]
    if len(lane.members) <= 1:
        return lane.name
    return f"{'▾' if lane.key in expanded else '▸'} {lane.name} ×{len(lane.members)}"


def metric_grid(state: RunState, metric: str, rows: list[tuple[int, int]]) -> np.ndarray:
    """[rows, steps] values of the metric (NaN where a row has no step)."""
    traces = [state.lanes[index].member_trace(member) for index, member in rows]
    width = max((len(trace.steps) for trace in traces), default=0)
    grid = np.full((len(rows), width), _EMPTY)
    for row, trace in enumerate(traces):
        values = [getattr(record, metric) for record in trace.steps]
        grid[row, : len(values)] = values
    return grid


def colour_map(metric: str) -> pg.ColorMap:
    """p(chosen) in the text's own red → green; entropy and margin on a perceptual scale."""
    if metric == "prob":
        stops = np.linspace(0.0, 1.0, 11)
        return pg.ColorMap(stops, [pg.mkColor(probability_colour(p)) for p in stops])
    return pg.colormap.get("viridis")


class LaneStepMap(DrawnWhenShown, QWidget):
    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self._metric = "prob"
        self._grid = np.zeros((0, 0))
        self._rows: list[tuple[int, int]] = []
        self._expanded: set[int] = set()  # keys of the fan-out lanes whose members have rows of their own
        self._build_ui()
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed", "run_finished",
                     "marks_changed"):
            state.events.connect(name, self._on_change)
        state.events.connect("step_added", self._on_step_added)
        state.events.connect("member_step_added", lambda index, _member, record: self._on_step_added(index, record))
        state.events.connect("selection_changed", self._on_selection_changed)
        self.redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def set_metric(self, metric: str) -> None:
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r} is not one of {sorted(METRICS)}")
        self._combo.setCurrentIndex(list(METRICS).index(metric))

    def cell_value(self, row: int, step: int) -> float:
        """The value drawn in a cell (NaN for an empty one)."""
        self._draw_if_stale()
        return float(self._grid[row, step])

    def cell_colour(self, row: int, step: int) -> str:
        """The colour a cell is drawn in, as #rrggbb (what a user sees; tests read it back)."""
        value = self.cell_value(row, step)
        if math.isnan(value):
            return "#ffffff"
        low, high = self._levels()
        position = 0.0 if high <= low else (value - low) / (high - low)
        return colour_map(self._metric).map(min(max(position, 0.0), 1.0), mode="qcolor").name()

    def toggle_members(self, index: int) -> None:
        """Show or hide the members of fan-out lane `index` under it (a click on its name)."""
        key = self.state.lanes[index].key
        self._expanded ^= {key}
        self.redraw()

    def row_labels(self) -> list[str]:
        self._draw_if_stale()
        return [row_label(self.state, index, member, self._expanded) for index, member in self._rows]

    def rows(self) -> list[tuple[int, int]]:
        """(lane index, member) shown in each row."""
        self._draw_if_stale()
        return list(self._rows)

    def marks(self) -> dict[str, list[tuple[int, int]]]:
        """(row, step) of each mark drawn."""
        self._draw_if_stale()
        return {kind: [(int(y), int(x)) for x, y in zip(*item.getData(), strict=True)]
                for kind, item in self._marks.items()}

    def scene_pos_of(self, row: int, step: int) -> QPointF:
        self._draw_if_stale()
        return self._plot.vb.mapViewToScene(QPointF(step + 0.5, row + 0.5))

    def figure(self) -> Figure:
        self._draw_if_stale()
        label = translate("chart_data", METRICS[self._metric][0])
        return Figure(f"{label} of every lane at every step", self._legend.text(), self._view.scene(),
                      self._plot.sceneBoundingRect())

    # ---- state events ------------------------------------------------------------------------------------
    def _on_change(self, *_args) -> None:
        self.redraw()

    def _on_step_added(self, _index: int, _record: StepRecord) -> None:
        self._scheduler.mark("charts", ("lane_map",), self.redraw)

    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is not None and selection.member and self.state.lanes[selection.lane].key not in self._expanded:
            self._expanded.add(self.state.lanes[selection.lane].key)  # a member selected elsewhere: show its row
            self.redraw()
            return
        target = None if selection is None else (selection.lane, selection.member)
        if target not in self._rows:
            self._cursor.setData([], [])
        else:
            self._cursor.setData([selection.step + 0.5], [self._rows.index(target) + 0.5])

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._combo = QComboBox()
        self._combo.addItems([translate("chart_data", label) for label, _ in METRICS.values()])
        self._combo.setToolTip(translate("lane_map", "What a cell's colour shows"))
        self._combo.currentIndexChanged.connect(self._on_metric_changed)
        self._hover = QLabel(_hover_hint())
        self._hover.setWordWrap(True)
        self._hover.setStyleSheet("color:#555")
        header = QHBoxLayout()
        header.addWidget(self._combo)
        header.addWidget(self._hover, 1)
        self._legend = QLabel("&nbsp;&nbsp; ".join(mark_legend(short=True)))
        self._legend.setFont(style.ui_font(8.5))
        self._view = style.make_plot_widget()
        self._plot = self._view.getPlotItem()
        self._plot.invertY(True)
        self._plot.setMouseEnabled(x=True, y=False)
        self._plot.setLabel("bottom", translate("lane_map", "step"))
        self._image = pg.ImageItem(axisOrder="row-major")
        self._plot.addItem(self._image)
        self._bar = pg.ColorBarItem(interactive=False, width=12)
        self._bar.setImageItem(self._image, insert_in=self._plot)
        self._marks = {
            "divergence": self._scatter("d", 10, MARK_COLOURS["divergence"]),
            "critical": self._scatter("t1", 8, MARK_COLOURS["critical"]),
            "branch": self._scatter(style.glyph_symbol(BRANCH_GLYPH), 16, MARK_COLOURS["branch"]),
        }
        self._cursor = pg.ScatterPlotItem(symbol="s", size=16, brush=None, pen=pg.mkPen(style.FOREGROUND, width=2))
        self._cursor.setZValue(12)
        self._plot.addItem(self._cursor)
        self._view.scene().sigMouseClicked.connect(self._on_click)
        self._view.scene().sigMouseMoved.connect(self._on_hover)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self._legend)
        layout.addWidget(self._view, 1)

    def _scatter(self, symbol: str, size: int, colour: str) -> pg.ScatterPlotItem:
        item = pg.ScatterPlotItem(symbol=symbol, size=size, brush=pg.mkBrush(colour),
                                  pen=pg.mkPen(style.FOREGROUND, width=1))
        item.setZValue(10)
        self._plot.addItem(item)
        return item

    # ---- drawing -----------------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._hover.setText(_hover_hint())  # what was under the mouse may be gone or different now
        keys = {lane.key for lane in self.state.lanes}
        self._expanded &= keys  # removed lanes
        self._rows = map_rows(self.state, self._expanded)
        self._grid = metric_grid(self.state, self._metric, self._rows)
        rows, steps = self._grid.shape
        self._image.setColorMap(colour_map(self._metric))
        if rows and steps:
            self._image.setImage(np.nan_to_num(self._grid, nan=np.nan), levels=self._levels())
            self._image.setRect(0, 0, steps, rows)
        else:
            self._image.clear()
        self._bar.setColorMap(colour_map(self._metric))
        self._bar.setLevels(self._levels())
        self._bar.axis.setLabel(translate("chart_data", METRICS[self._metric][0]))
        ticks = [(row + 0.5, row_label(self.state, index, member, self._expanded))
                 for row, (index, member) in enumerate(self._rows)]
        self._plot.getAxis("left").setTicks([ticks])
        self._plot.setYRange(0, max(rows, 1), padding=0.02)
        self._plot.setXRange(0, max(steps, 1), padding=0.02)
        self._draw_marks()
        self._on_selection_changed(self.state.selection)

    def _levels(self) -> tuple[float, float]:
        fixed = METRICS[self._metric][1]
        if fixed is not None:
            return fixed
        finite = self._grid[np.isfinite(self._grid)]
        return (0.0, float(finite.max()) if finite.size and finite.max() > 0 else 1.0)

    def _draw_marks(self) -> None:
        state = self.state
        found: dict[str, list[tuple[int, int]]] = {kind: [] for kind in self._marks}
        for row, (index, member) in enumerate(self._rows):
            if member:  # a fan-out member: its critical points (where it parts is the Fan-out tab's job)
                trace = state.lanes[index].member_trace(member)
                found["critical"] += [(row, r.step) for r in trace.steps if critical_point(r, state.critical)]
                continue
            branch = state.branch_step(index)
            divergence = state.divergence_step(index)
            if branch is not None:
                found["branch"].append((row, branch))
            elif divergence is not None:
                found["divergence"].append((row, divergence))
            found["critical"] += [(row, step) for step, mark in enumerate(state.marks(index)) if mark.critical]
        for kind, cells in found.items():
            offset = {"critical": (0.78, 0.25)}.get(kind, (0.5, 0.5))  # ▲ in a corner: the others stay readable
            self._marks[kind].setData([s + offset[0] for _, s in cells], [r + offset[1] for r, _ in cells])

    # ---- interaction -------------------------------------------------------------------------------------
    def _on_metric_changed(self, index: int) -> None:
        self._metric = list(METRICS)[index]
        self.redraw()

    def _cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        if not self._plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        point = self._plot.vb.mapSceneToView(scene_pos)
        row, step = math.floor(point.y()), math.floor(point.x())
        if 0 <= row < self._grid.shape[0] and 0 <= step < self._grid.shape[1] and not math.isnan(self._grid[row, step]):
            return row, step
        return None

    def _on_click(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        lane = self._lane_named_at(event.scenePos())
        if lane is not None:
            self.toggle_members(lane)
            return
        cell = self._cell_at(event.scenePos())
        if cell is not None:
            index, member = self._rows[cell[0]]
            self.state.select(index, cell[1], member)

    def _lane_named_at(self, scene_pos: QPointF) -> int | None:
        """The fan-out lane whose name (on the left axis) is at a scene position."""
        axis = self._plot.getAxis("left")
        if not axis.sceneBoundingRect().contains(scene_pos):
            return None
        row = math.floor(self._plot.vb.mapSceneToView(scene_pos).y())
        if not 0 <= row < len(self._rows):
            return None
        index, member = self._rows[row]
        return index if member == 0 and len(self.state.lanes[index].members) > 1 else None

    def _on_hover(self, scene_pos: QPointF) -> None:
        cell = self._cell_at(scene_pos)
        if cell is None:
            self._hover.setText(_hover_hint())
            return
        row, step = cell
        index, member = self._rows[row]
        trace = self.state.lanes[index].member_trace(member)
        record = trace.steps[step]
        hover = translate("lane_map", "{name} · step {step} · “{token}” · {metric} = {value:.4f}")
        metric = translate("chart_data", METRICS[self._metric][0])
        self._hover.setText(hover.format(name=trace.name, step=step, token=display_token(record.token_text, 20),
                                         metric=metric, value=self._grid[row, step]))


def _hover_hint() -> str:
    return translate("lane_map", "hover a cell for its token · click selects the step · click a fan-out's name: its "
                                 "members")
