"""Light and dark: the window follows the system's colour scheme, or View → Theme forces either. A forced scheme
uses Qt's Fusion style with Branchpoint's own palette (the same on every platform); following the system keeps
the platform's style and palette. Views read their colours (token backgrounds, marks, chart pens) from
gui.colours for whichever scheme the palette in effect is, and redraw on `changed`."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

from gui import colours

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
        self._system_style = app.style().name()
        self._system_palette = QPalette(app.palette())
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_system_scheme)
        self._publish()

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
        colours.set_current(colours.DARK if self.is_dark() else colours.LIGHT)
        self.changed.emit()
