"""The desktop launcher (Linux and other freedesktop.org desktops). `branchpoint --gui-install-desktop` writes

    $XDG_DATA_HOME/applications/branchpoint.desktop              (default XDG_DATA_HOME: ~/.local/share)
    $XDG_DATA_HOME/icons/hicolor/scalable/apps/branchpoint.svg
    $XDG_DATA_HOME/icons/hicolor/{48x48,128x128,256x256}/apps/branchpoint.png   (rendered from the SVG)

and `--gui-uninstall-desktop` removes exactly those files (and the icon folders it leaves empty). The entry runs
this Python (the virtual environment's, not resolved: a venv's python is a link) on main.py with the file it is
given (`%f`: "Open with Branchpoint" on a saved run), names the icon by its theme name, and its StartupWMClass is
the application's desktop file name, which is how shells match the window to the launcher. Needs no display:
the PNGs are drawn on QImages by QtSvg, without an application object.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

GUI = Path(__file__).resolve().parents[1]
TEMPLATE = GUI / "branchpoint.desktop"
ICON = GUI / "icon.svg"
MAIN = Path(__file__).resolve().parents[2] / "main.py"
APP_ID = "branchpoint"  # the .desktop file's name, the icon's theme name and QApplication.desktopFileName()
FILE_NAME = f"{APP_ID}.desktop"
PNG_SIZES = (48, 128, 256)

_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def exec_argument(argument: str) -> str:
    """One Exec= argument quoted as the Desktop Entry spec asks: in double quotes when it has reserved
    characters, with \\ " ` $ escaped inside, every backslash doubled again for the string value, % as %%."""
    argument = argument.replace("%", "%%")
    if _PLAIN_ARGUMENT.fullmatch(argument):
        return argument
    escaped = re.sub(r'(["`$\\])', r"\\\1", argument)
    return '"' + escaped.replace("\\", "\\\\") + '"'


def desktop_entry(python: str | Path, main: Path = MAIN) -> str:
    command = " ".join(exec_argument(str(part)) for part in (python, main))
    text = TEMPLATE.read_text(encoding="utf-8")
    return text.replace("@EXEC@", f"{command} %f").replace("@ICON@", APP_ID)


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def applications_dir() -> Path:
    return data_home() / "applications"


def icon_paths() -> dict[int | None, Path]:
    """Where each icon goes in the user's hicolor theme: None → the SVG, a size → that PNG."""
    hicolor = data_home() / "icons" / "hicolor"
    paths: dict[int | None, Path] = {None: hicolor / "scalable" / "apps" / f"{APP_ID}.svg"}
    for size in PNG_SIZES:
        paths[size] = hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
    return paths


def installed_paths() -> list[Path]:
    """Every file the launcher install writes."""
    return [applications_dir() / FILE_NAME, *icon_paths().values()]


def install_desktop_file(python: str | Path | None = None) -> list[Path]:
    """Write (or replace) the launcher and its icons; returns the files written. Each is written to a
    temporary name first: a half-written launcher or icon never shows in the menu."""
    written = []
    for size, path in icon_paths().items():
        data = ICON.read_bytes() if size is None else render_png(ICON, size)
        written.append(_write_atomic(path, data))
    entry = desktop_entry(python or sys.executable).encode("utf-8")
    written.append(_write_atomic(applications_dir() / FILE_NAME, entry))
    return written


def uninstall_desktop_file() -> list[Path]:
    """Remove what install_desktop_file wrote (and the icon folders that leaves empty); returns the files
    removed. Other files are never touched."""
    removed = []
    for path in installed_paths():
        if path.is_file():
            path.unlink()
            removed.append(path)
    hicolor = data_home() / "icons" / "hicolor"
    for path in icon_paths().values():
        for folder in (path.parent, path.parent.parent):  # .../48x48/apps, then .../48x48
            if folder != hicolor and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return removed


def render_png(svg: Path, size: int) -> bytes:
    """The SVG drawn at size × size pixels, as PNG bytes (QtSvg on a QImage: no display, no application)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise OSError(f"cannot read the icon {svg}")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise OSError(f"cannot render the icon {svg} at {size} px")
    return bytes(data.data())


def _write_atomic(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path
