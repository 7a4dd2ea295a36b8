"""`main.py tree` and `main.py run --from RUN.json --node ID` with the tiny model: the tree printed with its branch
tokens, lane names and lengths; a node continued, its new lanes under it in the file, which replays node by
node; bad input (no such node, a node of another model, beyond the model's positions) one line, exit code 2,
the file read unchanged."""

from __future__ import annotations

import json

from decoding.analysis import session_tree
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import branch_prefix
from models.open_model import open_model
from runfiles import run_file
from tests.cli.test_run import cli


def saved_run_with_branches(capsys, tiny_model_dir, path):
    code, _out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", "Once upon a time",
                          "--max-new-tokens", "8", "--lane", "greedy", "--lane", "sample:temperature=1.2,seed=3",
                          "--json", str(path), "--device", "cpu")
    assert code == 0, err
    trace = run_file.load(path)
    model = open_model(str(tiny_model_dir), "cpu")
    engine = model.engine()
    for step, parent in ((2, "greedy"), (4, "T 1.2")):
        token = trace.lane(parent).steps[step].top[1].id
        spec = LaneSpec.from_config(f"{parent} ↳{step}", trace.lane(parent).config,
                                    Branch(parent, step, token).to_dict())
        lane = engine.run(trace.prompt, [spec], max_new_tokens=8, model=trace.model, base_seed=trace.settings.seed,
                          prefix=branch_prefix(trace, parent, step)).lanes[0]
        trace.lanes.append(lane)
        session_tree.grow(trace.tree, [lane], trace.model.name)
    trace.tree[2].bookmark, trace.tree[2].note = True, "odd"
    run_file.save(trace, path)
    return trace


def test_tree_prints_every_node_indented_with_branch_tokens_and_lengths(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    trace = saved_run_with_branches(capsys, tiny_model_dir, path)
    code, out, err = cli(capsys, "tree", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"prompt 'Once upon a time' ({len(trace.prompt.ids)} tokens) · {trace.model.name} · 4 nodes"
    branch_text = trace.lane("greedy ↳2").steps[2].token_text
    assert lines[1] == "  [0] greedy · run · 8 tokens · length"
    assert lines[2] == f"    [2] greedy ↳2 · branch · at step 2 on {branch_text!r} · 6 tokens (8 after the prompt) · " \
                       "length ★ 'odd'"
    assert lines[3].startswith("  [1] T 1.2 · run · 8 tokens")
    assert lines[4].startswith("    [3] T 1.2 ↳4 · branch · at step 4 on ")


def test_run_from_a_node_continues_it_and_the_file_grows_under_it(capsys, tiny_model_dir, tmp_path):
    path, out_path = tmp_path / "run.json", tmp_path / "more.json"
    trace = saved_run_with_branches(capsys, tiny_model_dir, path)
    before = path.read_bytes()
    code, out, err = cli(capsys, "run", "--from", str(path), "--node", "3", "--max-new-tokens", "5",
                         "--lane", "greedy", "--model", str(tiny_model_dir), "--json", str(out_path), "--device", "cpu")
    assert code == 0, err
    assert path.read_bytes() == before
    grown = run_file.load(out_path)
    assert grown.tree[:4] == trace.tree
    node = grown.tree[4]
    assert (node.parent, node.step, node.lane, node.kind) == (3, 8, "greedy", "continue")
    assert grown.lane("greedy").token_ids[:8] == trace.lane("T 1.2 ↳4").token_ids
    assert len(grown.lane("greedy").token_ids) == 13
    model = open_model(str(tiny_model_dir), "cpu")
    for tree_node in grown.tree:
        lane = session_tree.reproduce(model.engine(), grown, tree_node.id, grown.model.name)
        assert lane.token_ids == session_tree.full_tokens(grown.tree, tree_node.id)
    code, out, err = cli(capsys, "tree", str(out_path))
    assert "      [4] greedy · continue · at step 8 on" in out


def test_bad_continuations_are_one_line_and_leave_the_file(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    saved_run_with_branches(capsys, tiny_model_dir, path)
    before = path.read_bytes()
    model = ("--model", str(tiny_model_dir), "--device", "cpu")
    code, _out, err = cli(capsys, "run", "--from", str(path), "--node", "9", *model)
    assert code == 2 and "no node 9 in the session tree (ids: `main.py tree" in err
    code, _out, err = cli(capsys, "run", "--from", str(path), "--node", "1", "--max-new-tokens", "600", *model)
    assert code == 2 and "cannot continue node 1 (8 tokens after the prompt's" in err and "positions" in err
    data = json.loads(before)
    data["tree"][1]["model"] = "another-model"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    code, _out, err = cli(capsys, "run", "--from", str(other), "--node", "3", *model)
    assert code == 2 and "node 1 ('T 1.2') was made with model 'another-model'" in err
    code, _out, err = cli(capsys, "run", "--from", str(path), *model)
    assert code == 2 and "--from and --node go together" in err
    data["tree"][3]["parent"] = 7
    other.write_text(json.dumps(data), encoding="utf-8")
    code, _out, err = cli(capsys, "tree", str(other))
    assert code == 2 and "run.tree[3] (node 3): its parent node 7 is not in the tree before it" in err
    assert path.read_bytes() == before
