"""Step mode: every lane starts again, one token at a time (the first step proposed at once); a lane takes its
own pick, a candidate the user double-clicks (a forced token) or runs on to its end; off, the lanes keep the
steps taken, their specs with the user's picks forced (Replay makes the same tokens). Each step is a task over
the StepSession (decoding.engine.step_mode) its first task makes, kept in the desk's `stepping` box."""

from __future__ import annotations

from collections.abc import Callable

from decoding.chain.spec import LaneSpec
from decoding.engine.lane_state import empty_trace
from decoding.engine.step_mode import StepSession
from decoding.records.trace import RunTrace
from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.state.requests import RunRequest
from gui.state.run_state import Proposal, RunState
from gui.state.tasks.base import Desk, Targets, Task, run_limit
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, ProviderMessage
from gui.state.tasks.run import check_can_run

Advance = Callable[[StepSession], None]


class StepTask(Task):
    """Advances step mode's session, then proposes every running lane's next step (a beam lane's: its search's
    next step)."""

    kind = TaskKind("step", keeps_proposals=True)

    def __init__(self, holder: ModelHolder, request: RunRequest, specs: list[LaneSpec], session_box: list,
                 advance: Advance, targets: Targets, limit: int) -> None:
        self.holder, self.request, self.specs = holder, request, specs
        self.session_box, self.advance = session_box, advance
        self.targets, self.limit = targets, limit

    def work(self, emit: Emit, _cancelled: Cancelled) -> RunTrace:
        """The session's lanes as shown (steps taken, the proposed next step last); the session is made first,
        from the specs and the request, when the box is empty."""
        holder, request, specs = self.holder, self.request, self.specs
        model = holder.get()
        emit(ProviderMessage(model.provider))
        if not self.session_box:
            prompt = model.encode_prompt(request.text, chat=request.chat, system=request.system)
            self.session_box.append(StepSession(holder.engine(), prompt, specs, max_new_tokens=request.max_new_tokens,
                                                base_seed=request.seed, model=model.info))
        session = self.session_box[0]
        self.advance(session)
        for name in session.running():
            session.propose(name)
        trace = holder.engine().start(session.prompt, specs, max_new_tokens=request.max_new_tokens,
                                      model=model.info, provider=model.provider, base_seed=request.seed).trace
        trace.lanes = [session.shown(spec.name) for spec in specs]
        return trace

    def finished(self, state: RunState, result: RunTrace) -> None:
        first = state.trace is None
        finished = {(lane.key, 0): result.lane(lane.name) for lane in state.lanes}
        session = self.session_box[0]
        state.set_proposals({index: Proposal(len(trace.steps) - 1, tuple(session.beams(trace.name)))
                             for index, trace in enumerate(result.lanes)
                             if session.lane(trace.name).proposal is not None})
        state.finish_job(result if first else None, finished, grow=False)
        lane = state.selection.lane if state.selection else 0
        state.select(lane, len(state.lanes[lane].trace.steps) - 1)
        state.set_status(translate("controller", "step mode: double-click a candidate to take it, Run for one step "
                                                 "of every lane"))


class FirstStepTask(StepTask):
    """Step mode's first task: its lanes start empty and become the run."""

    kind = TaskKind("step", replaces_run=True, keeps_proposals=True)


def start(desk: Desk) -> StepTask | None:
    """Step mode on: its first task (every lane's first step proposed), or None with a notice."""
    state = desk.state
    if desk.busy() or desk.holder is None or not check_can_run(desk, state.request):
        return None
    if any(lane.spec.branch or lane.spec.replay_of for lane in state.lanes):
        state.show_notice(translate("controller", "Step mode starts every lane at step 0: remove the branch lanes "
                                                  "first (or Run them as ordinary lanes)."), level="info",
                          cause="step_mode")
        return None
    desk.step_mode, desk.stepping = True, []
    specs, targets = state.specs, {(lane.key, 0): lane.spec for lane in state.lanes}
    kind = FirstStepTask if targets else StepTask
    return kind(desk.holder, state.request, specs, desk.stepping, lambda _session: None, targets,
                run_limit(specs, state.request.max_new_tokens))


def step(desk: Desk, advance: Advance) -> StepTask | None:
    if not desk.step_mode or desk.busy():
        return None
    state = desk.state
    return StepTask(desk.holder, state.request, state.specs, desk.stepping, advance, {}, state.run_limit)


def take(desk: Desk, index: int, at: int, token_id: int) -> StepTask | None:
    """Lane `index` takes `token_id` at its proposed step `at` instead of its own pick (a forced token)."""
    lane = desk.state.lanes[index]
    proposed = len(lane.trace.steps) - 1
    if lane.spec.is_beam:
        desk.state.show_notice(translate("controller", "A beam lane's step in step mode is its search's: accept it "
                                                       "(F8) or run the lane on (F9). To force a token, branch from "
                                                       "the beam lane after step mode."), level="info",
                               cause="step_mode")
        return None
    if at != proposed:
        desk.state.show_notice(translate("controller", "In step mode a lane takes a token at its next step ({step}) "
                                                       "only.").format(step=proposed), level="info",
                               cause="step_mode")
        return None
    return step(desk, lambda session: session.take(lane.name, token_id))


def end(desk: Desk) -> bool:
    """Step mode off: the lanes keep the steps taken (a lane with none goes back to empty)."""
    if desk.busy():
        return False
    desk.step_mode = False
    session = desk.stepping[0] if desk.stepping else None
    desk.stepping = []
    if session is None:
        return True
    state = desk.state
    state.set_proposals({})
    finished = {}
    for index, lane in enumerate(state.lanes):
        kept = session.kept(lane.name)  # a beam lane stopped early: its search of that length, made now
        if kept is None:  # no step taken: its proposed step goes, it was never the lane's
            finished[(lane.key, 0)] = empty_trace(lane.spec)
            continue
        spec, finished[(lane.key, 0)] = kept
        state.keep_stepped(index, spec, (state.request.text, state.request.chat, state.request.system))
    state.finish_job(state.trace, finished)
    state.set_status(translate("controller", "step mode off: the lanes keep the steps taken"))
    return True
