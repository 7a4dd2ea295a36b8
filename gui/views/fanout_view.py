"""Fan-out tree, a view of the RunState: a sampled lane run as K seed members, drawn as a tree of trajectories —
shared prefixes merge, each split is a node at its step with the tokens that parted (line width: how many
members took that way). Below it, on the same step axis, the members' mean entropy and margin, so
splits can be seen to happen where the distribution is wide or tied. The step axis opens on the splits
(members that part in the first steps get the width, not a corner of it; "all steps" shows the rest), and
labels sit on a filled box above the lines. Hover a branch for its text; click it to select that step of its
first member."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from decoding.analysis.fanout import fanout_group
from decoding.records.trace import LaneTrace
from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import display_token
from gui.present.lane_html import lane_characters, pending_bytes, plain_fragments
from gui.state.run_state import RunState, Selection
from gui.views import style
from gui.views.figure import Figure
from gui.views.redraw import DrawnWhenShown, RedrawScheduler

_END = -1  # the "token" of a member that ended before a step
_EDGE_WIDTH = 1.2  # pen of the edges from a branch to its children
_LONE_WIDTH = 1.0  # pen of a member's own tokens after its last split, in a fan-out of many members (faded)
_ENTROPY_COLOUR, _MARGIN_COLOUR = "#0072B2", "#D55E00"  # the lower chart's lines


@dataclass
class Branch:
    """A stretch of the tree: `members` (indices) share their tokens from `start` to `end` (exclusive)."""

    members: list[int]
    start: int
    end: int
    y: float = 0.0
    children: list[Branch] = field(default_factory=list)


def build_tree(tokens: list[list[int]], members: list[int] | None = None, start: int = 0) -> Branch:
    """The tree of the members' token sequences: a branch runs while every member in it has the same token,
    then splits into one child per token taken (members that ended split off as their own child)."""
    members = list(range(len(tokens))) if members is None else members
    step = start
    while True:
        taken = [tokens[m][step] if step < len(tokens[m]) else _END for m in members]
        if len(set(taken)) > 1 or all(t == _END for t in taken):
            break
        step += 1
    branch = Branch(members, start, step)
    if len(set(taken)) > 1:
        groups: dict[int, list[int]] = {}
        for member, token in zip(members, taken, strict=True):
            groups.setdefault(token, []).append(member)
        for token, group in groups.items():
            if token != _END:
                branch.children.append(build_tree(tokens, group, step))
    return branch


def place(branch: Branch, next_slot: list[int]) -> float:
    """Give every branch its y: leaves (one per distinct ending) take consecutive slots, a parent the mean of its
    children. Returns the branch's y."""
    if branch.children:
        branch.y = float(np.mean([place(child, next_slot) for child in branch.children]))
    else:
        branch.y = float(next_slot[0])
        next_slot[0] += 1
    return branch.y


@dataclass(frozen=True)
class _Label:
    """A split's label: the token a child branch starts with and how many members took it."""

    text: str
    x: int  # the step it starts at
    y: float  # its row
    count: int


HOVER_CHARS = 110  # of a hovered branch's readout above the tree
LABEL_SIZE_PX = (70, 15)  # about what an 8 pt label covers with its filled box (a short token and "×N")
STEPS_AFTER_LAST_SPLIT = 4  # shown after the last split when the axis opens on the splits


def split_range(splits: list[int], steps: int) -> tuple[float, float]:
    """The steps the tree opens on: from the start to a few steps past the last split (all of them when the
    splits reach near the end, or when there are none)."""
    end = max(splits, default=steps) + STEPS_AFTER_LAST_SPLIT
    return -0.7, min(end, steps) - 0.3


def readable(labels: list[_Label], px_per_step: float, px_per_row: float) -> list[_Label]:
    """The labels that do not cover one another, the most-taken branches first (then top to bottom)."""
    width, height = LABEL_SIZE_PX
    placed: list[_Label] = []
    for label in sorted(labels, key=lambda label: (-label.count, label.y)):
        if all(abs(label.y - other.y) * px_per_row >= height or abs(label.x - other.x) * px_per_step >= width
               for other in placed):
            placed.append(label)
    return placed


def _show_first(items: list, count: int) -> None:
    """Show the first `count` of reused items, hide the others."""
    for index, item in enumerate(items):
        item.setVisible(index < count)


