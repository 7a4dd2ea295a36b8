"""Branch from a finished run (a new lane that takes another token at a step and continues from there), replay
the branch not taken (the runner-up at a critical point, with the same draws after it), and undo the last branch
lane. A branch lane runs at once, from its parent's tokens (the prompt and that prefix prefilled once).

Branching from a sampled lane whose seed is "auto" pins that lane's seed to the one it ran with (and says so), so
the branch can be re-run."""

from __future__ import annotations

from dataclasses import replace

from decoding.analysis.branch_not_taken import not_taken_spec
from decoding.analysis.critical import runner_up
from decoding.chain.spec import PRESETS, Branch, LaneSpec, unique_name
from decoding.engine.engine import check_run_inputs, replay_prefix
from decoding.records.trace import RunTrace
from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.state.run_state import Lane, RunState, prompt_key
from gui.state.tasks.base import Desk, Task, finish_lanes
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, ProviderMessage, StepMessage, prefill_reporter
from gui.state.tasks.run import branch_lane, branch_run_inputs


class BranchTask(Task):
    """Streams one new lane beside the shown ones: a branch, or a replay of a branch not taken (its spec's
    replay_of set)."""

    kind = TaskKind("branch", adds_run_text=True)

    def __init__(self, holder: ModelHolder, trace: RunTrace, key: int, spec: LaneSpec) -> None:
        self.holder, self.trace, self.spec = holder, trace, spec
        self.targets, self.limit = {(key, 0): spec}, trace.settings.max_new_tokens

    def work(self, emit: Emit, cancelled: Cancelled) -> RunTrace:
        """The branch continues `spec.branch.parent` from the branch step with the picked token, under its
        strategy; a replay runs from its replay step (the replayed lane's tokens before it prefilled once, its
        draws there skipped). The result has that one lane."""
        model, engine, trace, spec = self.holder.get(), self.holder.engine(), self.trace, self.spec
        emit(ProviderMessage(model.provider))
        if spec.replay_of is not None:
            return engine.run(trace.prompt, [spec], max_new_tokens=trace.settings.max_new_tokens, model=model.info,
                              provider=model.provider, prefix=replay_prefix(trace, spec), cancel=cancelled,
                              on_step=lambda _lane, record: emit(StepMessage(0, record)),
                              on_prefill=prefill_reporter(emit))
        lane = branch_lane(model, engine, trace, spec, cancelled, lambda record: emit(StepMessage(0, record)), emit)
        return replace(trace, lanes=[lane])

    def finished(self, state: RunState, result: RunTrace) -> None:
        finish_lanes(state, self.targets, result, None)

    def failed(self, state: RunState, message: str) -> None:
        """The lane it inserted goes when it got no step: a failed try leaves nothing behind."""
        (key, _member), = self.targets
        try:
            index = state.index_of(key)
        except KeyError:
            index = None
        if index is None or state.lanes[index].trace.steps:
            super().failed(state, message)
            return
        state.fail_job()
        state.remove_lane(index)
        state.set_status(translate("controller", "failed"))
        state.show_notice(translate("controller", "Could not make the lane: {message}. Nothing was added.")
                          .format(message=message))


def prepare(desk: Desk, index: int, step: int, token_id: int) -> BranchTask | None:
    """A new lane after lane `index` that takes `token_id` at `step` and continues from there (with the
    branch strategy, or the parent's), or None with a notice."""
    state = desk.state
    if desk.busy() or state.trace is None or desk.holder is None:
        state.show_notice(translate("controller", "Branching needs a finished run and a model."))
        return None
    if state.step_record(index, step) is None:
        return None
    parent = state.lanes[index]
    if parent.fanout > 1:
        state.show_notice(translate("controller", "“{name}” runs as a fan-out: set its fan-out to 1 to branch from "
                                                  "it.").format(name=parent.name), level="info")
        return None
    base = PRESETS.get(state.request.branch_strategy)  # the branch strategy, else the parent's
    base = parent.spec if base is None else base
    spec = replace(base, name=unique_name(f"{parent.name} ↳{step}", state.names()), branch=Branch(parent.name, step,
                   token_id), forced={})
    if parent.trace.prompt_ids is not None and spec.model != parent.spec.model:
        state.show_notice(translate("controller", "“{name}” ran on a model of another tokenizer: a branch from it "
                                                  "continues its tokens on its model ({model}); set the branch "
                                                  "strategy's model to it.").format(
                              name=parent.name, model=parent.trace.model.name), level="info")
        return None
    try:
        run_spec, prefix = branch_run_inputs(state.trace, spec)
        check_run_inputs(state.trace.prompt, [run_spec], state.trace.settings.max_new_tokens, prefix)
    except (KeyError, ValueError) as error:  # checked before the lane is shown: a refused branch adds nothing
        state.show_notice(translate("controller", "Cannot branch here: {error}.").format(error=error))
        return None
    pin_parent_seed(state, index)
    position = index + 1
    while position < len(state.lanes) and _branches_from(state.lanes[position], parent.name):
        position += 1
    lane = state.insert_lane(position, spec, branch_prompt=prompt_key(state.trace))
    desk.branch_keys.append(lane.key)
    return BranchTask(desk.holder, state.shown_trace(), lane.key, spec)


