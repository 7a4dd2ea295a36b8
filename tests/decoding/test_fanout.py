"""Seed fan-outs: the member specs (names, seeds, markers, refusals), the split tree and summary numbers from
hand-made traces, and members run in one batched run being token-identical to the lanes run alone."""

from __future__ import annotations

import pytest

from decoding.analysis.fanout import (
    MAX_FANOUT,
    fan_out,
    fan_out_sampled,
    fanout_group,
    fanout_groups,
    first_split_steps,
    pairwise_divergence_steps,
    splits,
)
from decoding.chain.spec import Branch, FanoutMember, LaneSpec, assign_seeds
from decoding.engine.engine import Engine
from decoding.records.trace import LaneTrace, PromptInfo, Split, SplitBranch
from tests.fake_source import FakeSource, FakeTokenizer

PROMPT = PromptInfo("p", [1, 2, 3])
HOT = LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11)


def test_members_are_the_lane_with_consecutive_seeds():
    members = fan_out(HOT, 4)
    assert [m.name for m in members] == ["T 1.0 #0", "T 1.0 #1", "T 1.0 #2", "T 1.0 #3"]
    assert [m.seed for m in members] == [11, 12, 13, 14]
    assert [m.fanout for m in members] == [FanoutMember("T 1.0", k) for k in range(4)]
    assert all(m.with_changes(name=HOT.name, seed=11, fanout=None) == HOT for m in members)


def test_an_auto_seed_is_assigned_first_as_the_engine_would():
    auto = LaneSpec("hot", do_sample=True, temperature=1.3)
    (seeded,) = assign_seeds([auto], 5)
    assert [m.seed for m in fan_out(auto, 3, base_seed=5)] == [seeded.seed, seeded.seed + 1, seeded.seed + 2]


@pytest.mark.parametrize("count", [0, MAX_FANOUT + 1, -1, True, 2.0, "8"])
def test_fanout_count_outside_the_range_is_refused(count):
    with pytest.raises(ValueError, match=r"invalid fanout=.*allowed an integer in \[1, 64\]"):
        fan_out(HOT, count)


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (LaneSpec("greedy"), "greedy lane 'greedy' draws nothing"),
        (LaneSpec("beam-4", num_beams=4), "beam lane 'beam-4' draws nothing"),
        (LaneSpec("b", do_sample=True, seed=1, branch=Branch("greedy", 2, 7)), "is a branch"),
    ],
)
def test_lanes_that_cannot_fan_out_say_why(spec, reason):
    with pytest.raises(ValueError, match=f"invalid fanout for lane .*{reason}"):
        fan_out(spec, 8)


def test_fan_out_sampled_expands_sampled_lanes_only():
    specs = fan_out_sampled([LaneSpec("greedy"), HOT, LaneSpec("beam-2", num_beams=2)], 2)
    assert [s.name for s in specs] == ["greedy", "T 1.0 #0", "T 1.0 #1", "beam-2"]
    with pytest.raises(ValueError, match="no sampled lane to fan out"):
        fan_out_sampled([LaneSpec("greedy")], 2)


def test_a_member_marker_needs_a_sampled_lane():
    with pytest.raises(ValueError, match="invalid fanout=.*only on sampled lanes"):
        LaneSpec("greedy #0", fanout=FanoutMember("greedy", 0))


# -------------------------------------------------------------------------------------------- the tree

TOKENS = {
    "A": [1, 2, 3, 4],
    "B": [1, 2, 3, 5],
    "C": [1, 2, 6, 7],
    "D": [1, 8, 9, 9],
    "E": [1, 2, 6, 7],  # C's continuation again
}


def test_splits_merge_shared_prefixes_depth_first():
    assert splits(TOKENS) == [
        Split(1, ["A", "B", "C", "D", "E"], [SplitBranch(2, ["A", "B", "C", "E"]), SplitBranch(8, ["D"])]),
        Split(2, ["A", "B", "C", "E"], [SplitBranch(3, ["A", "B"]), SplitBranch(6, ["C", "E"])]),
        Split(3, ["A", "B"], [SplitBranch(4, ["A"]), SplitBranch(5, ["B"])]),
    ]