def split_token(members: list[LaneTrace], step: int, shares: dict[int, dict] | None = None) -> str:
    """A split label's token, short, from the members that took it: a byte-level piece of a Chinese character
    (or an emoji) as the character their pieces around it spell, not as bytes (as each spells: a first piece
    that members finish differently reads "虽/虾"). `shares`: each member's lane_characters, filled as
    needed (one tree's labels share it)."""
    piece = members[0].steps[step].token_text
    if "\\x" not in piece:
        return display_token(piece, 10)
    shares = {} if shares is None else shares
    spelled = dict.fromkeys(_character_at(member, step, shares) for member in members)
    return "/".join(spelled) if len(spelled) <= 3 else display_token(piece, 10)


def _character_at(member: LaneTrace, step: int, shares: dict[int, dict]) -> str:
    pieces = [record.token_text for record in member.steps]
    if id(member) not in shares:
        shares[id(member)] = lane_characters(pieces)
    character = shares[id(member)].get(step)
    return display_token(pieces[step], 10, character, b"" if character else pending_bytes(pieces[:step]))


def walk(branch: Branch):
    yield branch
    for child in branch.children:
        yield from walk(child)


class FanoutView(DrawnWhenShown, QWidget):
    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self._key: int | None = None  # the fan-out lane shown
        self._tree: Branch | None = None
        self._build_ui()
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed", "run_finished"):
            state.events.connect(name, self._on_lanes_event)
        state.events.connect("member_step_added", self._on_member_step)
        state.events.connect("selection_changed", self._on_selection_changed)
        self._on_lanes_event()

    # ---- public API --------------------------------------------------------------------------------------
    def tree(self) -> Branch | None:
        self._draw_if_stale()
        return self._tree

    def summary(self) -> str:
        self._draw_if_stale()
        return self._summary.text()

    def figure(self) -> Figure | None:
        self._draw_if_stale()
        if self._tree is None:
            return None
        return Figure(self._title(), f"{self._summary.text()}<br>{self._key_label.text()}", self._canvas.scene(),
                      self._canvas.ci.sceneBoundingRect())

    def scene_pos_of(self, branch: Branch) -> QPointF:
        self._draw_if_stale()
        middle = (branch.start + max(branch.end - 1, branch.start)) / 2
        return self._tree_plot.vb.mapViewToScene(QPointF(middle, branch.y))

    # ---- state events ------------------------------------------------------------------------------------
    def _fanout_lanes(self) -> list[int]:
        return [index for index, lane in enumerate(self.state.lanes) if lane.members]

    def _on_lanes_event(self, *_args) -> None:
        indices = self._fanout_lanes()
        keys = [self.state.lanes[i].key for i in indices]
        if self._key not in keys:
            self._key = keys[0] if keys else None
        self._combo.blockSignals(True)
        self._combo.clear()
        for index in indices:
            self._combo.addItem(self.state.lanes[index].name, self.state.lanes[index].key)
        if self._key is not None:
            self._combo.setCurrentIndex(keys.index(self._key))
        self._combo.blockSignals(False)
        self.redraw()

    def _on_member_step(self, index: int, _member: int, _record) -> None:
        if self.state.lanes[index].key == self._key:
            self._scheduler.mark("charts", ("fanout",), self.redraw)

    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is not None and self.state.lanes[selection.lane].members:
            if self.state.lanes[selection.lane].key != self._key:
                self._key = self.state.lanes[selection.lane].key
                self._on_lanes_event()
        self._show_cursor(selection)

    def _on_view_changed(self, *_args) -> None:
        if self._tree is not None:
            self._draw_labels()

    def _on_lane_chosen(self, index: int) -> None:
        self._key = self._combo.itemData(index)
        self.redraw()

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._combo = QComboBox()
        self._combo.setToolTip(translate("fanout_view", "The fan-out lane shown (set a sampled lane's fan-out in the "
                                                        "lanes editor)"))
        self._combo.currentIndexChanged.connect(self._on_lane_chosen)
        self._hints = (translate("fanout_view", "Set a sampled lane's fan-out (lanes editor) and run: its "
                                                "members' tree shows here"),
                       translate("fanout_view", "hover a branch for its text · click selects its first member's step"))
        self._hover = QLabel(self._hints[0])
        self._hover.setWordWrap(True)
        self._hover.setStyleSheet("color:#555")
        header = QHBoxLayout()
        header.addWidget(self._combo)
        header.addWidget(self._hover, 1)
        self._all_steps = QToolButton()
        self._all_steps.setText(translate("fanout_view", "all steps"))
        self._all_steps.setToolTip(translate("fanout_view", "The tree opens on its splits: show every step (the "
                                                            "wheel zooms, dragging pans)"))
        self._all_steps.clicked.connect(lambda: self._tree_plot.enableAutoRange(axis="x"))
        header.addWidget(self._all_steps)
        self._summary = QLabel()
        self._summary.setWordWrap(True)
        self._canvas = style.make_canvas()
        self._tree_plot = self._canvas.addPlot(row=0, col=0, axisItems={"bottom": style.StepAxis("bottom")})
        self._stats_plot = self._canvas.addPlot(row=1, col=0, axisItems={"bottom": style.StepAxis("bottom")})
        self._canvas.ci.layout.setRowStretchFactor(0, 3)
        self._canvas.ci.layout.setRowStretchFactor(1, 1)
        for plot in (self._tree_plot, self._stats_plot):
            style.style_plot(plot, pan_x=True, ink=False)
        self._stats_plot.setXLink(self._tree_plot)
        self._stats_plot.enableAutoRange(axis="x", enable=False)  # the tree decides the steps shown
        self._tree_plot.invertY(True)
        self._tree_plot.vb.sigRangeChanged.connect(self._on_view_changed)  # zoom or pan: other labels fit
        self._tree_plot.vb.sigResized.connect(self._on_view_changed)
        self._tree_plot.getAxis("left").setStyle(showValues=False, tickLength=0)
        self._tree_plot.setLabel("left", translate("fanout_view", "members"))
        self._stats_plot.setLabel("bottom", translate("fanout_view", "step"))
        entropy_name = translate("fanout_view", "mean entropy (nats)")
        margin_name = translate("fanout_view", "mean margin top1−top2")
        self._entropy = self._stats_plot.plot([], [], pen=pg.mkPen(_ENTROPY_COLOUR, width=2), name=entropy_name)
        self._margin = self._stats_plot.plot([], [], pen=pg.mkPen(_MARGIN_COLOUR, width=2, style=Qt.PenStyle.DashLine),
                                             name=margin_name)
        # the lower chart's key, above the canvas: a legend inside it sat on the entropy curve
        self._key_label = QLabel(f"<span style='color:{_ENTROPY_COLOUR}'>━━</span> {entropy_name} &nbsp; "
                                 f"<span style='color:{_MARGIN_COLOUR}'>╍╍</span> {margin_name}")
        self._key_label.setFont(style.ui_font(8))
        # drawn items, reused from one drawing to the next (making and adding new ones took most of a redraw)
        self._lines: list[pg.PlotDataItem] = []  # the tree's segments, one item per pen width
        self._labels: list[pg.TextItem] = []  # the split labels
        self._split_labels: list[_Label] = []  # every split's label, of which those that fit are shown
        self._split_lines: list[pg.InfiniteLine] = []  # the splits in the statistics
        self._cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(style.FOREGROUND, width=1,
                                                                              style=Qt.PenStyle.DotLine))
        self._cursor.setVisible(False)
        self._tree_plot.addItem(self._cursor, ignoreBounds=True)
        self._canvas.scene().sigMouseClicked.connect(self._on_click)
        self._canvas.scene().sigMouseMoved.connect(self._on_hover)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self._summary)
        layout.addWidget(self._key_label)
        layout.addWidget(self._canvas, 1)

    # ---- drawing -----------------------------------------------------------------------------------------
    def _members(self) -> list[LaneTrace]:
        lane = next((lane for lane in self.state.lanes if lane.key == self._key), None)
        return lane.members if lane is not None else []

    def _title(self) -> str:
        members = self._members()
        group = members[0].fanout["group"] if members and members[0].fanout else ""
        return translate("fanout_view", "fan-out of {lane}: {count} seeds").format(lane=group, count=len(members))

    def _draw(self) -> None:
        members = self._members()
        if self._hover.text() in self._hints:  # not a hovered branch's text
            self._hover.setText(self._hints[1] if members else self._hints[0])
        self._key_label.setVisible(bool(members))
        if not members:
            self._tree = None
            self._summary.setText("")
            self._entropy.setData([], [])
            self._margin.setData([], [])
            for items in (self._lines, self._labels, self._split_lines):
                _show_first(items, 0)
            return
        tokens = [list(member.token_ids) for member in members]
        self._tree = build_tree(tokens)
        place(self._tree, [0])
        self._draw_tree(members)
        self._draw_stats(members)
        # after the statistics: their plot shares the step axis and would widen it again to every step
        splits = [branch.end for branch in walk(self._tree) if branch.children]
        self._tree_plot.setXRange(*split_range(splits, max(len(member.steps) for member in members)), padding=0)
        self._summary.setText(self._summary_text(members))
        self._show_cursor(self.state.selection)

    def _draw_tree(self, members: list[LaneTrace]) -> None:
        """The branches and the edges of their splits as a few line items (one per pen width), the split labels
        and a dashed line at each split in the statistics below."""
        lane = next(lane for lane in self.state.lanes if lane.key == self._key)
        colour = style.lane_color(lane.colour)
        count = len(members)
        segments: dict[float, list[tuple[float, float, float, float]]] = {}  # pen width -> (x0, y0, x1, y1)
        labels: list[_Label] = []
        splits: list[int] = []
        shares: dict[int, dict] = {}  # lane_characters of the members whose split pieces are bytes
        for branch in walk(self._tree):
            width = 1.5 + 4.0 * math.log2(len(branch.members)) / max(math.log2(count), 1.0)
            if len(branch.members) == 1 and count > 8:
                width = _LONE_WIDTH  # a member on its own: thin and faded, so the shared trunks and splits read
            if branch.end > branch.start:  # its shared tokens, one point per step (a root that splits at once has none)
                segments.setdefault(width, []).append((branch.start, branch.y, branch.end - 1, branch.y))
            tail = branch.end - 1 if branch.end > branch.start else branch.start - 0.5
            for child in branch.children:  # the split: from the parent's last token to each child's first
                segments.setdefault(_EDGE_WIDTH, []).append((tail, branch.y, child.start, child.y))
                member = members[child.members[0]]
                if child.start < len(member.steps):
                    text = split_token([members[k] for k in child.members], child.start, shares)
                    labels.append(_Label(f"{text} ×{len(child.members)}", child.start, child.y, len(child.members)))
            if branch.children:
                splits.append(branch.end)
        self._draw_segments(segments, colour)
        self._draw_splits(splits)
        leaves = sum(1 for b in walk(self._tree) if not b.children)
        # room above the first row for its label (drawn above its line): the rows' pixels shrink as leaves grow
        height = self._tree_plot.vb.boundingRect().height()
        label_px = LABEL_SIZE_PX[1] + 3  # with a little air
        top = max(0.8, label_px * (leaves - 0.2) / max(height - label_px, 1.0)) if labels else 0.8
        self._tree_plot.setYRange(-top, max(leaves - 1, 0) + 0.8, padding=0)
        self._split_labels = labels
        self._draw_labels()

    def _draw_segments(self, segments: dict[float, list[tuple[float, float, float, float]]], colour) -> None:
        while len(self._lines) < len(segments):
            self._lines.append(self._tree_plot.plot([], []))
        for line, (width, pairs) in zip(self._lines, segments.items(), strict=False):
            xs = [x for x0, _, x1, _ in pairs for x in (x0, x1)]
            ys = [y for _, y0, _, y1 in pairs for y in (y0, y1)]
            pen_colour = pg.mkColor(colour)
            if width == _LONE_WIDTH:
                pen_colour.setAlphaF(0.35)
            line.setData(xs, ys, connect="pairs", pen=pg.mkPen(pen_colour, width=width))
        _show_first(self._lines, len(segments))

    def _draw_labels(self) -> None:
        """The split labels that fit: where members part into many rows a few pixels apart, the most-taken
        branches keep theirs and the others are left to hover (redone when the view is resized or zoomed)."""
        labels = readable(self._split_labels, *self._pixels_per_unit())
        while len(self._labels) < len(labels):
            label = pg.TextItem(color=style.FOREGROUND, anchor=(0, 1.05), fill=pg.mkBrush(colours.current().label_fill))
            label.setFont(style.ui_font(8))
            label.setZValue(5)  # over the edges that pass behind it
            label.textItem.document().setDocumentMargin(1)  # the filled box hugs the text
            self._tree_plot.addItem(label)
            self._labels.append(label)
        for item, label in zip(self._labels, labels, strict=False):
            item.setText(label.text)
            item.setPos(label.x, label.y)
        _show_first(self._labels, len(labels))

    def _pixels_per_unit(self) -> tuple[float, float]:
        """(pixels per step, pixels per row) in the tree's view as it is now."""
        (x0, x1), (y0, y1) = self._tree_plot.vb.viewRange()
        box = self._tree_plot.vb.boundingRect()
        return box.width() / max(x1 - x0, 1e-9), box.height() / max(y1 - y0, 1e-9)

    def _draw_splits(self, steps: list[int]) -> None:
        while len(self._split_lines) < len(steps):
            pen = pg.mkPen("#bbbbbb", width=1, style=Qt.PenStyle.DashLine)
            split = pg.InfiniteLine(angle=90, movable=False, pen=pen)
            self._stats_plot.addItem(split, ignoreBounds=True)
            self._split_lines.append(split)
        for split, step in zip(self._split_lines, steps, strict=False):
            split.setValue(step)
        _show_first(self._split_lines, len(steps))

    def _draw_stats(self, members: list[LaneTrace]) -> None:
        """Each step's mean entropy and margin over the members still running then."""
        steps = max(len(member.steps) for member in members)
        entropy, margin = np.full((2, len(members), steps), np.nan)
        for row, member in enumerate(members):
            entropy[row, : len(member.steps)] = [record.entropy for record in member.steps]
            margin[row, : len(member.steps)] = [record.margin for record in member.steps]
        xs = np.arange(steps, dtype=float)
        self._entropy.setData(xs, np.nanmean(entropy, axis=0))
        self._margin.setData(xs, np.nanmean(margin, axis=0))

    def _summary_text(self, members: list[LaneTrace]) -> str:
        group = fanout_group(members)
        none = translate("fanout_view", "none")
        first = none if group.mean_first_split_step is None else f"{group.mean_first_split_step:.1f}"
        pairwise = none if group.mean_pairwise_divergence_step is None else \
            f"{group.mean_pairwise_divergence_step:.1f}"
        seeds = "" if group.seed is None else translate("fanout_view", "seeds {first}–{last}").format(
            first=group.seed, last=group.seed + len(members) - 1)
        # two means of different things, worded apart: a pair parts before a member differs from every other
        text = translate("fanout_view", "<b>{count} members</b> ({seeds}) · <b>{distinct}</b> distinct continuations · "
                                        "two members part at step <b>{pairwise}</b> on average · a member is on its "
                                        "own (differs from every other) from step <b>{first}</b> on average · "
                                        "{splits} splits")
        return text.format(count=len(members), seeds=seeds, distinct=group.distinct_continuations, first=first,
                           pairwise=pairwise, splits=len(group.splits))

    def _show_cursor(self, selection: Selection | None) -> None:
        lane = self.state.lanes[selection.lane] if selection is not None else None
        visible = lane is not None and lane.key == self._key
        self._cursor.setVisible(visible)
        if visible:
            self._cursor.setValue(selection.step)

    # ---- interaction -------------------------------------------------------------------------------------
    def _branch_at(self, scene_pos: QPointF) -> Branch | None:
        if self._tree is None or not self._tree_plot.sceneBoundingRect().contains(scene_pos):
            return None
        point = self._tree_plot.vb.mapSceneToView(scene_pos)
        step = round(point.x())
        candidates = [b for b in walk(self._tree) if b.start <= step < max(b.end, b.start + 1)]
        return min(candidates, key=lambda b: abs(b.y - point.y()), default=None)

    def branch_text(self, branch: Branch) -> str:
        """The text a branch's members share (steps start..end), as the hover shows it."""
        member = self._members()[branch.members[0]]
        pieces = [s.token_text for s in member.steps[branch.start: branch.end]]
        return "".join(plain_fragments(pieces))

    def _on_hover(self, scene_pos: QPointF) -> None:
        branch = self._branch_at(scene_pos)
        if branch is None:
            return
        names = ", ".join(f"#{m}" for m in branch.members)
        readout = translate("fanout_view", "steps {start}–{max} · members {names}: “{branch_text}”")
        whole = readout.format(start=branch.start, max=max(branch.end - 1, branch.start), names=names,
                               branch_text=self.branch_text(branch))
        # one or two lines: a long branch's text would push the tree down at every hover (the tip has it all)
        self._hover.setText(whole if len(whole) <= HOVER_CHARS else whole[: HOVER_CHARS - 1] + "…")
        self._hover.setToolTip(html.unescape(whole))

    def _on_click(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        branch = self._branch_at(event.scenePos())
        if branch is None:
            return
        index = next(i for i, lane in enumerate(self.state.lanes) if lane.key == self._key)
        step = min(round(self._tree_plot.vb.mapSceneToView(event.scenePos()).x()), max(branch.end - 1, branch.start))
        self.state.select(index, step, branch.members[0])
