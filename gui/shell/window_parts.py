"""The window's frame, built from the parts the main window made: the layout (prompt and lanes left; texts above
the two tab groups of the view registry right), the tool bar and menus from the action table, and the
window-level commands (full screen, layout, language, about, shortcuts) with the settings they keep."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMainWindow, QMenu, QTabWidget, QVBoxLayout, QWidget

from gui.dialogs.about import AboutDialog, ShortcutsDialog, about_rows
from gui.i18n import translate
from gui.shell.actions import Actions
from gui.shell.menus import Choice, Menus, bind_lane_keys, build_toolbar, device_names, language_names, theme_names
from gui.shell.recent_files import RecentMenu
from gui.shell.settings import (
    DEFAULT_SIZE,
    LANGUAGES,
    THEMES,
    Settings,
    apply_layout,
    as_bool,
    as_text,
    capture_layout,
    named_splitter,
    one_of,
    register_layout,
    register_run_state,
    register_tabs,
)
from gui.shell.theme import Theme
from gui.shell.unsaved import UnsavedRun
from gui.state.controller import RunController
from gui.state.requests import DEVICES
from gui.state.run_state import RunState
from gui.state.view_state import TIMELINE_LAYOUTS, InspectorViewState
from gui.views.lanes_editor import LanesEditor, preset_add_menu, preset_replace_menu
from gui.views.registry import STEP, VIEWS


def build_layout(window: QMainWindow, left_widgets: tuple[QWidget, QWidget], top_widgets: tuple[QWidget, QWidget],
                 views: Mapping[str, QWidget]) -> tuple[QTabWidget, QTabWidget]:
    """Prompt and lanes left; the notice and texts above, the step views and the charts below, right. Returns the
    two tab groups (the selected step's, the run's)."""
    step_views, charts = QTabWidget(), QTabWidget()
    for row in VIEWS:
        (step_views if row.group == STEP else charts).addTab(views[row.id], translate("views", row.title))
    left, top = _column(left_widgets, 4), _column(top_widgets, 0)
    bottom = named_splitter(Qt.Orientation.Horizontal, "bottomSplitter", (step_views, charts), [420, 600])
    right = named_splitter(Qt.Orientation.Vertical, "rightSplitter", (top, bottom), [360, 420])  # charts need height
    main = named_splitter(Qt.Orientation.Horizontal, "mainSplitter", (left, right), [330, 950])
    main.setStretchFactor(1, 1)
    window.setCentralWidget(main)
    return step_views, charts


def _column(widgets: tuple[QWidget, QWidget], margin: int) -> QWidget:
    """Two widgets one above the other, the second taking the height."""
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(margin, margin, margin, margin)
    layout.addWidget(widgets[0])
    layout.addWidget(widgets[1], 1)
    return column


class WindowChrome(QObject):
    """The tool bar, the menus and the window-level commands of `window`."""

    def __init__(self, window: QMainWindow, state: RunState, controller: RunController, unsaved: UnsavedRun,
                 theme: Theme, settings: Settings | None) -> None:
        super().__init__(window)
        self.window, self.state, self.controller, self.unsaved = window, state, controller, unsaved
        self.theme, self.settings = theme, settings
        self.language = "system"  # the View → Language choice (applies at the next start)
        self.default_layout = None  # the layout as built: View → Reset layout goes back to it (remember)
        self.dialogs: list = []  # open non-modal dialogs

    def commands(self) -> dict[str, Callable]:
        return {"quit": self.window.close, "ask_before_run": self.toggle_ask, "full_screen": self.toggle_full_screen,
                "reset_layout": self.reset_layout, "shortcuts": self.show_shortcuts, "about": self.show_about}

    def build_bars(self, actions: Actions, widgets: Mapping[str, QWidget], lanes: LanesEditor,
                   open_run: Callable, recent, lane_key_views: list[QWidget]) -> Menus:
        self.actions = actions
        bar = self.window.addToolBar("Main")
        bar.setObjectName("mainToolBar")
        bar.setMovable(False)
        build_toolbar(bar, actions, {name: _labelled(text, widgets[name]) for name, text in (
            ("@model", translate("main_window", " Model ")), ("@branch_as", translate("main_window", " Branch as ")))})
        controller = self.controller
        menus = Menus(self.window.menuBar(), actions, {
            "@recent": partial(self._add_recent, recent, open_run),
            "@device": Choice(translate("Menus", "&Device"), device_names(), lambda: controller.device,
                              controller.set_device),
            "@add_preset": partial(preset_add_menu, lanes), "@replace_preset": partial(preset_replace_menu, lanes),
            "@theme": Choice(translate("Menus", "&Theme"), theme_names(), lambda: self.theme.mode,
                             self.theme.set_mode),
            "@language": Choice(translate("Menus", "&Language"), language_names(), lambda: self.language,
                                self.set_language)})
        for action_id in ("run", "stop", "shortcuts"):  # keys that work with the menu bar hidden (full screen)
            self.window.addAction(actions[action_id])
        bind_lane_keys(actions, lane_key_views)
        menus.file.aboutToShow.connect(lambda: actions["ask_before_run"].setChecked(self.unsaved.ask_before_run))
        return menus

    def remember(self, views: Mapping[str, QWidget], charts: QTabWidget) -> None:
        """Take the layout as built as the default, register what the window keeps between starts, and restore it."""
        self.default_layout = capture_layout(self.window, DEFAULT_SIZE)
        self.window.resize(*DEFAULT_SIZE)
        settings = self.settings
        if settings is None:
            return
        register_layout(settings, self.window)
        register_run_state(settings, self.state)
        register_tabs(settings, "charts/tab", charts)
        holder = lambda: self.controller.holder  # noqa: E731
        settings.register("model/path", lambda: str(holder().path) if holder() else "",
                          lambda _v: None)  # read by the app before the window (gui.app.choose_model)
        settings.register("model/device", lambda: self.controller.device,
                          lambda v: self.controller.set_device(one_of(v, DEVICES)))
        settings.register("view/theme", lambda: self.theme.mode, lambda v: self.theme.set_mode(one_of(v, THEMES)))
        settings.register("view/language", lambda: self.language,
                          lambda v: setattr(self, "language", one_of(v, LANGUAGES)))
        settings.register("files/ask_before_run", lambda: self.unsaved.ask_before_run,
                          lambda v: setattr(self.unsaved, "ask_before_run", as_bool(v)))
        timeline, inspector = views["timeline"], views["inspector"]
        settings.register("charts/timeline_metric", lambda: timeline.view_state().metric,
                          lambda v: timeline.set_metric(as_text(v)))
        settings.register("charts/timeline_layout", lambda: timeline.view_state().layout,
                          lambda v: timeline.set_layout(one_of(v, TIMELINE_LAYOUTS)))
        settings.register("inspector/overlay", lambda: inspector.view_state().overlay,
                          lambda v: inspector.set_view_state(InspectorViewState(as_bool(v))))
        settings.restore(self.state)

    def _add_recent(self, recent, open_run: Callable, menu: QMenu) -> None:
        self.recent_menu = RecentMenu(recent, open_run, menu)
        menu.addMenu(self.recent_menu)

    # ------------------------------------------------------------------------------------------- commands

    def toggle_ask(self) -> None:
        self.unsaved.ask_before_run = self.actions["ask_before_run"].isChecked()

    def toggle_full_screen(self) -> None:
        window = self.window
        window.showNormal() if window.isFullScreen() else window.showFullScreen()
        self.actions["full_screen"].setChecked(window.isFullScreen())

    def set_language(self, language: str) -> None:
        if language == self.language:
            return
        self.language = language
        if self.settings is not None:
            self.settings.set("view/language", language)
        self.state.show_notice(translate("Menus", "The language changes the next time Branchpoint starts."),
                               level="info", cause="language")

    def reset_layout(self) -> None:
        if self.settings is not None:
            self.settings.reset_layout(self.window, self.default_layout)
        else:
            apply_layout(self.window, self.default_layout)

    def show_about(self) -> None:
        settings = self.settings
        rows = about_rows(self.controller.holder, self.controller.device, settings and settings.path)
        self._keep(AboutDialog(self.window, rows))

    def show_shortcuts(self) -> None:
        self._keep(ShortcutsDialog(self.window, self.actions.with_keys()))

    def _keep(self, dialog) -> None:
        """Non-modal: kept while open."""
        self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
        dialog.show()


def _labelled(text: str, widget: QWidget) -> QWidget:
    """A tool-bar widget with its label in front."""
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addWidget(QLabel(text))
    layout.addWidget(widget)
    return box
