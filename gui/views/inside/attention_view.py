"""Attention, a view of the RunState over an explained lane (decoding.records.explain): for one token, a
layer × position heatmap of how much it attends to every earlier token (prompt and generated), or of how much
every later token attends to it, so that a word whose pull is released many tokens later (“Although” … “ but”)
shows as a peak.
The heads are averaged, one head is shown, or each cell's strongest head; a click on a cell shows every head of
that layer for that pair beside it, with the strongest heads in words, and the tokens attended most are listed.

Position 0 takes most of many heads' attention (an "attention sink"), which flattens everything else: "leave out
position 0" blanks it and rescales the rest of each row to sum to 1 (said in the legend). A plain prompt
is explained with the model's start token in front (decoding.records.explain.with_start_token), so its first word
is not the sink: that token is ‹start› on the axis, the legend says why, and it is left out from the start.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from decoding.records.explain import ExplainResult
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present import colours
from gui.present.inside_data import (
    LOOKED_AT,
    LOOKS_AT,
    MEAN,
    SINK_LIMIT,
    STRONGEST,
    explained_start,
    head_weights,
    inside_lane,
    looked_at_grid,
    looks_at_grid,
    position_label,
    strongest_heads,
    strongest_look,
    token_labels,
    top_attended,
)
from gui.state.run_state import RunState
from gui.state.view_state import AttentionViewState
from gui.views import style
from gui.views.figure import Figure
from gui.views.inside.inside_widgets import InsideHeader, TokenAxis, capped_scroll, lane_swatch, readout_label

MODES = {LOOKS_AT: QT_TRANSLATE_NOOP("attention_view", "where it looks"),
         LOOKED_AT: QT_TRANSLATE_NOOP("attention_view", "who looks at it")}
# white → dark blue: a weight of 0 is the background, strong attention stands out
_COLOURS = ["#ffffff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]
COLOUR_MAP = pg.ColorMap(np.linspace(0.0, 1.0, len(_COLOURS)), [pg.mkColor(c) for c in _COLOURS])
PICKED_COLOUR = "#E69F00"
COLOUR_BAR_PX = 52
HEAD_PLOT_PX = 84  # the picked cell's heads keep this width (by stretch alone they got under 20 px at 1280×800;
# a title above them widened the plot past the panel's edge: the layer is named below them instead)
STRIP_FROM_PX = 300  # a canvas shorter than this leaves out the bars above the heatmap (its picked row again):
# in the step panel at 1280×800 they and their title took twice the heatmap's height
LEGEND_LINES = 3  # the legend scrolls past this (with the start token's note it took six lines)
READOUT_LINES = 2  # the readout scrolls past this: in a short panel the heatmap keeps its height (five left it
# a few dozen pixels at 1280×800, three under 100 px)


class AttentionView(QWidget):
    explainRequested = Signal(int)  # lane (its header's Explain button)

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._lane: int | None = None
        self._result: ExplainResult | None = None
        self._labels: list[str] = []
        self._token = 0  # the position the heatmap is about
        self._mode = LOOKS_AT
        self._heads: str | int = MEAN
        self._drop_first = False
        self._start_added = False  # position 0 is a start token put in front of a plain prompt
        self._grid = np.zeros((0, 0))
        self._title = ""
        self._picked: tuple[int, int] | None = None  # (layer, column) whose heads are shown
        self._user_picked = False  # the pick is a click's (switching the mode then follows it)
        self._build_ui()
        for name in ("lanes_reset", "lane_removed", "lane_moved", "run_finished", "explanations_changed"):
            state.events.connect(name, self._on_change)
        state.events.connect("selection_changed", self._on_change)
        self._on_change()

    # ---- public API --------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} is not one of {sorted(MODES)}")
        self._mode_combo.setCurrentIndex(list(MODES).index(mode))

    def set_token(self, position: int) -> None:
        """Show the token at `position` of the explained sequence (prompt tokens included)."""
        if self._result is None or not 0 <= position < len(self._result.tokens):
            raise ValueError(f"position={position} is outside the explained sequence")
        self._token_combo.setCurrentIndex(position)

    def set_heads(self, heads: str | int) -> None:
        """MEAN, STRONGEST or a head index."""
        items = [self._heads_combo.itemData(i) for i in range(self._heads_combo.count())]
        self._heads_combo.setCurrentIndex(items.index(heads))

    def set_drop_first(self, drop: bool) -> None:
        self._drop_box.setChecked(drop)

    def pick(self, layer: int, column: int) -> None:
        """Show every head of `layer` for the pair in `column` (what a click on that cell does)."""
        rows, columns = self._grid.shape
        if not (0 <= layer < rows and 0 <= column < columns):
            raise ValueError(f"cell ({layer}, {column}) is outside the {rows} x {columns} heatmap")
        self._picked, self._user_picked = (layer, column), True
        self._draw_picked()

    def show_look(self, query: int, keys: range) -> None:
        """Where the token at `query` looks, through the head that looks hardest at any of `keys` (e.g. " but"
        and "Although"): that head in every layer, position 0 left out, its layer's row and heads shown for the
        key it favours."""
        layer, head, key = strongest_look(self._result, query, keys)
        self.set_mode(LOOKS_AT)
        self.set_token(query)
        self.set_heads(head)
        self.set_drop_first(True)
        self.pick(layer, key)

    def view_state(self) -> AttentionViewState:
        return AttentionViewState(self._mode, self._heads, self._drop_first, self._token, self._picked)

    def set_view_state(self, state: AttentionViewState) -> None:
        """Show what another attention view showed (an export drawn at another size)."""
        if self._result is None:
            return
        self.set_mode(state.mode)
        self.set_heads(state.heads)
        self.set_drop_first(state.drop_first)
        self.set_token(state.token)
        if state.picked is not None:
            self.pick(*state.picked)

    @property
    def token(self) -> int:
        return self._token

    def grid(self) -> np.ndarray:
        """The values drawn: [layers, columns] (NaN: blank)."""
        return self._grid.copy()

    def columns(self) -> list[int]:
        """The sequence position of each column."""
        start = 0 if self._mode == LOOKS_AT else self._token
        return list(range(start, start + self._grid.shape[1]))

    def column_labels(self) -> list[str]:
        return list(self._axis.labels)

    def cell_colour(self, layer: int, column: int) -> str:
        """The colour a cell is drawn in, #rrggbb (blank cells: the background)."""
        value = self._grid[layer, column]
        if math.isnan(value):
            return colours.current().background
        high = self._level()
        return self._bar.colorMap().map(min(max(value / high, 0.0), 1.0), mode="qcolor").name()

    def strip_bars(self) -> list[float]:
        """The heights of the bars above the heatmap: the picked layer's row (blank cells as 0)."""
        return [float(h) for h in self._strip.opts["height"]]

    def picked(self) -> tuple[int, int] | None:
        """(layer, column) of the cell whose heads are shown."""
        return self._picked

    def head_bars(self) -> list[float]:
        """The heights of the per-head bars drawn for the picked cell."""
        return [float(h) for h in self._bars.opts["height"]]

    def readout(self) -> str:
        return self._readout.text()

    def scene_pos_of(self, layer: int, column: int) -> QPointF:
        return self._plot.vb.mapViewToScene(QPointF(column + 0.5, layer + 0.5))

    def figure(self) -> Figure | None:
        if self._result is None:
            return None
        return Figure(self._title, self._legend.text(), self._canvas.scene(), self._canvas.ci.sceneBoundingRect(),
                      self._readout.text())

    # ---- state events ------------------------------------------------------------------------------------
    def _on_change(self, *_args) -> None:
        """Any change of the lanes, their explanations or the selection: show the inside lane's explanation,
        on the selected step's token when there is one."""
        self._lane = inside_lane(self.state)
        result = self.state.explanation(self._lane) if self._lane is not None else None
        if result is not self._result:
            self._result = result
            self._start_added = explained_start(self.state, result)
            self._labels = token_labels(result, self._start_added) if result is not None else []
            self._fill_token_combo()
            self._fill_heads_combo()
            self._drop_box.setText(translate("attention_view", "leave out position 0 (the start token)")
                                   if self._start_added else translate("attention_view", "leave out position 0"))
            if self._start_added:  # the sink is the start token: what the prompt's words get shows without it
                self._drop_box.blockSignals(True)
                self._drop_box.setChecked(True)
                self._drop_box.blockSignals(False)
                self._drop_first = True
        selection = self.state.selection
        if result is not None and selection is not None:
            position = result.prompt_length + selection.step
            if position < len(result.tokens) and position != self._token:
                self._token, self._picked, self._user_picked = position, None, False
                self._token_combo.blockSignals(True)
                self._token_combo.setCurrentIndex(position)
                self._token_combo.blockSignals(False)
        self.redraw()

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.header = InsideHeader()
        self.header.explainRequested.connect(self.explainRequested)
        self._mode_combo = QComboBox()
        self._mode_combo.addItems([translate("attention_view", text) for text in MODES.values()])
        self._mode_combo.setToolTip(translate("attention_view", "Where the token looks (its attention over every "
                                                                "earlier token), or who looks at it (every later "
                                                                "token's attention to it)"))
        self._mode_combo.currentIndexChanged.connect(self._on_mode)
        self._token_combo = QComboBox()
        self._token_combo.setMinimumContentsLength(16)
        self._token_combo.setToolTip(translate("attention_view", "The token the heatmap is about (prompt tokens too); "
                                                                 "selecting a step in the text picks its token"))
        self._token_combo.currentIndexChanged.connect(self._on_token)
        self._heads_combo = QComboBox()
        self._heads_combo.setToolTip(translate("attention_view", "Average the heads, show each layer's strongest head, "
                                                                 "or one head"))
        self._heads_combo.currentIndexChanged.connect(self._on_heads)
        self._drop_box = QCheckBox(translate("attention_view", "leave out position 0"))
        self._drop_box.setToolTip(translate("attention_view", "Position 0 takes most of many heads' attention (an "
                                                              "attention sink): blank it and rescale the rest of each "
                                                              "row to sum to 1"))
        self._drop_box.toggled.connect(self._on_drop)
        controls = QVBoxLayout()  # two rows: in one, the step panel's default width cut every control short
        for row in ((self._mode_combo, QLabel(translate("attention_view", "token")), self._token_combo),
                    (self._heads_combo, self._drop_box)):
            line = QHBoxLayout()
            for widget in row:
                line.addWidget(widget)
            line.addStretch(1)
            controls.addLayout(line)
        self._legend = QLabel()
        self._legend.setFont(style.ui_font(8.5))
        self._legend.setWordWrap(True)
        self._canvas = style.make_canvas()
        self._canvas.installEventFilter(self)
        self._axis = TokenAxis()
        # the picked layer's row as bars above the heatmap, column for column (same left axis width)
        self._strip_plot = self._canvas.addPlot(row=0, col=0)
        self._plot = self._canvas.addPlot(row=1, col=0, axisItems={"bottom": self._axis})
        self._head_plot = self._canvas.addPlot(row=1, col=1)
        self._strip_plot.setXLink(self._plot)
        layout = self._canvas.ci.layout
        layout.setColumnStretchFactor(0, 1)
        layout.setColumnStretchFactor(1, 0)
        layout.setRowStretchFactor(0, 1)
        layout.setRowStretchFactor(1, 4)
        for plot in (self._strip_plot, self._plot, self._head_plot):
            style.style_plot(plot)
        for plot in (self._strip_plot, self._plot):
            plot.getAxis("left").setWidth(44)
        self._strip_plot.hideAxis("bottom")
        self._strip = pg.BarGraphItem(x0=[], height=[], width=0.8)
        self._strip_plot.addItem(self._strip)
        self._plot.invertY(True)
        self._plot.setLabel("left", translate("attention_view", "layer"))
        self._image = pg.ImageItem(axisOrder="row-major")
        self._image.setColorMap(COLOUR_MAP)
        self._plot.addItem(self._image)
        self._bar = pg.ColorBarItem(interactive=False, width=12, colorMap=COLOUR_MAP)
        self._bar.setImageItem(self._image, insert_in=self._plot)
        self._bar.setFixedWidth(COLOUR_BAR_PX)
        self._bar.follows_theme = True  # gui.shell.theme turns its scale (and the heatmap's) with the palette
        spacer = pg.GraphicsWidget()  # the strip keeps the heatmap's width: its columns stay above the cells
        spacer.setFixedWidth(COLOUR_BAR_PX)
        self._strip_plot.layout.setColumnFixedWidth(4, 5)
        self._strip_plot.layout.addItem(spacer, 2, 5)
        self._boundary = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine))
        self._plot.addItem(self._boundary)
        self._cursor = pg.ScatterPlotItem(symbol="s", size=12, brush=None, pen=pg.mkPen(PICKED_COLOUR, width=2),
                                          pxMode=True)
        self._cursor.setZValue(10)
        self._plot.addItem(self._cursor)
        self._head_plot.setLabel("bottom", translate("attention_view", "head"))
        self._head_plot.getAxis("left").setWidth(28)
        self._head_plot.setFixedWidth(HEAD_PLOT_PX)
        self._bars = pg.BarGraphItem(x=[], height=[], width=0.7)
        self._head_plot.addItem(self._bars)
        self._canvas.scene().sigMouseClicked.connect(self._on_click)
        self._readout = readout_label("attentionReadout")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addLayout(controls)
        self._legend_area = capped_scroll(self._legend, LEGEND_LINES)
        self._legend_cap = self._legend_area.maximumHeight()
        layout.addWidget(self._legend_area)
        layout.addWidget(self._canvas, 1)
        layout.addWidget(capped_scroll(self._readout, READOUT_LINES))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if watched is self._canvas and event.type() == QEvent.Type.Resize:
            self._fit_strip(event.size().height())
            self._fit_legend()  # a new width wraps it into more or fewer lines
        return super().eventFilter(watched, event)

    def _fit_strip(self, canvas_height: int) -> None:
        """The bars above the heatmap only where the canvas has room for both."""
        room = canvas_height >= STRIP_FROM_PX
        changed = room != self._strip_plot.isVisible()
        self._strip_plot.setVisible(room)
        self._strip_plot.setMaximumHeight(16_777_215 if room else 0)
        if changed and self._picked is not None:
            self._draw_strip(*self._picked)  # its title: only where it fits

    def strip_shown(self) -> bool:
        return self._strip_plot.isVisible()

    def _fill_token_combo(self) -> None:
        self._token_combo.blockSignals(True)
        self._token_combo.clear()
        if self._result is not None:
            for position in range(len(self._result.tokens)):
                self._token_combo.addItem(position_label(self._result, position, self._labels))
            self._token = min(self._token, len(self._result.tokens) - 1)
            self._token_combo.setCurrentIndex(self._token)
        self._token_combo.blockSignals(False)

    def _fill_heads_combo(self) -> None:
        self._heads_combo.blockSignals(True)
        self._heads_combo.clear()
        self._heads_combo.addItem(translate("attention_view", "mean of the heads"), MEAN)
        self._heads_combo.addItem(translate("attention_view", "strongest head"), STRONGEST)
        for head in range(self._result.heads if self._result is not None else 0):
            self._heads_combo.addItem(translate("attention_view", "head {head}").format(head=head), head)
        items = [self._heads_combo.itemData(i) for i in range(self._heads_combo.count())]
        self._heads = self._heads if self._heads in items else MEAN
        self._heads_combo.setCurrentIndex(items.index(self._heads))
        self._heads_combo.blockSignals(False)

    # ---- controls ----------------------------------------------------------------------------------------
    def _on_mode(self, index: int) -> None:
        previous, self._mode = self._mode, list(MODES)[index]
        if self._user_picked and self._result is not None and previous != self._mode:
            # switching follows the picked pair: "who looks at the token it looked at", and back
            self._token = self._position_of_column(previous, self._picked[1])
            self._token_combo.blockSignals(True)
            self._token_combo.setCurrentIndex(self._token)
            self._token_combo.blockSignals(False)
        self._picked, self._user_picked = None, False
        self.redraw()

    def _position_of_column(self, mode: str, column: int) -> int:
        return column if mode == LOOKS_AT else self._token + column

    def _on_token(self, index: int) -> None:
        if index >= 0:
            self._token = index
            self._picked, self._user_picked = None, False
            self.redraw()

    def _on_heads(self, index: int) -> None:
        if index >= 0:
            self._heads = self._heads_combo.itemData(index)
            self.redraw()

    def _on_drop(self, drop: bool) -> None:
        self._drop_first = drop
        self.redraw()

    # ---- drawing -----------------------------------------------------------------------------------------
    def redraw(self) -> None:
        result, lane = self._result, self._lane
        self._mode_combo.setEnabled(result is not None)
        if result is None:
            self._grid = np.zeros((0, 0))
            self._image.clear()
            self._axis.set_labels([])
            self._bars.setOpts(x=[], height=[])
            self._cursor.setData([], [])
            self._readout.setText("")
            self._legend.setText("")
            not_explained = translate("attention_view", "{lane} is not explained yet: explaining runs its tokens "
                                                        "through the model's inspection model once (prepared the "
                                                        "first time).")
            no_lane = translate("attention_view", "Run the lanes, then explain one: its attention of every layer and "
                                                  "head over the tokens before each token.")
            why = no_lane if lane is None else not_explained.format(lane=lane_swatch(self.state, lane))
            self.header.show_lane(self.state, lane, False, why)
            return
        self._grid = self._compute_grid()
        layers, columns = self._grid.shape
        self._image.setImage(self._grid, levels=(0.0, self._level()))
        self._image.setRect(0, 0, columns, layers)
        self._bar.setLevels((0.0, self._level()))
        self._axis.set_labels([self._labels[p] for p in self.columns()])
        self._plot.getAxis("left").setTicks([layer_ticks(layers, result.windows),
                                             [(layer + 0.5, "") for layer in range(layers)]])
        self._plot.setXRange(0, max(columns, 1), padding=0)
        self._plot.setYRange(0, layers, padding=0)
        boundary = result.prompt_length - self.columns()[0]
        self._boundary.setVisible(0 < boundary < columns)
        self._boundary.setValue(boundary)
        if self._picked is None or self._picked[1] >= columns or math.isnan(self._grid[self._picked]):
            self._picked, self._user_picked = self._default_pick(), False
        self._draw_title()
        self._draw_legend()
        self._draw_picked()

    def _compute_grid(self) -> np.ndarray:
        if self._mode == LOOKS_AT:
            return looks_at_grid(self._result, self._token, self._heads, self._drop_first)
        return looked_at_grid(self._result, self._token, self._heads, self._drop_first)

    def _level(self) -> float:
        finite = self._grid[np.isfinite(self._grid)]
        return float(finite.max()) if finite.size and finite.max() > 0 else 1.0

    def _pair(self, column: int) -> tuple[int, int]:
        """(query, key) of a column."""
        position = self._position_of_column(self._mode, column)
        return (self._token, position) if self._mode == LOOKS_AT else (position, self._token)

    def _token_column(self) -> int:
        return self._token if self._mode == LOOKS_AT else 0

    def _default_pick(self) -> tuple[int, int] | None:
        """The most attended other token, in the layer of its strongest head."""
        token_column = self._token_column()
        for attended in top_attended(self._result, self._grid, self._token, self._mode, count=3):
            column = attended.position - self.columns()[0]
            if column != token_column:
                return attended.strongest.layer, column
        return None

    def _draw_title(self) -> None:
        token = position_label(self._result, self._token, self._labels)
        heads = self._heads_words()
        verb = (translate("attention_view", "where {token} looks") if self._mode == LOOKS_AT
                else translate("attention_view", "who looks at {token}")).format(token=token)
        lane = translate("attention_view", "lane {name}").format(name=self.state.lanes[self._lane].name)
        self._title = f"{verb} · {heads} · {lane}"
        self.header.show_lane(self.state, self._lane, True,
                              f"{lane_swatch(self.state, self._lane)}: {html.escape(verb)} · {heads}")

    def _heads_words(self) -> str:
        if self._heads == MEAN:
            return translate("attention_view", "mean of the heads")
        if self._heads == STRONGEST:
            return translate("attention_view", "each layer's strongest head")
        return translate("attention_view", "head {head}").format(head=self._heads)

    def _draw_legend(self) -> None:
        parts = [translate("attention_view", "colour: attention weight"),
                 translate("attention_view", "dashed: end of the prompt"),
                 translate("attention_view", "click a cell: that layer's heads")]
        if self._drop_first and self._heads != STRONGEST:
            parts[0] = translate("attention_view", "colour: weight with <b>position 0 left out</b> (rows rescaled to "
                                                   "sum to 1; blank where it took over {limit})").format(
                limit=f"{SINK_LIMIT:.0%}")
        elif self._drop_first:
            parts[0] = translate("attention_view", "colour: the strongest head's own weight, <b>position 0 left "
                                                   "out</b> (not rescaled)")
        windows = self._result.windows
        if windows:  # Gemma 3: most layers see only the last positions
            local = next(w for w in windows if w is not None)
            parts.insert(1, translate("attention_view", "layers marked ● see every earlier position, the others "
                                                        "only the last {window}").format(window=f"{local:,}"))
        if self._start_added:
            start = translate("attention_view", "<b>‹start›</b>: the model's start token {token}, put in front of the "
                                                "plain prompt (as a chat has it) to take the attention sink, not "
                                                "its first word")
            parts.insert(0, start.format(token=html.escape(self._result.tokens[0].text)))
        self._legend.setText(" · ".join(parts))
        self._fit_legend()

    def _fit_legend(self) -> None:
        """The legend's area as high as its text, up to LEGEND_LINES (a scroll area keeps its cap otherwise)."""
        needed = self._legend.heightForWidth(max(self._legend_area.viewport().width(), 1)) + 2
        self._legend_area.setFixedHeight(min(needed, self._legend_cap))

    def _draw_picked(self) -> None:
        result = self._result
        if result is None:
            return
        lines = [self._top_line()]
        picked = {self._picked[1]} if self._picked is not None else set()
        self._axis.set_labels(self._axis.labels, {self._token_column(), *picked})
        if self._picked is None:
            self._bars.setOpts(x=[], height=[])
            self._strip.setOpts(x0=[], height=[])
            self._cursor.setData([], [])
            self._head_plot.setLabel("bottom", translate("attention_view", "head"))
            self._set_strip_title(None)
        else:
            layer, column = self._picked
            self._draw_strip(layer, column)

            query, key = self._pair(column)
            weights = head_weights(result, query, key, layer)
            chosen = self._heads if isinstance(self._heads, int) else None
            brushes = [pg.mkBrush(PICKED_COLOUR if head == chosen else style.PROCESSED_COLOUR)
                       for head in range(len(weights))]
            self._bars.setOpts(x=list(range(len(weights))), height=weights, width=0.7, brushes=brushes)
            self._head_plot.setYRange(0, max(max(weights), 1e-6) * 1.1, padding=0)
            self._head_plot.setXRange(-0.6, len(weights) - 0.4, padding=0)
            self._head_plot.setLabel("bottom", translate("attention_view", "heads, L{layer}").format(
                layer=layer))
            self._cursor.setData([column + 0.5], [layer + 0.5])
            lines.append(self._pair_line(query, key, layer))
        self._readout.setText("<br>".join(lines))

    def _draw_strip(self, layer: int, column: int) -> None:
        """The picked layer's row of the heatmap as bars (blank cells: no bar), the picked column's highlighted."""
        row = np.nan_to_num(self._grid[layer], nan=0.0)
        brushes = [pg.mkBrush(PICKED_COLOUR if c == column else style.PROCESSED_COLOUR) for c in range(row.size)]
        self._strip.setOpts(x0=np.arange(row.size) + 0.1, height=row, width=0.8, brushes=brushes,
                            pens=[None] * row.size)
        self._strip_plot.setYRange(0, max(float(row.max()), 1e-6) * 1.1, padding=0)
        title = translate("attention_view", "layer {layer}, {heads}: the heatmap's row").format(
            layer=layer, heads=self._heads_words())
        # a title sets its plot's least width, and the strip shares the heatmap's column: one wider than the
        # canvas (or a hidden strip's) pushed the heads' bars past the panel's edge
        fits = self.strip_shown() and QFontMetrics(style.ui_font(8.5)).horizontalAdvance(title) < (
            self._canvas.width() - HEAD_PLOT_PX - COLOUR_BAR_PX)
        self._set_strip_title(title if fits else None)

    def _set_strip_title(self, title: str | None) -> None:
        if title is None:  # pyqtgraph hides a title but keeps its text, and the least width that text needs
            self._strip_plot.titleLabel.setText("")
        self._strip_plot.setTitle(title, size="8.5pt")

    def _top_line(self) -> str:
        found = top_attended(self._result, self._grid, self._token, self._mode)
        entry = translate("attention_view", "{token} {weight} (strongest: layer {layer} head {head} {head_weight})")
        entries = [entry.format(token=self._short(a.position), weight=f"{a.weight:.3f}", layer=a.strongest.layer,
                                head=a.strongest.head, head_weight=f"{a.strongest.weight:.2f}") for a in found]
        what = (translate("attention_view", "top tokens attended") if self._mode == LOOKS_AT else
                translate("attention_view", "attending to it most"))
        line = translate("attention_view", "<b>{what}</b> (colours' mean over layers): {entries}")
        return line.format(what=what, entries=" · ".join(entries))

    def _pair_line(self, query: int, key: int, layer: int) -> str:
        value = self._grid[layer, self._picked[1]]
        heads = strongest_heads(self._result, query, key, 2)
        head = translate("attention_view", "layer {layer} head {head} {weight}")
        strongest = "; ".join(head.format(layer=h.layer, head=h.head, weight=f"{h.weight:.2f}") for h in heads)
        shown = translate("attention_view", "blank") if math.isnan(value) else f"{value:.3f}"
        line = translate("attention_view", "<b>{query} → {key}</b>: layer {layer} shows {shown}; strongest heads "
                                           "{strongest} (the first gives each other earlier token but position 0 "
                                           "{others} on average)")
        return line.format(query=self._short(query), key=self._short(key), layer=layer, shown=shown,
                           strongest=strongest, others=f"{heads[0].others:.3f}")

    def _short(self, position: int) -> str:
        return html.escape(f"“{self._labels[position]}”@{position}")

    # ---- interaction -------------------------------------------------------------------------------------
    def _on_click(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton or not self._grid.size:
            return
        if not self._plot.vb.sceneBoundingRect().contains(event.scenePos()):
            return
        point = self._plot.vb.mapSceneToView(event.scenePos())
        layer, column = math.floor(point.y()), math.floor(point.x())
        if 0 <= layer < self._grid.shape[0] and 0 <= column < self._grid.shape[1]:
            self.pick(layer, column)


def layer_ticks(layers: int, windows: list[int | None] | None) -> list[tuple[float, str]]:
    """The heatmap's layer labels: every fifth layer, and for a model with sliding windows every layer that sees
    all positions, marked ●.

    >>> layer_ticks(12, [512] * 5 + [None] + [512] * 5 + [None])
    [(0.5, '0'), (5.5, '5●'), (10.5, '10'), (11.5, '11●')]
    """
    full = {layer for layer, window in enumerate(windows or []) if window is None}
    shown = sorted(set(range(0, layers, 5)) | full)
    return [(layer + 0.5, f"{layer}●" if layer in full else str(layer)) for layer in shown]
