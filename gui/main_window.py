"""The main window composes: the run state (gui.state) and its controller, the views of the registry
(gui.views.registry) in two tab groups beside the prompt, lanes and texts, the actions of the table
(gui.shell.actions) in the tool bar and menus, and the desktop shell (files, tour, autosave, settings, theme).
It decides nothing itself: views subscribe to the state, commands go to the controller.

    state (gui.state.run_state)  ←  controller (gui.state.controller)  ←  commands (gui.shell.commands), worker
      └─ events → every view (text, lanes editor, registry views, status, notice)
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from decoding.chain.spec import default_lanes
from decoding.records.trace import RunTrace
from gui.dialogs.setup_dialog import prepare_inspection
from gui.dialogs.worker import GuiThreadCall, Worker
from gui.i18n import translate
from gui.present import colours
from gui.shell import image_export, restore
from gui.shell.actions import Actions
from gui.shell.autosaver import Autosaver
from gui.shell.commands import RunCommands
from gui.shell.drop import RunFileDrop
from gui.shell.files import RunFiles
from gui.shell.recent_files import RecentFiles
from gui.shell.settings import Settings
from gui.shell.theme import app_theme
from gui.shell.tour_runner import TourRunner
from gui.shell.unsaved import UnsavedRun
from gui.shell.window_parts import WindowChrome, build_layout
from gui.state.controller import RunController
from gui.state.run_state import RunState
from gui.views import generation_configs
from gui.views.branch_strategy import BranchStrategyBox
from gui.views.chinese_hint import ChineseHintBar
from gui.views.lanes_editor import LanesEditor, preset_for_window
from gui.views.model_picker import ModelPicker
from gui.views.notice_bar import NoticeBar
from gui.views.prompt_panel import PromptPanel
from gui.views.redraw import RedrawScheduler
from gui.views.registry import TEXT_SIGNALS, VIEWS
from gui.views.status import StatusBar
from gui.views.text_view import TextPanel


class MainWindow(QMainWindow):
    def __init__(self, model_dir: Path | None = None, settings: Settings | None = None) -> None:
        """`settings`: where the window remembers itself between starts (None: it remembers nothing)."""
        super().__init__()
        self.setWindowTitle(translate("main_window", "Branchpoint"))
        self.state = RunState(preset_for_window(spec) for spec in default_lanes())
        self.scheduler = RedrawScheduler(self)
        self.worker = Worker(self)
        self.controller = RunController(self.state, self.worker)
        self.worker.progress.connect(self.controller.on_message)
        self.worker.finished.connect(self._on_job_finished)
        self.worker.failed.connect(self._on_job_failed)
        self.settings, self._closing = settings, False
        self.unsaved = UnsavedRun(self.state, lambda: self.files.save_dialog(), self)
        self.commands = RunCommands(self.state, self.controller, self.unsaved, self)
        self.recent = RecentFiles(settings)
        self.files = RunFiles(self, self.state, self.controller, self.unsaved, self.recent, self.export_images)
        self.tour = TourRunner(self.state, self.controller, self.unsaved, self.show_view, self.set_model, self)
        self.theme = app_theme()
        self.chrome = WindowChrome(self, self.state, self.controller, self.unsaved, self.theme, settings)
        with colours.built_light():  # then the theme turns the drawing dark if it is (gui.shell.theme)
            self._build_views()
            self.step_views, self.charts = build_layout(self, (self.prompt, self.lanes),
                                                        (stacked(self.error_banner, self.chinese_hint), self.text),
                                                        self.views)
            self.window_actions = Actions(self, {**self._command_table(), **self.chrome.commands()})
            self.menus = self.chrome.build_bars(
                self.window_actions, {"@model": self.model_picker, "@branch_as": self.branch_strategy}, self.lanes,
                self.files.open, self.recent, [self.text, self.views["timeline"]])
        self.autosaver = Autosaver(self.state, parent=self)
        self._build_desktop(settings)
        for event, slot in (("run_started", self._on_run_started), ("run_finished", self._on_run_finished),
                            ("model_changed", self._on_model_changed), ("explanations_changed", self._on_explained),
                            ("run_started", self._on_job_started)):
            self.state.events.connect(event, slot)
        if model_dir is not None:
            self.set_model(model_dir)
        self.chinese_hint.update_hint()

    # ------------------------------------------------------------------------------------------ construction

    def _build_views(self) -> None:
        state, scheduler, commands = self.state, self.scheduler, self.commands
        self.prompt = PromptPanel(state)
        self.prompt.runRequested.connect(commands.run)
        self.prompt.stopRequested.connect(commands.stop)
        self.lanes = LanesEditor(state)
        self.text = TextPanel(state, scheduler)
        self.views: dict[str, QWidget] = {}
        for row in VIEWS:
            view = self.views[row.id] = row.make(state, scheduler)
            view.setMinimumWidth(240)  # narrower than their headers' hints: the window must fit 1280 px
            _connect(view, row.signals, commands)
        _connect(self.text, TEXT_SIGNALS, commands)
        self.error_banner = NoticeBar(state)
        self.branch_strategy = BranchStrategyBox(state)
        self.model_picker = ModelPicker()
        self.model_picker.modelChosen.connect(self.set_model)
        self.model_picker.variantPrepared.connect(partial(self.state.show_notice, level="info"))
        self.model_picker.serverAdded.connect(lambda name: self.lanes.add_served(name))
        self.chinese_hint = ChineseHintBar(state, self.model_path, self.set_model)
        self.status = StatusBar(state, scheduler)
        self.setStatusBar(self.status)

    def __getattr__(self, name: str):
        """The registry's views by id (window.timeline, window.attention …)."""
        views = self.__dict__.get("views", {})
        if name in views:
            return views[name]
        raise AttributeError(name)

    def _command_table(self) -> dict:
        commands, files, lanes = self.commands, self.files, self.lanes
        table = {name: getattr(commands, name) for name in (
            "run", "stop", "replay", "run_again_and_compare", "undo_branch", "explain_selected_lane", "previous_lane",
            "next_lane", "toggle_step_mode", "step_selected_lane", "run_selected_lane_to_end", "compare_with_model",
            "why_selected_step")}
        table["step_all"] = commands.run
        return {**table, "open": files.open_dialog, "save": files.save_dialog, "export": files.export_dialog,
                "edit_thresholds": self.text.edit_thresholds,
                "add_lane": partial(lanes.add_preset, "Greedy"), "duplicate_lane": lanes.duplicate_selected,
                "remove_lane": lanes.remove_selected, "move_lane_left": lanes.move_up,
                "move_lane_right": lanes.move_down,
                "import_generation_config": partial(generation_configs.import_dialog, lanes),
                "export_generation_config": partial(generation_configs.export_dialog, lanes),
                "tour": self.show_tour, "add_precision_variant": self.model_picker.add_variant}

    def _build_desktop(self, settings: Settings | None) -> None:
        """Dropped run files, light and dark, inspection on demand, and the settings restored now."""
        self.theme.watch(self)
        self.theme.changed.connect(self.text.refresh_look)
        self.drop = RunFileDrop(self, self.files.open, self.prompt.editor, self.text, self.state,
                                open_gguf=self.model_picker.add_gguf_path)
        self.controller.call_soon = GuiThreadCall(self).call  # the model loads on a thread of its own
        self.controller.prepare_inspection = partial(prepare_inspection, self)
        generation_configs.add_to_lanes_editor(self.lanes)
        self.chrome.remember(self.views, self.charts)

    # --------------------------------------------------------------------------------------------- events

    def _on_run_started(self, _job) -> None:
        self.window_actions.set_idle(False)
        self.model_picker.setEnabled(False)
        self.scheduler.start()

    def _on_run_finished(self) -> None:
        self.window_actions.set_idle(True)
        self.model_picker.setEnabled(True)

    def _on_model_changed(self) -> None:
        name = self.controller.holder.name if self.controller.holder else self.state.model_name
        self.setWindowTitle(translate("main_window", "Branchpoint — {name}").format(name=name) if name
                            else translate("main_window", "Branchpoint"))

    def _on_job_started(self, job) -> None:
        if job.name == "why":  # its progress bar and Cancel are there (gui.state.tasks.why)
            self.show_view("why")

    def _on_explained(self) -> None:
        if not self.tour.waiting_for_explanation and not any(self.view_shown(v) for v in ("attention", "lens",
                                                                                           "tokens_view")):
            self.show_view("attention")

    @Slot(object)
    def _on_job_finished(self, result: object) -> None:
        self.scheduler.stop()
        if not self._closing:  # else the window is gone: nothing to show
            self.scheduler.discard()  # the finished run is redrawn whole
            self.controller.on_finished(result)

    @Slot(str, str)
    def _on_job_failed(self, message: str, details: str) -> None:
        self.scheduler.stop()
        if not self._closing:
            self.scheduler.flush()
            self.controller.on_failed(message, details)

    # ------------------------------------------------------------------------------------------- commands

    @Slot(object)
    def set_model(self, path) -> None:
        holder = self.controller.holder
        self.model_picker.select(Path(path) if self.controller.set_model(Path(path)) else holder and holder.path)

    def model_path(self) -> Path | None:
        holder = self.controller.holder
        return Path(holder.path) if holder is not None else None

    def preload_model(self) -> None:
        """Start loading the model now instead of at the first run (the app calls this once the window is shown)."""
        if self.controller.holder is not None:
            self.controller.holder.preload()

    def show_view(self, view_id: str) -> QWidget:
        """Bring a registry view's tab to the front, in whichever tab group holds it; the view."""
        view = self.views[view_id]
        for tabs in (self.step_views, self.charts):
            if tabs.indexOf(view) >= 0:
                tabs.setCurrentWidget(view)
        return view

    def view_shown(self, view_id: str) -> bool:
        return any(tabs.currentWidget() is self.views[view_id] for tabs in (self.step_views, self.charts))

    @property
    def trace(self) -> RunTrace | None:
        """The shown run (what Save writes)."""
        return self.state.shown_trace()

    def export_images(self, folder: Path) -> list[Path]:
        """The run's images into `folder` (gui.shell.image_export); a failure says why, the run stays as it is."""
        try:
            return image_export.export_run(folder, self.state, self.views, self.text.legend.text())
        except OSError as error:
            self.state.show_notice(translate("main_window", "Could not export images to {folder}: {error}. The run is "
                                                            "still here.").format(folder=folder, error=error))
            return []

    def offer_restore(self, ask=None) -> bool:
        """After a crash or kill -9: offer the run an instance left behind (gui.shell.restore)."""
        return restore.offer_restore(self.state, self.autosaver, self.unsaved, ask or partial(restore.ask_restore,
                                                                                               self))

    def show_tour(self) -> None:
        from gui.dialogs.tour_dialog import TourDialog

        TourDialog(self.tour.start, self, self.tour.last_key).exec()

    # ------------------------------------------------------------------------------------------------ close

    def shutdown(self) -> None:
        """Stop the worker and wait for its thread, and for a model still preloading (window close, tests); a
        clean exit leaves no autosave."""
        self._closing = True
        self.scheduler.stop()
        self.worker.stop_and_wait()
        if self.controller.holder is not None:
            self.controller.holder.wait_preloaded()
        self.autosaver.close(discard=True)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        if not self._closing and not self.unsaved.may_discard(translate("main_window", "quit")):
            event.ignore()
            return
        if self.settings is not None:
            self.settings.save()
        self.shutdown()
        super().closeEvent(event)


def stacked(*widgets: QWidget) -> QWidget:
    """Widgets one above the other, no margins (the notice and the Chinese hint above the text)."""
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    for widget in widgets:
        layout.addWidget(widget)
    return column


def _connect(view: QWidget, signals: dict[str, str], commands: RunCommands) -> None:
    """Each of the view's signals runs the command the table names."""
    for signal, command in signals.items():
        getattr(view, signal).connect(getattr(commands, command))
