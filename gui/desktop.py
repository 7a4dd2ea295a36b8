"""The desktop launcher: `python main.py --gui-install-desktop` writes
~/.local/share/applications/branchpoint.desktop (or under $XDG_DATA_HOME) from the template next to this file,
with absolute paths to this Python (the virtual environment's, not resolved: a venv's python is a link),
main.py and the icon, and StartupWMClass matching the application's desktop file name. Qt-free."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

TEMPLATE = Path(__file__).with_name("branchpoint.desktop")
ICON = Path(__file__).resolve().with_name("icon.svg")
MAIN = Path(__file__).resolve().parents[1] / "main.py"
FILE_NAME = "branchpoint.desktop"

_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def exec_argument(argument: str) -> str:
    """One Exec= argument quoted as the Desktop Entry spec asks: in double quotes when it has reserved
    characters, with \\ " ` $ escaped inside, every backslash doubled again for the string value, % as %%."""
    argument = argument.replace("%", "%%")
    if _PLAIN_ARGUMENT.fullmatch(argument):
        return argument
    escaped = re.sub(r'(["`$\\])', r"\\\1", argument)
    return '"' + escaped.replace("\\", "\\\\") + '"'


def desktop_entry(python: str | Path, main: Path = MAIN, icon: Path = ICON) -> str:
    command = " ".join(exec_argument(str(part)) for part in (python, main))
    text = TEMPLATE.read_text(encoding="utf-8")
    return text.replace("@EXEC@", command).replace("@ICON@", str(icon))


def applications_dir() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "applications"


def install_desktop_file(python: str | Path | None = None) -> Path:
    """Write (or replace) the launcher; returns its path. Written to a temporary name first: a half-written
    launcher never shows in the menu."""
    target = applications_dir() / FILE_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{FILE_NAME}.partial")
    partial.write_text(desktop_entry(python or sys.executable), encoding="utf-8")
    partial.replace(target)
    return target
