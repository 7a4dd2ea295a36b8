"""Bring back a session tree node: the lanes of the path to it become the lanes again, each made again with the
model from its parent's tokens and checked token by token (decoding.analysis.session_tree.reproduce_path); the
tree keeps every node."""

from __future__ import annotations

from dataclasses import replace

from decoding.analysis import session_tree
from decoding.records.trace import RunTrace
from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, Targets, Task, finish_lanes
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, ProviderMessage


class BringBackTask(Task):
    kind = TaskKind("restore", replaces_run=True)

    def __init__(self, holder: ModelHolder, trace: RunTrace, node_id: int, targets: Targets, limit: int) -> None:
        self.holder, self.trace, self.node_id = holder, trace, node_id
        self.targets, self.limit = targets, limit

    def work(self, emit: Emit, _cancelled: Cancelled) -> RunTrace:
        """The lanes of every node on the path, made again: the result's lanes, parents first."""
        model = self.holder.get()
        emit(ProviderMessage(model.provider))
        lanes = session_tree.reproduce_path(self.holder.engine(), self.trace, self.node_id, self.trace.model.name)
        return replace(self.trace, lanes=lanes, provider=model.provider)

    def finished(self, state: RunState, result: RunTrace) -> None:
        finish_lanes(state, self.targets, result, replace(result, lanes=[]))


def prepare(desk: Desk, node_id: int) -> BringBackTask | None:
    state = desk.state
    trace = state.shown_trace()
    if trace is None or desk.holder is None or desk.busy():
        state.show_notice(translate("controller", "Bringing a node back needs a run (run or open one) and a model."))
        return None
    nodes = session_tree.path(state.tree, node_id)
    try:
        for node in nodes:
            session_tree.check_same_model(trace, node, desk.holder.name)
    except ValueError as error:
        state.show_notice(translate("controller", "Cannot bring the node back: {error}.").format(error=error))
        return None
    state.set_specs([session_tree.node_spec(node) for node in nodes], [_colour_of(state, node) for node in nodes])
    state.trace = trace
    targets = {(lane.key, 0): lane.spec for lane in state.lanes}
    limit = max(len(session_tree.full_tokens(state.tree, node.id)) for node in nodes)
    return BringBackTask(desk.holder, trace, node_id, targets, limit)


def _colour_of(state: RunState, node) -> int | None:
    """The colour a lane brought back from session tree node `node` gets: the colour of the lane showing it,
    else the one the node recorded, else that of the lane of its name (None: a free one)."""
    showing = [lane.colour for lane in state.lanes if state.lane_nodes.get(lane.key) == node.id]
    named = [lane.colour for lane in state.lanes if lane.name == node.lane]
    return next(iter(showing), node.colour if node.colour is not None else next(iter(named), None))
