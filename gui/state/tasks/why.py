"""Why A, not B: at one step of a lane, every earlier token hidden from every later one in turn (the knock-out,
through the run's own decoder) and the gap logit(A) − logit(B) split by where in depth it is made (models.why).
Checks first (a finished lane of the run's model, a step it took, two different candidates), each refusal a
notice; the result is stored with the lane, and the work reports its rows done (a progress bar; Cancel stops it
between two model calls, keeping nothing)."""

from __future__ import annotations

from decoding.analysis.why import KnockoutCancelled, WhyResult
from decoding.records.trace import RunTrace
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.state.model_holder import ModelHolder
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, Task
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, ProgressMessage, ProviderMessage


class WhyTask(Task):
    kind = TaskKind("why", counts_steps=False, streams_tokens=False,
                    busy_text=QT_TRANSLATE_NOOP("status", "knocking out each earlier token…"))
    failure = QT_TRANSLATE_NOOP("controller", "Could not answer “why”: {message}.")

    def __init__(self, holder: ModelHolder, trace: RunTrace, lane: str, step: int, a: int | None, b: int | None,
                 limit: int) -> None:
        self.holder, self.trace, self.lane, self.step, self.a, self.b = holder, trace, lane, step, a, b
        self.targets, self.limit = {}, limit

    def work(self, emit: Emit, cancelled: Cancelled) -> WhyResult | None:
        from models.why import why_step

        model = self.holder.get()
        emit(ProviderMessage(model.provider))

        def progress(done: int, total: int) -> bool:
            emit(ProgressMessage(done, total))
            return cancelled()

        try:
            return why_step(model, self.holder.path, list(self.trace.prompt.ids), self.trace.lane(self.lane),
                            self.step, self.a, self.b, progress=progress)
        except KnockoutCancelled:
            return None

    def finished(self, state: RunState, result: WhyResult | None) -> None:
        if result is None:  # stopped between two knock-out calls
            state.fail_job()
            state.set_status(translate("why", "stopped: nothing of the knock-out was kept"))
            return
        state.add_why(result.lane, result)
        state.set_status(translate("why", "why “{a}”, not “{b}”: {count} positions knocked out in {seconds:.1f} s; "
                                          "see the Why tab").format(a=result.a.text, b=result.b.text,
                                                                    count=len(result.positions),
                                                                    seconds=result.seconds))


def prepare(desk: Desk, index: int, step: int, a: int | None = None, b: int | None = None) -> WhyTask | None:
    """Why lane `index` chose A (default: its token) and not B (default: the runner-up) at `step`; None when
    refused (with a notice)."""
    state = desk.state
    lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
    refusal = _refusal(desk, lane, step, a, b)
    if refusal:
        state.show_notice(refusal, level="info", cause="why")
        return None
    if not desk.use_model_of(state.trace):
        return None
    state.clear_notice("why")
    if state.selection is None or (state.selection.lane, state.selection.step) != (index, step):
        state.select(index, step)  # the Why tab shows the selected step's answer
    return WhyTask(desk.holder, state.shown_trace(), lane.name, step, a, b, state.run_limit)


def _refusal(desk: Desk, lane, step: int, a: int | None, b: int | None) -> str:
    if desk.busy() or lane is None or not lane.trace.steps:
        return translate("why", "“Why A, not B” needs a step of a finished run: run or open one, then pick a step.")
    if lane.trace.model is not None:
        return translate("why", "“{name}” ran on {model}: “Why” reads the run's model only.").format(
            name=lane.name, model=lane.trace.model.name)
    if lane.members:
        return translate("why", "“{name}” runs as a fan-out: ask “Why” of a lane without one.").format(name=lane.name)
    if not 0 <= step < len(lane.trace.steps):
        return translate("why", "Step {step} is beyond “{name}” (allowed 0 to {last}).").format(
            step=step, name=lane.name, last=len(lane.trace.steps) - 1)
    chosen = lane.trace.steps[step].token_id
    if (a if a is not None else chosen) == b:
        return translate("why", "A and B are the same token: pick another candidate to compare with.")
    if desk.holder is None:
        return translate("why", "“Why” needs the model “{name}” was made with: choose it in the Model list.").format(
            name=lane.name)
    return ""
