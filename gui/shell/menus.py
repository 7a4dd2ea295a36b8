"""The menu bar and the tool bar, laid out from gui.shell.actions' table (File, Run, Lanes, View, Help) with the
entries only menus have: Open Recent, the lane presets, and radio choices (device, theme, language) whose checked
entry is re-read each time the menu opens. Keys (docs/gui.md lists them):

    Ctrl+Enter run · Esc stop · Ctrl+O open · Ctrl+S save · Ctrl+Shift+E export images · Ctrl+Q quit
    Ctrl+L add a lane · Ctrl+Z undo the last branch · Left/Right step · Up/Down lane · F1 shortcuts · F11 full screen

Left/Right are the text columns' and the timeline's own keys; Up/Down (the previous / next lane at the same step)
are actions bound to those two views only (`bind_lane_keys`), so every other widget keeps its arrow keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QMenuBar, QToolBar, QWidget

from gui.i18n import translate
from gui.shell.actions import MENUS, TOOLBAR, Actions


@dataclass(frozen=True)
class Choice:
    """A radio submenu: its title, the entries' names by value, and how to read and set the value."""

    title: str
    names: Mapping[str, str]
    get: Callable[[], str]
    choose: Callable[[str], object]


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
    """`places` fill the table's "@name" entries: a callable that adds to a menu, or a Choice."""

    def __init__(self, bar: QMenuBar, actions: Actions, places: Mapping[str, Callable[[QMenu], object] | Choice]):
        super().__init__(bar)
        bar.setObjectName("menuBar")
        self._choices: dict[QMenu, tuple[dict[str, QAction], Choice]] = {}
        self.menus: list[QMenu] = []
        for title, entries in MENUS.items():
            menu = bar.addMenu(translate("actions", title))
            self.menus.append(menu)
            for entry in entries:
                if entry == "-":
                    menu.addSeparator()
                elif entry.startswith("@"):
                    place = places[entry]
                    self._add_choice(menu, place) if isinstance(place, Choice) else place(menu)
                else:
                    menu.addAction(actions[entry])
        self.file, self.run, self.lanes, self.view, self.help = self.menus

    def _add_choice(self, parent: QMenu, choice: Choice) -> None:
        menu = parent.addMenu(choice.title)
        group = QActionGroup(menu)
        actions = {}
        for value, name in choice.names.items():
            action = QAction(name, menu, checkable=True)
            action.setData(value)
            group.addAction(action)
            menu.addAction(action)
            actions[value] = action
        self._choices[menu] = (actions, choice)
        group.triggered.connect(self._on_choice)
        menu.aboutToShow.connect(self._sync_choices)

    def choice_menu(self, title: str) -> QMenu:
        return next(menu for menu, (_actions, choice) in self._choices.items() if choice.title == title)

    def choice_actions(self, title: str) -> dict[str, QAction]:
        return self._choices[self.choice_menu(title)][0]

    @Slot(QAction)
    def _on_choice(self, action: QAction) -> None:
        self._choices[action.parent()][1].choose(action.data())

    @Slot()
    def _sync_choices(self) -> None:
        for actions, choice in self._choices.values():
            actions[choice.get()].setChecked(True)


def build_toolbar(bar: QToolBar, actions: Actions, widgets: Mapping[str, QWidget]) -> None:
    for entry in TOOLBAR:
        if entry == "-":
            bar.addSeparator()
        elif entry.startswith("@"):
            bar.addWidget(widgets[entry])
        else:
            bar.addAction(actions[entry])


def bind_lane_keys(actions: Actions, views: list[QWidget]) -> None:
    """Up / Down (previous / next lane) only while one of `views` has the focus."""
    for view in views:
        view.addAction(actions["previous_lane"])
        view.addAction(actions["next_lane"])
