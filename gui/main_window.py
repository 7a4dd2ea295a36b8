"""The main window: prompt and lanes on the left, lane texts side by side on the right, step inspector and
timeline / beam tree below, model and files in the tool bar, progress in the status bar.

The engine runs on a worker thread and streams (lane, StepRecord) pairs; they land in the Qt-free RunState at
once and the views are redrawn by a ~30 Hz timer, so a fast model never floods the event loop.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from decoding.spec import PRESETS, LaneSpec
from decoding.trace import RunTrace, StepRecord
from gui import session
from gui.beam_tree import BeamTreeView
from gui.inspector import StepInspector
from gui.lanes import LanesEditor, unique_name
from gui.model_picker import ModelPicker
from gui.prompt_panel import PromptPanel, PromptRequest
from gui.run_state import RunState, Selection, lane_trace_for
from gui.status import StatusBar
from gui.text_view import TextPanel
from gui.timeline import Timeline
from gui.worker import Worker

REDRAW_INTERVAL_MS = 33  # ~30 Hz
FLUSH_BUDGET_S = 0.012  # GUI time per redraw tick while a run streams: the window stays responsive


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


class MainWindow(QMainWindow):
    def __init__(self, model_dir: Path | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Branchpoint")
        self.holder: session.ModelHolder | None = None
        self.trace: RunTrace | None = None
        self.state = RunState()
        self.worker = Worker(self)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self._job_kind = ""
        self._beam_lane = -1  # the beam lane the beam tree follows while a run streams
        # Lanes waiting for a redraw, oldest first (dicts as ordered sets): a tick redraws what fits its budget.
        self._dirty_lanes: dict[int, None] = {}
        self._pending_timeline: dict[int, list[StepRecord] | None] = {}  # None: that lane's steps were replaced
        self._beam_tree_dirty = False
        self._charts_turn = False  # see _flush
        self._run_started: float | None = None
        self._closing = False
        self._build_widgets()
        self._build_layout()
        self._build_actions()
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setInterval(REDRAW_INTERVAL_MS)
        self._redraw_timer.timeout.connect(self._flush)
        self._start_view(self.lanes.specs())  # empty columns until the first run
        if model_dir is not None:
            self.set_model(model_dir)

    # ------------------------------------------------------------------------------------------ construction

    def _build_widgets(self) -> None:
        self.prompt = PromptPanel()
        self.prompt.runRequested.connect(self.run)
        self.prompt.stopRequested.connect(self.stop)
        self.lanes = LanesEditor()
        self.lanes.lanesChanged.connect(self._on_lanes_changed)
        self.text = TextPanel()
        self.text.tokenClicked.connect(self.select)
        self.text.branchRequested.connect(self.branch)
        self.text.forceRequested.connect(self.force_for_all)
        self.inspector = StepInspector()
        self.inspector.branchRequested.connect(self.branch)
        self.inspector.forceRequested.connect(self.force_for_all)
        self.timeline = Timeline()
        self.timeline.stepSelected.connect(self.select)
        self.beam_tree = BeamTreeView()
        self.beam_tree.stepSelected.connect(self.select)
        self.error_banner = QLabel()
        self.error_banner.setObjectName("errorBanner")
        self.error_banner.setWordWrap(True)
        self.error_banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_banner.setStyleSheet("background:#ffebee;color:#b71c1c;padding:4px;"
                                        "border:1px solid #e57373")
        self.error_banner.hide()
        self.branch_strategy = QComboBox()
        self.branch_strategy.setObjectName("branchStrategy")
        self.branch_strategy.addItem("parent's strategy", "")
        for title in PRESETS:
            self.branch_strategy.addItem(title, title)
        self.branch_strategy.setToolTip("The strategy a branched lane continues with after the picked token "
                                        "(right-click a token, or click an alternative in the inspector)")
        self.model_picker = ModelPicker()
        self.model_picker.modelChosen.connect(self.set_model)
        self.status = StatusBar()
        self.setStatusBar(self.status)

    def _build_layout(self) -> None:
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(4, 4, 4, 4)
        left_layout.addWidget(self.prompt)
        left_layout.addWidget(self.lanes, 1)
        self.charts = QTabWidget()
        self.charts.addTab(self.timeline, "Timeline")
        self.charts.addTab(self.beam_tree, "Beam tree")
        self.charts.currentChanged.connect(self._on_chart_tab)
        for chart in (self.inspector, self.timeline, self.beam_tree):
            chart.setMinimumWidth(240)  # narrower than their headers' hints: the window must fit 1280 px
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.inspector)
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
        right.setSizes([430, 330])
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([330, 950])
        self.setCentralWidget(main)

    def _build_actions(self) -> None:
        bar = self.addToolBar("Main")
        bar.setObjectName("mainToolBar")
        bar.setMovable(False)
        bar.addWidget(QLabel(" Model "))
        bar.addWidget(self.model_picker)
        bar.addSeparator()
        self.open_action = self._action(bar, "Open…", QKeySequence.StandardKey.Open, self.open_dialog,
                                        "Open a saved run (JSON); no model needed")
        self.save_action = self._action(bar, "Save…", QKeySequence.StandardKey.Save, self.save_dialog,
                                        "Save the run as JSON")
        self.replay_action = self._action(bar, "Replay", None, self.replay,
                                          "Re-run the shown run with the model and check every token")
        bar.addSeparator()
        bar.addWidget(QLabel(" Branch as "))
        bar.addWidget(self.branch_strategy)
        bar.addSeparator()
        self._action(bar, "Export PNG…", None, self.export_dialog, "Export the text view and charts as PNG")
        self.run_action = self._hidden_action(["Ctrl+Return", "Ctrl+Enter"], self.run)
        self.stop_action = self._hidden_action(["Esc"], self.stop)

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

    # ----------------------------------------------------------------------------------------------- model

    @Slot(object)
    def set_model(self, path) -> None:
        path = Path(path)
        if self.holder is not None and self.holder.path == path:
            return
        if self.worker.is_running():
            self.show_error("Stop the run before switching models.")
            self.model_picker.select(self.holder.path if self.holder else None)
            return
        self.holder = session.ModelHolder(path)
        self.model_picker.select(path)
        self.status.set_model(self.holder.name, "not loaded")
        self.setWindowTitle(f"Branchpoint — {self.holder.name}")

    # ------------------------------------------------------------------------------------------------- runs

    @Slot()
    def run(self) -> None:
        if self.worker.is_running():
            return
        if self.holder is None:
            self.show_error("No model: choose or prepare one in the Model list first.")
            return
        request = self._request()
        if not request.text.strip():
            self.show_error("The prompt is empty.")
            return
        specs = session.seeded(self.lanes.specs(), request.seed)
        self._start_view(specs)
        self._start("run", session.run_job(self.holder, request, specs), request.max_new_tokens)

    @Slot()
    def _on_lanes_changed(self) -> None:
        """Before anything ran, the columns follow the lanes being edited; a shown run stays as it ran."""
        if not self.worker.is_running() and self.trace is None and self.state.total_tokens() == 0:
            self._start_view(self.lanes.specs())

    def _request(self) -> session.RunRequest:
        r = self.prompt.request()
        return session.RunRequest(r.text, r.chat, r.system, r.max_new_tokens, r.seed)

    def _start_view(self, specs: list[LaneSpec]) -> None:
        self.trace = None
        self.state = RunState.for_specs(specs)
        self.text.set_state(self.state)
        self.timeline.set_lanes(self.state.lanes)
        self.inspector.clear()
        self.beam_tree.clear()
        self._beam_lane = next((i for i, s in enumerate(specs) if s.is_beam), -1)

    def _start(self, kind: str, job, max_steps: int) -> None:
        self.hide_error()
        self._job_kind = kind
        self._clear_pending()
        self._run_started = None  # set by the first streamed step: loading is not generating
        self.status.start_run(max_steps)
        self.prompt.set_running(True)
        self._set_file_actions_enabled(False)
        self.timeline.begin_stream(max_steps)
        self.worker.start(job)
        self._redraw_timer.start()

    def _clear_pending(self) -> None:
        self._dirty_lanes.clear()
        self._pending_timeline.clear()
        self._beam_tree_dirty = False

    @Slot()
    def stop(self) -> None:
        if self.worker.is_running():
            self.status.showMessage("stopping at the next step…")
            self.worker.cancel()

    @Slot(object)
    def _on_progress(self, payload: object) -> None:
        kind, value = payload
        if kind == "status":
            self.status.showMessage(value)
        elif kind == "provider":
            self.status.set_model(self.holder.name if self.holder else "", value)
        else:
            self._add_step(self._stream_lane(kind), value)

    def _stream_lane(self, lane: int) -> int:
        """Branch jobs run one lane; it streams into the lane the branch was inserted at."""
        return self._branch_index if self._job_kind == "branch" else lane

    def _add_step(self, lane: int, record: StepRecord) -> None:
        if self._run_started is None:
            self._run_started = time.perf_counter()
        replaced = record.step < len(self.state.lanes[lane].steps)
        self.state.add_step(lane, record)
        self._dirty_lanes[lane] = None
        self._beam_tree_dirty |= lane == self._beam_lane
        if replaced:
            self._pending_timeline[lane] = None  # full reset needed for this lane
        elif self._pending_timeline.get(lane, []) is not None:
            self._pending_timeline.setdefault(lane, []).append(record)

    @Slot()
    def _flush(self, budget_s: float | None = FLUSH_BUDGET_S) -> None:
        """Redraw what changed since the last tick (at most ~30 times a second), within a time budget so the
        event loop never stalls; what does not fit waits for the next tick, oldest first. While streaming, the
        text and the charts take turns: a tick's redraw and the repaint it causes stay short (no budget: both)."""
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        beam_tree_shown = self.charts.currentWidget() is self.beam_tree
        charts_pending = bool(self._pending_timeline) or (beam_tree_shown and self._beam_tree_dirty)
        do_text = bool(self._dirty_lanes) and (budget_s is None or not self._charts_turn or not charts_pending)
        do_charts = charts_pending and (budget_s is None or not do_text)
        self._charts_turn = do_text
        for lane in list(self._dirty_lanes) if do_text else ():
            if _past(deadline):
                break
            del self._dirty_lanes[lane]
            self.text.refresh_lane(lane)
        if do_charts:
            self._flush_timeline(deadline)
            if beam_tree_shown and not _past(deadline):
                self._refresh_beam_tree()
        self._show_progress()

    def _flush_timeline(self, deadline: float | None) -> None:
        for lane in list(self._pending_timeline):
            if _past(deadline):
                return
            records = self._pending_timeline.pop(lane)
            if records is None:
                self.timeline.reset_steps(lane, self.state.lanes[lane].steps)
            else:
                self.timeline.append_steps(lane, records)

    def _show_progress(self) -> None:
        elapsed = time.perf_counter() - self._run_started if self._run_started is not None else 0.0
        self.status.show_progress(self.state.max_steps(), self.state.total_tokens(), elapsed)

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        self._redraw_timer.stop()
        if self._closing:  # the window is gone: nothing to show
            return
        self.timeline.end_stream()
        self._clear_pending()  # the finished run is redrawn whole below
        if self._job_kind == "branch":
            self._finish_branch(result)
        else:
            self._show_trace(result)
        self.prompt.set_running(False)
        self._set_file_actions_enabled(True)
        if self.trace is not None and self.trace.error:
            self.show_error(f"The run stopped early: {self.trace.error}. The text so far is kept.")
        self._after_job()

    @Slot(str, str)
    def _on_failed(self, message: str, details: str) -> None:
        self._redraw_timer.stop()
        if self._closing:  # the window is gone: nothing to show
            return
        self._flush(budget_s=None)
        self.timeline.end_stream()
        self.prompt.set_running(False)
        self._set_file_actions_enabled(True)
        self.status.showMessage("failed")
        self.show_error(f"{message}. The text so far is kept.")
        self._job_kind = ""

    def _after_job(self) -> None:
        kind, self._job_kind = self._job_kind, ""
        if kind == "replay":
            self._report_replay()

    def _show_trace(self, trace: RunTrace, specs: list[LaneSpec] | None = None) -> None:
        """Show a finished (or opened) run: the engine's final lanes replace the streamed ones."""
        self.trace = trace
        selection = self.state.selection
        specs = specs if specs is not None else self._specs_for(trace)
        self.state = RunState(lanes=list(trace.lanes), specs=specs,
                              near_tie_threshold=trace.settings.near_tie_threshold)
        if selection and selection.lane < len(self.state.lanes):
            self.state.selection = selection
        self.text.set_state(self.state)
        self.timeline.set_lanes(self.state.lanes)
        self.timeline.set_markers(*self._markers())
        self.status.finish_run(trace, self.state.max_steps())
        self._show_beam_tree()
        if self.state.selection:
            self.select(self.state.selection.lane, self.state.selection.step)

    def _show_beam_tree(self) -> None:
        """Keep following the beam lane shown so far, else the run's first beam lane."""
        specs = self.state.specs
        if not (0 <= self._beam_lane < len(specs) and specs[self._beam_lane].is_beam):
            self._beam_lane = next((i for i, s in enumerate(specs) if s.is_beam), -1)
        self._beam_tree_dirty = True
        if self.charts.currentWidget() is self.beam_tree:
            self._refresh_beam_tree()

    @Slot(int)
    def _on_chart_tab(self, _index: int) -> None:
        self._refresh_beam_tree()

    def _refresh_beam_tree(self) -> None:
        """Draw the beam tree if it changed (drawing a long tree is slow: only when shown or exported)."""
        if not self._beam_tree_dirty:
            return
        self._beam_tree_dirty = False
        if self._beam_lane >= 0 and self.state.lanes[self._beam_lane].steps:
            self.beam_tree.set_lane(self._beam_lane, self.state.lanes[self._beam_lane])
        else:
            self.beam_tree.clear()

    def _specs_for(self, trace: RunTrace) -> list[LaneSpec]:
        if len(self.state.specs) == len(trace.lanes):
            return self.state.specs
        return session.specs_of(trace)

    def _markers(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        divergences, ties = [], []
        for index in range(len(self.state.lanes)):
            step = self.state.branch_step(index)
            step = self.state.divergence_step(index) if step is None else step
            if step is not None:
                divergences.append((index, step))
            ties += [(index, i) for i, m in enumerate(self.state.marks(index)) if m.near_tie]
        return divergences, ties

    def _set_file_actions_enabled(self, enabled: bool) -> None:
        for action in (self.open_action, self.save_action, self.replay_action):
            action.setEnabled(enabled)
        self.model_picker.setEnabled(enabled)

    # -------------------------------------------------------------------------------------------- selection

    @Slot(int, int)
    def select(self, lane: int, step: int) -> None:
        record = self.state.step_record(lane, step)
        if record is None:
            return
        previous = self.state.selection
        self.state.selection = Selection(lane, step)
        for index in {lane, previous.lane if previous else lane}:
            if index < len(self.text.columns):
                self.text.refresh_lane(index)
        self.inspector.set_step(lane, self.state.lanes[lane], step)
        self.timeline.set_selected(lane, step)
        if self.state.lanes[lane].steps[step].beams and lane != self._beam_lane:
            self._beam_lane = lane
            self._show_beam_tree()
        self.status.show_selection(self.state.lanes[lane].name, step, len(self.state.lanes[lane].steps))

    # -------------------------------------------------------------------------------------------- branching

    @Slot(int, int, int)
    def branch(self, lane: int, step: int, token_id: int) -> None:
        """A new lane continuing `lane` from `step` with `token_id`, under the parent's strategy, placed right
        after its parent."""
        if self.worker.is_running() or self.trace is None or self.holder is None:
            self.show_error("Branching needs a finished run and a model.")
            return
        parent_spec = self.state.specs[lane]
        base = self._branch_base(parent_spec)
        name = unique_name(f"{parent_spec.name} ↳{step}", {s.name for s in self.state.specs})
        spec = session.branch_spec(parent_spec, base, step, token_id, name)
        self._branch_index = lane + 1
        while (self._branch_index < len(self.state.lanes)
               and (self.state.lanes[self._branch_index].branch or {}).get("parent") == parent_spec.name):
            self._branch_index += 1
        self._insert_lane(self._branch_index, spec)
        job = session.branch_job(self.holder, self.trace, spec)
        self._start("branch", job, self.trace.settings.max_new_tokens)

    def _branch_base(self, parent_spec: LaneSpec) -> LaneSpec:
        """The branch's strategy: the parent's, or the preset chosen in the tool bar."""
        preset = self.branch_strategy.currentData()
        base = PRESETS[preset] if preset else parent_spec
        return replace(base, branch=None, forced={})

    def _insert_lane(self, index: int, spec: LaneSpec) -> None:
        self.state.specs.insert(index, spec)
        self.state.lanes.insert(index, lane_trace_for(spec))
        self.trace.lanes.insert(index, self.state.lanes[index])
        self.lanes.set_specs(self.state.specs, select=index)
        self.text.set_state(self.state)
        self.timeline.set_lanes(self.state.lanes)

    def _finish_branch(self, result: RunTrace) -> None:
        lane = result.lanes[0]
        index = self._branch_index
        self.trace.lanes[index] = lane
        if result.error and not self.trace.error:
            self.trace.error = result.error
        self._show_trace(self.trace, self.state.specs)
        self.select(index, lane.branch["step"])

    @Slot(int, int)
    def force_for_all(self, step: int, token_id: int) -> None:
        """Re-run every lane with `token_id` forced at `step` (each lane keeps its own tokens before it)."""
        if self.worker.is_running() or self.holder is None:
            return
        specs = [replace(s, forced={**s.forced, step: token_id}) for s in self.lanes.specs()]
        specs = [s for s in specs if s.branch is None]  # branches restart from their parents anyway
        self.lanes.set_specs(specs)
        self.run()

    # ------------------------------------------------------------------------------------------------ files

    @Slot()
    def save_dialog(self) -> None:
        if self.trace is None:
            self.show_error("Nothing to save yet: run or open a run first.")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save run", "run.json", "Branchpoint run (*.json)")
        if path:
            self.save(Path(path))

    def save(self, path: Path) -> None:
        from decoding import jsonio

        try:
            jsonio.save(self.trace, path)
        except (OSError, ValueError) as error:
            self.show_error(f"Could not save {path}: {error}")
            return
        self.status.showMessage(f"saved {path}")

    @Slot()
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open run", "", "Branchpoint run (*.json);;All files (*)")
        if path:
            self.open(Path(path))

    def open(self, path: Path) -> None:
        """Show a saved run (no model needed); its prompt and lanes fill the editors for Replay."""
        from decoding import jsonio

        if self.worker.is_running():
            self.show_error("Stop the run before opening another.")
            return
        try:
            trace = jsonio.load(path)
            specs = session.specs_of(trace)
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.show_error(f"Could not open {path}: {error}")
            return
        self.hide_error()
        request = session.request_of(trace)
        self.prompt.set_request(PromptRequest(request.text, request.chat, request.system,
                                              request.max_new_tokens, request.seed))
        self.lanes.set_specs(specs)
        self.state = RunState()
        self._show_trace(trace, specs)
        self.status.set_model(f"{trace.model.name} (opened run)", trace.provider)
        self.status.showMessage(f"opened {path}")

    @Slot()
    def replay(self) -> None:
        """Re-run the shown run's prompt and lanes with the model; afterwards report whether every token
        matched."""
        if self.trace is None or self.holder is None or self.worker.is_running():
            self.show_error("Replay needs a run (run or open one) and a model.")
            return
        if not self._use_model_of(self.trace):
            return
        self._replayed = self.trace
        request = session.request_of(self.trace)
        specs = session.specs_of(self.trace)
        self._start_view(specs)
        self._start("replay", session.run_job(self.holder, request, specs), request.max_new_tokens)

    def _use_model_of(self, trace: RunTrace) -> bool:
        """Switch to the model the run was made with (by name or path); False with a message if it is not
        prepared here."""
        from models.catalog import resolve

        if trace.model.name in (self.holder.name, "unknown"):
            return True
        for key in filter(None, (trace.model.name, trace.model.path)):
            try:
                self.set_model(resolve(key))
                return True
            except FileNotFoundError:
                continue
        self.show_error(f"The run was made with model {trace.model.name!r}, which is not prepared here.")
        return False

    def _report_replay(self) -> None:
        before = {lane.name: lane.token_ids for lane in self._replayed.lanes}
        differing = [lane.name for lane in self.trace.lanes if before.get(lane.name) != lane.token_ids]
        if differing:
            self.show_error(f"Replay differs from the saved run in lanes: {', '.join(differing)}")
        else:
            self.status.showMessage("replay: every token identical to the saved run")

    @Slot()
    def export_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export PNGs into folder")
        if folder:
            paths = self.export_pngs(Path(folder))
            self.status.showMessage(f"exported {len(paths)} PNGs to {folder}")

    def export_pngs(self, folder: Path) -> list[Path]:
        from gui.style import export_widget_png

        folder.mkdir(parents=True, exist_ok=True)
        self._refresh_beam_tree()
        try:
            return [
                export_widget_png(self.text, folder / "text.png"),
                self.inspector.export_png(folder / "inspector.png"),
                self.timeline.export_png(folder / "timeline.png"),
                self.beam_tree.export_png(folder / "beam_tree.png"),
            ]
        except OSError as error:
            self.show_error(str(error))
            return []

    # --------------------------------------------------------------------------------------------- messages

    def show_error(self, text: str) -> None:
        self.error_banner.setText(text)
        self.error_banner.show()

    def hide_error(self) -> None:
        self.error_banner.hide()

    # ------------------------------------------------------------------------------------------------ close

    def shutdown(self) -> None:
        """Stop the worker and wait for its thread (window close, tests)."""
        self._closing = True
        self._redraw_timer.stop()
        self.worker.stop_and_wait()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)
