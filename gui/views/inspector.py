"""Step inspector: why one lane chose one token at one step.

Left plot: the top-N candidates as horizontal bars (token labels on the left axis), raw vs after the lane's
processors, the chosen token highlighted, the top-k / kept-set boundaries and the min-p threshold drawn.
Right plot: the same rows on the cumulative scale — the raw running sum against the top-p line, each row's
slice of the processed distribution, and the uniform draw u of a sampled step falling into the chosen token's
slice.
Below: the step's numbers, and the lane's chain stage by stage (the distribution after each processor: tokens
kept, probability kept, the chosen token's rank and probability), so a user sees which stage cut what.
"""

from __future__ import annotations

import html
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtGui import QCursor, QFontMetrics, QTextDocument
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from decoding.analysis.critical import critical_point, runner_up
from decoding.records.trace import StepRecord
from gui.i18n import translate
from gui.present import colours
from gui.present.beam_step import beam_step_html
from gui.present.chart_rows import (
    Cutoffs,
    TokenRow,
    display_token,
    inspector_rows,
    removed_by,
    stage_cells,
    stage_rows,
    step_cutoffs,
    step_summary,
)
from gui.present.lane_html import lane_characters, pending_bytes
from gui.state.run_state import RunState, Selection
from gui.state.view_state import InspectorViewState
from gui.views import style
from gui.views.figure import Figure

_BAR = 0.38  # bar thickness in row units; two of them side by side fill most of a row
_ROW_PX = 16  # the least height a row needs for its token label to stay readable
_DRAW_LABEL_POSITIONS = (0.98, 0.8, 0.62, 0.44, 0.26)  # the "u=" label's heights to try, lowest first
_AXIS_PX = 64  # height the bottom axis, its title and the plot margins take inside the canvas
_MIN_ROWS = 5
CANVAS_MIN_HEIGHT = _AXIS_PX + _MIN_ROWS * _ROW_PX  # the bars stay readable however short the panel
DETAIL_LINES = 6  # the numbers and chain table keep at least this many lines in view


def _unbreakable(text: str) -> str:
    """HTML for text that must not wrap inside (one number of the panel)."""
    return html.escape(text).replace(" ", "&nbsp;")


