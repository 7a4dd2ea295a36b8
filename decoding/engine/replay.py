"""Replay a recorded run: rebuild its lanes' specs, re-run them with a model and compare every token.

Lanes run together in one run, except branch lanes whose parent cannot be followed in-run (a beam lane,
another branch, or a parent not in the file): each of those re-runs alone from its parent's recorded tokens
(a Prefix), as the branch was made after the original run. Fan-out members and branch-not-taken replays
are ordinary lanes here (a replay runs from step 0 beside the lane it replays: their rows are shared until
its replay step).

`replay_not_taken` runs one branch-not-taken replay after a run, from its replay step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from decoding.analysis.compare import first_difference
from decoding.analysis.text_align import tokenizer_of
from decoding.chain.spec import LaneSpec, follows_in_run, specs_of
from decoding.engine.engine import Cancel, Engine, Prefix, replay_prefix
from decoding.records.trace import LaneTrace, RunTrace, StepRecord


@dataclass
class Mismatch:
    lane: str
    step: int | None  # first step whose token differs (None: lane missing or only sequences differ)
    expected: int | None
    got: int | None
    detail: str = ""

    def describe(self) -> str:
        if self.step is None:
            return f"lane {self.lane!r}: {self.detail}"
        text = f"lane {self.lane!r} step {self.step}: expected token {self.expected}, got {self.got}"
        return f"{text} ({self.detail})" if self.detail else text


@dataclass
class ReplayGroup:
    specs: list[LaneSpec]
    prefix: Prefix | None


def plan(trace: RunTrace) -> list[ReplayGroup]:
    specs = specs_of(trace)
    main, alone = [], []
    for spec in specs:
        if spec.branch is None or follows_in_run(spec, specs):
            main.append(spec)
        else:
            alone.append(spec)
    groups = [ReplayGroup(main, None)] if main else []
    for spec in alone:
        groups.append(ReplayGroup([spec], _prefix_from_file(trace, spec)))
    return groups


def _prefix_from_file(trace: RunTrace, spec: LaneSpec) -> Prefix:
    """The branch lane's own recorded steps before its branch point (they are its parent's)."""
    lane = trace.lane(spec.name)
    step = spec.branch.step
    return Prefix(list(lane.token_ids[:step]), list(lane.steps[:step]), tokenizer=tokenizer_of(lane))


def replay(engine: Engine, trace: RunTrace, provider: str = "") -> RunTrace:
    """Re-run every lane of `trace` with `engine`; returns a RunTrace with the lanes in the original order.
    ValueError (before any model work) when a token id of the file is outside the model's vocabulary;
    RuntimeError when the model fails during the replay."""
    check_token_ids(trace, engine.source.vocab_size)
    lanes: dict[str, LaneTrace] = {}
    result = None
    for group in plan(trace):
        result = engine.run(
            trace.prompt,
            group.specs,
            max_new_tokens=trace.settings.max_new_tokens,
            model=trace.model,
            provider=provider,
            base_seed=trace.settings.seed,
            prefix=group.prefix,
        )
        if result.error:
            raise RuntimeError(result.error)
        lanes.update({lane.name: lane for lane in result.lanes})
    result.lanes = [lanes[lane.name] for lane in trace.lanes]
    return result


def check_token_ids(trace: RunTrace, vocab_size: int) -> None:
    """ValueError naming the first token id (prompt, lanes, forced and branch tokens) outside [0, vocab_size); a
    lane of another tokenizer (prompt_ids set) is its own model's, checked as it opens."""
    places = [("prompt", trace.prompt.ids)]
    for lane in trace.lanes:
        if lane.prompt_ids is not None:
            continue
        forced = [int(token) for token in lane.config.get("forced", {}).values()]
        branch = [lane.branch["token_id"]] if lane.branch else []
        places.append((f"lane {lane.name!r}", [*lane.token_ids, *forced, *branch]))
    for where, ids in places:
        outside = [token for token in ids if not 0 <= token < vocab_size]
        if outside:
            raise ValueError(f"{where} has token id {outside[0]}, outside the model's vocabulary (0..{vocab_size - 1})")


def compare(expected: RunTrace, got: RunTrace) -> list[Mismatch]:
    """One Mismatch per lane whose tokens (or beam sequences) differ, at its first differing step."""
    found = []
    got_lanes = {lane.name: lane for lane in got.lanes}
    for lane in expected.lanes:
        other = got_lanes.get(lane.name)
        if other is None:
            found.append(Mismatch(lane.name, None, None, None, "missing from the replay"))
            continue
        mismatch = _first_difference(lane, other)
        if mismatch is not None:
            found.append(mismatch)
    return found


def _first_difference(lane: LaneTrace, other: LaneTrace) -> Mismatch | None:
    if lane.prompt_ids != other.prompt_ids:
        return Mismatch(lane.name, None, None, None, "its model's tokenizer encodes the prompt to other ids now")
    a, b = lane.token_ids, other.token_ids
    step = first_difference(a, b)
    if step is None and len(a) != len(b):  # the same tokens, but one lane went on: the first extra token
        step = min(len(a), len(b))
    if step is not None:
        return Mismatch(lane.name, step, a[step] if step < len(a) else None, b[step] if step < len(b) else None,
                        _how_much(lane, other, step))
    if (lane.sequences or None) != (other.sequences or None):
        return Mismatch(lane.name, None, None, None, "beam sequences differ (best sequence identical)")
    return None


def _how_much(lane: LaneTrace, other: LaneTrace, step: int) -> str:
    """By how much the step differs: each token's raw probability as recorded and as replayed (where both lanes
    recorded the step and listed the token among their top-N)."""
    if step >= len(lane.steps) or step >= len(other.steps):
        return ""
    recorded, replayed = lane.steps[step], other.steps[step]
    parts = []
    for token in dict.fromkeys((recorded.token_id, replayed.token_id)):
        before, after = _raw_prob(recorded, token), _raw_prob(replayed, token)
        if before is not None and after is not None:
            parts.append(f"p_raw({token}) {before:.4g} recorded, {after:.4g} replayed")
    return "; ".join(parts)


def _raw_prob(record: StepRecord, token: int) -> float | None:
    if record.token_id == token:
        return record.prob_raw
    return next((entry.prob for entry in record.top_raw if entry.id == token), None)


def replay_not_taken(
    engine: Engine,
    trace: RunTrace,
    spec: LaneSpec,
    *,
    on_step: Callable[[StepRecord], None] | None = None,
    cancel: Cancel = None,
    provider: str = "",
) -> LaneTrace:
    """Run the branch-not-taken replay `spec` (decoding.analysis.branch_not_taken) of a finished run: a one-lane run
    from the replayed lane's recorded tokens before the replay step (prefilled with the prompt in one call;
    the draws of those steps skipped), the same tokens a run of `spec` beside that lane from step 0 gives.
    Returns its trace, markers included; a failing source leaves what it generated and the error."""
    run_spec = replace(spec, branch=None)  # a branch point of the replayed lane lies inside the prefix
    result = engine.run(
        trace.prompt,
        [run_spec],
        max_new_tokens=trace.settings.max_new_tokens,
        model=trace.model,
        provider=provider,
        base_seed=trace.settings.seed,
        prefix=replay_prefix(trace, spec),
        cancel=cancel,
        on_step=None if on_step is None else lambda _lane, record: on_step(record),
    )
    lane = result.lanes[0]
    lane.branch = spec.branch.to_dict() if spec.branch else None
    if result.error and not lane.error:
        lane.error = result.error
    return lane