def test_members_that_ended_leave_the_tree():
    tokens = {"A": [1, 2], "B": [1, 3, 4], "C": [1, 3, 5], "D": [1]}  # D was cancelled after one token
    assert splits(tokens) == [
        Split(1, ["A", "B", "C"], [SplitBranch(2, ["A"]), SplitBranch(3, ["B", "C"])]),
        Split(2, ["B", "C"], [SplitBranch(4, ["B"]), SplitBranch(5, ["C"])]),
    ]
    assert splits({"A": [1, 2], "B": [1, 2]}) == []


def test_first_split_and_pairwise_divergence_steps():
    # A parts from everyone at step 3 (B), D at 1; C and E never part from each other: left out
    assert first_split_steps(TOKENS) == {"A": 3, "B": 3, "D": 1}
    assert sorted(pairwise_divergence_steps(TOKENS)) == [1, 1, 1, 1, 2, 2, 2, 2, 3]  # C-E identical: no step


def member_lane(name: str, member: int, tokens: list[int], seed: int) -> LaneTrace:
    return LaneTrace(name=name, config={"do_sample": True, "num_beams": 1, "seed": seed}, processors=[],
                     token_ids=tokens, fanout={"group": "g", "member": member})


def test_fanout_group_numbers_from_hand_made_traces():
    lanes = [member_lane(name, k, TOKENS[name], 40 + k) for k, name in enumerate(TOKENS)]
    group = fanout_group(lanes)
    assert group.members == list(TOKENS) and group.seed == 40
    assert group.splits == splits(TOKENS)
    assert group.distinct_continuations == 4
    assert group.mean_first_split_step == pytest.approx(7 / 3)
    assert group.mean_pairwise_divergence_step == pytest.approx(15 / 9)
    same = fanout_group([member_lane("x", 0, [1, 2], 3), member_lane("y", 1, [1, 2], 4)])
    assert (same.splits, same.distinct_continuations, same.mean_first_split_step) == ([], 1, None)
    assert same.mean_pairwise_divergence_step is None


def test_groups_are_found_by_their_markers_in_member_order():
    lanes = [member_lane("b", 1, [1, 3], 8), LaneTrace("greedy", {}, []), member_lane("a", 0, [1, 2], 7)]
    groups = fanout_groups(lanes)
    assert list(groups) == ["g"] and groups["g"].members == ["a", "b"] and groups["g"].seed == 7


# ----------------------------------------------------------------------------------------- in the engine


def test_members_in_one_batched_run_equal_the_lanes_run_alone():
    source = FakeSource(vocab_size=16, peak=0.8)  # flat enough for the members to part
    engine = Engine(source, FakeTokenizer(), eos_token_ids=[])
    others = [LaneSpec("greedy"), LaneSpec("top-k", do_sample=True, top_k=4, seed=2)]
    specs = fan_out_sampled([others[0], HOT, others[1]], 6)
    trace = engine.run(PROMPT, specs, max_new_tokens=8)
    assert source.step_calls == 7 and trace.timing.steps == 7  # every row of every lane in one call per step
    assert max(source.batch_sizes) <= len(specs)
    for spec in specs:
        alone_spec = spec.with_changes(name="alone", fanout=None)
        alone = Engine(FakeSource(vocab_size=16, peak=0.8), FakeTokenizer(), []).run(
            PROMPT, [alone_spec], max_new_tokens=8)
        assert trace.lane(spec.name).token_ids == alone.lanes[0].token_ids, spec.name
        assert trace.lane(spec.name).config["seed" if spec.do_sample else "num_beams"] == (
            spec.seed if spec.do_sample else 1)
    groups = trace.analysis.fanouts
    assert list(groups) == ["T 1.0", "top-k"]
    assert groups["T 1.0"].members == [f"T 1.0 #{k}" for k in range(6)] and groups["T 1.0"].seed == 11
    assert trace.lane("T 1.0 #3").fanout == {"group": "T 1.0", "member": 3}
    assert groups["T 1.0"].distinct_continuations > 1 and groups["T 1.0"].splits


def test_members_share_rows_while_they_agree():
    """Members with the same tokens so far continue one row: each step computes one row per distinct prefix."""
    source = FakeSource(vocab_size=16, peak=6.0)
    trace = Engine(source, FakeTokenizer(), []).run(PROMPT, fan_out(HOT, 8), max_new_tokens=5)
    tokens = [lane.token_ids for lane in trace.lanes]
    assert source.batch_sizes == [len({tuple(ids[: i + 1]) for ids in tokens}) for i in range(4)]
    assert source.batch_sizes[0] < 8  # some members agreed on their first token (peaked distribution)
