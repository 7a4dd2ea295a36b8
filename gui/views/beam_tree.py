"""Beam tree: a beam lane's hypotheses over the steps (x = step, y = beam slot). Kept beams are filled dots,
pruned candidates small hollow dots on dashed edges, finished hypotheses stars; the best sequence's path is
drawn bold. Hover a node for its token and score; click it to select its step. Steps stream in
incrementally."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from decoding.records.trace import LaneTrace, StepRecord
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.chart_rows import BeamNode, beam_node_token, best_path, step_nodes
from gui.state.run_state import RunState, Selection
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import RedrawScheduler

_KIND_STYLE = {  # symbol, size, brush, pen
    "kept": ("o", 11, "#0072B2", "#FFFFFF"),
    "pruned": ("o", 7, "#FFFFFF", "#9A9A9A"),
    "finished": ("star", 15, "#009E73", "#FFFFFF"),
}
_KIND_NAMES = (QT_TRANSLATE_NOOP("beam_tree", "kept"), QT_TRANSLATE_NOOP("beam_tree", "pruned"),
               QT_TRANSLATE_NOOP("beam_tree", "finished"))  # a node's kind, as its tooltip names it
_BEST = "#E69F00"
_VISIBLE_STEPS = 12  # steps shown at once; wheel zooms and drag pans along the steps
_LABEL_MIN_PX_PER_STEP = 46  # below this the token labels would overlap: hide them


class BeamTreeView(QWidget):
    """Draws one beam lane (`set_lane`). Given a RunState it follows one by itself: the selected lane when
    that is a beam lane, else the first beam lane; drawing a long tree is slow, so only while it is visible
    (its tab is open, or drawn off screen for export)."""

    stepSelected = Signal(int, int)  # lane index, step

    def __init__(self, state: RunState | None = None, scheduler: RedrawScheduler | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._lane_index = -1
        self._lane: LaneTrace | None = None
        self._nodes: list[BeamNode] = []
        self._kept_at: dict[tuple[int, int], BeamNode] = {}  # the kept nodes by (step, slot): a node's beam
        self._labelled: dict[BeamNode, pg.TextItem] = {}  # nodes in view and their labels
        self._free_labels: list[pg.TextItem] = []  # hidden labels, reused before new ones are made
        self._drawn_steps = 0
        self._build_ui()
        self.state = state
        self._scheduler = scheduler
        self._follow: int | None = None  # key of the beam lane followed
        self._stale = state is not None  # nothing drawn yet
        if state is not None:
            for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "run_finished"):
                state.events.connect(name, self._on_lanes_event)
            state.events.connect("step_added", self._on_step_added)
            state.events.connect("selection_changed", self._on_selection_changed)
            self.stepSelected.connect(state.select)

    # ---- following a RunState ---------------------------------------------------------------------------
    def prepare_export(self) -> None:
        self.refresh(force=True)
        self.show_all_steps()

    def show_all_steps(self) -> None:
        if self._drawn_steps:
            self._plot.setXRange(-1.6, self._drawn_steps - 0.4, padding=0)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        """Draw the followed lane if it changed since last drawn (and the tree is shown, or `force`)."""
        if self.state is None or not (self.isVisible() or force) or not self._stale:
            return
        self._stale = False
        index = self._followed_index()
        if index is not None and self.state.lanes[index].trace.steps:
            self.set_lane(index, self.state.lanes[index].trace)
        else:
            self.clear()

    def _followed_index(self) -> int | None:
        lanes = self.state.lanes
        keys = [lane.key for lane in lanes]
        if self._follow not in keys or not lanes[keys.index(self._follow)].spec.is_beam:
            self._follow = next((lane.key for lane in lanes if lane.spec.is_beam), None)
        return None if self._follow is None else keys.index(self._follow)

    def _on_lanes_event(self, *_args) -> None:
        self._stale = True
        self.refresh()

    def _on_step_added(self, index: int, _record: StepRecord) -> None:
        if self.state.lanes[index].key == self._follow or self._follow is None:
            self._stale = True
            if self._scheduler is not None and self.isVisible():
                self._scheduler.mark("charts", ("beam_tree",), self.refresh)

    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is None:
            return
        lane = self.state.lanes[selection.lane]
        if lane.spec.is_beam and lane.key != self._follow:
            self._follow = lane.key
            self._stale = True
            self.refresh()

    # ---- public API --------------------------------------------------------------------------------------
    def set_lane(self, lane_index: int, lane: LaneTrace) -> None:
        """Show a beam lane (its StepRecord.beams); call again as steps arrive: only new steps are drawn."""
        if lane is not self._lane or lane_index != self._lane_index or len(lane.steps) < self._drawn_steps:
            # Not clear(): nodes equal to ones shown before (the finished lane repeats the streamed one's
            # candidates) keep their labels when _append redraws.
            self._nodes, self._kept_at, self._drawn_steps = [], {}, 0
            self._lane_index, self._lane = lane_index, lane
            self._title.setText(translate("beam_tree", "{name} — beam hypotheses over steps").format(name=lane.name))
        self._append(lane.steps[self._drawn_steps :])

    def clear(self) -> None:
        self._nodes, self._kept_at, self._drawn_steps = [], {}, 0
        self._lane = None
        self._title.setText(translate("beam_tree", "No beam lane selected"))
        self._redraw()

    def nodes(self) -> list[BeamNode]:
        return list(self._nodes)

    def best_nodes(self) -> list[BeamNode]:
        return best_path(self._lane, self._nodes) if self._lane else []

    def scene_pos_of(self, node: BeamNode) -> QPointF:
        return self._plot.vb.mapViewToScene(QPointF(node.step, node.slot))

    def export_png(self, path: str | Path) -> Path:
        return style.export_widget_png(self, path)

    def figure(self) -> Figure | None:
        """The tree with its axes, title and legend (export); None without a beam lane."""
        if self._lane is None:
            return None
        legend = self._legend.text().split('<span style="color:#555">hover')[0]  # not the mouse hints
        return Figure(self._title.text(), legend, self._view.scene(), self._plot.sceneBoundingRect())

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel()
        self._title.setFont(style.ui_font(10))
        self._legend = legend = QLabel(
            translate("beam_tree", '<span style="color:{kept}">●</span>&nbsp;kept&nbsp;&nbsp; <span '
                                   'style="color:{pruned}">○</span>&nbsp;pruned&nbsp;&nbsp; <span '
                                   'style="color:{finished}">★</span>&nbsp;finished&nbsp;&nbsp; <span '
                                   'style="color:{best}">━━</span>&nbsp;best sequence&nbsp;&nbsp; <span '
                                   'style="color:#555">hover: token, score · click: select step · wheel/drag: '
                                   'zoom/pan</span>')
            .format(kept=_KIND_STYLE["kept"][2], pruned=_KIND_STYLE["pruned"][3], finished=_KIND_STYLE["finished"][2],
                    best=_BEST)
        )
        legend.setFont(style.ui_font(8.5))
        legend.setWordWrap(True)
        # whole slots, spaced as the range allows (a fixed spacing of 1 made millions of ticks for a damaged slot)
        self._view = style.make_plot_widget(whole_left=True)
        self._plot = self._view.getPlotItem()
        self._plot.invertY(True)
        self._plot.setMouseEnabled(x=True, y=False)
        self._plot.setLabel("bottom", translate("beam_tree", "step"))
        self._plot.setLabel("left", translate("beam_tree", "beam slot"))
        self._create_items()
        self._plot.vb.sigXRangeChanged.connect(self._sync_labels)
        self._plot.vb.sigResized.connect(self._sync_labels)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._title)
        layout.addWidget(legend)
        layout.addWidget(self._view, 1)

    def _create_items(self) -> None:
        grey = pg.mkPen("#B8B8B8", width=1, style=Qt.PenStyle.DashLine)
        self._pruned_edges = self._plot.plot([], [], pen=grey, connect="pairs")
        self._kept_edges = self._plot.plot([], [], pen=pg.mkPen("#7FA7C9", width=1.5), connect="pairs")
        self._best_edges = self._plot.plot([], [], pen=pg.mkPen(_BEST, width=4), connect="pairs")
        # One uniformly styled scatter per kind: pyqtgraph's fast path (per-spot styles re-render symbols).
        self._scatters = {kind: self._scatter(*look) for kind, look in _KIND_STYLE.items()}
        self._scatters["best"] = self._scatter("o", 12, _BEST, "#FFFFFF")
        self._root = pg.TextItem(translate("beam_tree", "prompt"), color=style.FOREGROUND, anchor=(0.5, 1.15))
        self._root.setFont(style.ui_font(8.5))
        self._plot.addItem(self._root)
        self._root.setPos(-1, 0)
        self._plot.addItem(
            pg.ScatterPlotItem([-1], [0], symbol="s", size=10, brush=pg.mkBrush(style.FOREGROUND))
        )

    def _scatter(self, symbol: str, size: int, brush: str, pen: str) -> pg.ScatterPlotItem:
        scatter = pg.ScatterPlotItem(
            symbol=symbol,
            size=size,
            brush=pg.mkBrush(brush),
            pen=pg.mkPen(pen, width=1.5),
            hoverable=True,
            tip=self._tip,
            hoverPen=pg.mkPen(style.FOREGROUND, width=2),
        )
        scatter.setZValue(5)
        scatter.sigClicked.connect(self._on_points_clicked)
        self._plot.addItem(scatter)
        return scatter

    # ---- drawing -----------------------------------------------------------------------------------------
    def _append(self, records: list[StepRecord]) -> None:
        if not records:
            return
        for record in records:
            nodes = step_nodes(record)
            self._nodes.extend(nodes)
            self._kept_at.update({(node.step, node.slot): node for node in nodes if node.kind == "kept"})
        self._drawn_steps += len(records)
        last = self._drawn_steps - 1
        self._plot.setXRange(max(-1.6, last - _VISIBLE_STEPS + 0.5), last + 0.6, padding=0)
        self._redraw()

    def _redraw(self) -> None:
        best = set(self.best_nodes())
        self._draw_edges(best)
        groups: dict[str, list[int]] = {kind: [] for kind in self._scatters}
        for index, node in enumerate(self._nodes):
            groups["best" if node in best and node.kind == "kept" else node.kind].append(index)
        for kind, indices in groups.items():
            nodes = [self._nodes[i] for i in indices]
            self._scatters[kind].setData(x=[n.step for n in nodes], y=[n.slot for n in nodes], data=indices)
        self._sync_labels()

    def _draw_edges(self, best: set[BeamNode]) -> None:
        groups: dict[str, tuple[list[float], list[float]]] = {
            "pruned": ([], []),
            "kept": ([], []),
            "best": ([], []),
        }
        for node in self._nodes:
            group = "best" if node in best else ("pruned" if node.kind == "pruned" else "kept")
            xs, ys = groups[group]
            xs += [node.step - 1, node.step]
            ys += [node.parent_slot, node.slot]
        self._pruned_edges.setData(*groups["pruned"])
        self._kept_edges.setData(*groups["kept"])
        self._best_edges.setData(*groups["best"])

    def _sync_labels(self, *_args) -> None:
        """Token labels for the nodes in view only, from a reused pool (hundreds of TextItems would each
        follow every view change); none when zoomed out so far that they would overlap. A node keeps its
        label while it stays in view, so streaming one more step re-labels only the nodes that entered."""
        (x0, x1), width = self._plot.vb.viewRange()[0], self._plot.vb.width()
        readable = x1 > x0 and width / (x1 - x0) >= _LABEL_MIN_PX_PER_STEP
        shown = {n for n in self._nodes if x0 - 0.5 <= n.step <= x1 + 0.5} if readable else set()
        for node in [n for n in self._labelled if n not in shown]:
            label = self._labelled.pop(node)
            label.setVisible(False)
            self._free_labels.append(label)
        for node in shown - self._labelled.keys():
            self._labelled[node] = self._label_for(node)

    def _label_for(self, node: BeamNode) -> pg.TextItem:
        if self._free_labels:
            label = self._free_labels.pop()
        else:
            label = pg.TextItem(anchor=(0.5, 1.15))
            self._plot.addItem(label)
        pruned = node.kind == "pruned"
        look = (beam_node_token(node, self._kept_at, 9), pruned)
        if getattr(label, "look", None) != look:  # setting a text item's text and font is the slow part
            label.setText(look[0], color="#8A8A8A" if pruned else style.FOREGROUND)
            label.setFont(style.ui_font(8 if pruned else 9))
            label.look = look
        label.setPos(node.step, node.slot)
        label.setVisible(True)
        return label

    def visible_labels(self) -> list[str]:
        """The token labels shown, in node order."""
        return [self._labelled[n].toPlainText() for n in self._nodes if n in self._labelled]

    def drawn_counts(self) -> dict[str, int]:
        """How many nodes each scatter draws: kept, pruned, finished, and kept nodes on the best path."""
        return {kind: len(scatter.data) for kind, scatter in self._scatters.items()}

    # ---- interaction -------------------------------------------------------------------------------------
    def _tip(self, x: float, y: float, data: int) -> str:
        node = self._nodes[data]
        tip = translate("beam_tree", "step {step} · slot {slot} · {kind}\ntoken “{token}” (id {token_id})\n"
                                     "score {score} · parent slot {parent}")
        return tip.format(step=node.step, slot=node.slot, kind=translate("beam_tree", node.kind),
                          token=beam_node_token(node, self._kept_at, 30), token_id=node.token_id,
                          score=f"{node.score:.4f}",
                          parent=node.parent_slot)

    def _on_points_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.stepSelected.emit(self._lane_index, self._nodes[points[0].data()].step)
