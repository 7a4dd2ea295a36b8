"""Model comparison, a view of the RunState: one lane's tokens read by the run's model (A) and a second model (B),
teacher-forced (gui.state.model_comparison). Per step KL(A ‖ B) as a bar strip over the lane's tokens, steps
where the two models' top-1 tokens differ in the flip colour and labelled "A → B"; the tokens below as running
text shaded by KL; click a bar or a token for both distributions of that step side by side. "Compare with
model…" (the Lanes menu, a token's menu, the button here) makes the comparison."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTabWidget, QVBoxLayout, QWidget

from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import display_token
from gui.present.model_compare_rows import (
    TICK_PX,
    DistributionRow,
    StripBar,
    distribution_rows,
    flip_texts,
    heading,
    layer_caption,
    layer_points,
    model_label,
    step_caption,
    strip_bars,
    summary_text,
    tick_labels,
    tokens_html,
)
from gui.state.run_state import RunState
from gui.state.view_state import ModelCompareViewState
from gui.views import style
from gui.views.figure import Figure

SIDES = (0, 1)  # model A (the run's), model B


class ModelCompareView(QWidget):
    compareRequested = Signal()  # "Compare with model…" for the selected lane

    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._step: int | None = None  # the step shown side by side
        self._bars: list[StripBar] = []
        self._rows: dict[int, list[DistributionRow]] = {side: [] for side in SIDES}
        self._flip_labels: list[pg.TextItem] = []
        self._build_ui()
        for name in ("lanes_reset", "lane_changed", "lane_removed", "lane_moved", "run_finished"):
            state.events.connect(name, self._on_state_event)
        state.events.connect("model_comparison_changed", self._on_compared)
        state.events.connect("selection_changed", self._on_selection)
        self.redraw()

    # ---- public API --------------------------------------------------------------------------------------
    def view_state(self) -> ModelCompareViewState:
        return ModelCompareViewState(self._step)

    def set_view_state(self, view_state: ModelCompareViewState) -> None:
        self._step = view_state.step
        self.redraw()

    @property
    def step(self) -> int | None:
        return self._step

    def bars(self) -> list[StripBar]:
        """The KL strip as drawn: one bar per step of the lane."""
        return list(self._bars)

    def rows(self, side: int) -> list[DistributionRow]:
        """The distribution drawn for model A (0) or B (1) at the shown step."""
        return list(self._rows[side])

    def texts(self) -> dict[str, str]:
        return {"title": self._title.text(), "summary": self._summary.text(), "step": self._caption.text()}

    def select_step(self, step: int) -> None:
        """Show `step` side by side; the lane's token there becomes the window's selection (when the comparison
        still shows the lane)."""
        comparison = self.state.model_comparison
        if comparison is None or not 0 <= step < len(comparison.steps):
            return
        self._step = step
        lane = self.state.comparison_lane()
        if lane is not None and not self.state.comparison_stale():
            self.state.select(lane, step)
        self.redraw()

    def strip_point(self, step: int):
        """The scene position of a step's bar (tests click it)."""
        return self._strip.vb.mapViewToScene(pg.Point(step, 0.0))

    def figure(self) -> Figure | None:
        if self.state.model_comparison is None:
            return None
        words = (html.escape(self._summary.text()), html.escape(self._caption.text()))
        footer = "<br>".join([self._tokens.text(), *words])
        return Figure(self._title.text(), self._legend.text(), self._canvas.scene(),
                      self._canvas.ci.sceneBoundingRect(), footer)

    # ---- construction ------------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self._title = QLabel()
        self._title.setWordWrap(True)
        button = QPushButton(translate("model_compare_view", "Compare with model…"))
        button.setToolTip(translate("model_compare_view", "Read the selected lane's tokens with a second prepared "
                                                          "model (a precision variant, say) and compare step by step"))
        button.clicked.connect(self.compareRequested)
        self.state.events.connect("run_started", lambda _job: button.setEnabled(False))  # the action waits too
        self.state.events.connect("run_finished", lambda: button.setEnabled(True))
        header = QHBoxLayout()
        header.addWidget(self._title, 1)
        header.addWidget(button)
        self._summary = QLabel()
        self._summary.setWordWrap(True)
        self._legend = QLabel()
        self._legend.setFont(style.ui_font(8.5))
        self._legend.setWordWrap(True)
        self._canvas = style.make_canvas()
        self._strip = self._canvas.addPlot(row=0, col=0, colspan=3, axisItems={"bottom": style.StepAxis("bottom")})
        style.style_plot(self._strip)
        self._strip.setLabel("left", translate("model_compare_view", "KL(A‖B), nats"))
        self._strip_bars = pg.BarGraphItem(x=[], height=[], width=0.8)
        self._strip.addItem(self._strip_bars)
        self._marker = pg.InfiniteLine(angle=90, pen=pg.mkPen(style.FOREGROUND, width=1, style=Qt.PenStyle.DashLine))
        self._strip.addItem(self._marker)
        self._plots = {side: self._canvas.addPlot(row=1, col=side) for side in SIDES}
        self._dist_bars = {}
        for plot in self._plots.values():
            style.style_plot(plot, ink=False)
            plot.invertY(True)
            plot.setLabel("bottom", translate("model_compare_view", "probability"))
        for side, plot in self._plots.items():
            self._dist_bars[side] = pg.BarGraphItem(x0=[], y=[], width=[], height=0.7)
            plot.addItem(self._dist_bars[side])
        self._layers = self._canvas.addPlot(row=1, col=2)  # where in depth B departs from A, beside the two
        style.style_plot(self._layers)
        self._layers.setLabel("left", translate("model_compare_view", "‖h_B − h_A‖ / ‖h_A‖, %"))
        self._layers.setLabel("bottom", translate("model_compare_view", "layer"))
        self._layer_curve = self._layers.plot([], [], symbol="o", symbolSize=5)
        self._canvas.ci.layout.setRowStretchFactor(0, 1)
        self._canvas.ci.layout.setRowStretchFactor(1, 1)
        self._canvas.scene().sigMouseClicked.connect(self._on_click)
        self._tokens = QLabel()
        self._tokens.setWordWrap(True)
        self._tokens.setTextFormat(Qt.TextFormat.RichText)
        self._tokens.linkActivated.connect(lambda link: self.select_step(int(link.split(":")[1])))
        self._caption = QLabel()
        self._caption.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        for widget, stretch in ((self._summary, 0), (self._legend, 0), (self._canvas, 1), (self._tokens, 0),
                                (self._caption, 0)):
            layout.addWidget(widget, stretch)
        layout.insertLayout(0, header)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if self.state.model_comparison is not None:  # token and flip labels as many as fit the new width
            self.redraw()

    # ---- state events ------------------------------------------------------------------------------------
    def _on_state_event(self, *_args) -> None:
        comparison = self.state.model_comparison
        if comparison is None or (self._step is not None and self._step >= len(comparison.steps)):
            self._step = None
        self.redraw()

    def _on_compared(self) -> None:
        """A new comparison comes to the front of its tab group, showing the compared lane's selected step (the
        tour selects where two lanes part), else its largest KL."""
        self._step = None
        self._on_selection(self.state.selection)
        tabs = self.parentWidget()
        while tabs is not None and not isinstance(tabs, QTabWidget):
            tabs = tabs.parentWidget()
        if tabs is not None and self.state.model_comparison is not None:
            tabs.setCurrentWidget(self)

    def _on_selection(self, selection) -> None:
        """A step of the compared lane selected anywhere (the text, the timeline) is shown here too."""
        if (selection is not None and selection.member == 0 and selection.lane == self.state.comparison_lane()
                and not self.state.comparison_stale()):
            self._step = selection.step if selection.step < len(self.state.model_comparison.steps) else self._step
        self.redraw()

    def _on_click(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton or not self._bars:
            return
        if not self._strip.sceneBoundingRect().contains(event.scenePos()):
            return
        step = round(self._strip.vb.mapSceneToView(event.scenePos()).x())
        if 0 <= step < len(self._bars):
            event.accept()
            self.select_step(step)

    # ---- drawing -----------------------------------------------------------------------------------------
    def redraw(self) -> None:
        comparison = self.state.model_comparison
        if comparison is None:
            self._clear()
            return
        if self._step is None:  # where the models differ most: the largest KL
            self._step = comparison.summary["max_kl_step"]
        self._title.setText(heading(comparison, self.state.comparison_stale()))
        self._summary.setText(summary_text(comparison))
        self._legend.setText(self._legend_html())
        self._draw_strip()
        for side in SIDES:
            self._draw_side(side)
        self._draw_layers()
        self._tokens.setText(tokens_html(comparison, self._step))
        self._caption.setText(step_caption(comparison, self._step))

    def _legend_html(self) -> str:
        palette = colours.current()
        return translate("model_compare_view", "<span style=\"color:{KL}\">■</span>&nbsp;KL(A‖B) at the step &nbsp; "
                                               "<span style=\"color:{FLIP}\">■</span>&nbsp;↯ top-1 flips (A's → B's) "
                                               "&nbsp; <span style=\"color:{CHOSEN}\">■</span>&nbsp;the lane's token "
                                               "&nbsp; <span style=\"color:{OTHER}\">■</span>&nbsp;the other model's "
                                               "top-1 at a flip").format(
            KL=palette.processed, FLIP=palette.cutoff, CHOSEN=palette.chosen, OTHER=palette.top_k)

    def _draw_strip(self) -> None:
        palette = colours.current()
        self._bars = strip_bars(self.state.model_comparison)
        brushes = [pg.mkBrush(palette.cutoff if bar.flip else palette.processed) for bar in self._bars]
        self._strip_bars.setOpts(x=[b.step for b in self._bars], height=[b.kl for b in self._bars], width=0.8,
                                 brushes=brushes, pens=[None] * len(self._bars))
        top = max((b.kl for b in self._bars), default=0.0) or 1e-6
        for label in self._flip_labels:
            self._strip.removeItem(label)
        self._flip_labels = []
        width = self._strip.vb.width() or self._canvas.width() - 80  # before the first layout: the canvas's
        metrics = QFontMetrics(style.ui_font(7.5))
        texts = flip_texts(self._bars, width / max(len(self._bars), 1), metrics.horizontalAdvance)
        for bar in self._bars:
            if bar.flip:
                label = pg.TextItem(texts[bar.step], color=palette.cutoff, anchor=(0.5, 1.0))
                label.setFont(style.ui_font(7.5))
                label.setPos(bar.step, bar.kl)
                self._strip.addItem(label)
                self._flip_labels.append(label)
        self._strip.getAxis("bottom").setTicks([tick_labels(self._bars, int(width // TICK_PX))])
        self._strip.setXRange(-0.6, len(self._bars) - 0.4, padding=0)
        self._strip.setYRange(0, top * 1.3, padding=0)
        self._marker.setPos(self._step)
        self._marker.setVisible(True)

    def layer_points(self) -> tuple[list[int], list[float]]:
        """The per-layer chart as drawn: layer numbers and relative errors (%)."""
        x, y = self._layer_curve.getData()
        return ([] if x is None else [int(v) for v in x]), ([] if y is None else [float(v) for v in y])

    def _draw_layers(self) -> None:
        comparison, palette = self.state.model_comparison, colours.current()
        x, y = layer_points(comparison)
        self._layer_curve.setData(x, y, pen=pg.mkPen(palette.processed, width=1.5),
                                  symbolBrush=pg.mkBrush(palette.processed), symbolPen=None)
        self._layers.setTitle(html.escape(layer_caption(comparison)), size="9pt")

    def _draw_side(self, side: int) -> None:
        palette, comparison = colours.current(), self.state.model_comparison
        rows = distribution_rows(comparison, self._step, side)
        self._rows[side] = rows
        fills = [palette.chosen if r.chosen else palette.top_k if r.other_top1 else palette.processed for r in rows]
        labels = [f"{'▶ ' if row.chosen else ''}{display_token(row.text)}" for row in rows]
        plot = self._plots[side]
        style.draw_token_bars(plot, self._dist_bars[side], [row.prob for row in rows], fills, labels)
        model = comparison.reference if side == 0 else comparison.other
        title = translate("model_compare_view", "{side}: {model} · step {step}")
        plot.setTitle(html.escape(title.format(side="AB"[side], model=model_label(model), step=self._step)), size="9pt")

    def _clear(self) -> None:
        self._step, self._bars = None, []
        self._title.setText(translate("model_compare_view", "No model comparison yet: select a token of a lane, then "
                                                            "Compare with model… (Lanes menu, the token's menu, or "
                                                            "the button here) to read the lane's tokens with a second "
                                                            "model and see where the two differ."))
        for text in (self._summary, self._legend, self._tokens, self._caption):
            text.setText("")
        self._strip_bars.setOpts(x=[], height=[], width=0.8)
        for label in self._flip_labels:
            self._strip.removeItem(label)
        self._flip_labels = []
        self._strip.getAxis("bottom").setTicks(None)
        self._marker.setVisible(False)
        self._layer_curve.setData([], [])
        self._layers.setTitle(None)
        for side in SIDES:
            self._rows[side] = []
            self._dist_bars[side].setOpts(x0=[], y=[], width=[], height=0.7)
            self._plots[side].getAxis("left").setTicks([[]])
            self._plots[side].setTitle(None)
