"""The window's Qt-free model: the lanes (each the spec the user edits plus what the shown run recorded for it),
the shown run, the selection and the notice. Views subscribe to its events and draw what they show; the
controller (runs, branches, files) and the lanes editor change it through its methods, never behind its back.

    state.events.connect("step_added", timeline.on_step_added)   # (index, record)
    model.insert_lane(2, LaneSpec("greedy"))                     # → "lane_inserted" (2)

The shape follows napari's Qt-free models (a widget is built from a model and connects to its events), so a
new view is one class plus one line of wiring, and no view can miss a change another view made.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from decoding.analysis import session_tree
from decoding.analysis.compare import first_difference
from decoding.analysis.critical import critical_point
from decoding.analysis.text_align import first_text_difference, same_place, token_aligned
from decoding.chain.spec import LaneSpec, unique_name
from decoding.engine.lane_state import empty_trace
from decoding.records.explain import ExplainResult
from decoding.records.trace import CriticalSettings, LaneTrace, RunTrace, StepRecord, TreeNode
from gui.state.lane_names import auto_name
from gui.state.model_comparison import ModelComparison
from gui.state.requests import RunRequest
from gui.state.tasks.kind import TaskKind

BRANCH_NAME = re.compile(r" ↳\d+")  # the name the window gives a branch or a replay ("greedy ↳58 runner-up")

# Every event the model emits, with the arguments its listeners get.
EVENTS: dict[str, str] = {
    "lanes_reset": "()  the whole lane list was replaced (a run started, a file was opened)",
    "lane_inserted": "(index)",
    "lane_removed": "(index, lane)",
    "lane_moved": "(old_index, new_index)",
    "lane_changed": "(index)  its spec, name, visibility or staleness changed",
    "step_added": "(index, record)  a streamed step; one with a step the lane already has replaces its tail",
    "member_step_added": "(index, member, record)  a streamed step of member >= 1 of a fan-out lane",
    "run_started": "(kind)  the TaskKind of the task that starts (gui.state.tasks.kind: what it does to the run)",
    "run_finished": "()  every lane's final steps, the analysis and the marks are in",
    "selection_changed": "(selection)  a Selection or None",
    "notice_changed": "(notice)  a Notice or None",
    "status": "(text)  a passing status message",
    "model_changed": "()  the model's name or its execution provider changed",
    "marks_changed": "()  what makes a critical point, or step mode's proposed steps, changed: every lane's marks "
                     "may differ",
    "sweeps_changed": "()  a temperature sweep was added to the shown run",
    "explanations_changed": "()  a lane's explanation (attention, logit lens) was added to the shown run",
    "model_comparison_changed": "()  a lane's comparison with a second model was added or dropped",
    "why_changed": "(index, result)  a \"Why A, not B\" (decoding.analysis.why.WhyResult) was added to lane index",
    "task_progress": "(done, total)  a task's own progress (a knock-out's rows); (0, 0) when it ended",
    "prefill_progress": "(done, total)  prompt tokens read so far while a job reads its prompt; (0, 0) when done",
    "request_changed": "(request)  the RunRequest the next run is asked for (prompt, settings, branch, device)",
    "tree_changed": "()  the session tree grew, lost nodes, or a node's bookmark, note or visibility changed",
}


class Events:
    """Synchronous named events: `connect(name, callback)`, `emit(name, *args)` calls the callbacks in order."""

    def __init__(self, names: Iterable[str]) -> None:
        self._listeners: dict[str, list[Callable]] = {name: [] for name in names}

    def connect(self, name: str, callback: Callable) -> None:
        if name not in self._listeners:
            raise KeyError(f"no event {name!r}: allowed {', '.join(self._listeners)}")
        self._listeners[name].append(callback)

    def emit(self, name: str, *args) -> None:
        for callback in list(self._listeners[name]):
            callback(*args)


@dataclass(frozen=True)
class TokenMarks:
    """Which marks one token gets in the text."""

    divergence: bool = False  # first step where this lane differs from the reference lane
    critical: bool = False  # a critical point: a small change would have picked another strong token
    branch: bool = False  # the branch point of a branched lane (the picked token)
    selected: bool = False
    proposed: bool = False  # step mode's proposed step, not yet taken


@dataclass(frozen=True)
class Selection:
    lane: int
    step: int
    member: int = 0  # of a fan-out lane: which member's step (0: the lane itself)


@dataclass(frozen=True)
class Proposal:
    """Step mode: a lane's proposed step (its last shown step, not yet taken), and a beam lane's beams at it
    (decoding.engine.lane_state.BeamParent: each beam the step extends, with its candidates)."""

    step: int
    beams: tuple = ()


@dataclass(frozen=True)
class Notice:
    """A message above the text. `cause` names what clears it (e.g. "prompt": editing the prompt)."""

    text: str
    level: str = "error"  # "error" or "info"
    cause: str = ""


_lane_keys = itertools.count()


@dataclass(eq=False)
class Lane:
    """One lane of the window: the spec as the user set it (seed None = a fresh seed each run), and the trace
    of the shown run for it (no steps until it runs). `colour` stays the lane's for its whole life."""

    spec: LaneSpec
    trace: LaneTrace
    colour: int = 0
    key: int = field(default_factory=lambda: next(_lane_keys))
    stale: bool = False  # the spec changed since the trace was recorded: Run to update
    hidden: bool = False  # its line is hidden in the charts
    named_by_user: bool = False  # else the name follows the strategy
    branch_prompt: tuple | None = None  # the prompt (text, chat, system) its branch point belongs to
    fanout: int = 1  # run as this many seed members (sampled lanes; 1: just the lane)
    members: list[LaneTrace] = field(default_factory=list)  # the last run's members (members[0] is `trace`)
    # hand picks (step mode's, Force for all lanes'): the prompt they were picked for, and the forced tokens and
    # token limit the lane had before them (a run of another prompt goes back to those)
    picks: tuple[tuple, dict, int | None] | None = None

    def traces(self) -> list[LaneTrace]:
        """What the lane ran: its fan-out's members, else its own trace."""
        return self.members or [self.trace]

    def member_trace(self, member: int) -> LaneTrace | None:
        if member == 0:
            return self.trace
        return self.members[member] if member < len(self.members) else None

    @property
    def name(self) -> str:
        return self.spec.name


