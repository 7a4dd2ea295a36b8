"""Seed fan-outs: a sampled lane run as K members that differ only in their seeds, and the tree their tokens
make.

Member k (0-based) of the fan-out of lane "T 1.0" is the lane "T 1.0 #k" with seed = the lane's seed + k, so
member 0 is the lane itself. To the engine the members are ordinary lanes: all their rows go into the same
batched step as the other lanes' (and rows that continue the same row with the same token, as members do
until they part, are computed once). Their traces carry `fanout = {"group", "member"}`.

The tree (`fanout_group`) is built from the members' token ids only: shared prefixes merge, and each split is
the step where members that agreed so far take two or more different tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations

import numpy as np

from decoding.analysis.compare import first_difference
from decoding.chain.parameters import check_int
from decoding.chain.spec import FanoutMember, LaneSpec, assign_seeds
from decoding.records.trace import FanoutGroup, LaneTrace, Split, SplitBranch

MAX_FANOUT = 64


def check_fanout(count: object) -> int:
    return check_int("fanout", count, 1, MAX_FANOUT)


def refusal(spec: LaneSpec) -> str | None:
    """Why `spec` cannot be fanned out (None: it can)."""
    if not spec.do_sample:
        kind = "beam" if spec.is_beam else "greedy"
        return f"{kind} lane {spec.name!r} draws nothing: every member would repeat the same tokens"
    if spec.branch is not None:
        return f"lane {spec.name!r} is a branch: fan out its parent instead"
    if spec.replay_of is not None:
        return f"lane {spec.name!r} replays a branch not taken of lane {spec.replay_of.lane!r}"
    if spec.fanout is not None:
        return f"lane {spec.name!r} is already member {spec.fanout.member} of {spec.fanout.group!r}"
    return None


def member_name(group: str, member: int) -> str:
    return f"{group} #{member}"


def fan_out(spec: LaneSpec, count: int, base_seed: int | None = None) -> list[LaneSpec]:
    """The `count` members of sampled lane `spec`. A lane whose seed is auto gets one first, as the engine
    would give it (assign_seeds with `base_seed`), so member 0 is exactly the lane run alone."""
    check_fanout(count)
    reason = refusal(spec)
    if reason is not None:
        raise ValueError(f"invalid fanout for lane {spec.name!r}: {reason} (allowed on sampled lanes)")
    (spec,) = assign_seeds([spec], base_seed)
    return [
        replace(spec, name=member_name(spec.name, k), seed=spec.seed + k, fanout=FanoutMember(spec.name, k))
        for k in range(count)
    ]


def fan_out_sampled(specs: Sequence[LaneSpec], count: int, base_seed: int | None = None) -> list[LaneSpec]:
    """Every lane that can be fanned out (sampled, not a branch or replay) as `count` members in its place; the
    others as they are. ValueError when no lane can."""
    check_fanout(count)
    if all(refusal(spec) for spec in specs):
        raise ValueError(f"invalid fanout={count}: no sampled lane to fan out (use a sample: lane)")
    out: list[LaneSpec] = []
    for spec in specs:
        out.extend([spec] if refusal(spec) else fan_out(spec, count, base_seed))
    return out


# ------------------------------------------------------------------------------------------------ the tree


def fanout_groups(lanes: Sequence[LaneTrace]) -> dict[str, FanoutGroup]:
    """Every fan-out among `lanes` (by their `fanout` markers), in the order their first members appear."""
    members: dict[str, list[LaneTrace]] = {}
    for lane in lanes:
        if lane.fanout:
            members.setdefault(lane.fanout["group"], []).append(lane)
    return {group: fanout_group(sorted(found, key=lambda lane: lane.fanout["member"]))
            for group, found in members.items()}


def fanout_group(members: Sequence[LaneTrace]) -> FanoutGroup:
    """The tree and summary numbers of one fan-out's member lanes (in member order)."""
    names = [lane.name for lane in members]
    tokens = {lane.name: list(lane.token_ids) for lane in members}
    return FanoutGroup(
        members=names,
        seed=_group_seed(members),
        splits=splits(tokens, names),
        distinct_continuations=len({tuple(ids) for ids in tokens.values()}),
        mean_first_split_step=_mean(first_split_steps(tokens).values()),
        mean_pairwise_divergence_step=_mean(pairwise_divergence_steps(tokens)),
    )


def splits(tokens: dict[str, list[int]], members: Sequence[str] | None = None, step: int = 0) -> list[Split]:
    """The splits of `members` (default: all) from `step` on, depth first: where the members still together
    first take different tokens, then the splits below each branch (branches by their first member)."""
    group = list(tokens) if members is None else list(members)
    while True:
        present = [name for name in group if step < len(tokens[name])]  # the others ended before `step`
        if len(present) < 2:
            return []
        by_token: dict[int, list[str]] = {}
        for name in present:
            by_token.setdefault(tokens[name][step], []).append(name)
        if len(by_token) > 1:
            break
        group, step = present, step + 1
    branches = [SplitBranch(token, names) for token, names in by_token.items()]
    found = [Split(step, present, branches)]
    for branch in branches:
        found.extend(splits(tokens, branch.members, step + 1))
    return found


def first_split_steps(tokens: dict[str, list[int]]) -> dict[str, int]:
    """For each member that parts from every other one: the step from which its tokens are its own (the first
    step where it differs from every other member). Members whose whole continuation another member shares
    are left out."""
    found = {}
    for name, ids in tokens.items():
        others = [first_difference(ids, other) for key, other in tokens.items() if key != name]
        if others and None not in others:
            found[name] = max(others)
    return found


def pairwise_divergence_steps(tokens: dict[str, list[int]]) -> list[int]:
    """The first differing step of every pair of members that differ over their common length."""
    steps = (first_difference(tokens[a], tokens[b]) for a, b in combinations(tokens, 2))
    return [step for step in steps if step is not None]


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance between two token sequences (insertions, deletions, substitutions), one numpy row
    at a time: a row's substitutions and deletions at once, then its insertions as a running minimum.

    >>> edit_distance([1, 2, 3, 4], [1, 3, 4, 5])
    2
    """
    previous = np.arange(len(b) + 1)
    right = np.asarray(b)
    offsets = np.arange(len(b) + 1)
    for i, token in enumerate(a, start=1):
        row = np.empty_like(previous)
        row[0] = i
        row[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (right != token))
        previous = np.minimum.accumulate(row - offsets) + offsets  # insertions: row[j] <= row[j-1] + 1
    return int(previous[-1])


def mean_pairwise_edit_distance(tokens: Sequence[Sequence[int]]) -> float | None:
    """How far apart members' continuations are on average, in tokens: the mean edit distance over every pair.
    Unlike counting distinct continuations, it keeps growing once every member differs (None: fewer than two).
    """
    return _mean(edit_distance(a, b) for a, b in combinations(tokens, 2))


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _group_seed(members: Sequence[LaneTrace]) -> int | None:
    first = members[0]
    seed = first.config.get("seed")
    return None if seed is None else int(seed) - int(first.fanout["member"])
