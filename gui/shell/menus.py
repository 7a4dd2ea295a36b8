"""The menu bar and the keys: File, Run, Lanes, View, Help, built from the window's own actions (Open, Save,
Export PNG, Run, Stop, Replay, Undo branch) plus the ones only menus have. Keys (docs/gui.md lists them):

    Ctrl+Enter run · Esc stop · Ctrl+O open · Ctrl+S save · Ctrl+Shift+E export PNG · Ctrl+Q quit
    Ctrl+L add a lane · Ctrl+Z undo the last branch · Left/Right step · Up/Down lane · F1 shortcuts · F11 full screen

Left/Right are the text columns' and the timeline's own keys; Up/Down (the previous / next lane at the same step)
are actions bound to those two views only, so every other widget keeps its arrow keys. An entry whose command
the window does not have yet ("Run again and compare") is shown disabled."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Qt, Slot
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication, QMenu

from decoding.spec import PRESETS
from gui.present.lane_fields import preset_title
from gui.shell.recent_files import RecentMenu
from gui.shell.settings import DEVICES, LANGUAGES, apply_layout
from gui.views import generation_configs

if TYPE_CHECKING:
    from gui.main_window import MainWindow

translate = QCoreApplication.translate

def theme_names() -> dict[str, str]:
    return {"system": translate("Menus", "Follow the system"), "light": translate("Menus", "Light"),
            "dark": translate("Menus", "Dark")}


def language_names() -> dict[str, str]:
    # Each language in its own words, so a user who cannot read the current one still finds theirs.
    return {"system": translate("Menus", "Follow the system"), "en": "English", "zh_CN": "简体中文"}


def device_names() -> dict[str, str]:
    return {"auto": translate("Menus", "Automatic (CUDA when it really runs, else CPU)"), "cpu": "CPU",
            "cuda": "CUDA"}


class Menus(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.language = "system"  # the View → Language choice (applies at the next start)
        self._choice_menus: dict[QMenu, tuple] = {}  # radio menus: (actions by value, get, choose)
        bar = window.menuBar()
        bar.setObjectName("menuBar")
        self.file = bar.addMenu(self.tr("&File"))
        self.run = bar.addMenu(self.tr("&Run"))
        self.lanes = bar.addMenu(self.tr("&Lanes"))
        self.view = bar.addMenu(self.tr("&View"))
        self.help = bar.addMenu(self.tr("&Help"))
        self._file_menu()
        self._run_menu()
        self._lanes_menu()
        self._view_menu()
        self._help_menu()
        generation_configs.add_to_lanes_editor(window.lanes)

    # ---------------------------------------------------------------------------------------------- menus

    def _file_menu(self) -> None:
        window, menu = self.window, self.file
        menu.addAction(window.open_action)
        self.recent_menu = RecentMenu(window.recent, window.open, menu)
        menu.addMenu(self.recent_menu)
        menu.addAction(window.save_action)
        window.export_action.setShortcut(QKeySequence("Ctrl+Shift+E"))
        menu.addAction(window.export_action)
        menu.addSeparator()
        self.ask_action = self._add(menu, self.tr("Ask to save before a new run"), self._on_ask_toggled,
                                    tip=self.tr("Before a new run replaces a run that has not been saved, ask "
                                                "whether to save it"), checkable=True)
        menu.aboutToShow.connect(self._sync_ask)
        menu.addSeparator()
        self.quit_action = self._add(menu, self.tr("&Quit"), self.quit, QKeySequence("Ctrl+Q"))

    def _run_menu(self) -> None:
        window, menu = self.window, self.run
        window.run_action.setText(self.tr("&Run all lanes"))
        window.stop_action.setText(self.tr("&Stop"))
        menu.addAction(window.run_action)
        menu.addAction(window.stop_action)
        menu.addAction(window.replay_action)
        self.compare_action = self._add(menu, self.tr("Run again and &compare"), window.run_again_and_compare,
                                        tip=self.tr("Run every lane again (fresh draws where the seed is auto) and "
                                                    "say where each differs from this run"))
        menu.addSeparator()
        self._add(menu, self.tr("Critical-point &thresholds…"), window.text.edit_thresholds,
                  tip=self.tr("What makes a step a critical point (▲)"))
        self.device_menu = menu.addMenu(self.tr("&Device"))
        self.device_actions = self._choices(self.device_menu, device_names(), DEVICES,
                                            lambda: window.controller.device, window.controller.set_device)

    def _lanes_menu(self) -> None:
        window, menu, editor = self.window, self.lanes, self.window.lanes
        self.add_lane_action = self._add(menu, self.tr("&Add lane (greedy)"), lambda: editor.add_preset("Greedy"),
                                         QKeySequence("Ctrl+L"))
        add_menu = menu.addMenu(self.tr("Add lane from &preset"))
        replace_menu = menu.addMenu(self.tr("&Replace selected lane with preset"))
        for title in PRESETS:
            add_menu.addAction(preset_title(title), lambda t=title: editor.add_preset(t))
            replace_menu.addAction(preset_title(title), lambda t=title: editor.apply_preset(t))
        self._add(menu, self.tr("&Duplicate selected lane"), editor.duplicate_selected)
        self._add(menu, self.tr("Re&move selected lane"), editor.remove_selected)
        self._add(menu, self.tr("Move selected lane &left"), editor.move_up)
        self._add(menu, self.tr("Move selected lane r&ight"), editor.move_down)
        menu.addSeparator()
        self._add(menu, self.tr("Add lane from &generation_config.json…"),
                  lambda: generation_configs.import_dialog(editor))
        self._add(menu, self.tr("&Export selected lane as generation_config.json…"),
                  lambda: generation_configs.export_dialog(editor))
        menu.addSeparator()
        menu.addAction(window.undo_action)

    def _view_menu(self) -> None:
        window, menu = self.window, self.view
        self.theme_menu = menu.addMenu(self.tr("&Theme"))
        self.theme_actions = self._choices(self.theme_menu, theme_names(), tuple(theme_names()),
                                           lambda: window.theme.mode, window.theme.set_mode)
        self.language_menu = menu.addMenu(self.tr("&Language"))
        self.language_actions = self._choices(self.language_menu, language_names(), LANGUAGES,
                                              lambda: self.language, self._set_language)
        menu.addSeparator()
        self.previous_lane_action = self._lane_key(menu, self.tr("&Previous lane"), "Up", self.select_previous_lane)
        self.next_lane_action = self._lane_key(menu, self.tr("&Next lane"), "Down", self.select_next_lane)
        menu.addSeparator()
        self.full_screen_action = self._add(menu, self.tr("&Full screen"), self._toggle_full_screen,
                                            QKeySequence.StandardKey.FullScreen, checkable=True)
        self.reset_layout_action = self._add(menu, self.tr("&Reset layout"), self.reset_layout,
                                             tip=self.tr("Window size, panel sizes and tool bar as at first start"))

    def _help_menu(self) -> None:
        window, menu = self.window, self.help
        self.shortcuts_action = self._add(menu, self.tr("&Keyboard shortcuts"), self.show_shortcuts,
                                          QKeySequence("F1"))
        menu.addAction(window.tour_action)
        menu.addSeparator()
        self.about_action = self._add(menu, self.tr("&About Branchpoint"), self.show_about)
        self._dialogs: list = []  # keeps open non-modal dialogs alive
        window.addAction(self.shortcuts_action)  # F1 works with the menu bar hidden (full screen) too

    # -------------------------------------------------------------------------------------------- helpers

    # Slots connected here are bound methods of QObjects, or lambdas that hold no window: a lambda connected to a
    # signal is held by Qt, and one holding the window would keep it (and its charts) alive after it closed.

    def _add(self, menu: QMenu, text: str, slot: Callable, shortcut=None, tip: str = "",
             checkable: bool = False) -> QAction:
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(shortcut)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.setCheckable(checkable)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _choices(self, menu: QMenu, names: dict[str, str], values: tuple[str, ...], get: Callable[[], str],
                 choose: Callable[[str], object]) -> dict[str, QAction]:
        """Radio entries, one per value; the checked one is re-read each time the menu opens."""
        group = QActionGroup(menu)
        actions = {}
        for value in values:
            action = QAction(names[value], menu, checkable=True)
            action.setData(value)
            group.addAction(action)
            menu.addAction(action)
            actions[value] = action
        self._choice_menus[menu] = (actions, get, choose)
        group.triggered.connect(self._on_choice)
        menu.aboutToShow.connect(self._sync_choices)
        return actions

    @Slot(QAction)
    def _on_choice(self, action: QAction) -> None:
        _actions, _get, choose = self._choice_menus[action.parent()]
        choose(action.data())

    @Slot()
    def _sync_choices(self) -> None:
        for actions, get, _choose in self._choice_menus.values():
            actions[get()].setChecked(True)

    @Slot()
    def _sync_ask(self) -> None:
        self.ask_action.setChecked(self.window.unsaved.ask_before_run)

    def _lane_key(self, menu: QMenu, text: str, key: str, slot: Callable) -> QAction:
        """Up / Down: only while the text columns or the timeline have the focus."""
        action = self._add(menu, text, slot, QKeySequence(key))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.window.text.addAction(action)
        self.window.timeline.addAction(action)
        return action

    # ------------------------------------------------------------------------------------------- commands

    @Slot()
    def _on_ask_toggled(self) -> None:
        self.window.unsaved.ask_before_run = self.ask_action.isChecked()

    def _set_language(self, language: str) -> None:
        if language == self.language:
            return
        self.language = language
        if self.window.settings is not None:
            self.window.settings.set("view/language", language)
        self.window.state.show_notice(self.tr("The language changes the next time Branchpoint starts."),
                                      level="info", cause="language")

    @Slot()
    def quit(self) -> None:
        self.window.close()

    @Slot()
    def select_previous_lane(self) -> None:
        self.select_neighbour_lane(-1)

    @Slot()
    def select_next_lane(self) -> None:
        self.select_neighbour_lane(1)

    def select_neighbour_lane(self, delta: int) -> None:
        """The lane above (-1) or below (+1) the selected one, at the same step (its last if it is shorter);
        lanes that have not run are skipped. The text keeps the focus on the selected lane's column."""
        state, text = self.window.state, self.window.text
        selection = state.selection
        if selection is None:
            lane, step = (-1 if delta > 0 else len(state.lanes)), 0
        else:
            lane, step = selection.lane, selection.step
        lane += delta
        while 0 <= lane < len(state.lanes) and not state.lanes[lane].trace.steps:
            lane += delta
        if not 0 <= lane < len(state.lanes):
            return
        state.select(lane, min(step, len(state.lanes[lane].trace.steps) - 1))
        focus = QApplication.focusWidget()
        if focus is not None and text.isAncestorOf(focus) and lane < len(text.columns):
            text.columns[lane].browser.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot()
    def reset_layout(self) -> None:
        window = self.window
        if window.settings is not None:
            window.settings.reset_layout(window, window.default_layout)
        else:
            apply_layout(window, window.default_layout)

    def _toggle_full_screen(self) -> None:
        window = self.window
        window.showNormal() if window.isFullScreen() else window.showFullScreen()
        self.full_screen_action.setChecked(window.isFullScreen())

    @Slot()
    def show_shortcuts(self) -> None:
        from gui.dialogs.about import ShortcutsDialog

        self._show(ShortcutsDialog(self.window))

    @Slot()
    def show_about(self) -> None:
        from gui.dialogs.about import AboutDialog

        self._show(AboutDialog(self.window))

    def _show(self, dialog) -> None:
        self._dialogs = [d for d in self._dialogs if d.isVisible()] + [dialog]
        dialog.show()

    def shortcut_actions(self) -> list[QAction]:
        """Every action with a key, in menu order (the shortcuts dialog lists them)."""
        seen, found = set(), []

        def walk(menu: QMenu) -> None:
            for action in menu.actions():
                if action.menu() is not None:
                    walk(action.menu())
                elif not action.shortcut().isEmpty() and id(action) not in seen:
                    seen.add(id(action))
                    found.append(action)

        for menu in (self.file, self.run, self.lanes, self.view, self.help):
            walk(menu)
        return found
