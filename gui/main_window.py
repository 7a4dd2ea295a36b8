"""The main window composes views of one RunState and owns the actions: prompt and lanes on the left, lane texts
side by side on the right, step inspector and timeline / beam tree below, model and files in the tool bar,
progress in the status bar.

    model (gui.state.run_state)  ←  controller (gui.state.controller: run, branch, replay, files)  ←  actions, worker
      └─ events → every view (text, lanes editor, inspector, timeline, beam tree, status, notice)

The engine runs on a worker thread and streams typed messages; the controller puts each step into the model at
once and the views redraw what became stale at most ~30 times a second (gui.shell.redraw), so a fast model never
floods the event loop. Adding a view is writing it over the model and one line below.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from decoding.spec import PRESETS, default_lanes
from decoding.trace import RunTrace
from gui.i18n import translate
from gui.present import colours
from gui.present.lane_fields import preset_title
from gui.shell.autosaver import Autosaver, restorable
from gui.shell.drop import RunFileDrop
from gui.shell.menus import Menus
from gui.shell.recent_files import RecentFiles
from gui.shell.redraw import RedrawScheduler
from gui.shell.settings import DEFAULT_SIZE, Settings, capture_layout
from gui.shell.theme import app_theme
from gui.shell.unsaved import UnsavedRun
from gui.shell.worker import Worker
from gui.state.controller import RunController
from gui.state.model_holder import RunRequest
from gui.state.run_state import JobKind, RunState
from gui.views.beam_tree import BeamTreeView
from gui.views.compare_view import CompareView
from gui.views.fanout_view import FanoutView
from gui.views.inside.attention_view import AttentionView
from gui.views.inside.lens_view import LensView
from gui.views.inside.token_view import TokenView
from gui.views.inspector import StepInspector
from gui.views.lane_map import LaneStepMap
from gui.views.lanes_editor import LanesEditor, preset_for_window
from gui.views.model_picker import ModelPicker
from gui.views.notice_bar import NoticeBar
from gui.views.prompt_panel import PromptPanel, PromptRequest
from gui.views.status import StatusBar
from gui.views.sweep_view import SweepView
from gui.views.text_view import TextPanel
from gui.views.timeline import Timeline


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
        self._closing = False
        self._tour_stop = None  # a tour stop whose run is on its way (its after-action follows)
        self._inside_stop = None  # a tour stop whose explanation is on its way
        self._last_folder = Path.home()  # where the file dialogs open
        with colours.built_light():  # then the theme turns the drawing dark if it is (gui.shell.theme)
            self._build_views()
            self._build_layout()
            self._build_actions()
        self.autosaver = Autosaver(self.state, parent=self)
        self._build_desktop(settings)
        self.state.events.connect("run_started", self._on_run_started)
        self.state.events.connect("run_finished", self._on_run_finished)
        self.state.events.connect("model_changed", self._on_model_changed)
        self.state.events.connect("explanations_changed", self._on_explained)
        if model_dir is not None:
            self.set_model(model_dir)

    # ------------------------------------------------------------------------------------------ construction

    def _build_views(self) -> None:
        model, scheduler = self.state, self.scheduler
        self.prompt = PromptPanel()
        self.prompt.runRequested.connect(self.run)
        self.prompt.stopRequested.connect(self.stop)
        self.prompt.editor.textChanged.connect(self._on_prompt_edited)
        self.lanes = LanesEditor(model)
        self.text = TextPanel(model, scheduler)
        self.text.on_branch, self.text.on_force = self.branch, self.force_for_all
        self.text.on_replay = self.replay_not_taken
        self.inspector = StepInspector(model)
        self.inspector.branchRequested.connect(self.branch)
        self.inspector.forceRequested.connect(self.force_for_all)
        self.inspector.replayRequested.connect(self.replay_not_taken)
        self.timeline = Timeline(model, scheduler)
        self.lane_map = LaneStepMap(model, scheduler)
        self.compare = CompareView(model)
        self.fanout = FanoutView(model, scheduler)
        self.sweep = SweepView(model)
        self.sweep.sweepRequested.connect(self.controller.sweep)
        self.sweep.fanoutsRequested.connect(self.controller.add_temperature_fanouts)
        self.beam_tree = BeamTreeView(model, scheduler)
        self.tokens_view = TokenView(model)
        self.tokens_view.model_files = self._run_model_files
        self.attention = AttentionView(model)
        self.lens = LensView(model)
        self.attention.header.on_explain = self.lens.header.on_explain = self.text.on_explain = self.explain_lane
        self.controller.prepare_inspection = self._prepare_inspection
        self.error_banner = NoticeBar(model)
        self.branch_strategy = QComboBox()
        self.branch_strategy.setObjectName("branchStrategy")
        self.branch_strategy.addItem(translate("main_window", "parent's strategy"), "")
        for title in PRESETS:
            self.branch_strategy.addItem(preset_title(title), title)
        self.branch_strategy.setToolTip(translate("main_window", "The strategy a branched lane continues with after "
                                                                 "the picked token (right-click a token, or "
                                                                 "double-click an alternative in the inspector)"))
        self.branch_strategy.currentIndexChanged.connect(self._on_branch_strategy)
        self.model_picker = ModelPicker()
        self.model_picker.modelChosen.connect(self.set_model)
        self.status = StatusBar(model, scheduler)
        self.setStatusBar(self.status)

    def _build_layout(self) -> None:
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(4, 4, 4, 4)
        left_layout.addWidget(self.prompt)
        left_layout.addWidget(self.lanes, 1)
        # Left: the selected step and token, seen from outside (inspector) and inside the model; right: the run.
        self.step_views = QTabWidget()
        self.step_views.addTab(self.inspector, translate("main_window", "Step"))
        self.step_views.addTab(self.attention, translate("main_window", "Attention"))
        self.step_views.addTab(self.lens, translate("main_window", "Logit lens"))
        self.step_views.addTab(self.tokens_view, translate("main_window", "Tokens"))
        self.charts = QTabWidget()
        self.charts.addTab(self.timeline, translate("main_window", "Timeline"))
        self.charts.addTab(self.lane_map, translate("main_window", "Lane map"))
        self.charts.addTab(self.compare, translate("main_window", "Side by side"))
        self.charts.addTab(self.fanout, translate("main_window", "Fan-out"))
        self.charts.addTab(self.sweep, translate("main_window", "Temperature"))
        self.charts.addTab(self.beam_tree, translate("main_window", "Beam tree"))
        self.charts.currentChanged.connect(self._on_chart_tab)
        for chart in (self.inspector, self.timeline, self.lane_map, self.compare, self.fanout, self.sweep,
                      self.beam_tree, self.tokens_view, self.attention, self.lens):
            chart.setMinimumWidth(240)  # narrower than their headers' hints: the window must fit 1280 px
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.step_views)
        bottom.addWidget(self.charts)
        bottom.setSizes([420, 600])
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.error_banner)
        top_layout.addWidget(self.text, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(top)
        right.addWidget(bottom)
        right.setSizes([360, 420])  # the charts need the height more than short texts do
        main = QSplitter(Qt.Orientation.Horizontal)
        for splitter, name in ((bottom, "bottomSplitter"), (right, "rightSplitter"), (main, "mainSplitter")):
            splitter.setObjectName(name)  # gui.shell.settings keeps named splitters' sizes
        main.addWidget(left)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([330, 950])
        self.setCentralWidget(main)

    def _build_actions(self) -> None:
        bar = self.addToolBar("Main")
        bar.setObjectName("mainToolBar")
        bar.setMovable(False)
        bar.addWidget(QLabel(translate("main_window", " Model ")))
        bar.addWidget(self.model_picker)
        bar.addSeparator()
        self.open_action = self._action(bar, translate("main_window", "Open…"), QKeySequence.StandardKey.Open,
                                        self.open_dialog,
                                        translate("main_window", "Open a saved run (JSON); no model needed"))
        self.save_action = self._action(bar, translate("main_window", "Save…"), QKeySequence.StandardKey.Save,
                                        self.save_dialog,
                                        translate("main_window", "Save the run as JSON"))
        self.replay_action = self._action(bar, translate("main_window", "Replay"), None, self.replay,
                                          translate("main_window", "Re-run the shown run with the model and check "
                                                                   "every token"))
        bar.addSeparator()
        bar.addWidget(QLabel(translate("main_window", " Branch as ")))
        bar.addWidget(self.branch_strategy)
        self.undo_action = self._action(bar, translate("main_window", "Undo branch"), QKeySequence.StandardKey.Undo,
                                        self.undo_branch,
                                        translate("main_window", "Remove the last branch lane (Ctrl+Z)"))
        self.explain_action = self._action(bar, translate("main_window", "Explain lane"), None,
                                           self.explain_selected_lane,
                                           translate("main_window", "Inside the model for the selected lane: every "
                                                                    "layer's attention per head and the logit lens "
                                                                    "(Attention and Logit lens tabs)"))
        bar.addSeparator()
        self.tour_action = self._action(bar, translate("main_window", "Tour"), None, self.show_tour,
                                        translate("main_window", "A guided tour: one preset per phenomenon, explained "
                                                                 "in English and Chinese"))
        self.export_action = self._action(bar, translate("main_window", "Export images…"), None, self.export_dialog,
                                          translate("main_window", "Export the prompt and texts, each chart (PNG and "
                                                                   "SVG) and a report image of the whole run"))
        self.run_action = self._hidden_action(["Ctrl+Return", "Ctrl+Enter"], self.run)
        self.stop_action = self._hidden_action(["Esc"], self.stop)

    def _build_desktop(self, settings: Settings | None) -> None:
        """What makes it a desktop app: menus and keys, recent files, "Save changes?", dropped run files,
        light and dark, and the settings it restores now and saves on close."""
        self.settings = settings
        self.theme = app_theme()
        self.theme.watch(self)
        self.theme.changed.connect(self.text.refresh_look)
        self.recent = RecentFiles(settings)
        self.unsaved = UnsavedRun(self)
        self.menus = Menus(self)
        self.drop = RunFileDrop(self)
        self.default_layout = capture_layout(self, DEFAULT_SIZE)
        self.resize(*DEFAULT_SIZE)
        if settings is not None:
            settings.restore(self)

    def _action(self, bar, text: str, shortcut, slot, tip: str) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.setToolTip(tip)
        action.triggered.connect(slot)
        bar.addAction(action)
        return action

    def _hidden_action(self, keys: list[str], slot) -> QAction:
        action = QAction(self)
        action.setShortcuts([QKeySequence(k) for k in keys])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    # --------------------------------------------------------------------------------------- model events

    def _on_run_started(self, job: JobKind) -> None:
        if job in (JobKind.RUN, JobKind.REPLAY):
            self._inside_stop = None  # its explanation never came (cancelled, failed): not for a later one
        self.prompt.set_running(True)
        self._set_file_actions_enabled(False)
        self.scheduler.start()

    def _on_run_finished(self) -> None:
        self.prompt.set_running(False)
        self._set_file_actions_enabled(True)
        if self._tour_stop is not None and self.state.job is None:
            stop, self._tour_stop = self._tour_stop, None
            QTimer.singleShot(0, lambda: self._after_tour_run(stop))

    def _on_model_changed(self) -> None:
        name = self.controller.holder.name if self.controller.holder else self.state.model_name
        self.setWindowTitle(translate("main_window", "Branchpoint — {name}").format(name=name) if name
                            else translate("main_window", "Branchpoint"))

    @Slot()
    def _on_prompt_edited(self) -> None:
        if self.prompt.editor.toPlainText().strip():
            self.state.clear_notice("prompt")

    @Slot(int)
    def _on_chart_tab(self, _index: int) -> None:
        self.beam_tree.set_shown(self.charts.currentWidget() is self.beam_tree)

    @Slot(int)
    def _on_branch_strategy(self, _index: int) -> None:
        preset = self.branch_strategy.currentData()
        self.controller.branch_base = PRESETS[preset] if preset else None

    # ----------------------------------------------------------------------------------------------- jobs

    @Slot(object)
    def _on_job_finished(self, result: object) -> None:
        self.scheduler.stop()
        if self._closing:  # the window is gone: nothing to show
            return
        self.scheduler.discard()  # the finished run is redrawn whole
        self.controller.on_finished(result)

    @Slot(str, str)
    def _on_job_failed(self, message: str, details: str) -> None:
        self.scheduler.stop()
        if self._closing:
            return
        self.scheduler.flush()
        self.controller.on_failed(message, details)

    def _set_file_actions_enabled(self, enabled: bool) -> None:
        for action in (self.open_action, self.save_action, self.replay_action, self.undo_action,
                       self.explain_action):
            action.setEnabled(enabled)
        self.model_picker.setEnabled(enabled)

    # -------------------------------------------------------------------------------------------- commands

    @Slot(object)
    def set_model(self, path) -> None:
        if self.controller.set_model(Path(path)):
            self.model_picker.select(Path(path))
        else:
            holder = self.controller.holder
            self.model_picker.select(holder.path if holder else None)

    def preload_model(self) -> None:
        """Start loading the model now instead of at the first run (the app calls this once the window is
        shown; see ModelHolder.preload)."""
        holder = self.controller.holder
        if holder is not None:
            holder.preload()
            self._watch_preload(holder)

    def _watch_preload(self, holder) -> None:
        """Once the model is loaded (on its own thread), the status bar names the provider really active."""
        if holder is not self.controller.holder or self._closing:
            return
        if holder.loaded is not None:
            if self.state.provider in ("", "not loaded"):
                self.state.set_model_name(holder.name, holder.loaded.provider)
        elif holder.preloading:
            QTimer.singleShot(200, lambda: self._watch_preload(holder))

    def request(self) -> RunRequest:
        r = self.prompt.request()
        return RunRequest(r.text, r.chat, r.system, r.max_new_tokens, r.seed)

    @Slot()
    def run(self) -> None:
        if self.unsaved.may_discard(self.tr("start a new run"), new_run=True):
            self.controller.run(self.request())

    @Slot()
    def run_again_and_compare(self) -> None:
        """Run every lane again (fresh draws where the seed is auto) and say where each differs from this run."""
        if self.unsaved.may_discard(self.tr("start a new run"), new_run=True):
            self.controller.run(self.request(), compare=True)

    @Slot()
    def stop(self) -> None:
        self.controller.stop()

    @Slot(int, int)
    def select(self, lane: int, step: int) -> None:
        self.state.select(lane, step)

    @Slot(int, int, int)
    def branch(self, lane: int, step: int, token_id: int) -> None:
        self.controller.branch(lane, step, token_id)

    @Slot(int, int)
    def replay_not_taken(self, lane: int, step: int) -> None:
        self.controller.replay_not_taken(lane, step)

    @Slot()
    def undo_branch(self) -> None:
        self.controller.undo_branch()

    @Slot(int, int)
    def force_for_all(self, step: int, token_id: int) -> None:
        if self.unsaved.may_discard(self.tr("start a new run"), new_run=True):
            self.controller.force_for_all(step, token_id, self.request())

    @Slot()
    def replay(self) -> None:
        request = self.controller.replay()
        if request is not None:
            self._show_request(request)

    # ------------------------------------------------------------------------------------------------ tour

    @Slot()
    def show_tour(self) -> None:
        from gui.dialogs.tour_dialog import TourDialog

        TourDialog(self.start_tour, self).exec()

    def start_tour(self, key: str) -> bool:
        """Set up a tour stop (prompt, lanes, settings, view) and run it; its after-action follows the run."""
        from gui.state import tour

        stop = tour.stop(key)
        if self.worker.is_running():
            self.state.show_notice(translate("main_window", "Stop the run before starting a tour stop."))
            return False
        self.state.set_specs(lane.spec for lane in stop.lanes)
        for index, lane in enumerate(stop.lanes):
            if lane.fanout > 1:
                self.state.set_fanout(index, lane.fanout)
        self._show_request(RunRequest(stop.prompt, stop.chat, None, stop.max_new_tokens, stop.seed))
        self.show_view(getattr(self, stop.view))
        self.state.show_notice(f"{stop.title_en} — {stop.text_en}<br>{stop.title_zh} — {stop.text_zh}",
                               level="info", cause="tour")
        self._tour_stop = stop
        self.run()
        return True

    def _after_tour_run(self, stop) -> None:
        from decoding.critical import critical_point

        firsts = [(index, next((r.step for r in lane.trace.steps if critical_point(r, self.state.critical)), None))
                  for index, lane in enumerate(self.state.lanes)]
        first = next(((index, step) for index, step in firsts if step is not None), None)
        if stop.after == "replay_first_critical":
            lane = 1 if firsts[1][1] is not None else (first[0] if first else None)
            if lane is not None:
                step = dict(firsts)[lane]
                self.controller.replay_not_taken(lane, step)
                self.state.select(lane, step)
        elif stop.after == "select_first_critical" and first is not None:
            self.state.select(*first)
        elif stop.after == "temperature_fanouts":
            self.controller.add_temperature_fanouts(0)
            self.sweep.show_diversity()
            self.run()
        elif stop.after == "run_again":
            self.replay()
        elif stop.after in ("explain_contrast", "explain_journey"):
            self._inside_stop = stop  # shown once the explanation is in (_on_explained)
            self.explain_lane(0)

    # --------------------------------------------------------------------------------------- inside the model

    @Slot()
    def explain_selected_lane(self) -> None:
        if self.state.selection is None:
            self.state.show_notice(translate("main_window", "Select a token of the lane to explain (click it in the "
                                                            "text)."), level="info")
            return
        self.explain_lane(self.state.selection.lane)

    def explain_lane(self, lane: int) -> None:
        """Lane `lane` inside the model (its inspection model prepared on first use, off the GUI thread)."""
        self.controller.explain_lane(lane)

    def _prepare_inspection(self, path: Path) -> str | None:
        """The setup dialog preparing the model's inspection model (its own worker thread: the window keeps
        drawing); None when prepared, else why not."""
        from functools import partial

        from gui.dialogs.setup_dialog import SetupDialog
        from models.inspection import prepare_inspection

        dialog = SetupDialog(
            "Preparing the inspection model",
            "Explaining a lane needs the model's inspection model: a second export of the same weights that "
            "returns every layer's attention per head and the logit lens. It is prepared once per model into its "
            "folder (about 1.5 minutes and 650 MB for the default model).",
            partial(prepare_inspection, path), self)
        if dialog.run() is not None:
            return None
        return f"preparing its inspection model failed: {dialog.error}" if dialog.error else \
            "preparing its inspection model was cancelled"

    def _run_model_files(self) -> tuple[object | None, int | None]:
        """The shown run's model's tokenizer and positions, when that model is the one chosen here."""
        holder, trace = self.controller.holder, self.state.trace
        if holder is None or trace is None or trace.model.name != holder.name:
            return None, None
        try:
            return holder.tokenizer(), holder.max_positions()
        except (OSError, ValueError):
            return None, None

    def _on_explained(self) -> None:
        stop, self._inside_stop = self._inside_stop, None
        if stop is not None:
            self._show_inside_stop(stop)
        elif self.step_views.currentWidget() not in (self.attention, self.lens, self.tokens_view):
            self.show_view(self.attention)

    def _show_inside_stop(self, stop) -> None:
        """A tour stop's view of lane 0's explanation: where its contrast word looks back at the concessive one,
        or the logit lens where the lane's choice settles latest (that step selected)."""
        from gui.present.inside_data import latest_settling, word_span

        result = self.state.explanation(0)
        if stop.after == "explain_contrast":
            prompt = result.prompt_length
            query = word_span(result, stop.extra["contrast"], last=True, within=prompt)[-1]
            self.attention.show_look(query, word_span(result, stop.extra["concessive"], within=prompt))
            self.show_view(self.attention)
        else:
            position = latest_settling(result)
            if position is not None:
                self.state.select(0, position + 1 - result.prompt_length)
            self.show_view(self.lens)

    def show_view(self, view: QWidget) -> None:
        """Bring a view's tab to the front, in whichever tab group holds it."""
        for tabs in (self.step_views, self.charts):
            if tabs.indexOf(view) >= 0:
                tabs.setCurrentWidget(view)

    def view_shown(self, view: QWidget) -> bool:
        return any(tabs.currentWidget() is view for tabs in (self.step_views, self.charts))

    @property
    def trace(self) -> RunTrace | None:
        """The shown run (what Save writes)."""
        return self.state.shown_trace()

    # ------------------------------------------------------------------------------------------------ files

    @Slot()
    def save_dialog(self) -> bool:
        """Ask where and save; whether the run was saved."""
        if self.state.trace is None:
            self.state.show_notice(translate("main_window", "Nothing to save yet: run or open a run first."))
            return False
        path, _ = QFileDialog.getSaveFileName(self, translate("main_window", "Save run"),
                                              str(self._last_folder / "run.json"),
                                              translate("main_window", "Branchpoint run (*.json)"))
        if not path:
            return False
        self._last_folder = Path(path).parent
        return self.save(Path(path))

    def save(self, path: Path) -> bool:
        saved = self.controller.save(path)
        if saved:
            self.unsaved.mark_saved()
            self.recent.add(path)
        return saved

    @Slot()
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, translate("main_window", "Open run"), str(self._last_folder),
                                              translate("main_window", "Branchpoint run (*.json);;All files (*)"))
        if path:
            self._last_folder = Path(path).parent
            self.open(Path(path))

    def open(self, path: Path) -> bool:
        """Show a saved run (no model needed); its prompt and lanes fill the editors for Replay."""
        if not self.unsaved.may_discard(self.tr("open another run")):
            return False
        request = self.controller.open(path)
        if request is not None:
            self._show_request(request)
            self.unsaved.mark_saved()
            self.recent.add(path)
        return request is not None

    def _show_request(self, request: RunRequest) -> None:
        self.prompt.set_request(PromptRequest(request.text, request.chat, request.system, request.max_new_tokens,
                                              request.seed))

    @Slot()
    def export_dialog(self) -> None:
        dialog = QFileDialog(self, translate("main_window", "Export images into folder"), str(self._last_folder))
        dialog.setFileMode(QFileDialog.FileMode.Directory)  # the dialog's own button creates a new folder
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if dialog.exec():
            folder = Path(dialog.selectedFiles()[0])
            self._last_folder = folder
            paths = self.export_images(folder)
            if paths:
                self.state.set_status(translate("main_window",
                                                "exported {len} images to {folder}").format(len=len(paths),
                                                                                            folder=folder))

    def export_images(self, folder: Path) -> list[Path]:
        """text.png (prompt and every lane's whole text), report.png (everything), and each chart as PNG and
        SVG with its title, legend and axes. A failure says why; the run stays as it is."""
        from gui.shell import image_export as export

        document = export.text_document(self.state, self.text.legend.text())
        views = self._export_views()
        figures = {name: view.figure() for name, view in views.items()}
        figures = {name: figure for name, figure in figures.items() if figure is not None}
        try:
            folder.mkdir(parents=True, exist_ok=True)
            paths = [export.save_png(export.document_image(document), folder / "text.png"),
                     export.save_png(export.report_image(document, list(figures.values())), folder / "report.png")]
            for name, figure in figures.items():
                paths.append(export.save_png(export.figure_image(figure), folder / f"{name}.png"))
                paths.append(export.save_figure_svg(figure, folder / f"{name}.svg"))
        except OSError as error:
            self.state.show_notice(translate("main_window", "Could not export images to {folder}: {error}. The run is "
                                                            "still here.").format(folder=folder, error=error))
            return []
        finally:
            for view in views.values():
                view.deleteLater()
        return paths

    def _export_views(self) -> dict[str, QWidget]:
        """The charts drawn afresh at a size made for reading (not the window's layout), off screen."""
        snapshot = self.state.snapshot()
        timeline = Timeline(snapshot, RedrawScheduler(self))
        timeline.set_metric(self.timeline.current_metric())
        inspector = StepInspector(snapshot)
        lane_map = LaneStepMap(snapshot, RedrawScheduler(self))
        compare = CompareView(snapshot)
        fanout = FanoutView(snapshot, RedrawScheduler(self))
        sweep = SweepView(snapshot)
        beam_tree = BeamTreeView(snapshot)
        tokens = TokenView(snapshot)
        tokens.model_files = self._run_model_files
        attention, lens = AttentionView(snapshot), LensView(snapshot)
        layers = max((e.layers for e in snapshot.trace.explanations), default=0) if snapshot.trace else 0
        beam_steps = max((len(lane.trace.steps) for lane in snapshot.lanes if lane.spec.is_beam), default=0)
        map_height = max(260, 26 * len(snapshot.lanes) + 120)
        sizes = {"timeline": (timeline, 1000, 440), "lane_map": (lane_map, 1000, map_height),
                 "inspector": (inspector, 820, 560), "side_by_side": (compare, 1000, 460),
                 "fanout": (fanout, 1000, 560), "temperature": (sweep, 1000, 560),
                 "beam_tree": (beam_tree, min(3000, max(900, 64 * beam_steps + 120)), 520),
                 "tokens": (tokens, 1000, 400),
                 "attention": (attention, 1100, 640), "logit_lens": (lens, 1000, 24 * layers + 200)}
        for view, width, height in sizes.values():
            view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
            view.resize(width, height)
            view.show()
        if snapshot.selection is not None:
            inspector.set_step(snapshot.selection.lane, snapshot.selection.step, snapshot.selection.member)
            compare.set_other(self.compare._combo.currentIndex())
        sweep.show_diversity(sweep.shown_sweep() is None)
        beam_tree.set_shown(True)
        beam_tree.show_all_steps()
        attention.copy_state(self.attention)
        lens.copy_state(self.lens)
        QApplication.processEvents()
        return {name: view for name, (view, _w, _h) in sizes.items()}

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

    def report_stale_builds(self) -> list[Path]:
        """Remove what an interrupted preparation (killed, power loss) left in the cache, and say so."""
        from models.prepare import remove_all_stale_builds

        removed = remove_all_stale_builds()
        if removed:
            names = ", ".join(path.name for path in removed)
            removed_text = translate("main_window", "Removed {count} unfinished preparation folder(s) that an "
                                                    "interrupted preparation left in the cache: {names}.")
            self.state.show_notice(removed_text.format(count=len(removed), names=names), level="info", cause="cleanup")
        return removed

    def offer_restore(self, ask=None) -> bool:
        """After a crash or kill -9: offer the newest run an instance left behind (`ask(path) -> bool`, a
        question to the user by default); "no" discards it."""
        from decoding import autosave
        from decoding.spec import specs_of
        from gui.state.model_holder import request_of

        found = restorable()
        if not found:
            return False
        path = found[0]
        if not (ask or self._ask_restore)(path):
            path.unlink(missing_ok=True)
            return False
        claimed = self.autosaver.store.claim(path)  # another instance may have taken it first
        if claimed is None:
            return False
        try:
            trace = autosave.restore(claimed)
            specs = specs_of(trace)
        except (OSError, ValueError) as error:
            self.state.show_notice(translate("main_window",
                                             "Could not restore the autosaved run: {error}").format(error=error))
            return False
        self.state.show_trace(trace, specs)
        self._show_request(request_of(trace))
        self.unsaved.unsaved = True  # no file of the user's holds it
        restored = translate("main_window", "Restored the run Branchpoint was showing when it stopped ({lanes} lanes, "
                                            "{tokens} tokens).")
        tokens = sum(len(lane.steps) for lane in trace.lanes)
        self.state.show_notice(restored.format(lanes=len(trace.lanes), tokens=tokens), level="info", cause="restore")
        return True

    def _ask_restore(self, path: Path) -> bool:
        from PySide6.QtWidgets import QMessageBox

        answer = QMessageBox.question(
            self, translate("main_window", "Restore the last run?"),
            translate("main_window", "Branchpoint stopped unexpectedly while it showed a run. Restore that run (the "
                                     "text generated so far)?"),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        if not self._closing and not self.unsaved.may_discard(self.tr("quit")):
            event.ignore()
            return
        if self.settings is not None:
            self.settings.save(self)
        self.shutdown()
        super().closeEvent(event)
