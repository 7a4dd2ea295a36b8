"""Light and dark: the window follows the system's colour scheme, or View → Theme forces either. A forced scheme
uses Qt's Fusion style with Branchpoint's own palette (the same on every platform); following the system keeps
the platform's style and palette.

Views read their colours (token backgrounds, marks, chart pens) from gui.present.colours when they draw, so what they
draw next has the scheme in effect. What is already drawn changes with the scheme at once: every chart's
background, axes and items, and every colour written into a label's rich text or a style sheet, become their
counterpart in the other palette (gui.present.colours.counterpart: the designed pair, else the lightness mirrored);
then `changed` lets views redraw what they render themselves (the lane texts).
"""

from __future__ import annotations

import re
import weakref

import pyqtgraph as pg
import shiboken6
from PySide6 import QtGui
from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPalette, QPen
from PySide6.QtWidgets import QApplication, QLabel, QStyleFactory, QWidget

from gui.present import colours

MODES = ("system", "light", "dark")


def dark_palette() -> QPalette:
    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, "#2b2b2b"), (roles.WindowText, "#e6e6e6"), (roles.Base, "#1f1f1f"),
        (roles.AlternateBase, "#2f2f2f"), (roles.ToolTipBase, "#3a3a3a"), (roles.ToolTipText, "#f0f0f0"),
        (roles.PlaceholderText, "#9a9a9a"), (roles.Text, "#e6e6e6"), (roles.Button, "#353535"),
        (roles.ButtonText, "#e6e6e6"), (roles.BrightText, "#ff6b6b"), (roles.Link, "#6cb4ff"),
        (roles.LinkVisited, "#b59cff"), (roles.Highlight, "#2f6db3"), (roles.HighlightedText, "#ffffff"),
        (roles.Light, "#4a4a4a"), (roles.Midlight, "#3d3d3d"), (roles.Mid, "#2a2a2a"), (roles.Dark, "#191919"),
        (roles.Shadow, "#000000"),
    ):
        palette.setColor(role, QColor(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(disabled, role, QColor("#7a7a7a"))
    return palette


def light_palette() -> QPalette:
    return QStyleFactory.create("Fusion").standardPalette()


def palette_is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def app_theme() -> Theme:
    """The application's one Theme (made on first use: it remembers the system's style and palette)."""
    app = QApplication.instance()
    theme = app.findChild(Theme, "branchpointTheme")
    if theme is None:
        theme = Theme(app)
        theme.setObjectName("branchpointTheme")
    return theme


class Theme(QObject):
    """The scheme in effect for the application (app_theme())."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        app = QApplication.instance()
        self.mode = "system"
        self._windows: list[weakref.ref] = []  # what follows the scheme at once (watch): never kept alive here
        self._system_style = app.style().name()
        self._system_palette = QPalette(app.palette())
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_system_scheme)
        self._publish()

    def watch(self, window: QWidget) -> None:
        """Recolour this window's drawing now (it was built light: gui.present.colours.built_light) and whenever the
        scheme changes, until it is deleted."""
        self._windows = [ref for ref in self._windows if _alive(ref)] + [weakref.ref(window)]
        if colours.current().dark:
            recolour(window)

    def is_dark(self) -> bool:
        return palette_is_dark(QApplication.instance().palette())

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"theme {mode!r}: allowed {', '.join(MODES)}")
        if mode == self.mode:
            return
        app = QApplication.instance()
        self.mode = mode
        if mode == "system":
            app.setStyle(self._system_style)
            app.setPalette(self._system_palette)
        else:
            app.setStyle("Fusion")
            app.setPalette(dark_palette() if mode == "dark" else light_palette())
        self._publish()

    @Slot(Qt.ColorScheme)
    def _on_system_scheme(self, _scheme: Qt.ColorScheme) -> None:
        if self.mode == "system":
            self._system_palette = QPalette(QApplication.instance().palette())
            self._publish()

    def _publish(self) -> None:
        wanted = colours.DARK if self.is_dark() else colours.LIGHT
        if wanted is not colours.current():
            for ref in self._windows:
                if _alive(ref):
                    recolour(ref())
            colours.set_current(wanted)
        self.changed.emit()


def _alive(ref: weakref.ref) -> bool:
    window = ref()
    return window is not None and shiboken6.isValid(window)


# ---------------------------------------------------------------------------- what is drawn, in the other palette

_HEX = re.compile(r"(?<![&\w])#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")


def swap_text(text: str) -> str:
    """Every #rrggbb / #rgb colour in rich text or a style sheet as the other palette has it."""
    def swap(match: re.Match) -> str:
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return colours.counterpart("#" + digits)

    return _HEX.sub(swap, text)


def swap_colour(colour: QColor) -> QColor:
    swapped = QColor(colours.counterpart(colour.name()))
    swapped.setAlpha(colour.alpha())
    return swapped


def swap_colour_map(colour_map: pg.ColorMap) -> pg.ColorMap:
    positions, stops = colour_map.getStops(mode=pg.ColorMap.QCOLOR)
    return pg.ColorMap(positions, [swap_colour(QColor(stop)) for stop in stops])


def swap_pen(pen) -> QPen | None:
    if pen is None:
        return None
    pen = QPen(pg.mkPen(pen))
    pen.setColor(swap_colour(pen.color()))
    return pen


def swap_brush(brush) -> QBrush | None:
    if brush is None:
        return None
    brush = QBrush(pg.mkBrush(brush))
    if brush.style() != Qt.BrushStyle.NoBrush:
        brush.setColor(swap_colour(brush.color()))
    return brush


def recolour(root: QWidget) -> None:
    """Every chart, label and style sheet under `root`, in the other palette."""
    for widget in [root, *root.findChildren(QWidget)]:
        if widget.styleSheet():
            widget.setStyleSheet(swap_text(widget.styleSheet()))
        if isinstance(widget, QLabel) and "#" in widget.text() and QtGui.Qt.mightBeRichText(widget.text()):
            widget.setText(swap_text(widget.text()))
        if isinstance(widget, pg.GraphicsView):
            recolour_chart(widget)


def recolour_chart(view: pg.GraphicsView) -> None:
    view.setBackground(swap_colour(view.backgroundBrush().color()))
    for item in view.scene().items():
        if isinstance(item.parentItem(), pg.PlotDataItem):
            continue  # its curve and points follow the PlotDataItem
        recolour_item(item)


def recolour_item(item) -> None:
    if isinstance(item, pg.AxisItem):
        item.setPen(swap_pen(item.pen()))
        item.setTextPen(swap_pen(item.textPen()))
    elif isinstance(item, pg.PlotDataItem):
        opts = item.opts
        item.setPen(swap_pen(opts["pen"]))
        item.setShadowPen(swap_pen(opts["shadowPen"]))
        item.setSymbolPen(swap_pen(opts["symbolPen"]))
        item.setSymbolBrush(swap_brush(opts["symbolBrush"]))
        if opts.get("fillBrush") is not None:
            item.setFillBrush(swap_brush(opts["fillBrush"]))
    elif isinstance(item, pg.ScatterPlotItem):
        _recolour_scatter(item)
    elif isinstance(item, pg.BarGraphItem):
        opts = item.opts
        item.setOpts(pen=swap_pen(opts.get("pen")), brush=swap_brush(opts.get("brush")),
                     pens=[swap_pen(p) for p in opts["pens"]] if opts.get("pens") is not None else None,
                     brushes=[swap_brush(b) for b in opts["brushes"]] if opts.get("brushes") is not None else None)
    elif getattr(item, "follows_theme", False) and isinstance(item, (pg.ColorBarItem, pg.ImageItem)):
        # a heatmap whose zero is the background (attention, logit lens): its scale turns with the palette
        item.setColorMap(swap_colour_map(item.colorMap() if isinstance(item, pg.ColorBarItem)
                                         else item.getColorMap()))
    elif isinstance(item, pg.InfiniteLine):
        item.setPen(swap_pen(item.pen))
        item.setHoverPen(swap_pen(item.hoverPen))
    elif isinstance(item, pg.TextItem):  # the InfiniteLines' labels too
        item.fill = swap_brush(item.fill)
        item.border = swap_pen(item.border)
        item.setColor(swap_colour(item.color))


def _recolour_scatter(item: pg.ScatterPlotItem) -> None:
    opts = item.opts
    item.setPen(swap_pen(opts["pen"]), update=False)
    item.setBrush(swap_brush(opts["brush"]), update=False)
    if opts.get("hoverPen") is not None:
        opts["hoverPen"] = swap_pen(opts["hoverPen"])
    if opts.get("hoverBrush") is not None:
        opts["hoverBrush"] = swap_brush(opts["hoverBrush"])
    data = item.data
    if len(data):
        pens = [swap_pen(p) if p is not None else None for p in data["pen"]]
        brushes = [swap_brush(b) if b is not None else None for b in data["brush"]]
        if any(p is not None for p in pens):
            item.setPen([p if p is not None else swap_pen(opts["pen"]) for p in pens], update=False)
        if any(b is not None for b in brushes):
            item.setBrush([b if b is not None else swap_brush(opts["brush"]) for b in brushes], update=False)
    item.updateSpots()
