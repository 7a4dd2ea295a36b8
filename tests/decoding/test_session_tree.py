"""The session tree (decoding.analysis.session_tree): built from runs, branches made after a run, branches not taken and
continuations; saved and opened byte-identically; every node made again exactly with the model; refusals that
name the node (missing parent, beyond the model's positions, another model) and leave the file as it was."""

from __future__ import annotations

import json

import pytest

from decoding.analysis import session_tree
from decoding.analysis.branch_not_taken import not_taken_spec
from decoding.chain.spec import Branch, LaneSpec, lane_spec
from decoding.engine.engine import Engine, branch_prefix
from decoding.engine.replay import replay_not_taken
from decoding.records import jsonio
from decoding.records.trace import SCHEMA_VERSION, ModelInfo, PromptInfo, RunTrace
from runfiles import run_file
from tests.fake_source import FakeSource, FakeTokenizer

MODEL = "fake"
LANES = [LaneSpec("greedy"), LaneSpec("hot", do_sample=True, temperature=1.5, seed=3),
         LaneSpec("beam", num_beams=2), LaneSpec("forced", forced={1: 9})]


class LimitedSource(FakeSource):
    """A fake model with a known number of positions."""

    max_positions = 24


def engine() -> Engine:
    return Engine(LimitedSource(vocab_size=48), FakeTokenizer(), eos_token_ids=[])


def first_run() -> RunTrace:
    trace = engine().run(PromptInfo("a prompt", [1, 4, 9]), LANES, max_new_tokens=10, model=ModelInfo(MODEL),
                         base_seed=5)
    trace.tree = []
    session_tree.grow(trace.tree, trace.lanes, MODEL)
    return trace


def branch_after_run(trace: RunTrace, parent: str, step: int, token: int, name: str) -> None:
    """What the window's Branch does: a new lane from the parent's first `step` tokens, added to the run and the
    tree."""
    spec = LaneSpec.from_config(name, trace.lane(parent).config, branch=Branch(parent, step, token).to_dict())
    spec = spec.with_changes(forced={})
    lane = engine().run(trace.prompt, [spec], max_new_tokens=trace.settings.max_new_tokens, model=trace.model,
                        base_seed=trace.settings.seed, prefix=branch_prefix(trace, parent, step)).lanes[0]
    trace.lanes.append(lane)
    session_tree.grow(trace.tree, [lane], MODEL)


def ten_branches() -> RunTrace:
    trace = first_run()
    parents = ["greedy", "hot", "beam", "greedy", "b1", "b2", "b5", "hot", "b8", "forced"]
    for number, parent in enumerate(parents, start=1):
        branch_after_run(trace, parent, 1 + number % 5, 10 + number, f"b{number}")
    replay = not_taken_spec(lane_spec(trace.lane("hot")), 2, 7, "hot runner-up")
    lane = replay_not_taken(engine(), trace, replay)
    trace.lanes.append(lane)
    session_tree.grow(trace.tree, [lane], MODEL)
    return trace


def test_ten_branches_and_a_replay_make_a_tree_whose_nodes_hold_their_lanes_tokens():
    trace = ten_branches()
    tree = trace.tree
    assert len(tree) == 4 + 10 + 1
    assert [node.kind for node in tree] == ["run", "run", "run", "forced", *["branch"] * 10, "replay"]
    by_lane = {node.lane: node for node in tree}
    assert by_lane["b5"].parent == by_lane["b1"].id and by_lane["b1"].parent == by_lane["greedy"].id
    assert session_tree.depth(tree, by_lane["b7"].id) == 3 and session_tree.depth(tree, by_lane["b9"].id) == 2
    assert by_lane["hot runner-up"].parent == by_lane["hot"].id
    # the forced lane follows greedy up to its forced step and branches from it there with its forced token
    assert (by_lane["forced"].parent, by_lane["forced"].step) == (by_lane["greedy"].id, 1)
    for lane in trace.lanes:
        node = by_lane[lane.name]
        assert session_tree.full_tokens(tree, node.id) == lane.token_ids
        if node.parent is not None:
            marker = lane.branch or lane.replay_of
            wanted = marker["token_id"] if marker else {int(k): v for k, v in lane.config["forced"].items()}[node.step]
            assert node.token_ids[0] == wanted
            assert node.branch_text == lane.steps[node.step].token_text
    session_tree.check_tree(tree)


def test_a_run_made_again_adds_no_node_twice():
    trace = first_run()
    nodes = list(trace.tree)
    assert session_tree.grow(trace.tree, trace.lanes, MODEL) == nodes
    assert trace.tree == nodes


def test_every_node_comes_back_exactly_after_save_and_open(tmp_path):
    trace = ten_branches()
    trace.tree[5].bookmark, trace.tree[5].note, trace.tree[6].hidden = True, "the good one", True
    path = tmp_path / "run.json"
    run_file.save(trace, path)
    opened = run_file.load(path)
    assert opened.tree == trace.tree
    run_file.save(opened, tmp_path / "again.json")
    assert path.read_bytes() == (tmp_path / "again.json").read_bytes()
    for node in opened.tree:
        lane = session_tree.reproduce(engine(), opened, node.id, MODEL)
        assert lane.token_ids == opened.lane(node.lane).token_ids, node.lane
        assert [r.prob for r in lane.steps] == [r.prob for r in opened.lane(node.lane).steps], node.lane


