"""Critical points: the steps where a small change decides between strong candidates.

A near-tie by margin (top-1 − top-2 < 0.05) fires on almost every step of a hot lane: a flat distribution has
small margins everywhere, yet no single token there matters. A critical point asks for strong candidates:

- a sampled step is critical when its draw u fell within `draw_distance` of an edge of the chosen token's
  interval [low, high) and the token across that edge (its neighbour in descending probability order) has
  probability >= `min_prob`: u a little to that side would have taken the neighbour;
- a greedy or beam step is critical when its top two are close relative to their size: p2 / p1 >= `ratio`
  with p1 >= `min_prob` (a small change of the logits swaps them).

Forced steps choose nothing and are never critical. Probabilities are the processed ones (what the lane chose
from). Thresholds: `CriticalSettings` (decoding.records.trace), recorded in the run's settings.
"""

from __future__ import annotations

from decoding.records.trace import CriticalPoint, CriticalSettings, LaneTrace, StepRecord


def critical_points(lane: LaneTrace, settings: CriticalSettings) -> list[CriticalPoint]:
    """The lane's critical points, by step."""
    found = (critical_point(record, settings) for record in lane.steps)
    return [point for point in found if point is not None]


def critical_point(record: StepRecord, settings: CriticalSettings) -> CriticalPoint | None:
    """The step's critical point, or None (usable while a run streams, record by record)."""
    if record.forced:
        return None
    if record.draw is not None:
        return _close_draw(record, settings)
    return _close_top_two(record, settings)


def _close_draw(record: StepRecord, settings: CriticalSettings) -> CriticalPoint | None:
    """The nearer qualifying edge of the chosen interval: within draw_distance, a neighbour with real mass."""
    top = record.top
    rank = top.rank_of(record.token_id)
    if rank is None:  # chosen beyond the recorded top-N: its neighbours are unknown (and it is no strong pick)
        return None
    edges = [
        (record.draw - record.draw_low, rank - 1),  # the more likely neighbour
        (record.draw_high - record.draw, rank + 1),  # the less likely one
    ]
    close = [
        (distance, neighbour)
        for distance, neighbour in edges
        if 0 <= neighbour < len(top) and distance <= settings.draw_distance
        and top.probs[neighbour] >= settings.min_prob
    ]
    if not close:
        return None
    distance, neighbour = min(close, key=lambda pair: pair[0])
    return CriticalPoint(record.step, "draw", record.token_id, top.ids[neighbour], record.prob, top.probs[neighbour],
                         distance=distance)


def _close_top_two(record: StepRecord, settings: CriticalSettings) -> CriticalPoint | None:
    if len(record.top) < 2:
        return None
    first, second = record.top[0], record.top[1]
    # a beam's best path may have taken the second (then the first is the runner-up), or neither: the tie
    # of the top two did not decide its token then
    if record.token_id not in (first.id, second.id) or first.prob < settings.min_prob or second.prob <= 0.0:
        return None
    ratio = second.prob / first.prob
    if ratio < settings.ratio:
        return None
    runner_up = second if record.token_id == first.id else first
    return CriticalPoint(record.step, "tie", record.token_id, runner_up.id, record.prob, runner_up.prob,
                         ratio=ratio)


def runner_up(record: StepRecord, settings: CriticalSettings) -> int | None:
    """The token a step nearly took: its critical point's runner-up, else its best other candidate (None when
    it had no other candidate with probability)."""
    point = critical_point(record, settings)
    if point is not None:
        return point.runner_up
    ranked = sorted(record.top, key=lambda t: t.rank)
    return next((t.id for t in ranked if t.id != record.token_id and t.prob > 0.0), None)
