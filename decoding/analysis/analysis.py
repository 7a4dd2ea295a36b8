"""What a run tells: where lanes first part ways, the critical points where a small change decides between
strong candidates (decoding.analysis.critical), how close each sampled draw came to another token, the forced branch
points, each seed fan-out's tree (decoding.analysis.fanout) and how far each branch-not-taken replay ends up from the
lane it replays (decoding.analysis.branch_not_taken). Near-ties by margin (top-1 − top-2 below a threshold) are still
listed for readers of older files; the marks to show are the critical points.

Works on traces only (no model), so an imported JSON run is analysed exactly like a live one.
"""

from __future__ import annotations

from itertools import combinations

from decoding.analysis.branch_not_taken import replay_comparisons
from decoding.analysis.compare import first_difference
from decoding.analysis.critical import critical_points
from decoding.analysis.fanout import fanout_groups
from decoding.analysis.text_align import first_text_difference, token_aligned
from decoding.records.trace import (
    Analysis,
    CloseDraw,
    Divergence,
    ForcedBranch,
    LaneTrace,
    NearTie,
    RunTrace,
    StepRecord,
    TopList,
)


def analyze(trace: RunTrace, near_tie_threshold: float | None = None) -> Analysis:
    """The analysis of `trace`, critical points by its settings' thresholds (change `trace.settings.critical`
    and analyse again to move them)."""
    threshold = trace.settings.near_tie_threshold if near_tie_threshold is None else near_tie_threshold
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"invalid near_tie_threshold={threshold!r}: allowed a float in [0, 1]")
    lanes = trace.lanes
    return Analysis(
        near_tie_threshold=threshold,
        divergences=[first_divergence(a, b) for a, b in combinations(lanes, 2)],
        near_ties={lane.name: near_ties(lane, threshold) for lane in lanes},
        close_draws={lane.name: close_draws(lane) for lane in lanes},
        forced=[branch for lane in lanes for branch in forced_branches(lane)],
        critical_points={lane.name: critical_points(lane, trace.settings.critical) for lane in lanes},
        fanouts=fanout_groups(lanes),
        replays=replay_comparisons(lanes),
    )


def first_divergence(a: LaneTrace, b: LaneTrace) -> Divergence:
    """The first step where two lanes chose different tokens (None: identical over their common length); for
    lanes of different tokenizers, the first differing character and each lane's step holding it."""
    if not token_aligned(a, b):
        found = first_text_difference(a, b)
        if found is None:
            return Divergence(a.name, b.name, None)
        return Divergence(a.name, b.name, found.step_a, a.token_ids[found.step_a], b.token_ids[found.step_b],
                          found.char, found.step_b)
    step = first_difference(a.token_ids, b.token_ids)
    if step is None:
        return Divergence(a.name, b.name, None)
    return Divergence(a.name, b.name, step, a.token_ids[step], b.token_ids[step])


def near_ties(lane: LaneTrace, threshold: float) -> list[NearTie]:
    """Steps whose top-1 minus top-2 probability is below `threshold`, raw and/or processed (kept for readers
    of older files: it fires on most steps of a flat distribution; critical points are the marks to show)."""
    ties = []
    for record in lane.steps:
        processed = record.margin < threshold and _has_runner_up(record.top)
        raw = record.margin_raw < threshold and _has_runner_up(record.top_raw)
        if processed or raw:
            top = record.top if processed else record.top_raw
            ties.append(NearTie(record.step, record.margin, record.margin_raw, processed, raw,
                                top.ids[0], top.ids[1]))
    return ties


def _has_runner_up(top: TopList) -> bool:
    return len(top) >= 2 and top.probs[1] > 0.0


def close_draws(lane: LaneTrace) -> list[CloseDraw]:
    """For every sampled step: the distance from the draw u to the nearer edge of the chosen token's interval
    [low, high) and the token on the other side of that edge (the neighbour in descending order)."""
    return [_close_draw(record) for record in lane.steps if record.draw is not None and not record.forced]


def _close_draw(record: StepRecord) -> CloseDraw:
    below = record.draw - record.draw_low
    above = record.draw_high - record.draw
    side = "low" if below <= above else "high"
    top = record.top
    rank = top.rank_of(record.token_id)
    neighbour = None if rank is None else rank - 1 if side == "low" else rank + 1
    listed = neighbour is not None and 0 <= neighbour < len(top) and top.probs[neighbour] > 0.0
    other = top.ids[neighbour] if listed else None
    at_edge = (side == "low" and record.draw_low <= 0.0) or (side == "high" and record.draw_high >= 1.0)
    return CloseDraw(record.step, record.draw, min(below, above), None if at_edge else other, side)


def forced_branches(lane: LaneTrace) -> list[ForcedBranch]:
    branch = lane.branch
    found = []
    if branch is not None:
        found.append(ForcedBranch(lane.name, branch["parent"], branch["step"], branch["token_id"]))
    for record in lane.steps:
        if record.forced and (branch is None or record.step != branch["step"]):
            found.append(ForcedBranch(lane.name, None, record.step, record.token_id))
    return found
