"""A window command that works on the worker thread, as one object: its kind (what it does to the window), the
lanes it streams into, its work there and its finish back on the window's thread. Its module's `prepare`
function makes it after the command's checks (a refusal is a notice and no task), against the `Desk`: what the
controller lends a command (the run state, the model, whether a task runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from decoding.chain.spec import LaneSpec
from decoding.records.trace import LaneTrace, RunTrace
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit

if TYPE_CHECKING:
    from gui.state.model_holder import ModelHolder
    from gui.state.run_state import RunState

Targets = dict[tuple[int, int], LaneSpec]  # (lane key, member) -> the spec streamed into it, in the work's lane order


class Desk(Protocol):
    """What a command's checks read and change besides the run state (the window's RunController)."""

    state: RunState
    holder: ModelHolder | None
    branch_keys: list[int]  # branch lanes in the order they were made (Undo removes the last)
    stepping: list  # step mode's StepSession while it is on (made by its first task)
    step_mode: bool
    prepare_inspection: Callable[[Path], str | None] | None

    def busy(self) -> bool: ...

    def use_model_of(self, trace: RunTrace) -> bool: ...


class Task:
    """One command's work: `work(emit, cancelled)` runs on the worker thread (it touches no state), then
    `finished(state, result)` or `failed(state, message)` on the window's."""

    kind: ClassVar[TaskKind]
    # the notice when its work raised (translated in the "controller" context)
    failure: ClassVar[str] = QT_TRANSLATE_NOOP("controller", "{message}. The text so far is kept.")
    targets: Targets
    limit: int  # the steps of its longest lane (what the status bar counts to)

    def work(self, emit: Emit, cancelled: Cancelled) -> Any:
        raise NotImplementedError

    def finished(self, state: RunState, result: Any) -> None:
        raise NotImplementedError

    def failed(self, state: RunState, message: str) -> None:
        state.fail_job()
        state.set_status(translate("controller", "failed"))
        state.show_notice(translate("controller", self.failure).format(message=message))


def finish_lanes(state: RunState, targets: Targets, result: RunTrace, trace: RunTrace | None) -> None:
    """The lanes a task streamed into take the engine's final traces (`result.lanes`, in `targets`' order);
    `trace` becomes the shown run (None: it stays); a lane's error or the run's is said, and the status says
    done, stopped or stopped early."""
    finished: dict[tuple[int, int], LaneTrace] = dict(zip(targets, result.lanes, strict=True))
    state.finish_job(trace, finished)
    failed = [lane for lane in result.lanes if lane.error]
    if result.error:
        state.show_notice(translate("controller", "The run stopped early: {error}. The text so far is kept.")
                          .format(error=result.error))
    elif failed:
        stopped = translate("controller", "“{name}” stopped at step {step}: {error}")
        words = "; ".join(stopped.format(name=lane.name, step=len(lane.steps), error=lane.error) for lane in failed)
        others = (translate("controller", "the other lanes went on") if len(failed) < len(result.lanes)
                  else translate("controller", "its text so far is kept"))
        state.show_notice(translate("controller", "{words} ({others}).").format(words=words, others=others))
    cancelled = any(lane.finish_reason == "cancelled" for lane in result.lanes)
    status = (QT_TRANSLATE_NOOP("controller", "stopped") if cancelled else
              QT_TRANSLATE_NOOP("controller", "stopped early") if result.error or failed else
              QT_TRANSLATE_NOOP("controller", "done"))
    state.set_status(translate("controller", status))


def stopped_before_work(state: RunState) -> None:
    """A task over a finished lane stopped before its model ran: nothing changes."""
    state.fail_job()
    state.set_status(translate("controller", "stopped"))


def run_limit(specs: list[LaneSpec], max_new_tokens: int) -> int:
    """Steps of the longest lane: each lane's own max_new_tokens, else the run's."""
    return max((spec.max_new_tokens or max_new_tokens for spec in specs), default=max_new_tokens)
