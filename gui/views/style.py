"""Shared look of the window and its charts: one colour per lane, fonts that cover Chinese, plot setup. The colours
are the palette in effect's (gui.present.colours: light or dark), read when a view draws."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPainterPath, QTransform
from PySide6.QtWidgets import QApplication, QWidget

from gui.present import colours

# Set explicitly: with fonts-noto-cjk installed Qt otherwise draws Chinese text with its Japanese variant (JP glyph
# shapes); WenQuanYi Micro Hei covers systems with fonts-wqy-microhei instead.
FONT_FAMILIES = ["DejaVu Sans", "Noto Sans CJK SC", "WenQuanYi Micro Hei"]

# style.RAW_COLOUR etc.: the palette in effect's colour of that role (module __getattr__ below)
_THEMED = {"RAW_COLOUR": "raw", "PROCESSED_COLOUR": "processed", "CHOSEN_COLOUR": "chosen",
           "CUTOFF_COLOUR": "cutoff", "DRAW_COLOUR": "draw", "FOREGROUND": "ink"}


def __getattr__(name: str) -> str:
    if name in _THEMED:
        return getattr(colours.current(), _THEMED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lane_color_hex(index: int) -> str:
    return colours.current().lane(index)


def lane_color(index: int) -> QColor:
    return QColor(lane_color_hex(index))


def glyph_symbol(glyph: str) -> QPainterPath:
    """A text glyph (e.g. ↳, the branch mark every legend shows) as a pyqtgraph scatter symbol: its outline scaled
    into the unit square around 0, as pyqtgraph's own symbols are."""
    path = QPainterPath()
    path.addText(0, 0, ui_font(20), glyph)
    box = path.boundingRect()
    scale = 1 / max(box.width(), box.height(), 1e-6)
    return QTransform().scale(scale, scale).translate(-box.center().x(), -box.center().y()).map(path)


_PEN_STYLES = {"solid": Qt.PenStyle.SolidLine, "dash": Qt.PenStyle.DashLine, "dot": Qt.PenStyle.DotLine,
               "dashdot": Qt.PenStyle.DashDotLine}


def lane_pen_style(index: int) -> Qt.PenStyle:
    """Solid for the first twelve lanes' colours, then another pattern for each round of them."""
    return _PEN_STYLES[colours.current().lane_pattern(index)]


def lane_key(index: int, glyphs: dict[str, str] = colours.PATTERN_KEYS) -> str:
    """A lane's legend key (its line, in its colour and pattern) as rich text."""
    return f'<span style="color:{lane_color_hex(index)}">{glyphs[colours.current().lane_pattern(index)]}</span>'


def lane_swatch(index: int) -> str:
    """A lane's swatch beside its name (■, or a patterned square past the first twelve) as rich text."""
    return lane_key(index, colours.PATTERN_SWATCHES)


def ui_font(point_size: float = 9.0) -> QFont:
    font = QFont()
    font.setFamilies(FONT_FAMILIES)
    font.setPointSizeF(point_size)
    return font


def configure_fonts(app: QApplication) -> None:
    app.setFont(ui_font(app.font().pointSizeF() if app.font().pointSizeF() > 0 else 9.0))


class StepAxis(pg.AxisItem):
    """An axis of whole steps: never ticks between two steps."""

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph override)
        levels = [
            (spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size) if spacing >= 1
        ]
        return levels or [(1.0, 0.0)]


def make_plot_widget(parent: QWidget | None = None, step_axis: bool = True, whole_left: bool = False) -> pg.PlotWidget:
    """A plot on the palette's background with its ink on the axes, explicit fonts, no SI-prefix rescaling,
    (by default) whole-step x ticks and (`whole_left`) whole-number y ticks."""
    axes = {"bottom": StepAxis("bottom")} if step_axis else {}
    if whole_left:
        axes["left"] = StepAxis("left")
    widget = pg.PlotWidget(parent=parent, background=colours.current().background, axisItems=axes or None)
    plot = widget.getPlotItem()
    plot.setMenuEnabled(False)
    plot.hideButtons()
    style_axes(plot, ("left", "bottom", "right", "top"))
    return widget


def make_canvas() -> pg.GraphicsLayoutWidget:
    """A chart of several plots, drawn light (gui.shell.theme recolours it, and all it holds, in the dark scheme)."""
    canvas = pg.GraphicsLayoutWidget()
    canvas.setBackground("w")
    return canvas


def style_plot(plot: pg.PlotItem, axes: tuple[str, ...] = ("left", "bottom"), pan_x: bool = False,
               ink: bool = True) -> None:
    """A chart's plot: no context menu or auto-range button, no mouse panning or zooming (but along x if
    `pan_x`), and `axes` styled as style_axes does."""
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setMouseEnabled(x=pan_x, y=False)
    style_axes(plot, axes, ink)


def style_axes(plot: pg.PlotItem, names: tuple[str, ...], ink: bool = True) -> None:
    """Explicit tick font (Chinese included), no SI-prefix rescaling; `ink`: the palette's ink on the axis line
    and labels (else pyqtgraph's grey)."""
    for name in names:
        axis = plot.getAxis(name)
        axis.enableAutoSIPrefix(False)
        if ink:
            axis.setPen(pg.mkPen(colours.current().ink))
            axis.setTextPen(pg.mkPen(colours.current().ink))
        axis.setTickFont(ui_font(8.5))


def export_widget_png(widget: QWidget, path: str | Path) -> Path:
    """Render the widget as it looks now into a PNG; raises OSError if Qt could not write it."""
    path = Path(path)
    if not widget.grab().save(str(path), "PNG"):
        raise OSError(f"could not write PNG to {path}")
    return path


def draw_token_bars(plot: pg.PlotItem, bars: pg.BarGraphItem, probs: list[float], fills: list,
                    labels: list[str]) -> None:
    """A distribution as horizontal bars, token i on row i: each bar's width its probability, its label on the left
    axis, the x range up to the widest bar."""
    rows = len(probs)
    bars.setOpts(x0=[0.0] * rows, y=list(range(rows)), width=probs, height=0.7,
                 brushes=[pg.mkBrush(fill) for fill in fills], pens=[None] * rows)
    plot.getAxis("left").setTicks([list(enumerate(labels))])
    plot.setXRange(0, max(probs + [1e-6]) * 1.1, padding=0)
    plot.setYRange(-0.6, rows - 0.4, padding=0)
