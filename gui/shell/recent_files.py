"""File → Open Recent: the last runs opened or saved, newest first, at most ten; kept in the settings when the
window has them. A file that has gone since is dropped from the list when picked (with a notice)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

MAX_RECENT = 10


def updated(paths: list[Path], path: Path, limit: int = MAX_RECENT) -> list[Path]:
    """`path` first, then the others without it, at most `limit`."""
    path = Path(path).resolve()
    return [path, *(p for p in paths if p != path)][:limit]


class RecentFiles:
    def __init__(self, settings=None) -> None:
        self.settings = settings  # gui.shell.settings.Settings, or None: the list lives as long as the window
        self.paths: list[Path] = []
        if settings is not None:
            self.set_paths(settings.strings("files/recent"))

    def set_paths(self, paths: list[str]) -> None:
        self.paths = [Path(p) for p in paths if p][:MAX_RECENT]

    def add(self, path: Path) -> None:
        self.paths = updated(self.paths, path)
        self._store()

    def forget(self, path: Path) -> None:
        self.paths = [p for p in self.paths if p != Path(path)]
        self._store()

    def clear(self) -> None:
        self.paths = []
        self._store()

    def _store(self) -> None:
        if self.settings is not None:
            self.settings.set("files/recent", [str(p) for p in self.paths])
            self.settings.sync()


class RecentMenu(QMenu):
    """The Open Recent submenu, filled each time it opens; picking an entry calls `open_path(path)`."""

    def __init__(self, recent: RecentFiles, open_path: Callable[[Path], object], parent=None) -> None:
        super().__init__(self.tr("Open &Recent"), parent)
        self.setObjectName("recentMenu")
        self.recent = recent
        self._open_path = open_path
        self.aboutToShow.connect(self.fill)
        self.triggered.connect(self._on_triggered)
        self.fill()

    @Slot(QAction)
    def _on_triggered(self, action: QAction) -> None:
        if action.data():
            self.pick(Path(action.data()))

    def pick(self, path: Path) -> None:
        """Open a recent run; one that is gone leaves the list (the window says it could not be opened)."""
        if not self._open_path(path) and not path.exists():
            self.recent.forget(path)

    @Slot()
    def fill(self) -> None:
        self.clear()
        for number, path in enumerate(self.recent.paths, start=1):
            label = f"&{number % 10} {path.name}" if number <= 10 else path.name
            action = self.addAction(label)
            action.setToolTip(str(path))
            action.setStatusTip(str(path))
            action.setData(str(path))

        if not self.recent.paths:
            self.addAction(self.tr("No recent runs")).setEnabled(False)
        self.addSeparator()
        clear = self.addAction(self.tr("Clear list"))
        clear.setEnabled(bool(self.recent.paths))
        clear.triggered.connect(self.recent.clear)
