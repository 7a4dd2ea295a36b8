"""What the window's commands do, Qt-free. The controller keeps the model and its device, opens and saves runs,
and starts the commands' tasks (gui.state.tasks: one module per command, each with its checks, its work on the
worker thread and its finish) on a runner (the window's worker thread, or a synchronous one in tests); it routes
a task's typed messages into the RunState and hands its result or failure back to it. Problems are the run
state's notice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from decoding.chain.spec import specs_of
from decoding.records.trace import RunTrace
from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.state.requests import RunRequest, request_of
from gui.state.run_state import RunState
from gui.state.tasks import branch, bring_back, explain, model_compare, replay, run, step_mode, sweep, why
from gui.state.tasks.base import Task
from gui.state.tasks.messages import (
    Message,
    PrefillMessage,
    ProgressMessage,
    ProviderMessage,
    RunStartedMessage,
    StatusMessage,
    StepMessage,
)
from runfiles import run_file

# Notices a new task makes untrue: the prompt's refusal, "restored the run…", "select a token first", step mode's
# refusals (step mode starting or stepping on).
STALE_AT_A_TASK = ("prompt", "restore", "selection", "step_mode")


class JobRunner(Protocol):
    """Runs one task's work at a time (`start(work)`: work(emit, cancelled)) and calls the controller's
    on_message / on_finished / on_failed with its messages and result (on the thread that owns the model)."""

    def start(self, work: Callable) -> None: ...

    def cancel(self) -> None: ...

    def is_running(self) -> bool: ...


class RunController:
    def __init__(self, state: RunState, runner: JobRunner) -> None:
        self.state = state
        self.runner = runner
        self.holder: ModelHolder | None = None
        # prepares a model's inspection model (the window: the setup dialog); returns None when it is prepared,
        # else why not (cancelled, failed). None: explaining needs it prepared beforehand (`main.py explain`).
        self.prepare_inspection: Callable[[Path], str | None] | None = None
        # runs a callable on the thread that owns the state (the window: its GUI thread; default: at once)
        self.call_soon: Callable[..., None] = lambda function, *args: function(*args)
        state.model_files = self.model_files
        self.task: Task | None = None  # the task working now
        self._targets: list[tuple[int, int]] = []  # (lane key, member) its StepMessages stream into, by lane index
        self.branch_keys: list[int] = []  # branch lanes in the order they were made (Undo removes the last)
        # step mode's StepSession (decoding.engine.step_mode) while it is on, made by its first task
        self.stepping: list = []
        self.step_mode = False

    def busy(self) -> bool:
        return self.runner.is_running()

    # ------------------------------------------------------------------------------------------------ model

    def set_model(self, path: Path) -> bool:
        """Use the prepared model in `path` from the next run on (loaded on first use)."""
        path = Path(path)
        if self.holder is not None and self.holder.path == path:
            return True
        if self.busy():
            self.state.show_notice(translate("controller", "Stop the run before switching models."))
            return False
        self.holder = ModelHolder(path, self.device)
        self.holder.on_loaded = lambda model: self.call_soon(self.on_model_loaded, model)
        self.state.set_model_name(self.holder.name, "not loaded")
        return True

    @property
    def device(self) -> str:
        """Where the model runs: "auto", "cpu" or "cuda" (the request's)."""
        return self.state.request.device

    def model_files(self) -> tuple[object | None, int | None]:
        """The shown run's model's tokenizer and positions, when that model is the one chosen here."""
        holder, trace = self.holder, self.state.trace
        if holder is None or trace is None or trace.model.name != holder.name:
            return None, None
        try:
            return holder.tokenizer(), holder.max_positions()
        except (OSError, ValueError):
            return None, None

    def on_model_loaded(self, model) -> None:
        """The holder loaded its model (possibly on another thread: the window calls this on its own)."""
        if self.holder is not None and self.holder.loaded is model and self.state.provider in ("", "not loaded"):
            self.state.set_model_name(self.holder.name, model.provider)

    def set_device(self, device: str) -> bool:
        """Run the model on `device` ("auto", "cpu", "cuda") from the next run on (reloaded on first use)."""
        if device == self.device:
            return True
        if self.busy():
            self.state.show_notice(translate("controller", "Stop the run before switching devices."))
            return False
        self.state.update_request(device=device)
        if self.holder is not None:
            path, self.holder = self.holder.path, None
            self.set_model(path)
        return True

    def use_model_of(self, trace: RunTrace) -> bool:
        """Switch to the model the run was made with (by name or path); False with a notice if it is not
        prepared here."""
        from models.catalog import resolve

        if trace.model.name in (self.holder.name, "unknown"):
            return True
        if trace.model.served:  # a whole run on a server (made with `run --model llamacpp+http://…`)
            text = translate("controller", "The run was made on the server {name}: the window runs served models as "
                                           "lanes beside its own (the model picker's “Add a server…”); `branchpoint "
                                           "replay FILE` replays the run there.")
            self.state.show_notice(text.format(name=trace.model.name), level="info")
            return False
        for key in filter(None, (trace.model.name, trace.model.path)):
            try:
                return self.set_model(resolve(key))
            except FileNotFoundError:
                continue
        self.state.show_notice(translate("controller", "The run was made with model {name!r}, which is not prepared "
                                                       "here.").format(name=trace.model.name))
        return False

    # ---------------------------------------------------------------------------------------------- commands

    def run(self, request: RunRequest | None = None, compare: bool = False) -> bool:
        """Run every lane on the request's prompt (the state's request unless given). compare: "Run again and
        compare": when the run ends, say where each lane first differs from the run shown now, and why (a lane
        whose seed is "auto" draws anew)."""
        return self._start(run.prepare(self, self.state.request if request is None else request, compare))

    def check_run(self, request: RunRequest | None = None) -> bool:
        """Whether a run of `request` (the state's) passes the refusals a run meets before any work (each said in a
        notice): the window asks "Save changes?" only after them."""
        return run.check_run(self, self.state.request if request is None else request) is not False

    def force_for_all(self, step: int, token_id: int, request: RunRequest | None = None) -> bool:
        """Re-run every lane with `token_id` forced at `step` (each keeps its own tokens before it): hand picks for
        this prompt (a run of another prompt runs without them)."""
        if self.busy() or self.holder is None:
            return False
        request = self.state.request if request is None else request
        prompt = (request.text, request.chat, request.system)
        for index, lane in enumerate(self.state.lanes):
            self.state.note_picks(index, prompt)
            self.state.replace_spec(index, replace(lane.spec, forced={**lane.spec.forced, step: token_id}))
        return self.run(request)

    def stop(self) -> None:
        if self.busy():
            self.state.set_status(translate("controller", "stopping at the next step…"))
            self.runner.cancel()

    def branch(self, index: int, step: int, token_id: int) -> bool:
        """A new lane after lane `index` that takes `token_id` at `step` and continues from there, run at once.
        In step mode, a candidate of a lane's proposed step is taken instead of the lane's pick."""
        if self.step_mode:
            return self.step_take(index, step, token_id)
        return self._start(branch.prepare(self, index, step, token_id))

    def replay_not_taken(self, index: int, step: int) -> bool:
        """A new lane after lane `index` that takes the runner-up at `step`, with the same draws after it."""
        return self._start(branch.prepare_not_taken(self, index, step))

    def undo_branch(self) -> bool:
        return branch.undo(self)

    def sweep(self, index: int, step: int) -> bool:
        """How lane `index`'s distribution at `step` changes with temperature (stored with the run)."""
        return self._start(sweep.prepare(self, index, step))

    def add_temperature_fanouts(self, index: int, temperatures=(0.3, 0.7, 1.0, 1.5), count: int = 8) -> bool:
        return sweep.add_temperature_fanouts(self, index, temperatures, count)

    def explain_lane(self, index: int) -> bool:
        """What lane `index` does inside the model (attention, logit lens), stored with the run."""
        return self._start(explain.prepare(self, index))

    def why(self, index: int, step: int, a: int | None = None, b: int | None = None) -> bool:
        """Why lane `index` chose A (default: its token), not B (default: the runner-up), at `step`."""
        return self._start(why.prepare(self, index, step, a, b))

    def compare_with_model(self, index: int, other: str | Path) -> bool:
        """Lane `index`'s tokens read by a second prepared model (`other`: a name or folder) and the run's own."""
        return self._start(model_compare.prepare(self, index, other))

    def bring_back(self, node_id: int) -> bool:
        """The lanes of the path to session tree node `node_id` become the lanes again, each made again."""
        return self._start(bring_back.prepare(self, node_id))

    def replay(self) -> RunRequest | None:
        """Re-run the shown run with the model; afterwards report whether every token matched. Returns the run's
        request (for the prompt panel)."""
        if self.step_mode:
            step_mode.end(self)  # the steps taken are replayed, not the proposed ones
        return self.state.request if self._start(replay.prepare(self)) else None

    def toggle_step_mode(self) -> bool:
        """Step mode on (every lane starts again, one token at a time) or off (the lanes keep the steps taken)."""
        return step_mode.end(self) if self.step_mode else self._start(step_mode.start(self))

    def step_all(self) -> bool:
        """Every lane takes its own pick at its proposed step."""
        return self._start(step_mode.step(self, lambda session: session.step_all()))

    def step_lane(self, index: int) -> bool:
        name = self.state.lanes[index].name
        return self._start(step_mode.step(self, lambda session: session.accept(name)))

    def step_take(self, index: int, step: int, token_id: int) -> bool:
        """Lane `index` takes `token_id` at its proposed step `step` instead of its own pick (a forced token)."""
        return self._start(step_mode.take(self, index, step, token_id))

    def run_lane_to_end(self, index: int) -> bool:
        name = self.state.lanes[index].name
        return self._start(step_mode.step(self, lambda session: session.run_to_end(name)))

    # ------------------------------------------------------------------------------------------------- files

    def save(self, path: Path) -> bool:
        """Write the shown run; in step mode, the steps taken (step mode ends first: the proposed steps are not
        the run's, and the lanes' specs with the picks forced are what a replay of the file makes again)."""
        if self.step_mode:
            step_mode.end(self)
        trace = self.state.shown_trace()
        if trace is None or self.busy():
            self.state.show_notice(translate("controller", "Nothing to save yet: run or open a run first."))
            return False
        try:
            run_file.save(trace, path)
        except (OSError, ValueError) as error:
            self.state.show_notice(translate("controller", "Could not save {path}: {error}. The run is still here.")
                                   .format(path=path, error=error))
            return False
        self.state.set_status(translate("controller", "saved {path}").format(path=path))
        return True

    def open(self, path: Path) -> RunRequest | None:
        """Show a saved run (no model needed); returns its request for the prompt panel, None on failure."""
        if self.busy():
            self.state.show_notice(translate("controller", "Stop the run before opening another."))
            return None
        try:
            trace = run_file.load(path)
            specs = specs_of(trace)
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.state.show_notice(translate("controller", "Could not open {path}: {error}").format(path=path,
                                                                                                    error=error))
            return None
        self.state.clear_notice()
        self.step_mode, self.stepping = False, []  # the opened run's lanes are not step mode's
        self.state.set_proposals({})
        self.state.show_trace(trace, specs)
        self.branch_keys = []
        self.state.set_model_name(translate("controller", "{name} (opened run)").format(name=trace.model.name),
                                  trace.provider)
        self.state.set_status(translate("controller", "opened {path}").format(path=path))
        request = self.state.request.with_prompt_of(request_of(trace))
        self.state.set_request(request)
        return request

    # --------------------------------------------------------------------------------- a task and its messages

    def _start(self, task: Task | bool | None) -> bool:
        """Start `task` (a command's prepare gave it); True or None/False: the command's answer without work."""
        if not isinstance(task, Task):
            return bool(task)
        self.state.clear_notice(*STALE_AT_A_TASK)
        if self.state.notice is not None and self.state.notice.level == "error":
            self.state.clear_notice()
        self.task, self._targets = task, list(task.targets)
        self.state.start_job(task.kind, task.targets, task.limit)
        self.runner.start(task.work)
        return True

    def on_message(self, message: Message) -> None:
        if isinstance(message, StepMessage):
            key, member = self._targets[message.lane]
            self.state.add_step(self.state.index_of(key), message.record, member)
        elif isinstance(message, RunStartedMessage):
            self.state.set_running_trace(message.trace)
        elif isinstance(message, PrefillMessage):
            self.state.set_prefill(message.done, message.total)
        elif isinstance(message, ProgressMessage):
            self.state.set_task_progress(message.done, message.total)
        elif isinstance(message, StatusMessage):
            self.state.set_status(message.text)
        elif isinstance(message, ProviderMessage):
            self.state.set_model_name(self.holder.name if self.holder else "", message.provider)

    def on_finished(self, result) -> None:
        task, self.task = self.task, None
        task.finished(self.state, result)

    def on_failed(self, message: str, _details: str = "") -> None:
        task, self.task = self.task, None
        task.failed(self.state, message)
