"""Status bar, a view of the RunState: passing messages, the selection, progress (step x/N of the longest
lane, tokens per second), model and the execution provider really active (CUDA or CPU).

Tokens per second has one meaning while a job streams and once it has ended: the tokens this job added to the
lanes (every fan-out member's; a beam lane's best sequence) over the time since its first token (loading the
model and the prompt's prefill are not generating)."""

from __future__ import annotations

import time

from PySide6.QtWidgets import QLabel, QStatusBar

from gui.i18n import translate
from gui.present.lane_html import prefill_text
from gui.state.run_state import RunState, Selection
from gui.state.tasks.kind import TaskKind
from gui.views.redraw import RedrawScheduler

MESSAGE_MS = 8000


def provider_label(provider: str) -> str:
    """'CUDAExecutionProvider' → 'CUDA', 'CPUExecutionProvider' → 'CPU' (others shown as they are)."""
    if not provider:
        return ""
    return provider.removesuffix("ExecutionProvider") or provider


def progress_text(step: int, max_steps: int, tokens: int, seconds: float) -> tuple[str, str]:
    """('step 12/64', '23.5 tok/s') while a run streams."""
    rate = tokens / seconds if seconds > 0 else 0.0
    return f"step {step}/{max_steps}", f"{rate:.1f} tok/s"


class StatusBar(QStatusBar):
    def __init__(self, state: RunState, scheduler: RedrawScheduler) -> None:
        super().__init__()
        self.state = state
        self.model_label = QLabel(translate("status", "no model"))
        self.model_label.setObjectName("statusModel")
        self.provider = QLabel("")
        self.provider.setObjectName("statusProvider")
        self.provider.setToolTip(translate("status", "The ONNX Runtime execution provider really active for the model"))
        self.step = QLabel("")
        self.step.setObjectName("statusStep")
        self.step.setToolTip(translate("status", "Steps done of the longest lane's max_new_tokens"))
        self.speed = QLabel("")
        self.speed.setObjectName("statusSpeed")
        self.speed.setToolTip(translate("status", "Tokens the run generated per second since its first token: every "
                                                  "lane's and fan-out member's (a beam lane's best sequence)"))
        self.selection = QLabel("")
        for label in (self.selection, self.step, self.speed, self.model_label, self.provider):
            self.addPermanentWidget(label)
        self._streaming_since: float | None = None
        self._tokens_before = 0  # tokens shown before the job started (a branch adds to them)
        self._job: TaskKind | None = None  # the kind of the task working (None: none, or a run was opened)
        events = state.events
        events.connect("model_changed", self._on_model_changed)
        events.connect("status", self._on_status)
        events.connect("run_started", self._on_run_started)
        events.connect("run_finished", self._on_run_finished)
        events.connect("selection_changed", self._on_selection_changed)
        events.connect("step_added", self._on_step_added)
        events.connect("prefill_progress", self._on_prefill)
        scheduler.after_flush(self._show_progress)

    def _on_model_changed(self) -> None:
        self.model_label.setText(translate("status", "model: {model_name}").format(model_name=self.state.model_name))
        label = provider_label(self.state.provider)
        self.provider.setText(label if label else self.state.provider)

    def _on_status(self, text: str) -> None:
        self.showMessage(text, MESSAGE_MS)

    def _on_run_started(self, kind: TaskKind) -> None:
        self._streaming_since = None  # set by the first streamed step: loading is not generating
        self._tokens_before = self.state.total_tokens()
        self._job = kind
        self.step.setText(translate("status", "step 0/{run_limit}").format(run_limit=self.state.run_limit)
                          if kind.counts_steps else "")
        if kind.streams_tokens:
            self.speed.setText("")
        self.showMessage(translate("status", kind.busy_text))

    def _on_prefill(self, done: int, total: int) -> None:
        if total:
            self.step.setText(prefill_text(done, total))

    def _on_step_added(self, _index: int, _record) -> None:
        if self._streaming_since is None:
            self._streaming_since = time.perf_counter()
            self.showMessage(translate("status", "running…"))  # in place of "loading the model…"

    def _show_progress(self) -> None:
        if not self.state.running or not self.state.job.counts_steps:
            return
        tokens, seconds = self._job_tokens()
        step_text, speed_text = progress_text(self.state.max_steps(), self.state.run_limit, tokens, seconds)
        self.step.setText(step_text)
        if tokens:
            self.speed.setText(speed_text)

    def _job_tokens(self) -> tuple[int, float]:
        """(tokens the job has added, seconds since its first one)."""
        seconds = time.perf_counter() - self._streaming_since if self._streaming_since is not None else 0.0
        return self.state.total_tokens() - self._tokens_before, seconds

    def _on_run_finished(self) -> None:
        trace = self.state.trace
        limit = max(self.state.run_limit, self.state.max_steps())
        self.step.setText(translate("status", "step {max_steps}/{limit}").format(max_steps=self.state.max_steps(),
                                                                                 limit=limit))
        tokens, seconds = self._job_tokens()
        if tokens and seconds > 0:  # the same measure as while it streamed
            self.speed.setText(progress_text(0, 0, tokens, seconds)[1])
        elif self._job is None or self._job.streams_tokens:  # an opened run: the last run's speed is not its
            self.speed.setText("")
        self._streaming_since, self._job = None, None
        if trace is not None and trace.provider:
            self.provider.setText(provider_label(trace.provider))

    def _on_selection_changed(self, selection: Selection | None) -> None:
        if selection is None:
            self.selection.setText("")
            return
        lane = self.state.lanes[selection.lane]
        trace = lane.member_trace(selection.member)
        name = trace.name if selection.member else lane.name
        shown = translate("status", "{name} · step {step} (of 0–{last})")
        self.selection.setText(shown.format(name=name, step=selection.step, last=len(trace.steps) - 1))
