"""What the window remembers between starts, in one INI file read and written by QSettings (Qt writes it
through QSaveFile: a crash mid-write leaves the previous file). The file is `branchpoint.ini` in the user's
config folder (platformdirs; $BRANCHPOINT_CONFIG_DIR overrides it).

Remembered: window geometry and state, the sizes of every named splitter, the lanes (without branch lanes and
forced tokens: those belong to a run, which its own file keeps), the prompt, chat toggle and system prompt, max
new tokens, the model and device, the chart tab, timeline metric, inspector bars and branch strategy, the
theme and language, the recent files and whether to ask before a new run replaces an unsaved one.

A file that cannot be read is set aside (`branchpoint.ini.unreadable`) and the window starts with defaults and
a one-line notice; a value that cannot be read leaves that item at its default, with a notice naming it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings
from PySide6.QtWidgets import QSplitter

from decoding.spec import LaneSpec

if TYPE_CHECKING:
    from gui.main_window import MainWindow

translate = QCoreApplication.translate

FILE_NAME = "branchpoint.ini"
DEFAULT_SIZE = (1280, 800)  # the window at first start and after View → Reset layout
THEMES = ("system", "light", "dark")
LANGUAGES = ("system", "en", "zh_CN")
DEVICES = ("auto", "cpu", "cuda")


def settings_path() -> Path:
    override = os.environ.get("BRANCHPOINT_CONFIG_DIR")
    if override:
        return Path(override).expanduser() / FILE_NAME
    import platformdirs

    return Path(platformdirs.user_config_dir("branchpoint")) / FILE_NAME


@dataclass(frozen=True)
class Layout:
    """The window's arrangement: what View → Reset layout goes back to."""

    size: tuple[int, int]
    state: QByteArray  # QMainWindow.saveState: tool bar (and dock) placement
    splitters: dict[str, QByteArray]  # objectName → QSplitter.saveState


def named_splitters(window: MainWindow) -> dict[str, QSplitter]:
    return {s.objectName(): s for s in window.findChildren(QSplitter) if s.objectName()}


def capture_layout(window: MainWindow, size: tuple[int, int]) -> Layout:
    splitters = {name: splitter.saveState() for name, splitter in named_splitters(window).items()}
    return Layout(size, window.saveState(), splitters)


def apply_layout(window: MainWindow, layout: Layout) -> None:
    window.showNormal()
    window.resize(*layout.size)
    window.restoreState(layout.state)
    for name, splitter in named_splitters(window).items():
        if name in layout.splitters:
            splitter.restoreState(layout.splitters[name])


class Settings:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else settings_path()
        self.notice = ""  # one line for the user when the file could not be read
        self.store = QSettings(str(self.path), QSettings.Format.IniFormat)
        if self.path.exists() and not self._readable():
            aside = self.path.with_name(self.path.name + ".unreadable")
            self.store = None  # lets go of the file before it moves
            os.replace(self.path, aside)
            self.store = QSettings(str(self.path), QSettings.Format.IniFormat)
            self.notice = translate("Settings", "The settings file {path} could not be read; Branchpoint starts "
                                    "with its defaults (the file is kept as {name}).").format(
                                        path=self.path, name=aside.name)

    def _readable(self) -> bool:
        if self.store.status() != QSettings.Status.NoError:
            return False
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return "\x00" not in text

    # ------------------------------------------------------------------------------------------- values

    def get(self, key: str, default: Any = None) -> Any:
        return self.store.value(key, default)

    def set(self, key: str, value: Any) -> None:
        self.store.setValue(key, value)

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        """A value that must be one of `allowed` (the first one otherwise)."""
        value = self.store.value(key, allowed[0])
        return value if value in allowed else allowed[0]

    def strings(self, key: str) -> list[str]:
        value = self.store.value(key, [])
        if isinstance(value, str):  # QSettings gives back a one-item list as a plain string
            return [value]
        return [str(item) for item in value] if isinstance(value, list) else []

    def model_path(self) -> Path | None:
        """The model chosen last, if it is still prepared there."""
        value = self.store.value("model/path")
        path = Path(value) if isinstance(value, str) and value else None
        return path if path is not None and (path / "model.onnx").is_file() else None

    def sync(self) -> None:
        self.store.sync()

    # ----------------------------------------------------------------------------------------- the window

    def save(self, window: MainWindow) -> None:
        for key, (write, _read) in _items(window).items():
            self.store.setValue(key, write())
        self.store.sync()

    def restore(self, window: MainWindow) -> None:
        """Apply every remembered item; one that cannot be read stays at its default and is named in a
        notice (with the file's own notice, if any)."""
        failed = []
        for key, (_write, read) in _items(window).items():
            value = self.store.value(key)
            if value is None:
                continue
            try:
                read(value)
            except (ValueError, TypeError, KeyError, AttributeError):
                failed.append(key)
        if failed:
            self.notice = translate("Settings", "Some settings could not be read and are back to their defaults: "
                                    "{keys}.").format(keys=", ".join(failed))
        if self.notice:
            window.state.show_notice(self.notice, level="info", cause="settings")

    def reset_layout(self, window: MainWindow, layout: Layout) -> None:
        apply_layout(window, layout)
        for key in list(self.store.allKeys()):
            if key.startswith(("window/", "splitters/")):
                self.store.remove(key)
        self.store.sync()


