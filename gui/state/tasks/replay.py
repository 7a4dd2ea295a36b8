"""Replay: the shown run made again with the model (its lanes take the specs it was made with, seeds included,
on the model it was made with), then whether every token matched, or where each lane first differs and why
(decoding.analysis.compare: a near-tie or a draw at an interval's edge can tip with another thread count or
kernel order — said, not hidden)."""

from __future__ import annotations

from dataclasses import replace

from decoding.chain.spec import specs_of
from decoding.records.trace import RunTrace
from gui.i18n import translate
from gui.state.model_holder import check_lane_models
from gui.state.requests import request_of
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, finish_lanes, run_limit
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.run import RunTask, expand


class ReplayTask(RunTask):
    kind = TaskKind("replay", replaces_run=True, new_run=True, adds_run_text=True)
    replayed: RunTrace  # the run replayed, as it was (the replay's lanes replace its lanes in the window)

    def finished(self, state: RunState, result: RunTrace) -> None:
        finish_lanes(state, self.targets, result, result)
        _report_replay(state, self.replayed)


def prepare(desk: Desk) -> ReplayTask | None:
    """The replay of the shown run (the request becomes the run's), or None with a notice."""
    state = desk.state
    trace = state.shown_trace()
    if trace is None or desk.holder is None or desk.busy() or not trace.lanes:
        state.show_notice(translate("controller", "Replay needs a run (run or open one) and a model."))
        return None
    if not desk.use_model_of(trace):
        return None
    replayed = replace(trace, lanes=list(trace.lanes))
    request = state.request.with_prompt_of(request_of(trace))
    state.set_request(request)
    state.show_trace(trace, specs_of(trace))  # the lanes as the run made them, seeds included
    try:
        targets = expand(state.lanes, request.seed)
        check_lane_models(list(targets.values()), desk.holder.name)
        task = ReplayTask(desk.holder, request, targets, run_limit(list(targets.values()), request.max_new_tokens))
    except ValueError as error:
        state.show_notice(translate("controller", "Cannot replay: {error}.").format(error=error))
        return None
    task.replayed = replayed
    return task


def _report_replay(state: RunState, before: RunTrace) -> None:
    from decoding.analysis.compare import compare_traces

    comparison = compare_traces(before, state.shown_trace())
    if comparison.same_tokens:
        state.set_status(translate("controller", "replay: every token identical to the saved run"))
        return
    state.show_notice(translate("controller", "Replay differs from the saved run: {differences}.").format(
        differences="; ".join(comparison.describe())))
