"""The session tree on the step axis: one row per node (a child right under its parent), a line over the steps of
its own tokens from its branch step, joined to its parent's row there, labelled with its lane, its branch token,
★ for a bookmark and its note. Click a node to select its lane at its branch step (when a lane shows it);
double-click to bring its path back as the lanes (restoreRequested); right-click to bookmark it, write a note,
hide (fold) or prune its subtree."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QFrame, QInputDialog, QLabel, QMenu, QScrollArea, QVBoxLayout, QWidget

from decoding.analysis import session_tree
from gui.i18n import translate
from gui.present import colours
from gui.present.tree_rows import TreeRow, node_label, tree_rows
from gui.state.run_state import RunState
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import DrawnWhenShown, RedrawScheduler

ROW_PX = 22  # a node's row: its label's height and room around it
AXIS_PX = 48  # the step axis and the plot's margins


class SessionTreeView(DrawnWhenShown, QWidget):
    restoreRequested = Signal(int)  # a node id: bring its path back as the lanes

    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self._rows: list[TreeRow] = []
        self._labels: list[pg.TextItem] = []
        self._build_ui()
        for name in ("tree_changed", "lanes_reset", "lane_removed", "run_finished"):
            state.events.connect(name, lambda *_args: self.redraw())
        state.events.connect("selection_changed", lambda _selection: self.redraw())
        self.redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def rows(self) -> list[TreeRow]:
        self._draw_if_stale()
        return list(self._rows)

    def labels(self) -> list[str]:
        """The label drawn on each row."""
        self._draw_if_stale()
        return [label.textItem.toPlainText() for label in self._labels]

    def row_of(self, node_id: int) -> int:
        return next(row.row for row in self.rows() if row.node.id == node_id)

    def scene_pos_of(self, node_id: int) -> QPointF:
        """The middle of the node's line: where a click selects it."""
        row = self.rows()[self.row_of(node_id)]
        return self._plot.vb.mapViewToScene(QPointF((row.start + max(row.end, row.start + 1)) / 2, row.row + 0.5))

    def selected_node(self) -> int | None:
        """The node the selected lane shows."""
        selection = self.state.selection
        if selection is None or selection.member:
            return None
        return self.state.lane_nodes.get(self.state.lanes[selection.lane].key)

    def toggle_bookmark(self, node_id: int) -> None:
        node = self._node(node_id)
        self.state.set_node_marks(node_id, bookmark=not node.bookmark)

    def set_note(self, node_id: int, note: str) -> None:
        self.state.set_node_marks(node_id, note=note.strip())

    def toggle_hidden(self, node_id: int) -> None:
        self.state.set_node_marks(node_id, hidden=not self._node(node_id).hidden)

    def prune(self, node_id: int) -> None:
        removed = self.state.prune_node(node_id)
        self.state.set_status(translate("session_tree", "pruned {count} node(s) from the tree: {names} (right-click "
                                                        "the tree: Undo prune)").format(
            count=len(removed), names=", ".join(node.lane for node in removed)))

    def undo_prune(self) -> None:
        restored = self.state.undo_prune()
        self.state.set_status(translate("session_tree", "put back {count} node(s): {names}").format(
            count=len(restored), names=", ".join(node.lane for node in restored)))

    def figure(self) -> Figure:
        self._draw_if_stale()
        return Figure(translate("session_tree", "Every run and branch of the session"), "", self._view.scene(),
                      self._plot.sceneBoundingRect())

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._hint = QLabel(translate("session_tree", "click a node: its lane and step · double-click: bring it "
                                                      "back as the lanes · right-click: bookmark, note, hide, prune"))
        self._hint.setStyleSheet("color:#555")
        self._hint.setWordWrap(True)
        self._view = style.make_plot_widget()
        self._plot = self._view.getPlotItem()
        self._plot.invertY(True)
        self._plot.setMouseEnabled(x=True, y=False)
        self._plot.setLabel("bottom", translate("session_tree", "step"))
        self._plot.getAxis("left").setTicks([[]])
        self._lines = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(style.FOREGROUND, width=2))
        self._joins = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(style.FOREGROUND, width=1,
                                                                    style=Qt.PenStyle.DotLine))
        self._starts = pg.ScatterPlotItem(symbol="o", size=8, pen=pg.mkPen(style.FOREGROUND))
        self._cursor = pg.PlotDataItem(pen=pg.mkPen(style.FOREGROUND, width=6))
        for item in (self._joins, self._lines, self._starts, self._cursor):
            self._plot.addItem(item)
        self._view.scene().sigMouseClicked.connect(self._on_click)
        self._scroll = QScrollArea()  # a row per node at a readable height: many nodes scroll
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._scroll.setWidget(self._view)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._hint)
        layout.addWidget(self._scroll, 1)

    # ---- drawing -----------------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._rows = tree_rows(self.state.tree)
        xs, ys, join_x, join_y, brushes = [], [], [], [], []
        for row in self._rows:
            y = row.row + 0.5
            xs += [row.start, max(row.end, row.start + 0.5)]
            ys += [y, y]
            if row.parent_row is not None:
                join_x += [row.start, row.start]
                join_y += [row.parent_row + 0.5, y]
            lane = self.state.node_lane(row.node.id)
            brushes.append(pg.mkBrush(style.lane_color_hex(self.state.lanes[lane].colour) if lane is not None
                                      else (0, 0, 0, 0)))
        self._lines.setData(xs, ys)
        self._joins.setData(join_x, join_y)
        self._starts.setData([row.start for row in self._rows], [row.row + 0.5 for row in self._rows],
                             brush=brushes)
        self._draw_labels()
        self._draw_cursor()
        width = max((row.end for row in self._rows), default=1)
        self._plot.setXRange(0, max(width, 1), padding=0.02)
        self._plot.setYRange(0, max(len(self._rows), 1), padding=0)
        self._view.setMinimumHeight(len(self._rows) * ROW_PX + AXIS_PX)

    def _draw_labels(self) -> None:
        for label in self._labels:
            self._plot.removeItem(label)
        self._labels = []
        background = pg.mkColor(colours.current().background)
        background.setAlpha(220)
        for row in self._rows:
            # on its own line, after the start dot, over a ground that hides the line: within its own row, so
            # a click on a label is a click on its node
            label = pg.TextItem(node_label(row), color=style.FOREGROUND, anchor=(0, 0.5), fill=background)
            label.setFont(style.ui_font(8.5))
            label.setPos(row.start + 0.3, row.row + 0.5)
            self._plot.addItem(label)
            self._labels.append(label)

    def _draw_cursor(self) -> None:
        node = self.selected_node()
        row = next((row for row in self._rows if row.node.id == node), None)
        if row is None:
            self._cursor.setData([], [])
        else:
            self._cursor.setData([row.start, max(row.end, row.start + 0.5)], [row.row + 0.5] * 2)

    # ---- interaction -------------------------------------------------------------------------------------
    def _node(self, node_id: int):
        return next(node for node in self.state.tree if node.id == node_id)

    def _row_at(self, scene_pos: QPointF) -> TreeRow | None:
        if not self._plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        row = math.floor(self._plot.vb.mapSceneToView(scene_pos).y())
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def _on_click(self, event) -> None:
        row = self._row_at(event.scenePos())
        if row is None:
            return
        if event.button() == Qt.MouseButton.RightButton:
            self._menu(row.node.id, event.screenPos())
        elif event.double():
            self.restoreRequested.emit(row.node.id)
        elif event.button() == Qt.MouseButton.LeftButton:
            self.select_node(row.node.id)

    def select_node(self, node_id: int) -> bool:
        """Select the lane showing the node, at its branch step; False (with a status) when no lane shows it."""
        lane = self.state.node_lane(node_id)
        node = self._node(node_id)
        if lane is None:
            self.state.set_status(translate("session_tree", "“{name}” is not among the lanes: double-click it to "
                                                            "bring it back").format(name=node.lane))
            return False
        last = len(self.state.lanes[lane].trace.steps) - 1
        return self.state.select(lane, min(node.step, max(last, 0)))

    def _menu(self, node_id: int, screen_pos) -> None:
        node = self._node(node_id)
        menu = QMenu(self)
        menu.addAction(translate("session_tree", "Remove bookmark") if node.bookmark
                       else translate("session_tree", "Bookmark"), lambda: self.toggle_bookmark(node_id))
        menu.addAction(translate("session_tree", "Note…"), lambda: self._ask_note(node_id))
        menu.addAction(translate("session_tree", "Show subtree") if node.hidden
                       else translate("session_tree", "Hide subtree"), lambda: self.toggle_hidden(node_id))
        size = len(session_tree.subtree(self.state.tree, node_id))
        prune = (translate("session_tree", "Prune “{name}”") if size == 1 else
                 translate("session_tree", "Prune “{name}” and the {count} node(s) under it")).format(
            name=node.lane, count=size - 1)
        menu.addAction(prune, lambda: self.prune(node_id))
        if self.state.pruned is not None:
            count = len(self.state.pruned[0])
            menu.addAction(translate("session_tree", "Undo prune ({count} node(s))").format(count=count),
                           self.undo_prune)
        menu.addAction(translate("session_tree", "Bring back as the lanes"),
                       lambda: self.restoreRequested.emit(node_id))
        menu.popup(screen_pos.toPoint())

    def _ask_note(self, node_id: int) -> None:
        note, accepted = QInputDialog.getText(self, translate("session_tree", "Note"),
                                              translate("session_tree", "A short note on this node:"),
                                              text=self._node(node_id).note)
        if accepted:
            self.set_note(node_id, note)
