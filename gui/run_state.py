"""The window's Qt-free model of a run: lane traces growing as steps stream in, the selection, and which
tokens get which marks. The views read it; only the main window writes it."""

from __future__ import annotations

from dataclasses import dataclass, field

from decoding.spec import LaneSpec
from decoding.trace import LaneTrace, StepRecord
from gui.render import TokenMarks, first_difference, near_tie

NEAR_TIE_THRESHOLD = 0.05  # processed top-1 − top-2 margin below this is a near-tie


@dataclass
class Selection:
    lane: int
    step: int


@dataclass
class RunState:
    lanes: list[LaneTrace] = field(default_factory=list)
    specs: list[LaneSpec] = field(default_factory=list)
    selection: Selection | None = None
    near_tie_threshold: float = NEAR_TIE_THRESHOLD
    reference: int = 0  # lane whose tokens the others' divergence is measured against

    @classmethod
    def for_specs(cls, specs: list[LaneSpec]) -> RunState:
        lanes = [lane_trace_for(spec) for spec in specs]
        return cls(lanes=lanes, specs=list(specs))

    def add_step(self, lane: int, record: StepRecord) -> None:
        trace = self.lanes[lane]
        if record.step < len(trace.steps):  # a re-sent step (e.g. a beam lane's best path changed)
            del trace.steps[record.step:]
            del trace.token_ids[record.step:]
        trace.steps.append(record)
        trace.token_ids.append(record.token_id)

    def step_record(self, lane: int, step: int) -> StepRecord | None:
        if not 0 <= lane < len(self.lanes):
            return None
        steps = self.lanes[lane].steps
        return steps[step] if 0 <= step < len(steps) else None

    def divergence_step(self, lane: int) -> int | None:
        """First step where `lane` departs from the reference lane (None for the reference itself or no
        split)."""
        if lane == self.reference or not 0 <= self.reference < len(self.lanes):
            return None
        return first_difference(self.lanes[lane].token_ids, self.lanes[self.reference].token_ids)

    def branch_step(self, lane: int) -> int | None:
        branch = self.lanes[lane].branch
        return None if not branch else int(branch["step"])

    def marks(self, lane: int) -> list[TokenMarks]:
        divergence = self.divergence_step(lane)
        branch = self.branch_step(lane)
        selected = self.selection.step if self.selection and self.selection.lane == lane else None
        return [
            TokenMarks(
                divergence=index == divergence,
                near_tie=near_tie(record, self.near_tie_threshold),
                branch=index == branch,
                selected=index == selected,
            )
            for index, record in enumerate(self.lanes[lane].steps)
        ]

    def max_steps(self) -> int:
        return max((len(lane.steps) for lane in self.lanes), default=0)

    def total_tokens(self) -> int:
        return sum(len(lane.steps) for lane in self.lanes)


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


def lane_trace_for(spec: LaneSpec) -> LaneTrace:
    branch = None
    if spec.branch is not None:
        branch = {"parent": spec.branch.parent, "step": spec.branch.step, "token_id": spec.branch.token_id}
    return LaneTrace(name=spec.name, config=spec.to_config(), processors=spec.processors(), branch=branch)
