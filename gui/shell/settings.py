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
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget

from decoding.chain.spec import PRESETS, LaneSpec
from gui.i18n import translate
from gui.state.run_state import RunState
from gui.views.prompt_panel import MAX_NEW_TOKENS_LIMIT

FILE_NAME = "branchpoint.ini"
DEFAULT_SIZE = (1280, 800)  # the window at first start and after View → Reset layout
THEMES = ("system", "light", "dark")
LANGUAGES = ("system", "en", "zh_CN")


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


def named_splitters(window: QMainWindow) -> dict[str, QSplitter]:
    return {s.objectName(): s for s in window.findChildren(QSplitter) if s.objectName()}


def capture_layout(window: QMainWindow, size: tuple[int, int]) -> Layout:
    splitters = {name: splitter.saveState() for name, splitter in named_splitters(window).items()}
    return Layout(size, window.saveState(), splitters)


def apply_layout(window: QMainWindow, layout: Layout) -> None:
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
        self._items: dict[str, Item] = {}  # what each component registered
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

    def register(self, key: str, write: Callable[[], Any], read: Callable[[Any], None]) -> None:
        """A remembered item: `write()` gives the value to store on save, `read(value)` applies a stored one
        (raising ValueError, TypeError, KeyError or AttributeError when it cannot)."""
        self._items[key] = (write, read)

    def save(self) -> None:
        for key, (write, _read) in self._items.items():
            self.store.setValue(key, write())
        self.store.sync()

    def restore(self, state: RunState) -> None:
        """Apply every remembered item; one that cannot be read stays at its default and is named in a
        notice (with the file's own notice, if any)."""
        failed = []
        for key, (_write, read) in self._items.items():
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
            state.show_notice(self.notice, level="info", cause="settings")

    def reset_layout(self, window: QMainWindow, layout: Layout) -> None:
        apply_layout(window, layout)
        for key in list(self.store.allKeys()):
            if key.startswith(("window/", "splitters/")):
                self.store.remove(key)
        self.store.sync()


# --------------------------------------------------------------------------------------------- the items

Item = tuple[Callable[[], Any], Callable[[Any], None]]  # (value to store, apply a stored value)


def register_layout(settings: Settings, window: QMainWindow) -> None:
    """Window geometry and state, and every named splitter's sizes."""
    settings.register("window/geometry", window.saveGeometry, lambda v: checked(window.restoreGeometry(as_bytes(v))))
    settings.register("window/state", window.saveState, lambda v: checked(window.restoreState(as_bytes(v))))
    for name, splitter in named_splitters(window).items():
        settings.register(f"splitters/{name}", splitter.saveState,
                          lambda v, s=splitter: checked(s.restoreState(as_bytes(v))))


def register_run_state(settings: Settings, state: RunState) -> None:
    """The lanes and the request: prompt, chat and system prompt, max new tokens, branch strategy."""
    request = lambda: state.request  # noqa: E731
    settings.register("lanes", lambda: lanes_to_text(state), lambda v: lanes_from_text(state, v))
    settings.register("prompt/text", lambda: request().text, lambda v: state.update_request(text=as_text(v)))
    settings.register("prompt/chat", lambda: request().chat, lambda v: state.update_request(chat=as_bool(v)))
    settings.register("prompt/system", lambda: request().system or "",
                      lambda v: state.update_request(system=as_text(v) or None))
    settings.register("prompt/max_new_tokens", lambda: request().max_new_tokens,
                      lambda v: state.update_request(max_new_tokens=as_bounded(v, 1, MAX_NEW_TOKENS_LIMIT)))
    settings.register("branch/strategy", lambda: request().branch_strategy,
                      lambda v: state.update_request(branch_strategy=one_of(v, ("", *PRESETS))))


def register_tabs(settings: Settings, key: str, tabs: QTabWidget) -> None:
    settings.register(key, tabs.currentIndex, lambda v: tabs.setCurrentIndex(as_index(v, tabs.count())))


def lanes_to_text(state: RunState) -> str:
    """The lanes as JSON: name, config (LaneSpec.to_config), fan-out count and whether the user named it.
    Lanes that belong to the run shown (branches, replays of a step's other token) are left out and forced
    tokens dropped."""
    lanes = [{"name": lane.name, "config": replace(lane.spec, forced={}).to_config(), "fanout": lane.fanout,
              "named_by_user": lane.named_by_user}
             for lane in state.lanes
             if lane.spec.branch is None and lane.spec.replay_of is None and lane.spec.fanout is None]
    return json.dumps(lanes, ensure_ascii=False)


def lanes_from_text(state: RunState, text: Any) -> None:
    lanes = json.loads(as_text(text))
    specs = [LaneSpec.from_config(str(lane["name"]), dict(lane["config"])) for lane in lanes]
    if not specs:
        raise ValueError("no lanes")
    state.set_specs(specs)
    for index, (lane, saved) in enumerate(zip(state.lanes, lanes, strict=True)):
        state.replace_spec(index, lane.spec, named_by_user=bool(saved.get("named_by_user", False)))
        if saved.get("fanout", 1) != 1:
            state.set_fanout(index, int(saved["fanout"]))


# ---- reading QSettings values: an INI file gives back strings (and lists of them), whatever was written

def checked(result: Any, ok: Callable[[Any], bool] = bool) -> Any:
    if not ok(result):
        raise ValueError("not accepted")
    return result


def as_bytes(value: Any) -> QByteArray:
    if not isinstance(value, QByteArray | bytes):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return QByteArray(value)


def as_text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {allowed}")
    return value


def as_index(value: Any, count: int) -> int:
    index = int(value)
    if not 0 <= index < count:
        raise ValueError(f"index {index} out of range")
    return index


def as_bounded(value: Any, low: int, high: int) -> int:
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{number} out of range")
    return number


def named_splitter(orientation: Qt.Orientation, name: str, widgets, sizes: list[int]) -> QSplitter:
    """A splitter whose sizes the settings keep (by its object name)."""
    splitter = QSplitter(orientation)
    splitter.setObjectName(name)
    for widget in widgets:
        splitter.addWidget(widget)
    splitter.setSizes(sizes)
    return splitter