def test_continuing_a_node_adds_its_lanes_under_it_and_keeps_the_tree():
    trace = ten_branches()
    node = next(n for n in trace.tree if n.lane == "b5")
    tokens = session_tree.full_tokens(trace.tree, node.id)
    result = session_tree.continue_from(engine(), trace, node.id, MODEL,
                                        [LaneSpec("cool", do_sample=True, temperature=0.5, seed=1), LaneSpec("g2")], 4)
    assert [lane.token_ids[: len(tokens)] for lane in result.lanes] == [tokens, tokens]
    assert all(len(lane.token_ids) == len(tokens) + 4 for lane in result.lanes)
    assert result.tree[: len(trace.tree)] == trace.tree
    added = result.tree[len(trace.tree):]
    assert [(n.lane, n.parent, n.step, n.kind) for n in added] == [
        ("cool", node.id, len(tokens), "continue"), ("g2", node.id, len(tokens), "continue")]
    again = jsonio.loads(jsonio.dumps(result))
    lane = session_tree.reproduce(engine(), again, added[0].id, MODEL)
    assert lane.token_ids == result.lane("cool").token_ids


def test_undo_removes_a_leaf_only_and_prune_says_what_it_removed():
    trace = ten_branches()
    hot = next(n for n in trace.tree if n.lane == "hot")
    with pytest.raises(ValueError, match=r"node \d+ has 3 node\(s\) under it"):
        session_tree.remove_leaf(trace.tree, hot.id)
    leaf = session_tree.remove_leaf(trace.tree, trace.tree[-1].id)
    assert leaf.lane == "hot runner-up" and len(trace.tree) == 14
    removed = session_tree.prune(trace.tree, hot.id)
    assert sorted(n.lane for n in removed) == ["b2", "b6", "b8", "b9", "hot"]
    session_tree.check_tree(trace.tree)


def test_a_tree_naming_a_missing_parent_is_refused_by_the_file_reader(tmp_path):
    data = jsonio.to_dict(ten_branches())
    data["tree"][7]["parent"] = 99
    text = json.dumps(data)
    with pytest.raises(jsonio.TraceFormatError, match=r"run.tree\[7\] \(node 7\): its parent node 99 is not in "):
        jsonio.loads(text)
    data["tree"][7]["parent"], data["tree"][7]["step"] = 0, 50
    with pytest.raises(jsonio.TraceFormatError, match=r"step 50 is beyond its parent's 10 tokens"):
        jsonio.loads(json.dumps(data))


def test_a_node_beyond_the_models_positions_or_of_another_model_is_refused_with_the_node_named():
    trace = ten_branches()
    before = json.dumps(jsonio.to_dict(trace))
    node = next(n for n in trace.tree if n.lane == "b5")
    with pytest.raises(ValueError, match=r"cannot continue node \d+ \(10 tokens after the prompt's 3\): invalid "
                                         r"max_new_tokens=23: .* the model has 24"):
        session_tree.continue_from(engine(), trace, node.id, MODEL, None, 13)
    with pytest.raises(ValueError, match=r"node \d+ \('b5'\) was made with model 'fake'; the model open is 'other'"):
        session_tree.continue_from(engine(), trace, node.id, "other", None, 2)
    assert json.dumps(jsonio.to_dict(trace)) == before  # nothing of the run changed by the refused calls


def older_file(trace: RunTrace, path) -> None:
    """`trace` written as a version 3 file (before the session tree): no `tree`."""
    data = jsonio.to_dict(trace)
    del data["tree"]
    data["schema_version"] = 3
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_file_older_than_the_tree_reads_as_one_level_whose_branches_come_back(tmp_path):
    """Lanes branched in the run, after it, and a branch not taken: each a node under the prompt holding its whole
    sequence and its branch marker; each made again from that alone (its steps before the branch forced)."""
    lanes = [*LANES, LaneSpec("in-run", branch=Branch("greedy", 3, 11))]
    trace = engine().run(PromptInfo("a prompt", [1, 4, 9]), lanes, max_new_tokens=10, model=ModelInfo(MODEL),
                         base_seed=5)
    trace.tree = []
    session_tree.grow(trace.tree, trace.lanes, MODEL)
    for parent, step, token, name in (("hot", 2, 12, "after"), ("beam", 4, 13, "of beam")):
        branch_after_run(trace, parent, step, token, name)
    replay = replay_not_taken(engine(), trace, not_taken_spec(lane_spec(trace.lane("greedy")), 2, 7, "runner-up"))
    trace.lanes.append(replay)
    assert [n.parent is None for n in session_tree.tree_of_lanes(trace)] == [True] * 8
    older_file(trace, tmp_path / "v3.json")
    opened = run_file.load(tmp_path / "v3.json")
    assert [(n.lane, n.parent, n.step, n.kind) for n in opened.tree] == [
        (lane.name, None, 0, session_tree.kind_of(lane)) for lane in trace.lanes]
    for node in opened.tree:
        lane = opened.lane(node.lane)
        assert node.token_ids == lane.token_ids and node.branch == lane.branch and node.replay_of == lane.replay_of
        assert session_tree.reproduce(engine(), opened, node.id, MODEL).token_ids == lane.token_ids, node.lane
    again = jsonio.loads(jsonio.dumps(opened))  # saved again: a current version file, the same one-level tree
    assert again.schema_version == SCHEMA_VERSION and again.tree == opened.tree
