"""The window's "Why A, not B" command, Qt-free: checks what it needs (a finished lane of the run's model, a step
it took, two different candidates) with a notice naming what is missing, then starts the knock-out job
(gui.state.jobs.why_job). The controller calls `start_why` and stores the result with `finish_why`."""

from __future__ import annotations

from decoding.analysis.why import WhyResult
from gui.i18n import translate
from gui.state import jobs
from gui.state.run_state import JobKind


def start_why(controller, index: int, step: int, a: int | None = None, b: int | None = None) -> bool:
    """Why lane `index` chose A (default: its token) and not B (default: the runner-up) at `step`."""
    state = controller.state
    lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
    refusal = _refusal(controller, lane, step, a, b)
    if refusal:
        state.show_notice(refusal, level="info", cause="why")
        return False
    if not controller._use_model_of(state.trace):
        return False
    state.clear_notice("why")
    if state.selection is None or (state.selection.lane, state.selection.step) != (index, step):
        state.select(index, step)  # the Why tab shows the selected step's answer
    job = jobs.why_job(controller.holder, state.shown_trace(), lane.name, step, a, b)
    controller._start(JobKind.WHY, {}, job, state.run_limit)
    return True


def _refusal(controller, lane, step: int, a: int | None, b: int | None) -> str:
    if controller.runner.is_running() or lane is None or not lane.trace.steps:
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
    if controller.holder is None:
        return translate("why", "“Why” needs the model “{name}” was made with: choose it in the Model list.").format(
            name=lane.name)
    return ""


def finish_why(controller, result: WhyResult | None) -> None:
    state = controller.state
    if result is None:  # stopped between two knock-out calls
        state.fail_job()
        state.set_status(translate("why", "stopped: nothing of the knock-out was kept"))
        return
    state.add_why(result.lane, result)
    state.set_status(translate("why", "why “{a}”, not “{b}”: {count} positions knocked out in {seconds:.1f} s; see "
                                      "the Why tab").format(a=result.a.text, b=result.b.text,
                                                            count=len(result.positions), seconds=result.seconds))