# --------------------------------------------------------------------------------------------- the items

Item = tuple[Callable[[], Any], Callable[[Any], None]]  # (value to store, apply a stored value)


def _items(window: MainWindow) -> dict[str, Item]:
    prompt, charts, timeline, inspector = window.prompt, window.charts, window.timeline, window.inspector
    items: dict[str, Item] = {
        "window/geometry": (window.saveGeometry, lambda v: _check(window.restoreGeometry(_bytes(v)))),
        "window/state": (window.saveState, lambda v: _check(window.restoreState(_bytes(v)))),
        "lanes": (lambda: lanes_to_text(window), lambda v: lanes_from_text(window, v)),
        "prompt/text": (prompt.editor.toPlainText, lambda v: prompt.editor.setPlainText(_str(v))),
        "prompt/chat": (prompt.chat.isChecked, lambda v: prompt.chat.setChecked(_bool(v))),
        "prompt/system": (prompt.system.text, lambda v: prompt.system.setText(_str(v))),
        "prompt/max_new_tokens": (prompt.max_new_tokens.value, lambda v: _set_spin(prompt.max_new_tokens, v)),
        "model/path": (lambda: str(window.controller.holder.path) if window.controller.holder else "",
                       lambda _v: None),  # read by the app before the window (gui.app.choose_model)
        "model/device": (lambda: window.controller.device,
                         lambda v: _check(window.controller.set_device(_one_of(v, DEVICES)))),
        "charts/tab": (charts.currentIndex, lambda v: charts.setCurrentIndex(_index(v, charts.count()))),
        "charts/timeline_metric": (timeline.current_metric, lambda v: timeline.set_metric(_str(v))),
        "inspector/overlay": (inspector.is_overlay, lambda v: inspector.set_overlay(_bool(v))),
        "branch/strategy": (window.branch_strategy.currentData,
                            lambda v: window.branch_strategy.setCurrentIndex(
                                _check(window.branch_strategy.findData(_str(v)), lambda i: i >= 0))),
        "view/theme": (lambda: window.theme.mode, lambda v: window.theme.set_mode(_one_of(v, THEMES))),
        "view/language": (lambda: window.menus.language,
                          lambda v: setattr(window.menus, "language", _one_of(v, LANGUAGES))),
        "files/recent": (lambda: [str(p) for p in window.recent.paths],
                         lambda v: window.recent.set_paths(_strings(v))),
        "files/ask_before_run": (lambda: window.unsaved.ask_before_run,
                                 lambda v: setattr(window.unsaved, "ask_before_run", _bool(v))),
    }
    for name, splitter in named_splitters(window).items():
        items[f"splitters/{name}"] = (splitter.saveState, lambda v, s=splitter: _check(s.restoreState(_bytes(v))))
    return items


def lanes_to_text(window: MainWindow) -> str:
    """The lanes as JSON: name, config (LaneSpec.to_config), fan-out count and whether the user named it.
    Lanes that belong to the run shown (branches, replays of a step's other token) are left out and forced
    tokens dropped."""
    lanes = [{"name": lane.name, "config": replace(lane.spec, forced={}).to_config(), "fanout": lane.fanout,
              "named_by_user": lane.named_by_user}
             for lane in window.state.lanes
             if lane.spec.branch is None and lane.spec.replay_of is None and lane.spec.fanout is None]
    return json.dumps(lanes, ensure_ascii=False)


def lanes_from_text(window: MainWindow, text: Any) -> None:
    lanes = json.loads(_str(text))
    specs = [LaneSpec.from_config(str(lane["name"]), dict(lane["config"])) for lane in lanes]
    if not specs:
        raise ValueError("no lanes")
    window.state.set_specs(specs)
    for index, (lane, saved) in enumerate(zip(window.state.lanes, lanes, strict=True)):
        lane.named_by_user = bool(saved.get("named_by_user", False))
        if saved.get("fanout", 1) != 1:
            window.state.set_fanout(index, int(saved["fanout"]))


# ---- reading QSettings values: an INI file gives back strings (and lists of them), whatever was written

def _check(result: Any, ok: Callable[[Any], bool] = bool) -> Any:
    if not ok(result):
        raise ValueError("not accepted")
    return result


def _bytes(value: Any) -> QByteArray:
    if not isinstance(value, QByteArray | bytes):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return QByteArray(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {allowed}")
    return value


def _index(value: Any, count: int) -> int:
    index = int(value)
    if not 0 <= index < count:
        raise ValueError(f"index {index} out of range")
    return index


def _set_spin(spin, value: Any) -> None:
    number = int(value)
    if not spin.minimum() <= number <= spin.maximum():
        raise ValueError(f"{number} out of range")
    spin.setValue(number)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return [_str(item) for item in value]