class RunState:
    def __init__(self, specs: Iterable[LaneSpec] = ()) -> None:
        self.events = Events(EVENTS)
        self.lanes: list[Lane] = []
        self.trace: RunTrace | None = None  # the shown run: prompt, settings, timing, analysis (lanes: below)
        self.running_trace: RunTrace | None = None  # while a run streams: its prompt, settings, model (no lanes)
        self.selection: Selection | None = None
        self.notice: Notice | None = None
        self.job: TaskKind | None = None  # the kind of the task working now
        self.run_limit = 0  # steps of the running (or last) job's longest lane
        self.model_name = ""
        self.provider = ""  # the execution provider really active ("" before the model is loaded)
        self.critical = CriticalSettings()  # what the ▲ marks (decoding.analysis.critical)
        self.reference = 0  # the lane whose tokens the others' divergence is measured against
        self.request = RunRequest()  # what the next run is asked for (gui.state.requests)
        self.prefill: tuple[int, int] | None = None  # (tokens read, prompt tokens) while a job reads its prompt
        # the shown run's model's (tokenizer, positions) when that model is here, else (None, None): the controller's
        self.model_files: Callable[[], tuple[object | None, int | None]] = lambda: (None, None)
        self.tree: list[TreeNode] = []  # the session tree (decoding.analysis.session_tree) of the shown prompt
        self.tree_prompt: tuple | None = None  # the prompt (text, chat, system) the tree grows from
        self.lane_nodes: dict[int, int] = {}  # lane key -> the tree node of what it shows
        self.pruned: tuple[list[TreeNode], dict[int, int]] | None = None  # the last prune's nodes (undo_prune)
        self.proposals: dict[int, Proposal] = {}  # step mode: lane index -> its proposed, not yet taken, step
        self.model_comparison: ModelComparison | None = None  # a lane of the shown run read by a second model
        for spec in specs:
            self.lanes.append(self._new_lane(spec))

    # ------------------------------------------------------------------------------------------------ reading

    @property
    def specs(self) -> list[LaneSpec]:
        return [lane.spec for lane in self.lanes]

    @property
    def traces(self) -> list[LaneTrace]:
        return [lane.trace for lane in self.lanes]

    @property
    def running(self) -> bool:
        return self.job is not None

    def index_of(self, key: int) -> int:
        for index, lane in enumerate(self.lanes):
            if lane.key == key:
                return index
        raise KeyError(f"no lane with key {key}")

    def names(self) -> set[str]:
        return {lane.name for lane in self.lanes}

    def step_record(self, lane: int, step: int, member: int = 0) -> StepRecord | None:
        if not 0 <= lane < len(self.lanes):
            return None
        trace = self.lanes[lane].member_trace(member)
        steps = trace.steps if trace is not None else []
        return steps[step] if 0 <= step < len(steps) else None

    def divergence_step(self, lane: int) -> int | None:
        """First step where `lane` departs from the reference lane (None for the reference itself or no split); by
        text for lanes of different tokenizers: its step holding the first differing character."""
        if lane == self.reference or not 0 <= self.reference < len(self.lanes):
            return None
        trace, reference = self.lanes[lane].trace, self.lanes[self.reference].trace
        if not token_aligned(trace, reference):
            found = first_text_difference(trace, reference)
            return None if found is None else found.step_a
        return first_difference(trace.token_ids, reference.token_ids)

    def aligned_with(self, lane: int, other: int | None = None) -> bool | None:
        """Whether `lane` compares with `other` (the reference lane by default) token by token (one tokenizer),
        False: by text (another tokenizer); None when there is nothing to compare (the lane itself)."""
        other = self.reference if other is None else other
        if other == lane or not 0 <= other < len(self.lanes):
            return None
        return token_aligned(self.lanes[lane].trace, self.lanes[other].trace)

    def other_step(self, lane: int, step: int, other: int) -> int | None:
        """`other`'s step at the place of `lane`'s `step`: the same step token-aligned, else the step whose token
        holds the same character of the text."""
        if self.aligned_with(lane, other) is not False:
            return step
        return same_place(self.lanes[lane].trace, step, self.lanes[other].trace)

    def branch_step(self, lane: int) -> int | None:
        branch = self.lanes[lane].trace.branch
        return None if not branch else int(branch["step"])

    def marks(self, lane: int) -> list[TokenMarks]:
        divergence = self.divergence_step(lane)
        branch = self.branch_step(lane)
        selection = self.selection
        selected = selection.step if selection and selection.lane == lane and selection.member == 0 else None
        proposed = self.proposed_step(lane)
        return [
            TokenMarks(
                divergence=index == divergence,
                critical=critical_point(record, self.critical) is not None,
                branch=index == branch,
                selected=index == selected,
                proposed=index == proposed,
            )
            for index, record in enumerate(self.lanes[lane].trace.steps)
        ]

    def proposed_step(self, lane: int) -> int | None:
        """Step mode: the lane's proposed step, or None."""
        proposal = self.proposals.get(lane)
        return None if proposal is None else proposal.step

    def set_proposals(self, proposals: dict[int, Proposal]) -> None:
        """Step mode's proposed steps (empty when it ends): every lane's marks may differ."""
        if proposals != self.proposals:
            self.proposals = proposals
            self.events.emit("marks_changed")

    def max_steps(self) -> int:
        return max((len(lane.trace.steps) for lane in self.lanes), default=0)

    def total_tokens(self) -> int:
        """Tokens generated in the shown run, a fan-out's by every member."""
        return sum(len(trace.steps) for lane in self.lanes for trace in lane.traces())

    def shown_trace(self) -> RunTrace | None:
        """The shown run with the lanes that ran, in the window's order, every fan-out member an ordinary lane
        (what Save writes)."""
        if self.trace is None:
            return None
        ran = [lane for lane in self.lanes if lane.trace.steps or lane.trace.finish_reason]
        for lane in ran:  # the file keeps each lane's colour (a fan-out's members share it)
            for trace in lane.traces():
                trace.colour = lane.colour
        self.trace.lanes = [trace for lane in ran for trace in lane.traces()]
        self.trace.tree = self.tree
        explained = {id(self.trace.explanation_of(lane)) for lane in self.trace.lanes}
        self.trace.explanations = [e for e in self.trace.explanations if id(e) in explained]  # removed lanes' go
        return self.trace

    def explanation(self, lane: int) -> ExplainResult | None:
        """The shown run's explanation of lane `lane` (its attention and logit lens), or None."""
        if self.trace is None or not 0 <= lane < len(self.lanes):
            return None
        return self.trace.explanation_of(self.lanes[lane].trace)

    def snapshot(self) -> RunState:
        """A model showing the same run (same lanes, selection and settings) with no listeners: views made
        over it (e.g. to draw an export at another size) go away with it."""
        copy = RunState()
        copy.lanes = list(self.lanes)
        for name in ("trace", "selection", "critical", "reference", "run_limit", "model_name", "provider",
                     "request", "model_files", "tree", "tree_prompt", "lane_nodes", "model_comparison"):
            setattr(copy, name, getattr(self, name))
        return copy

    def autosave_trace(self) -> RunTrace | None:
        """What an autosave writes now: the shown run, or the run streaming (with what it has so far), as a
        copy another thread may serialise while steps keep arriving here (records are never changed once
        recorded; only the lists grow)."""
        trace = self.running_trace if self.job is not None and self.job.new_run else self.shown_trace()
        if trace is None:
            return None
        lanes = [replace(trace, steps=list(trace.steps), token_ids=list(trace.token_ids), colour=lane.colour)
                 for lane in self.lanes for trace in lane.traces() if trace.steps]
        return replace(trace, lanes=lanes, sweeps=list(trace.sweeps), explanations=list(trace.explanations),
                       tree=[replace(node) for node in self.tree])

    # ---------------------------------------------------------------------------------------- editing lanes

    def set_specs(self, specs: Iterable[LaneSpec], colours: Iterable[int | None] = ()) -> None:
        """Replace every lane (no run shown for them). `colours`: the colour each lane should keep, in order
        (None or missing: the next free one)."""
        self._set_selection(None)  # while its lane still exists: views redraw it unselected
        self.trace = None
        self.set_model_comparison(None)
        self.lanes = [self._new_lane(spec) for spec in specs]
        self._give_colours(list(colours))
        self.events.emit("lanes_reset")

    def insert_lane(self, index: int, spec: LaneSpec, **attributes) -> Lane:
        lane = self._new_lane(spec, **attributes)
        self.lanes.insert(index, lane)
        self._refresh_analysis()  # before the selection moves: its listeners read the analysis
        if self.selection is not None and self.selection.lane >= index:
            self._set_selection(replace(self.selection, lane=self.selection.lane + 1))
        self.events.emit("lane_inserted", index)
        return lane

    def remove_lane(self, index: int) -> Lane:
        lane = self.lanes.pop(index)
        if index < self.reference or self.reference >= len(self.lanes):
            self.reference = max(0, min(self.reference - 1, len(self.lanes) - 1))
        self._refresh_analysis()  # before the selection changes: its listeners read the analysis of these lanes
        if self.selection is not None:
            if self.selection.lane == index:
                self._set_selection(None)
            elif self.selection.lane > index:
                self._set_selection(replace(self.selection, lane=self.selection.lane - 1))
        if self.notice is not None and f"“{lane.name}”" in self.notice.text:  # about a lane that is gone
            self.clear_notice()
        self.events.emit("lane_removed", index, lane)
        return lane

    def move_lane(self, index: int, target: int) -> None:
        selected = self.lanes[self.selection.lane] if self.selection is not None else None
        lane = self.lanes.pop(index)
        self.lanes.insert(target, lane)
        self._refresh_analysis()
        if selected is not None:  # the lanes between index and target moved by one too
            self._set_selection(replace(self.selection, lane=self.lanes.index(selected)))
        self.events.emit("lane_moved", index, target)

    def detach_branch(self, index: int) -> None:
        """A branch (or replay) lane whose branch point no longer holds runs as an ordinary lane from now on, named
        by its strategy when its name was the branch's ("greedy ↳58" says a branch point it no longer has)."""
        lane = self.lanes[index]
        lane.branch_prompt = None
        spec = replace(lane.spec, branch=None, replay_of=None)
        if BRANCH_NAME.search(spec.name):
            spec = replace(spec, name=unique_name(auto_name(spec), self.names() - {lane.name}))
            lane.named_by_user = False
        self.replace_spec(index, spec)

    def set_running_trace(self, trace: RunTrace) -> None:
        """The streaming run's prompt, settings and model (no lanes yet): what an autosave needs."""
        self.running_trace = trace

    def replace_spec(self, index: int, spec: LaneSpec, *, named_by_user: bool | None = None) -> None:
        """The user edited a lane: its shown text becomes stale (it was made with the old spec)."""
        lane = self.lanes[index]
        old_name = lane.spec.name
        renamed_only = replace(lane.spec, name=spec.name) == spec
        lane.spec = spec
        if spec.name != old_name:
            self._rename_parent(old_name, spec.name)
        if named_by_user is not None:
            lane.named_by_user = named_by_user
        if renamed_only:
            lane.trace.name = spec.name
        elif lane.trace.steps:
            lane.stale = True
        self.events.emit("lane_changed", index)

    def _rename_parent(self, old: str, new: str) -> None:
        """Branch lanes name their parent: follow a rename."""
        for index, lane in enumerate(self.lanes):
            branch = lane.spec.branch
            if branch is not None and branch.parent == old:
                lane.spec = replace(lane.spec, branch=replace(branch, parent=new))
                if lane.trace.branch:
                    lane.trace.branch = {**lane.trace.branch, "parent": new}
                self.events.emit("lane_changed", index)

    def keep_stepped(self, index: int, spec: LaneSpec, prompt: tuple) -> None:
        """Step mode ended: the lane's spec is the one its shown steps were made with (the user's picks forced, the
        length reached), picked for `prompt`."""
        lane = self.lanes[index]
        self.note_picks(index, prompt)
        lane.spec, lane.stale = spec, False
        self.events.emit("lane_changed", index)

    def note_picks(self, index: int, prompt: tuple) -> None:
        """The lane's forced tokens and limit are about to become hand picks for `prompt` (what it had before them
        is kept: see drop_picks)."""
        lane = self.lanes[index]
        if lane.picks is None or lane.picks[0] != prompt:
            lane.picks = (prompt, dict(lane.spec.forced), lane.spec.max_new_tokens)

    def drop_picks(self, prompt: tuple) -> list[str]:
        """Lanes whose hand picks were made for another prompt go back to the forced tokens and limit they had
        before them; their names."""
        dropped = []
        for index, lane in enumerate(self.lanes):
            if lane.picks is None or lane.picks[0] == prompt:
                continue
            _, forced, limit = lane.picks
            lane.picks = None
            if (lane.spec.forced, lane.spec.max_new_tokens) != (forced, limit):
                self.replace_spec(index, replace(lane.spec, forced=forced, max_new_tokens=limit))
                dropped.append(lane.name)
        return dropped

    def pin_seed(self, index: int, seed: int) -> None:
        """Keep the seed a lane ran with (its shown text stays current)."""
        lane = self.lanes[index]
        lane.spec = replace(lane.spec, seed=seed)
        self.events.emit("lane_changed", index)

    def replay_comparison(self, lane: int):
        """How far a replay lane's continuation is from the lane it replays (None for other lanes, or when that
        lane is gone or has not run)."""
        from decoding.analysis.branch_not_taken import compare_continuations

        marker = self.lanes[lane].trace.replay_of
        original = next((other.trace for other in self.lanes if marker and other.name == marker["lane"]), None)
        if original is None or not original.token_ids:
            return None
        return compare_continuations(original.token_ids, self.lanes[lane].trace.token_ids, marker["step"] + 1)

    def critical_count(self, lane: int) -> int:
        return sum(mark.critical for mark in self.marks(lane))

    def set_critical(self, settings: CriticalSettings) -> None:
        """New thresholds for critical points: every view re-marks; the shown run records them."""
        self.critical = settings
        self._refresh_analysis()
        self.events.emit("marks_changed")

    def set_fanout(self, index: int, count: int) -> None:
        """Run a sampled lane as `count` seed members from the next run on (1: just the lane)."""
        from decoding.analysis.fanout import check_fanout

        lane = self.lanes[index]
        lane.fanout = check_fanout(count)
        lane.stale = bool(lane.trace.steps) and count != max(len(lane.members), 1)
        self.events.emit("lane_changed", index)

    def set_hidden(self, index: int, hidden: bool) -> None:
        self.lanes[index].hidden = hidden
        self.events.emit("lane_changed", index)

    # -------------------------------------------------------------------------------------------- a run

    def start_job(self, kind: TaskKind, targets: dict[tuple[int, int], LaneSpec], limit: int) -> None:
        """A task starts streaming into `targets`: (lane key, member) -> the spec it runs (their traces start
        empty; a lane with members >= 1 is a fan-out). Its kind says whether it replaces the shown run (a run, a
        replay) or adds to it (a branch) or keeps it (a sweep, an explanation). `limit`: the steps of its longest
        lane."""
        self.job = kind
        replaces_run = kind.replaces_run
        if targets:
            self.run_limit = limit
        if not kind.keeps_proposals:
            self.proposals = {}  # step mode's proposals end with it
        if replaces_run:
            self.trace = self.running_trace = None
            self._set_selection(None)
            self.set_model_comparison(None)
        for lane in self.lanes:
            mine = sorted((member, spec) for (key, member), spec in targets.items() if key == lane.key)
            if mine:
                traces = [empty_trace(spec) for _member, spec in mine]
                lane.members = traces if len(traces) > 1 else []
                lane.trace, lane.stale = traces[0], False
        if replaces_run:
            self.events.emit("lanes_reset")
        self.events.emit("run_started", kind)

    def set_prefill(self, done: int, total: int) -> None:
        """A job is reading its prompt (in chunks): `done` of `total` tokens; the prefill ends at its first step."""
        self.prefill = (done, total)
        self.events.emit("prefill_progress", done, total)

    def _end_prefill(self) -> None:
        if self.prefill is not None:
            self.prefill = None
            self.events.emit("prefill_progress", 0, 0)

    def add_step(self, index: int, record: StepRecord, member: int = 0) -> None:
        self._end_prefill()
        trace = self.lanes[index].member_trace(member)
        if record.step < len(trace.steps):  # a re-sent step (a beam lane's best path changed)
            del trace.steps[record.step:]
            del trace.token_ids[record.step:]
        trace.steps.append(record)
        trace.token_ids.append(record.token_id)
        if member == 0:
            self.events.emit("step_added", index, record)
        else:
            self.events.emit("member_step_added", index, member, record)

    def finish_job(self, trace: RunTrace | None, finished: dict[tuple[int, int], LaneTrace], grow: bool = True) -> None:
        """The job ended: `finished` maps (lane key, member) to the engine's final traces (beam lanes' best
        paths, finish reasons); `trace` (None for a branch) is the run's timing, settings and error. `grow`:
        its lanes become session tree nodes (not step mode's steps: its lanes do when it ends)."""
        colours = {lane.key: lane.colour for lane in self.lanes}
        for (key, _member), lane_trace in finished.items():  # recorded with them: the nodes keep them too
            lane_trace.colour = colours.get(key, lane_trace.colour)
        for lane in self.lanes:
            if lane.members:
                lane.members = [finished.get((lane.key, k), old) for k, old in enumerate(lane.members)]
                lane.trace = lane.members[0]
            elif (lane.key, 0) in finished:
                lane.trace = finished[(lane.key, 0)]
                lane.trace.name = lane.name
        if trace is not None:
            self.trace = trace
        if grow:
            self._grow_tree(finished)
        self.job = None
        self._end_prefill()
        self._refresh_analysis()
        self.events.emit("run_finished")

    def _grow_tree(self, finished: dict[tuple[int, int], LaneTrace]) -> None:
        """The lanes a job finished become nodes of the session tree (a run of another prompt starts a new one)."""
        if self.trace is None or not finished:
            return
        if self.tree_prompt != prompt_key(self.trace):
            self.tree, self.lane_nodes, self.tree_prompt = [], {}, prompt_key(self.trace)
            self.pruned = None
        keys = list(finished)
        nodes = session_tree.grow(self.tree, [finished[key] for key in keys], self.trace.model.name)
        grown = dict(zip([key for key in keys if finished[key].steps or finished[key].token_ids], nodes,
                         strict=True))
        self.lane_nodes.update({key: node.id for (key, member), node in grown.items() if member == 0})
        self.events.emit("tree_changed")

    def add_sweep(self, sweep) -> None:
        """A temperature sweep of one step of the shown run (it replaces an older one of the same step)."""
        self.job = None
        if self.trace is not None:
            self.trace.sweeps = [s for s in self.trace.sweeps if (s.lane, s.step) != (sweep.lane, sweep.step)]
            self.trace.sweeps.append(sweep)
        self.events.emit("sweeps_changed")
        self.events.emit("run_finished")

    def sweep_at(self, lane: int, step: int):
        """The stored temperature sweep of lane `lane`'s step, or None."""
        if self.trace is None:
            return None
        name = self.lanes[lane].name
        return next((s for s in self.trace.sweeps if s.lane == name and s.step == step), None)

    def add_explanation(self, result: ExplainResult) -> None:
        """Store a lane's explanation with the shown run (Save writes it); it replaces one of the same tokens."""
        self.job = None
        kept = [e for e in self.trace.explanations if e.token_ids != result.token_ids]
        self.trace.explanations = [*kept, result]
        self.events.emit("explanations_changed")
        self.events.emit("run_finished")

    def add_why(self, lane_name: str, result) -> None:
        """Store a "Why A, not B" of one of a lane's steps with it (Save writes it); it replaces one of the same
        step and candidates."""
        self.job = None
        self.events.emit("task_progress", 0, 0)
        index = next((i for i, lane in enumerate(self.lanes) if lane.name == lane_name), None)
        if index is not None:
            trace = self.lanes[index].trace
            same = (result.step, result.a.token_id, result.b.token_id)
            kept = [w for w in trace.why or [] if (w.step, w.a.token_id, w.b.token_id) != same]
            trace.why = [*kept, result]
            self.events.emit("why_changed", index, result)
        self.events.emit("run_finished")

    def whys_at(self, index: int, step: int) -> list:
        """The stored "why" results of lane `index`'s step, oldest first."""
        if not 0 <= index < len(self.lanes):
            return []
        return [w for w in self.lanes[index].trace.why or [] if w.step == step]

    def set_task_progress(self, done: int, total: int) -> None:
        self.events.emit("task_progress", done, total)

    def set_model_comparison(self, comparison: ModelComparison | None) -> None:
        """Show a lane's comparison with a second model (None: none); a job that made it has ended."""
        if comparison is not None:
            self.job = None
        changed = comparison is not None or self.model_comparison is not None
        self.model_comparison = comparison
        if changed:
            self.events.emit("model_comparison_changed")
        if comparison is not None:
            self.events.emit("run_finished")

    def comparison_lane(self) -> int | None:
        """The index of the lane the model comparison belongs to (None: no comparison, or its lane is gone)."""
        comparison = self.model_comparison
        keys = [lane.key for lane in self.lanes]
        return keys.index(comparison.lane_key) if comparison is not None and comparison.lane_key in keys else None

    def comparison_stale(self) -> bool:
        """The comparison no longer shows its lane: the lane is gone, edited since (Run to update), or shows other
        tokens."""
        index = self.comparison_lane()
        if self.model_comparison is None or index is None:
            return self.model_comparison is not None
        lane = self.lanes[index]
        return lane.stale or lane.trace.token_ids != self.model_comparison.token_ids

    def fail_job(self) -> None:
        """The job failed: what streamed so far stays."""
        self.job = None
        self.events.emit("task_progress", 0, 0)
        self.events.emit("run_finished")

    def show_trace(self, trace: RunTrace, specs: list[LaneSpec]) -> None:
        """Show a saved run: one lane per trace lane, with the spec it was made with and the colour it recorded
        (else a free one); a fan-out's members become one lane again (its spec is member 0's, named as the
        group)."""
        self._set_selection(None)  # while its lane still exists: views redraw it unselected
        self.trace = trace
        self.set_model_comparison(None)
        self.lanes = []
        groups: dict[str, Lane] = {}
        wanted: list[int | None] = []  # the colour each lane's trace recorded
        for spec, lane_trace in zip(specs, trace.lanes, strict=True):
            if spec.fanout is not None and spec.fanout.group in groups:
                group = groups[spec.fanout.group]
                group.members.append(lane_trace)
                group.fanout = len(group.members)
                continue
            if spec.fanout is not None:
                spec = replace(spec, name=spec.fanout.group, fanout=None)
            lane = self._new_lane(spec)
            lane.trace = lane_trace
            wanted.append(lane_trace.colour)
            lane.branch_prompt = prompt_key(trace) if spec.branch or spec.replay_of else None
            if lane_trace.fanout:
                lane.members, groups[spec.name] = [lane_trace], lane
            self.lanes.append(lane)
        self._give_colours(wanted)
        self.critical = trace.settings.critical
        self.reference = 0
        self.run_limit = max((len(lane.steps) for lane in trace.lanes), default=0)
        self.tree, self.tree_prompt, self.pruned = trace.tree, prompt_key(trace), None
        self.lane_nodes = {lane.key: node.id for lane in self.lanes
                           if (node := _node_showing(self.tree, lane.trace)) is not None}
        self.events.emit("tree_changed")
        self._set_selection(None)
        self.events.emit("lanes_reset")
        self.events.emit("run_finished")

    # --------------------------------------------------------------------------------------- session tree

    def node_lane(self, node_id: int) -> int | None:
        """The index of the lane showing node `node_id`, or None."""
        keys = [key for key, node in self.lane_nodes.items() if node == node_id]
        indexes = [index for index, lane in enumerate(self.lanes) if lane.key in keys]
        return indexes[0] if indexes else None

    def set_node_marks(self, node_id: int, **marks) -> None:
        """Change a node's bookmark, note or hidden flag (TreeNode's field names)."""
        node = session_tree.node_of(self.tree, node_id)
        for name, value in marks.items():
            if name not in ("bookmark", "note", "hidden"):
                raise KeyError(f"no node mark {name!r}: allowed bookmark, note, hidden")
            setattr(node, name, value)
        self.events.emit("tree_changed")

    def prune_node(self, node_id: int) -> list[TreeNode]:
        """Remove a node and everything under it from the tree (the user asked to); their lanes stay. The last
        prune can be undone (undo_prune)."""
        lane_nodes = dict(self.lane_nodes)
        removed = session_tree.prune(self.tree, node_id)
        gone = {node.id for node in removed}
        self.lane_nodes = {key: node for key, node in self.lane_nodes.items() if node not in gone}
        self.pruned = (removed, {key: node for key, node in lane_nodes.items() if node in gone})
        self.events.emit("tree_changed")
        return removed

    def undo_prune(self) -> list[TreeNode]:
        """Put back what the last prune removed (with the lanes that showed its nodes); the nodes put back."""
        if self.pruned is None:
            return []
        (removed, lane_nodes), self.pruned = self.pruned, None
        self.tree.extend(removed)
        self.tree.sort(key=lambda node: node.id)
        self.lane_nodes.update({key: node for key, node in lane_nodes.items()
                                if any(lane.key == key for lane in self.lanes)})
        self.events.emit("tree_changed")
        return removed

    def remove_leaf_of(self, lane_key: int) -> TreeNode | None:
        """Undo a branch: its node goes when no other node hangs from it and no other lane shows it."""
        node_id = self.lane_nodes.pop(lane_key, None)
        if node_id is None or node_id in self.lane_nodes.values() or session_tree.children(self.tree, node_id):
            return None
        removed = session_tree.remove_leaf(self.tree, node_id)
        self.events.emit("tree_changed")
        return removed

    # ------------------------------------------------------------------------------------------ selection

    def select(self, lane: int, step: int, member: int = 0) -> bool:
        """Select a recorded step (of a fan-out member); False (nothing changes) if there is none there."""
        if self.step_record(lane, step, member) is None:
            return False
        self._set_selection(Selection(lane, step, member))
        return True

    def _set_selection(self, selection: Selection | None) -> None:
        if selection != self.selection:
            self.selection = selection
            if selection is not None:
                self.clear_notice("selection")  # "select a token first" no longer holds
            self.events.emit("selection_changed", selection)

    # --------------------------------------------------------------------------------------------- notice

    def show_notice(self, text: str, level: str = "error", cause: str = "") -> None:
        self.notice = Notice(text, level, cause)
        self.events.emit("notice_changed", self.notice)

    def clear_notice(self, *causes: str) -> None:
        """Clear the notice (only if it has one of these causes, when causes are given)."""
        if self.notice is None or (causes and self.notice.cause not in causes):
            return
        self.notice = None
        self.events.emit("notice_changed", None)

    # --------------------------------------------------------------------------------------- status, model

    def set_status(self, text: str) -> None:
        self.events.emit("status", text)

    def set_request(self, request: RunRequest) -> None:
        if request != self.request:
            self.request = request
            self.events.emit("request_changed", request)
            if request.text.strip():
                self.clear_notice("prompt")  # "the prompt is empty" no longer holds

    def update_request(self, **fields) -> None:
        """Change some of the request's fields (dataclasses.replace's names)."""
        self.set_request(replace(self.request, **fields))

    def set_model_name(self, name: str, provider: str) -> None:
        self.model_name, self.provider = name, provider
        self.events.emit("model_changed")

    # ---------------------------------------------------------------------------------------- internals

    def _new_lane(self, spec: LaneSpec, **attributes) -> Lane:
        return Lane(spec=spec, trace=empty_trace(spec), colour=self._free_colour(), **attributes)

    def _free_colour(self) -> int:
        used = {lane.colour for lane in self.lanes}
        return next(colour for colour in itertools.count() if colour not in used)

    def _give_colours(self, wanted: list[int | None]) -> None:
        """Lane i gets colour wanted[i] (the one it had: a run file or a session tree node's lane recorded it),
        unless an earlier lane got it; the others the lowest colours no lane has, so colours stay distinct."""
        colours: list[int | None] = [None] * len(self.lanes)
        for index, colour in enumerate(wanted[:len(self.lanes)]):
            if colour is not None and colour >= 0 and colour not in colours:
                colours[index] = colour
        free = (colour for colour in itertools.count() if colour not in colours)
        for lane, colour in zip(self.lanes, colours, strict=True):
            lane.colour = next(free) if colour is None else colour

    def _refresh_analysis(self) -> None:
        """The shown run's analysis, over its lanes in the window's order, by the window's critical thresholds."""
        if self.trace is None:
            return
        from dataclasses import replace as replaced

        from decoding.analysis import analysis

        self.shown_trace()
        self.trace.settings = replaced(self.trace.settings, critical=self.critical)
        self.trace.analysis = analysis.analyze(self.trace)


def _node_showing(tree: list[TreeNode], lane: LaneTrace) -> TreeNode | None:
    """The newest node of the lane's name holding its tokens."""
    return next((node for node in reversed(tree) if node.lane == lane.name
                 and session_tree.full_tokens(tree, node.id) == lane.token_ids), None)


def prompt_key(trace: RunTrace) -> tuple:
    """What a branch point depends on besides its parent: the prompt text, chat flag and system prompt."""
    return (trace.prompt.text, trace.prompt.chat, trace.prompt.system)


def running_beam_pieces(steps: list[StepRecord]) -> list[str] | None:
    """While a beam lane streams, its records are each step's best candidate, which need not form one
    sequence. The best running hypothesis (beam 0 at the last step) is followed back through the parent
    pointers of every step's kept beams instead. None if the records carry no beams."""
    if not steps or not steps[-1].beams:
        return None
    pieces, beam = [], 0
    for step in reversed(steps):
        if step.beams is None:  # copied prefix (branch) steps: one sequence already
            pieces.append(step.token_text)
            continue
        kept = next((h for h in step.beams if h.kept and h.beam == beam), None)
        if kept is None:
            return None
        pieces.append(kept.token_text)
        beam = kept.parent
    return pieces[::-1]
