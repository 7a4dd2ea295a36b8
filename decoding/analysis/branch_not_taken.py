"""The branch not taken: from a critical point, the same lane with the runner-up taken instead, and how far
the two continuations end up apart.

The replay lane is the lane's own spec with `replay_of = {lane, step, token_id}`. It takes `token_id` at
`step`, and a sampled replay still draws its u there (and discards it): every later step draws the same u as
the original did, so the continuations differ only by the token at `step` and what it causes. (A plain
`forced` step draws nothing, which would shift every later draw by one.) Before `step` it repeats the
original's tokens: same spec, same draws; in one run with the original its rows are the original's rows
until `step` (the engine computes rows continuing the same row with the same token once). After a run,
`decoding.engine.engine.replay_prefix` starts it at `step` from the original's recorded tokens instead (prompt and
prefix prefilled in one call, the draws of the prefix skipped).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from decoding.analysis.compare import first_difference
from decoding.chain.spec import LaneSpec, ReplayOf
from decoding.records.trace import CriticalPoint, LaneTrace, ReplayComparison


def replay_spec(spec: LaneSpec, point: CriticalPoint, name: str | None = None) -> LaneSpec:
    """The spec of lane `spec` forced to the runner-up at its critical point `point`, named `name` or
    "<lane> ↳<step> runner-up" (lane names are unique within a run: the caller picks another if taken)."""
    return not_taken_spec(spec, point.step, point.runner_up, name)


def not_taken_spec(spec: LaneSpec, step: int, token_id: int, name: str | None = None) -> LaneSpec:
    """The spec of lane `spec` taking `token_id` at `step` instead, with the same draws everywhere else."""
    if spec.replay_of is not None:  # one marker holds one forked step: a second fork would lose the first
        raise ValueError(
            f"invalid replay of lane {spec.name!r}: it replays lane {spec.replay_of.lane!r} already (allowed: "
            "lanes that are not replays)"
        )
    if spec.branch is not None and step <= spec.branch.step:
        raise ValueError(
            f"invalid replay step={step} of lane {spec.name!r}: allowed after its branch step {spec.branch.step} "
            f"(before it the lane copies {spec.branch.parent!r}: replay that lane)"
        )
    name = name or f"{spec.name} ↳{step} runner-up"
    return replace(spec, name=name, fanout=None, replay_of=ReplayOf(spec.name, step, token_id))


@dataclass(frozen=True)
class ContinuationComparison:
    """Two token sequences compared from a start step."""

    first_difference: int | None  # the first step (>= start) where they differ; None: same over their common length
    shared_prefix: int  # tokens from start on that both took before the first difference
    edit_distance: int  # Levenshtein distance between the two sequences from start on (token ids)
    distance: float  # edit_distance / the longer one's length from start (0.0 when both are empty)


def compare_continuations(a: list[int], b: list[int], start: int = 0) -> ContinuationComparison:
    """How far `a[start:]` and `b[start:]` are apart."""
    tail_a, tail_b = list(a[start:]), list(b[start:])
    differs = first_difference(tail_a, tail_b)
    shared = min(len(tail_a), len(tail_b)) if differs is None else differs
    edits = levenshtein(tail_a, tail_b)
    longer = max(len(tail_a), len(tail_b))
    first = None if differs is None else start + differs
    return ContinuationComparison(first, shared, edits, edits / longer if longer else 0.0)


def levenshtein(a: list[int], b: list[int]) -> int:
    """Insertions, deletions and substitutions turning `a` into `b` (two rows of the dynamic programme)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def replay_comparisons(lanes: list[LaneTrace]) -> list[ReplayComparison]:
    """Every replay lane among `lanes` against the lane it replays (when that lane is there), on the tokens
    after the replay step."""
    by_name = {lane.name: lane for lane in lanes}
    found = []
    for lane in lanes:
        marker = lane.replay_of
        original = by_name.get(marker["lane"]) if marker else None
        if original is None:
            continue
        step = marker["step"]
        comparison = compare_continuations(original.token_ids, lane.token_ids, step + 1)
        original_token = original.token_ids[step] if step < len(original.token_ids) else None
        found.append(ReplayComparison(
            lane=lane.name, of=original.name, step=step, token_id=marker["token_id"],
            original_token_id=original_token, first_difference=comparison.first_difference,
            shared_prefix=comparison.shared_prefix, edit_distance=comparison.edit_distance,
            distance=comparison.distance,
        ))
    return found
