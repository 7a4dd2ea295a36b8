"""Two runs of the same lanes compared: where each lane's tokens first differ and why, in words a user can
check. Made for runs that should be identical (the same prompt, specs and seeds in another process, with
another number of ONNX Runtime threads, on another device): floating-point sums in another order change
probabilities in their last digits, and where the top candidates (or a sampled draw and its interval's
edge) are that close, the runs may take different tokens. The comparison says so instead of hiding it.

Works on traces only (no model), so two saved files compare like two live runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from decoding.records.trace import LaneTrace, RunTrace, StepRecord

# A difference in probabilities below this is rounding (float32 sums in another order); above, the two runs
# computed different distributions (another model, prompt or input).
ROUNDING = 1e-3


@dataclass
class LaneDifference:
    """How lane `lane` differs between run a and run b.

    kind: "missing" (in one run only), "near_tie" (the runs' top candidates were closer than the rounding
    between them), "near_edge" (a sampled draw fell that close to the edge of its token's interval), "draw"
    (the sampled draws differ: other seeds, or another generator state), "forced" (a forced token differs),
    "distribution" (the runs computed different distributions: not rounding), "length" (the same tokens but
    one run stopped earlier), or "probabilities" (the same tokens; the probabilities differ by `rounding`)."""

    lane: str
    kind: str
    step: int | None = None  # first step whose token differs (None: no token differs)
    token_a: int | None = None
    token_b: int | None = None
    rounding: float = 0.0  # largest |p_a - p_b| of the same token at the same step, before `step`
    detail: str = ""

    def describe(self) -> str:
        where = f" at step {self.step}" if self.step is not None else ""
        return f"lane {self.lane!r}{where}: {self.detail}"


@dataclass
class TraceComparison:
    setup: list[str] = field(default_factory=list)  # why the runs are not the same run (prompt, model, lanes)
    lanes: list[LaneDifference] = field(default_factory=list)  # lanes that differ in any way

    @property
    def same_tokens(self) -> bool:
        return not self.setup and all(d.kind == "probabilities" for d in self.lanes)

    def describe(self) -> list[str]:
        return self.setup + [difference.describe() for difference in self.lanes]


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where two token sequences differ (None: the same over their common length, one a prefix
    of the other or both equal)."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None


def compare_traces(a: RunTrace, b: RunTrace) -> TraceComparison:
    """Run a against run b: what makes them different runs, then every lane that differs, with why."""
    comparison = TraceComparison(setup=_setup_differences(a, b))
    lanes_b = {lane.name: lane for lane in b.lanes}
    for lane in a.lanes:
        other = lanes_b.get(lane.name)
        difference = _lane_difference(lane, other) if other is not None else LaneDifference(
            lane.name, "missing", detail="only in the first run")
        if difference is not None:
            comparison.lanes.append(difference)
    names_a = {lane.name for lane in a.lanes}
    comparison.lanes += [LaneDifference(lane.name, "missing", detail="only in the second run")
                         for lane in b.lanes if lane.name not in names_a]
    return comparison


def _setup_differences(a: RunTrace, b: RunTrace) -> list[str]:
    found = []
    if a.prompt.ids != b.prompt.ids:
        found.append("the prompts' token ids differ")
    hash_a, hash_b = a.model.hashes.get("model.onnx"), b.model.hashes.get("model.onnx")
    if a.model.name != b.model.name or (hash_a and hash_b and hash_a != hash_b):
        found.append(f"the models differ ({a.model.name} and {b.model.name})")
    configs_b = {lane.name: lane.config for lane in b.lanes}
    changed = [lane.name for lane in a.lanes if lane.name in configs_b and configs_b[lane.name] != lane.config]
    if changed:
        found.append(f"lane settings differ ({', '.join(changed)})")
    return found


def _lane_difference(a: LaneTrace, b: LaneTrace) -> LaneDifference | None:
    step = first_difference(a.token_ids, b.token_ids)
    common = len(a.steps) if step is None else step
    rounding = max((_largest_difference(x, y) for x, y in zip(a.steps[:common], b.steps[:common], strict=False)),
                   default=0.0)
    if step is None:
        if len(a.token_ids) != len(b.token_ids):
            return LaneDifference(a.name, "length", rounding=rounding, detail=(
                f"the same tokens, but one run stopped after {min(len(a.token_ids), len(b.token_ids))} tokens "
                f"({a.finish_reason} / {b.finish_reason})"))
        if rounding > 0.0:
            return LaneDifference(a.name, "probabilities", rounding=rounding, detail=(
                f"the same tokens; probabilities differ by up to {rounding:.2g} (rounding)"))
        return None
    kind, detail = _why(a.steps[step], b.steps[step], max(rounding, _largest_difference(a.steps[step],
                                                                                         b.steps[step])),
                        (a.config.get("seed"), b.config.get("seed")))
    return LaneDifference(a.name, kind, step, a.token_ids[step], b.token_ids[step], rounding, detail)


def _why(x: StepRecord, y: StepRecord, rounding: float, seeds: tuple = (None, None)) -> tuple[str, str]:
    """Why two records of the same step chose different tokens. With the same inputs, a token can only change
    where the runs' probabilities (which differ by `rounding`) left it on the other side of a comparison: the
    top candidates' order, or the edge of a draw's interval."""
    tokens = f"token {x.token_id} {x.token_text!r} against {y.token_id} {y.token_text!r}"
    if x.forced or y.forced:
        return "forced", f"{tokens}: a forced token differs"
    if x.draw is not None and y.draw is not None and x.draw != y.draw:
        why = f"seeds {seeds[0]} and {seeds[1]}" if seeds[0] != seeds[1] else "another generator state?"
        return "draw", f"{tokens}: the draws differ (u {x.draw:.6f} against {y.draw:.6f}: {why})"
    if rounding > ROUNDING:
        return "distribution", (f"{tokens}: the runs computed different distributions (probabilities differ by up "
                                f"to {rounding:.2g}, more than rounding)")
    if x.draw is not None and x.draw_low is not None and x.draw_high is not None:
        edge = min(abs(x.draw - x.draw_low), abs(x.draw - x.draw_high))
        return "near_edge", (f"{tokens}: the same draw u={x.draw:.6f} lay {edge:.2g} from the edge of its token's "
                             f"interval, and the runs' probabilities differ by up to {rounding:.2g} (rounding decided)")
    gap = _gap(x, x.token_id, y.token_id)
    apart = f"the two were {gap:.2g} apart in probability and " if gap is not None else ""
    return "near_tie", f"{tokens}: a near-tie: {apart}the runs' probabilities differ by up to {rounding:.2g} " \
                       "(rounding decided)"


def _gap(record: StepRecord, first: int, second: int) -> float | None:
    """|p(first) - p(second)| in the record's processed top list, else its raw one (None: not both listed)."""
    for top in (record.top, record.top_raw):
        probs = {entry.id: entry.prob for entry in top}
        if first in probs and second in probs:
            return abs(probs[first] - probs[second])
    return None


def _largest_difference(x: StepRecord, y: StepRecord) -> float:
    """The largest |p_x - p_y| of a token both records list (raw and processed top lists, the chosen token)."""
    largest = abs(x.prob_raw - y.prob_raw) if x.token_id == y.token_id else 0.0
    for top_x, top_y in ((x.top_raw, y.top_raw), (x.top, y.top)):
        probs = {entry.id: entry.prob for entry in top_y}
        largest = max([largest, *(abs(entry.prob - probs[entry.id]) for entry in top_x if entry.id in probs)])
    return largest