class StepInspector(QWidget):
    """A view of the RunState's selected step. Click a row to read its numbers; double-click or right-click
    it to branch from it (branching is deliberate: never a single left click)."""

    branchRequested = Signal(int, int, int)  # lane index, step, token id
    forceRequested = Signal(int, int)  # step, token id
    replayRequested = Signal(int, int)  # lane index, step: replay the branch not taken
    whyNotRequested = Signal(int, int, int)  # lane index, step, token id: why the chosen token and not this one

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._lane_index = -1
        self._member = 0
        self._step: StepRecord | None = None
        self._rows: list[TokenRow] = []
        self._picked: int | None = None  # the row clicked for its numbers
        self._max_rows = 20
        self._overlay = False
        self._build_ui()
        state.events.connect("selection_changed", self._on_selection_changed)
        state.events.connect("run_finished", self._on_run_finished)
        state.events.connect("lane_changed", self._on_lane_changed)
        state.events.connect("marks_changed", self._on_run_finished)

    # ---- state events ------------------------------------------------------------------------------------
    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is None:
            self.clear()
        else:
            self.set_step(selection.lane, selection.step, selection.member)

    def _on_run_finished(self) -> None:
        """A finished lane's records may be new objects (a beam lane's best path): show the selected one."""
        self._on_selection_changed(self.state.selection)

    def _on_lane_changed(self, index: int) -> None:
        if index == self._lane_index and self._step is not None:
            self._redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def set_step(self, lane_index: int, step: int, member: int = 0) -> None:
        """Show step `step` of the model's lane `lane_index` (of its fan-out member `member`)."""
        record = self.state.step_record(lane_index, step, member)
        if record is None:
            self.clear()
            return
        self._lane_index, self._member, self._step, self._picked = lane_index, member, record, None
        critical = critical_point(record, self.state.critical) is not None
        self._replay.setEnabled(runner_up(record, self.state.critical) is not None)
        self._replay.setText(translate("inspector", "▲ branch not taken") if critical else translate("inspector",
                                                                                                     "↺ runner-up"))
        self._redraw()

    def clear(self) -> None:
        self._step, self._rows = None, []
        self._replay.setEnabled(False)
        self._title.setText(translate("inspector", "No step selected"))
        self._set_rows_visible(False)
        self._numbers.setText("")
        self._picked = None
        self._picked_label.setText("")
        self._stages.setText("")
        self._stages.setVisible(False)
        self._beams.setText("")
        self._beams.setVisible(False)

    def set_overlay(self, overlay: bool) -> None:
        """Raw and processed bars overlaid (processed drawn inside raw) instead of side by side."""
        self._mode.setCurrentIndex(1 if overlay else 0)

    def is_overlay(self) -> bool:
        return self._overlay

    def view_state(self) -> InspectorViewState:
        return InspectorViewState(self._overlay)

    def set_view_state(self, state: InspectorViewState) -> None:
        self.set_overlay(state.overlay)

    def prepare_export(self) -> None:
        """An export shows the selected step."""
        selection = self.state.selection
        if selection is not None:
            self.set_step(selection.lane, selection.step, selection.member)

    def rows(self) -> list[TokenRow]:
        return list(self._rows)

    def cutoffs(self) -> Cutoffs | None:
        return self._cutoffs if self._step else None

    def drawn_lines(self) -> dict[str, float]:
        """Positions of the cut-off and draw lines currently shown (rows for kept/top-k, x for the others)."""
        lines = {
            "kept": self._kept_line,
            "top_k": self._top_k_line,
            "min_p": self._min_p_line,
            "top_p": self._top_p_line,
            "draw": self._draw_line,
        }
        return {name: line.value() for name, line in lines.items() if line.isVisible()}

    def bar_widths(self) -> tuple[list[float], list[float]]:
        """(raw, processed) bar lengths per row as drawn."""
        return list(self._raw_bars.opts["width"]), list(self._proc_bars.opts["width"])

    def scene_pos_of_row(self, row: int) -> QPointF:
        return self._bars_plot.vb.mapViewToScene(QPointF(0.0, row))

    def row_at_scene_pos(self, pos: QPointF) -> int | None:
        """The row under a scene position in either plot, or None."""
        if not self._rows:
            return None
        for plot in (self._bars_plot, self._cum_plot):
            if plot.sceneBoundingRect().contains(pos):
                row = round(plot.vb.mapSceneToView(pos).y())
                return row if 0 <= row < len(self._rows) else None
        return None

    def export_png(self, path: str | Path) -> Path:
        return style.export_widget_png(self, path)

    def figure(self) -> Figure | None:
        """Both plots with their axes, the step as title, the legend above and the numbers below (export)."""
        if self._step is None:
            return None
        return Figure(self._title_text(), self._legend.text(), self._canvas.scene(),
                      self._canvas.ci.sceneBoundingRect(), self._numbers.text() + self._stages.text())

    def _fitting_rows(self) -> int:
        """As many rows as fit the canvas at a readable height, at most max_rows: labels never overlap."""
        fit = (self._canvas.height() - _AXIS_PX) // _ROW_PX
        return max(_MIN_ROWS, min(self._max_rows, fit))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        # The canvas's own resize (after layout), not the panel's: only then is its new height known.
        if watched is self._canvas and event.type() == QEvent.Type.Resize and self._step is not None:
            if self._fitting_rows() != len(self._rows):
                self._redraw()
            else:
                self._separate_labels()  # the lines' labels keep their places in pixels: a new width moves them
        return super().eventFilter(watched, event)

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel(translate("inspector", "No step selected"))
        self._title.setTextFormat(Qt.TextFormat.RichText)
        self._title.setFont(style.ui_font(10))
        self._title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long title must not force the panel wider: it wraps onto a second line instead of being cut.
        self._title.setWordWrap(True)
        self._title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._mode = QComboBox()
        self._mode.addItems([translate("inspector", "side by side"), translate("inspector", "overlaid")])
        self._mode.setToolTip(translate("inspector", "Raw and processed bars side by side, or overlaid"))
        self._mode.currentIndexChanged.connect(self._on_mode_changed)
        self._replay = QToolButton()
        self._replay.setText(translate("inspector", "↺ runner-up"))
        self._replay.setToolTip(translate("inspector", "A new lane that takes this step's runner-up instead and "
                                                       "continues with the same strategy and draws: how far does the "
                                                       "other branch go?"))
        self._replay.clicked.connect(lambda: self.replayRequested.emit(self._lane_index, self._step.step))
        self._replay.setEnabled(False)
        self._controls = QHBoxLayout()  # on the picked row's line: the title and legend keep the whole width
        self._controls.addWidget(self._replay)
        self._controls.addWidget(self._mode)

        self._canvas = style.make_canvas()
        self._bars_plot = self._canvas.addPlot(row=0, col=0)
        self._cum_plot = self._canvas.addPlot(row=0, col=1)
        self._canvas.ci.layout.setColumnStretchFactor(0, 3)
        self._canvas.ci.layout.setColumnStretchFactor(1, 2)
        self._setup_plots()
        self._create_items()
        self._canvas.scene().sigMouseClicked.connect(self._on_click)
        self._canvas.installEventFilter(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._title)
        self._legend = self._legend_label()
        layout.addWidget(self._legend)
        self._canvas.setMinimumHeight(CANVAS_MIN_HEIGHT)
        numbers = self._build_numbers()
        lower = QWidget()
        below = QVBoxLayout(lower)
        below.setContentsMargins(0, 0, 0, 0)
        # the picked row's readout on a line of its own, the panel's whole width: beside the controls it had a
        # third of it and was cut after two lines
        below.addWidget(self._picked_label)
        controls = QHBoxLayout()
        controls.addStretch(1)
        controls.addLayout(self._controls)
        below.addLayout(controls)
        details = self._details_scroll = self._details(self._beams, numbers, self._stages)
        details.setMinimumHeight(self.fontMetrics().lineSpacing() * DETAIL_LINES)  # the chain table's lines
        below.addWidget(details, 1)
        # the chart above the numbers and the chain table, the line between them draggable (named: remembered)
        self._split = QSplitter(Qt.Orientation.Vertical)
        self._split.setObjectName("inspectorSplitter")
        self._split.setChildrenCollapsible(False)
        self._split.addWidget(self._canvas)
        self._split.addWidget(lower)
        self._split.setStretchFactor(0, 2)
        self._split.setStretchFactor(1, 1)
        layout.addWidget(self._split, 1)
        self.clear()

    @staticmethod
    def _details(*widgets: QWidget) -> QScrollArea:
        """The numbers and the stage table scroll under the chart: in a short panel (1280×800) they took its
        height and squashed the bars to a few pixels."""
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        for widget in widgets:
            widget.setMinimumWidth(1)  # wrapped to the viewport, whatever width the scroll bar leaves
            column.addWidget(widget)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(box)
        return scroll

    @staticmethod
    def _legend_label() -> QLabel:
        def key(colour: str, text: str, glyph: str = "■") -> str:
            return f'<span style="color:{colour}">{glyph}</span>&nbsp;{text}'

        keys = [
            key(style.RAW_COLOUR, translate("inspector", "raw")),
            key(style.PROCESSED_COLOUR, translate("inspector", "after processors")),
            key(style.CHOSEN_COLOUR, translate("inspector", "chosen")),
            key(style.RAW_COLOUR, translate("inspector", "cumulative (top-p's view)"), "●"),
            key(style.FOREGROUND, translate("inspector", "kept"), "━"),
            key("#7B3294", "top-k", "╍"),
            key(style.CUTOFF_COLOUR, "top-p / min-p", "╍"),
            key(style.DRAW_COLOUR, translate("inspector", "draw u"), "┃"),
        ]
        label = QLabel("&nbsp;&nbsp; ".join(keys))
        label.setFont(style.ui_font(8))
        label.setWordWrap(True)
        return label

    def _setup_plots(self) -> None:
        for plot in (self._bars_plot, self._cum_plot):
            style.style_plot(plot)
            plot.invertY(True)
            plot.showGrid(x=True, alpha=0.25)
        self._cum_plot.setYLink(self._bars_plot)
        self._cum_plot.getAxis("left").setStyle(showValues=False)
        self._cum_plot.getAxis("left").setWidth(4)
        self._cum_plot.setXRange(0, 1, padding=0.02)
        self._bars_plot.setLabel("bottom", translate("inspector", "probability"))
        self._cum_plot.setLabel("bottom", translate("inspector", "cumulative"))

    def _create_items(self) -> None:
        """Every plot item is made once here; redraws only change their data (setData / setOpts), which
        pyqtgraph redraws cheaply, whereas re-creating items on each redraw is slow."""
        bars, cum = self._bars_plot, self._cum_plot
        self._raw_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=_BAR)
        self._proc_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=_BAR)
        bars.addItem(self._raw_bars)
        bars.addItem(self._proc_bars)
        dash = Qt.PenStyle.DashLine
        self._kept_line = self._hline(bars, style.FOREGROUND, Qt.PenStyle.SolidLine, translate("inspector", "kept"))
        self._kept_line_cum = self._hline(cum, style.FOREGROUND, Qt.PenStyle.SolidLine, "")
        self._top_k_line = self._hline(bars, "#7B3294", dash, translate("inspector", "top-k"))
        self._min_p_line = self._vline(bars, style.CUTOFF_COLOUR, Qt.PenStyle.DotLine, translate("inspector", "min-p"),
                                       0.98)
        self._slices = pg.BarGraphItem(x0=[], y=[], width=[], height=0.6)
        cum.addItem(self._slices)
        self._cum_raw = cum.plot(
            [],
            [],
            pen=pg.mkPen(style.RAW_COLOUR, width=2),
            symbol="o",
            symbolSize=5,
            symbolBrush=style.RAW_COLOUR,
            symbolPen=None,
        )
        self._top_p_line = self._vline(cum, style.CUTOFF_COLOUR, dash, translate("inspector", "top-p"), 0.9)
        self._draw_line = self._vline(cum, style.DRAW_COLOUR, Qt.PenStyle.SolidLine, "u", 0.98)

    @staticmethod
    def _hline(plot: pg.PlotItem, colour: str, pen_style: Qt.PenStyle, label: str) -> pg.InfiniteLine:
        line = pg.InfiniteLine(
            angle=0,
            movable=False,
            pen=pg.mkPen(colour, width=1.5, style=pen_style),
            label=label or None,
            labelOpts={
                "position": 0.98,
                "color": colour,
                "anchors": [(1, 1), (1, 1)],
                "fill": (255, 255, 255, 200),
            },
        )
        plot.addItem(line, ignoreBounds=True)
        return line

    @staticmethod
    def _vline(plot: pg.PlotItem, colour: str, pen_style: Qt.PenStyle, label: str, position: float) -> pg.InfiniteLine:
        # Labels sit in the lower rows (the smallest bars, least covered), each at its own height: never collide.
        anchor = (0, 1) if position > 0.5 else (0, 0)
        line = pg.InfiniteLine(
            angle=90,
            movable=False,
            pen=pg.mkPen(colour, width=1.5, style=pen_style),
            label=label,
            labelOpts={
                "position": position,
                "color": colour,
                "anchors": [anchor, anchor],
                "fill": (255, 255, 255, 200),
            },
        )
        plot.addItem(line, ignoreBounds=True)
        return line

    def _build_numbers(self) -> QLabel:
        """One word-wrapped line of numbers: it reflows to any panel width instead of clipping columns. The row
        a click picked is read in one line of its own above it, always there: nothing moves when it changes."""
        self._picked_label = QLabel()
        self._picked_label.setTextFormat(Qt.TextFormat.RichText)
        self._picked_label.setFixedHeight(self.fontMetrics().lineSpacing() * 2 + 4)
        self._picked_label.setWordWrap(True)
        self._picked_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._numbers = QLabel()
        self._numbers.setWordWrap(True)
        self._numbers.setTextFormat(Qt.TextFormat.RichText)
        self._numbers.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._beams = QLabel()  # step mode: a beam lane's proposed step, beam by beam
        self._beams.setObjectName("stepBeams")
        self._beams.setWordWrap(True)
        self._beams.setTextFormat(Qt.TextFormat.RichText)
        self._beams.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._stages = QLabel()
        self._stages.setObjectName("stageTable")
        self._stages.setWordWrap(True)  # its caption names the token: wrapped, not cut at the panel's edge
        self._stages.setTextFormat(Qt.TextFormat.RichText)
        self._stages.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._stages.setToolTip(translate("inspector", "The lane's chain, stage by stage: after each processor, the "
                                                       "tokens it left, the share of the probability before it that "
                                                       "it kept, and the chosen token's rank and probability"))
        return self._numbers

    # ---- drawing -----------------------------------------------------------------------------------------
    def _redraw(self) -> None:
        if self._step is None:
            return
        step = self._step
        self._rows = inspector_rows(step, self._fitting_rows())
        self._cutoffs = step_cutoffs(step, self._rows, self._lane.config, self._lane.processors)
        lane = self.state.lanes[self._lane_index]
        swatch = style.lane_swatch(lane.colour) + ' '
        self._title.setText(swatch + html.escape(self._title_text()))
        self._title.setToolTip(self._title_text())
        self._set_rows_visible(True)
        self._draw_bars()
        self._draw_cutoffs()
        self._draw_cumulative()
        self._fill_beams()
        self._fill_numbers()
        self._fill_stages()

    @property
    def _lane(self):
        return self.state.lanes[self._lane_index].member_trace(self._member)

    def _title_text(self) -> str:
        step = self._step
        share = lane_characters([s.token_text for s in self._lane.steps]).get(step.step)
        token = display_token(step.token_text, 32, share)
        forced = translate("inspector", " · forced") if step.forced else ""
        if self._member == 0 and self.state.proposed_step(self._lane_index) == step.step:
            forced += translate("inspector", " · proposed, not yet taken")
        name = self._lane.name if self._member else self.state.lanes[self._lane_index].name
        if step.unseen_mass:  # a served model's top-N (decoding.records.partial): the bars are of what it returned
            forced += translate("inspector", " · partial: the server did not return {mass} of the raw probability "
                                             "(bars renormalised over what it returned)").format(
                mass=f"{step.unseen_mass:.1%}")
        title = translate("inspector", "{name} · step {step} · chose “{token}” (id {token_id}){forced}")
        return title.format(name=name, step=step.step, token=token, token_id=step.token_id, forced=forced)

    def _set_rows_visible(self, visible: bool) -> None:
        for item in (self._raw_bars, self._proc_bars, self._slices, self._cum_raw):
            item.setVisible(visible)
        if not visible:
            for line in (
                self._kept_line,
                self._kept_line_cum,
                self._top_k_line,
                self._min_p_line,
                self._top_p_line,
                self._draw_line,
            ):
                line.setVisible(False)
            self._bars_plot.getAxis("left").setTicks([[]])

    def _draw_bars(self) -> None:
        rows, n = self._rows, len(self._rows)
        ys = list(range(n))
        raw_w = [r.prob_raw or 0.0 for r in rows]
        proc_w = [r.prob or 0.0 for r in rows]
        shift = 0.0 if self._overlay else _BAR / 2
        raw_h = _BAR * 1.6 if self._overlay else _BAR
        proc_h = _BAR * 0.8 if self._overlay else _BAR
        self._raw_bars.setOpts(
            x0=[0.0] * n,
            y=[y - shift for y in ys],
            width=raw_w,
            height=raw_h,
            brushes=[self._brush(r, raw=True) for r in rows],
            pens=[None] * n,
        )
        self._proc_bars.setOpts(
            x0=[0.0] * n,
            y=[y + shift for y in ys],
            width=proc_w,
            height=proc_h,
            brushes=[self._brush(r, raw=False) for r in rows],
            pens=[None] * n,
        )
        self._set_token_ticks()
        top = max(raw_w + proc_w + [1e-6])
        self._bars_plot.setXRange(0, top * 1.12, padding=0)
        self._bars_plot.setYRange(-0.6, n - 0.4, padding=0)

    def _brush(self, row: TokenRow, raw: bool) -> pg.QtGui.QBrush:
        colour = style.CHOSEN_COLOUR if row.chosen else (style.RAW_COLOUR if raw else style.PROCESSED_COLOUR)
        brush = pg.mkBrush(colour)
        if raw and (row.chosen or self._overlay):
            brush = pg.mkBrush(pg.mkColor(colour).lighter(150 if row.chosen else 110))
        return brush

    def _set_token_ticks(self) -> None:
        pending = pending_bytes([s.token_text for s in self._lane.steps[: self._step.step]])
        ticks = [(i, f"{'▶ ' if r.chosen else ''}{display_token(r.text, pending=pending)}")
                 for i, r in enumerate(self._rows)]
        axis = self._bars_plot.getAxis("left")
        axis.setTicks([ticks])
        # pyqtgraph drops labels wider than the axis; size it to the longest label up front.
        metrics = QFontMetrics(style.ui_font(8.5))
        axis.setWidth(max(metrics.horizontalAdvance(text) for _, text in ticks) + 16)

    def _draw_cutoffs(self) -> None:
        c = self._cutoffs
        self._place(
            self._kept_line,
            None if c.kept_boundary is None else c.kept_boundary - 0.5,
            f"kept {self._step.kept:,}",
        )
        self._place(self._kept_line_cum, None if c.kept_boundary is None else c.kept_boundary - 0.5, None)
        self._place(self._top_k_line, None if c.top_k_boundary is None else c.top_k_boundary - 0.5, f"top-k {c.top_k}")
        self._place(self._min_p_line, c.min_p_threshold, f"min-p {c.min_p:g}·p₁" if c.min_p else None)
        self._place(self._top_p_line, c.top_p, f"top-p {c.top_p:g}" if c.top_p else None)
        draw = self._step.draw
        self._place(self._draw_line, draw, f"u={draw:.3f}" if draw is not None else None)
        self._separate_labels()

    def _separate_labels(self) -> None:
        """The cumulative plot's "u=" label moved up a row or more where it would cover another line's label
        ("top-p 0.9" drawn left of its line in a narrow plot sat on "u=0.248")."""
        label = self._draw_line.label
        others = [line.label for line in (self._top_p_line, self._min_p_line, self._top_k_line)
                  if line.isVisible() and getattr(line, "label", None) is not None and line.getViewBox() is
                  self._draw_line.getViewBox()]
        for position in _DRAW_LABEL_POSITIONS:
            label.setPosition(position)
            if not any(label.sceneBoundingRect().intersects(other.sceneBoundingRect()) for other in others):
                return

    @staticmethod
    def _place(line: pg.InfiniteLine, value: float | None, label: str | None) -> None:
        line.setVisible(value is not None)
        if value is None:
            return
        line.setValue(value)
        if getattr(line, "label", None) is None:  # pyqtgraph only creates .label for labelled lines
            return
        if label is not None:
            line.label.setFormat(label)
        if line.angle == 90:  # vertical: keep the label inside the plot, left of a line it would overrun
            side = 1 if _room_right_px(line, value) < line.label.boundingRect().width() + 4 else 0
            vertical = line.label.anchors[0][1]
            line.label.anchors = [(side, vertical), (side, vertical)]
            line.label.updatePosition()

    def _draw_cumulative(self) -> None:
        c, n = self._cutoffs, len(self._rows)
        lows = [low for low, _ in c.intervals]
        widths = [high - low for low, high in c.intervals]
        brushes = [pg.mkBrush(style.CHOSEN_COLOUR if r.chosen else style.PROCESSED_COLOUR) for r in self._rows]
        self._slices.setOpts(
            x0=lows,
            y=list(range(n)),
            width=widths,
            height=0.6,
            brushes=brushes,
            pens=[pg.mkPen("w", width=0.5)] * n,
        )
        self._cum_raw.setData(c.cumulative_raw, list(range(len(c.cumulative_raw))))

    def _fill_numbers(self) -> None:
        marks = self.state.marks(self._lane_index)[self._step.step] if self._member == 0 else None
        items = [
            f'<span style="color:{colours.current().muted}">{_unbreakable(name)}</span>&nbsp;{_unbreakable(value)}'
            for name, value in step_summary(self._lane, self._step, marks)
        ]
        self._numbers.setText(" &nbsp;· ".join(items))
        picked = self._picked is not None and self._picked < len(self._rows)
        hint = translate("inspector", "click a row: numbers · double-click: branch")
        self._picked_label.setText(self._picked_text(self._rows[self._picked]) if picked else
                                   f"<span style='color:{colours.current().muted}'>{hint}</span>")

    def _fill_beams(self) -> None:
        """Step mode, a beam lane's proposed step: every beam it extends, with its candidates."""
        proposal = self.state.proposals.get(self._lane_index) if self._member == 0 else None
        shown = proposal is not None and proposal.step == self._step.step and bool(proposal.beams)
        self._beams.setVisible(shown)
        self._beams.setText(beam_step_html(proposal.beams, self._step.beams or []) if shown else "")

    def beams_text(self) -> str:
        """The step's beams as a user reads them ('' unless step mode shows a beam lane's proposed step)."""
        document = QTextDocument()
        document.setHtml(self._beams.text())
        return document.toPlainText().replace("\u00a0", " ")

    def _candidate_stages(self, row: TokenRow | None) -> list:
        """The chain stage by stage for a row's token (the chosen token's without one)."""
        token = None if row is None else row.token_id
        temperature = self._lane.config.get("temperature")
        return stage_rows(self._step, token, float(temperature) if temperature is not None else None)

    def _picked_row(self) -> TokenRow | None:
        return self._rows[self._picked] if self._picked is not None and self._picked < len(self._rows) else None

    def _fill_stages(self) -> None:
        """The chain table of the clicked candidate (the chosen token until one is clicked): a line per stage,
        the stage that removed it in red."""
        picked = self._picked_row()
        rows = self._candidate_stages(picked)
        self._stages.setVisible(bool(rows))
        if not rows:
            self._stages.setText("")
            return
        scheme = colours.current()
        heads = [translate("inspector", "stage"), translate("inspector", "kept"), translate("inspector", "mass kept"),
                 translate("inspector", "rank"), translate("inspector", "p")]
        lines = ["<tr>" + "".join(f'<th align="{"left" if i == 0 else "right"}" style="color:{scheme.muted}">'
                                  f"{html.escape(head)}</th>" for i, head in enumerate(heads)) + "</tr>"]
        for index, row in enumerate(rows):
            cells = stage_cells(row, rows[index - 1] if index else None)
            colour = f' style="color:{scheme.error}"' if row.removed_here else ""
            lines.append(f"<tr{colour}>" + "".join(f'<td align="{"left" if i == 0 else "right"}">{html.escape(cell)}'
                                                   "</td>" for i, cell in enumerate(cells)) + "</tr>")
        token = display_token((picked.text if picked else self._step.token_text), 24)
        caption = (translate("inspector", "The chain, stage by stage, for “{token}” (click another row for its own)")
                   if picked is None or picked.chosen else
                   translate("inspector", "The chain, stage by stage, for “{token}” (not chosen; ? where the step's "
                                          "record does not say)")).format(token=token)
        self._stages.setText(f"<b>{html.escape(caption)}</b>"
                             f'<table cellspacing="0" cellpadding="1" width="100%">{"".join(lines)}</table>')

    def stage_table(self) -> list[list[str]]:
        """The chain table as a user reads it: its lines' cells, the header first (none without a chain)."""
        document = QTextDocument()
        document.setHtml(self._stages.text())
        table = document.rootFrame().childFrames()[0] if document.rootFrame().childFrames() else None
        if table is None:
            return []
        return [[table.cellAt(r, c).firstCursorPosition().block().text() for c in range(table.columns())]
                for r in range(table.rows())]

    def _picked_text(self, row: TokenRow) -> str:
        raw = "—" if row.prob_raw is None else f"{row.prob_raw:.4f}"
        processed = translate("inspector", "filtered") if not row.prob else f"{row.prob:.4f}"
        stage = removed_by(self._candidate_stages(row)) if not row.prob else None
        if stage is not None:
            processed = translate("inspector", "removed by {stage}").format(stage=stage)
        token = html.escape(display_token(row.text, 24))
        picked = translate("inspector", "<b>“{token}” (id {token_id}): p {processed}, raw {raw}</b>")
        return picked.format(token=token, token_id=row.token_id, processed=processed, raw=raw)

    def numbers_text(self) -> str:
        """The number panel as plain text (what a user reads under the chart)."""
        document = QTextDocument()
        document.setHtml(self._numbers.text())
        return document.toPlainText().replace("\u00a0", " ")

    # ---- interaction -------------------------------------------------------------------------------------
    def _on_mode_changed(self, index: int) -> None:
        self._overlay = index == 1
        self._redraw()

    def _on_click(self, event) -> None:
        row = self.row_at_scene_pos(event.scenePos())
        if row is None:
            return
        event.accept()
        if event.button() == Qt.MouseButton.LeftButton and event.double():
            if not self._rows[row].chosen:
                self.branchRequested.emit(self._lane_index, self._step.step, self._rows[row].token_id)
        elif event.button() == Qt.MouseButton.LeftButton:
            self.pick_row(row)
        elif event.button() == Qt.MouseButton.RightButton and not self._rows[row].chosen:
            self._context_menu(self._rows[row]).popup(QCursor.pos())

    def pick_row(self, row: int) -> None:
        """A row clicked: its numbers, and the chain stage by stage for its token."""
        self._picked = row
        self._fill_numbers()
        self._fill_stages()
        self._details_scroll.ensureWidgetVisible(self._stages, 0, 0)

    def _context_menu(self, row: TokenRow) -> QMenu:
        menu = QMenu(self)
        token = display_token(row.text, 24)
        step = self._step.step
        menu.addAction(
            translate("inspector", "Branch a new lane with “{token}” at step {step}").format(token=token, step=step),
            lambda: self.branchRequested.emit(self._lane_index, step, row.token_id),
        )
        menu.addAction(
            translate("inspector", "Force “{token}” for all lanes at step {step}").format(token=token, step=step),
            lambda: self.forceRequested.emit(step, row.token_id),
        )
        menu.addAction(
            translate("inspector", "Why the chosen token and not “{token}”?").format(token=token),
            lambda: self.whyNotRequested.emit(self._lane_index, step, row.token_id),
        )
        return menu


def _room_right_px(line: pg.InfiniteLine, value: float) -> float:
    """Pixels between a vertical line at `value` and its plot's right edge (the plot narrows with its panel:
    a fraction of the axis said too little about whether "u=0.693" fits)."""
    view = line.getViewBox()
    if view is None or view.width() <= 0:
        return 0.0
    low, high = view.viewRange()[0]
    return (high - value) / max(high - low, 1e-12) * view.width()