def prepare_not_taken(desk: Desk, index: int, step: int) -> BranchTask | None:
    """From a step of lane `index` (a critical point, typically): a new lane after it that takes the runner-up
    there and continues with the same spec and the same draws, or None with a notice; its column then says how
    far the two continuations end up apart."""
    state = desk.state
    record = state.step_record(index, step)
    if desk.busy() or state.trace is None or desk.holder is None or record is None:
        state.show_notice(translate("controller", "Replaying the branch not taken needs a finished run and a model."))
        return None
    runner_up_token = runner_up(record, state.critical)
    if runner_up_token is None:
        state.show_notice(translate("controller", "This step has no runner-up to replay (a single candidate)."),
                          level="info")
        return None
    lane = state.lanes[index]
    if lane.fanout > 1:
        state.show_notice(translate("controller", "“{name}” runs as a fan-out: set its fan-out to 1 to replay a step "
                                                  "of it.").format(name=lane.name), level="info")
        return None
    try:
        # the replay continues this lane's own tokens: a branch lane's branch marker is not the replay's
        name = translate("controller", "{lane} ↳{step} runner-up").format(lane=lane.name, step=step)
        spec = not_taken_spec(replace(_ran_spec(lane), branch=None), step, runner_up_token,
                              unique_name(name, state.names()))
        trace = state.shown_trace()
        check_run_inputs(trace.prompt, [spec], trace.settings.max_new_tokens, replay_prefix(trace, spec))
    except (KeyError, ValueError) as error:  # checked before the lane is shown: a refused replay adds nothing
        state.show_notice(translate("controller", "Cannot replay the branch not taken: {error}.").format(error=error))
        return None
    pin_parent_seed(state, index)
    new = state.insert_lane(index + 1, spec, branch_prompt=prompt_key(state.trace), named_by_user=True)
    desk.branch_keys.append(new.key)
    return BranchTask(desk.holder, state.shown_trace(), new.key, spec)


def undo(desk: Desk) -> bool:
    """Remove the most recent branch lane that still exists."""
    if desk.busy():
        return False
    state = desk.state
    while desk.branch_keys:
        key = desk.branch_keys.pop()
        try:
            index = state.index_of(key)
        except KeyError:
            continue
        removed = state.remove_lane(index)
        state.remove_leaf_of(removed.key)
        state.set_status(translate("controller", "removed branch lane “{name}”").format(name=removed.name))
        return True
    state.set_status(translate("controller", "no branch lane to undo"))
    return False


def pin_parent_seed(state: RunState, index: int) -> None:
    """A sampled parent with seed auto gets the seed it ran with, so its branch can be re-run."""
    lane = state.lanes[index]
    seed = lane.trace.config.get("seed")
    if lane.spec.do_sample and lane.spec.seed is None and seed is not None:
        state.pin_seed(index, int(seed))
        state.show_notice(
            translate("controller", "“{name}” now keeps seed {seed} so its branch can be re-run; set its seed back "
                                    "to auto for fresh samples (its branch lanes then run as ordinary lanes).")
            .format(name=lane.name, seed=seed), level="info", cause="seed")


def _ran_spec(lane: Lane) -> LaneSpec:
    """The lane's spec with the seed it ran with (auto seeds are recorded in the run)."""
    seed = lane.trace.config.get("seed")
    return replace(lane.spec, seed=seed) if lane.spec.do_sample and seed is not None else lane.spec


def _branches_from(lane: Lane, parent: str) -> bool:
    return lane.spec.branch is not None and lane.spec.branch.parent == parent
