"""RunTrace JSON: schema validation, byte-identical round trip, atomic writes, version check, and identical
JSON for the same seed across two processes."""

from __future__ import annotations

import copy
import gc
import json
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.records import jsonio
from decoding.records.trace import SCHEMA_VERSION, PromptInfo, TokenProb, TopList, as_top_list
from runfiles import run_file
from tests.fake_source import FakeSource, FakeTokenizer

REPO = Path(__file__).resolve().parents[2]
LANES = [
    LaneSpec("greedy"),
    LaneSpec("beam-3", num_beams=3, num_return_sequences=3),
    LaneSpec("top-k", do_sample=True, top_k=5, seed=1),
    LaneSpec("top-p", do_sample=True, top_p=0.8, temperature=0.7, seed=2),
    LaneSpec("branch", branch=Branch("greedy", 2, 7)),
    LaneSpec("forced", forced={1: 9}, repetition_penalty=1.3),
]


def fake_trace(max_new_tokens=8):
    engine = Engine(FakeSource(vocab_size=48), FakeTokenizer(), eos_token_ids=[3])
    return engine.run(PromptInfo("a prompt ✓ 中文", [1, 4, 9]), LANES, max_new_tokens=max_new_tokens)


def test_export_validates_against_the_shipped_schema():
    data = jsonio.to_dict(fake_trace())
    jsonschema.validate(data, run_file.schema())
    for key in ("schema_version", "model", "prompt", "lanes", "analysis"):
        assert key in data
    for lane in data["lanes"]:
        for key in ("name", "config", "token_ids", "text", "steps"):
            assert key in lane
        for step in lane["steps"]:
            for key in (
                "token_id",
                "token_text",
                "prob",
                "prob_raw",
                "logprob",
                "logprob_raw",
                "entropy",
                "entropy_raw",
                "margin_raw",
                "top",
                "top_raw",
            ):
                assert key in step
    beam = data["lanes"][1]
    assert beam["token_ids"] == beam["sequences"][0] and len(beam["sequence_scores"]) == 3


def test_schema_rejects_a_file_missing_required_keys():
    data = jsonio.to_dict(fake_trace())
    del data["lanes"][0]["steps"][0]["top_raw"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, run_file.schema())


def test_export_import_export_is_byte_identical(tmp_path):
    trace = fake_trace()
    first = tmp_path / "run.json"
    run_file.save(trace, first)
    loaded = run_file.load(first)
    second = tmp_path / "again.json"
    run_file.save(loaded, second)
    assert first.read_bytes() == second.read_bytes()
    assert loaded == trace  # the view is reproduced without the model, analysis included


def test_minus_infinity_survives_the_round_trip():
    trace = fake_trace()
    forced = trace.lane("forced")
    forced.steps[1].logprob = float("-inf")
    text = jsonio.dumps(trace)
    assert "Infinity" not in text
    assert jsonio.loads(text).lane("forced").steps[1].logprob == float("-inf")


def test_write_is_atomic_when_it_fails(tmp_path, monkeypatch):
    target = tmp_path / "run.json"
    target.write_text("previous content", encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        run_file.save(fake_trace(), target)
    assert target.read_text(encoding="utf-8") == "previous content"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_version_mismatch_and_foreign_files_are_refused_clearly(tmp_path):
    data = jsonio.to_dict(fake_trace())
    data["schema_version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(jsonio.TraceFormatError, match="schema_version 99; this Branchpoint reads version 1"):
        run_file.load(path)
    with pytest.raises(jsonio.TraceFormatError, match="saved by a newer Branchpoint. Update Branchpoint"):
        run_file.load(path)
    data["schema_version"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(jsonio.TraceFormatError, match=r"schema_version 0; .* \(export it again"):
        run_file.load(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(jsonio.TraceFormatError, match="is not JSON"):
        run_file.load(path)
    path.write_text(json.dumps({"schema_version": 1, "lanes": []}), encoding="utf-8")
    with pytest.raises(jsonio.TraceFormatError, match="not a valid Branchpoint run"):
        run_file.load(path)
    with pytest.raises(jsonio.TraceFormatError, match="cannot read"):
        run_file.load(tmp_path / "missing.json")


SCRIPT = """
import sys
sys.path.insert(0, {repo!r})
from decoding.records import jsonio
from tests.decoding.test_jsonio import fake_trace
trace = fake_trace(10)
trace.timing = type(trace.timing)()
for lane in trace.lanes:
    for step in lane.steps:
        step.time_ms = 0.0
sys.stdout.write(jsonio.dumps(trace))
"""


def test_same_seeds_give_identical_json_in_two_processes():
    """Timing is the only thing that may differ between processes; it is zeroed before comparing."""
    script = SCRIPT.format(repo=str(REPO))
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2)
    ]
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 10_000


# ------------------------------------------------------------------ version 2: fan-outs, replays, sweeps


def featured_trace():
    """A run with every version-2 feature: a fan-out, a branch-not-taken replay beside the lane it replays,
    non-default critical-point thresholds, and a temperature sweep."""
    from decoding.analysis.branch_not_taken import not_taken_spec
    from decoding.analysis.fanout import fan_out_sampled
    from decoding.analysis.sweep import sweep_inputs, temperature_sweep
    from decoding.records.trace import CriticalSettings

    source = FakeSource(vocab_size=32, peak=1.5)
    engine = Engine(source, FakeTokenizer(), eos_token_ids=[3], critical=CriticalSettings(0.05, 0.7, 0.08))
    hot = LaneSpec("hot", do_sample=True, temperature=1.2, seed=4)
    specs = [*fan_out_sampled([LaneSpec("greedy"), hot], 4), not_taken_spec(LaneSpec("greedy"), 2, 5)]
    trace = engine.run(PromptInfo("a prompt", [1, 4, 9]), specs, max_new_tokens=6)
    inputs = sweep_inputs(trace, "hot #1", 3)
    trace.sweeps = [temperature_sweep(source.logits_for(inputs.ids), inputs, [0.0, 0.5, 1.0, 2.0])]
    return trace


def test_fanouts_replays_and_sweeps_round_trip_byte_identical(tmp_path):
    trace = featured_trace()
    data = jsonio.to_dict(trace)
    jsonschema.validate(data, run_file.schema())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["settings"]["critical"] == {"draw_distance": 0.05, "ratio": 0.7, "min_prob": 0.08}
    assert data["lanes"][2]["fanout"] == {"group": "hot", "member": 1} and data["lanes"][2]["config"]["seed"] == 5
    assert data["lanes"][-1]["replay_of"] == {"lane": "greedy", "step": 2, "token_id": 5}
    assert list(data["analysis"]["fanouts"]) == ["hot"] and data["analysis"]["replays"][0]["of"] == "greedy"
    assert [p["temperature"] for p in data["sweeps"][0]["points"]] == [0.0, 0.5, 1.0, 2.0]
    first = tmp_path / "run.json"
    run_file.save(trace, first)
    loaded = run_file.load(first)
    assert loaded == trace
    second = tmp_path / "again.json"
    run_file.save(loaded, second)
    assert first.read_bytes() == second.read_bytes()


def test_a_version_1_file_opens_with_its_analysis_and_critical_points():
    """tests/data/run-v1.json was written by Branchpoint before version 2 (greedy, beam, a sampled lane with a
    forced step, a branch)."""
    path = REPO / "tests" / "data" / "run-v1.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["schema_version"] == 1
    trace = run_file.load(path)
    assert trace.schema_version == SCHEMA_VERSION and trace.sweeps == []
    # before the session tree: one level, every lane a node under the prompt; the branch keeps its marker
    assert [(node.lane, node.parent, node.step) for node in trace.tree] == [
        ("greedy", None, 0), ("beam-2", None, 0), ("hot", None, 0), ("branch", None, 0)]
    assert trace.tree[3].branch == trace.lane("branch").branch and trace.tree[3].kind == "branch"
    assert trace.tree[3].token_ids == trace.lane("branch").token_ids
    assert trace.settings.critical == type(trace.settings.critical)()  # the default thresholds
    for key in ("divergences", "near_ties", "close_draws", "forced", "near_tie_threshold"):
        assert jsonio.to_dict(trace)["analysis"][key] == stored["analysis"][key], key
    assert [lane["token_ids"] for lane in jsonio.to_dict(trace)["lanes"]] == [
        lane["token_ids"] for lane in stored["lanes"]]
    assert set(trace.analysis.critical_points) == {"greedy", "beam-2", "hot", "branch"}
    assert trace.analysis.fanouts == {} and trace.analysis.replays == []
    jsonschema.validate(jsonio.to_dict(trace), run_file.schema())  # saved again, it is a version 5 file
    again = jsonio.loads(jsonio.dumps(trace))
    assert jsonio.dumps(again) == jsonio.dumps(trace)


def test_an_unreadable_version_names_the_readable_ones():
    data = jsonio.to_dict(fake_trace())
    data["schema_version"] = 7
    with pytest.raises(jsonio.TraceFormatError,
                       match="schema_version 7; this Branchpoint reads version 1 or 2 or 3 or 4 or 5 or 6"):
        jsonio.loads(json.dumps(data))


def test_bad_critical_settings_in_a_file_are_refused_clearly():
    data = jsonio.to_dict(fake_trace())
    data["settings"]["critical"]["ratio"] = 2.0
    with pytest.raises(jsonio.TraceFormatError, match=r"invalid critical ratio=2.0: allowed a float in \(0, 1\]"):
        jsonio.loads(json.dumps(data))


def test_explained_lanes_round_trip_byte_identical_one_line_each():
    from tests.inside_samples import CHINESE, ENGLISH, explained_trace

    trace = explained_trace(ENGLISH)
    trace.explanations.append(explained_trace(CHINESE).explanations[0])  # another sequence: kept, matched by none
    text = jsonio.dumps(trace)
    again = jsonio.loads(text)
    assert jsonio.dumps(again) == text
    jsonschema.validate(jsonio.to_dict(again), run_file.schema())
    lines = text.splitlines()
    start = lines.index(' "explanations": [')
    assert lines[-1] == "}" and len(lines) - start == 5  # the key, one line per explanation, "]", "}"
    assert [e.to_json() for e in again.explanations] == [e.to_json() for e in trace.explanations]
    stored = again.explanation_of(again.lanes[0])
    assert stored is again.explanations[0] and stored.token_ids == again.prompt.ids + again.lanes[0].token_ids
    np.testing.assert_allclose(stored.attention, trace.explanations[0].attention, atol=1e-7)


def test_a_run_without_explanations_has_no_such_key_and_a_damaged_one_is_refused():
    from tests.inside_samples import ENGLISH, explained_trace

    plain = fake_trace()
    assert "explanations" not in jsonio.to_dict(plain) and '"explanations"' not in jsonio.dumps(plain)
    data = jsonio.to_dict(explained_trace(ENGLISH))
    data["explanations"][0]["attention"]["layers"] = 5
    with pytest.raises(jsonio.TraceFormatError, match="attention says 5 layers x 2 heads"):
        jsonio.loads(json.dumps(data))


def test_an_explanation_of_a_lanes_beginning_belongs_to_it():
    from tests.inside_samples import ENGLISH, explained_trace

    trace = explained_trace(ENGLISH)
    lane = trace.lanes[0]
    longer = replace(lane, token_ids=[*lane.token_ids, 555])  # the model is causal: the first tokens' still hold
    assert trace.explanation_of(longer) is trace.explanations[0]
    other = replace(lane, token_ids=[lane.token_ids[0], 555])
    assert trace.explanation_of(other) is None


def test_top_lists_read_as_lists_of_entries_and_shuffled_ranks_are_refused():
    # records keep their top lists as three tuples (TopList); readers see TokenProb entries
    record = fake_trace().lanes[0].steps[0]
    top = record.top
    assert isinstance(top, TopList) and len(top) == 20
    entries = list(top)
    assert entries[0] == top[0] == TokenProb(top.ids[0], top.texts[0], top.probs[0], 0)
    assert top[-1].rank == 19 and top[:3] == entries[:3] and top == entries and entries == top
    assert top.rank_of(entries[5].id) == 5 and top.rank_of(10**6) is None
    assert TopList.of(entries) == top and as_top_list(entries) == top
    with pytest.raises(IndexError):
        top[20]
    data = jsonio.to_dict(fake_trace())
    assert data["lanes"][0]["steps"][0]["top"][1] == entries[1]._asdict()  # written as objects
    data["lanes"][0]["steps"][0]["top"][1]["rank"] = 7
    with pytest.raises(jsonio.TraceFormatError, match=r"ranks must be 0, 1, 2"):
        jsonio.loads(json.dumps(data))
    data["lanes"][0]["steps"][0]["top"][1]["rank"] = 1
    data["lanes"][0]["steps"][0]["top"][1]["prob"] = "high"
    with pytest.raises(jsonio.TraceFormatError, match=r"top\[1\]\.prob"):
        jsonio.loads(json.dumps(data))


def test_the_collector_stops_tracking_a_top_lists_columns():
    # the point of TopList: a long run's top lists cost Python's collector one object each, not N
    top = fake_trace().lanes[0].steps[0].top
    gc.collect()
    assert not any(gc.is_tracked(column) for column in (top.ids, top.texts, top.probs))


def test_a_top_lists_texts_are_looked_up_when_first_read():
    # the engine passes the tokenizer's piece function: most lists are never read, and a lookup is not free
    calls = []

    def piece(token_id):
        calls.append(token_id)
        return f"<{token_id}>"

    top = TopList([5, 3], piece, [0.6, 0.3])
    assert calls == [] and len(top) == 2 and top.rank_of(3) == 1
    assert top[1].text == "<3>" and top.texts == ("<5>", "<3>") and calls == [5, 3]  # once
    assert top == TopList([5, 3], ["<5>", "<3>"], [0.6, 0.3])
    copied = copy.deepcopy(TopList([7], piece, [1.0]))  # copies hold texts, not the function
    assert copied._text_of is None and copied.texts == ("<7>",) and pickle.loads(pickle.dumps(top)) == top
    with pytest.raises(ValueError, match="as many texts"):
        TopList([1, 2], ["a"], [0.5, 0.5])


def test_a_lanes_colour_is_written_only_when_set_and_round_trips_byte_identical(tmp_path):
    """The window records each lane's colour; runs made elsewhere (the command line) have none, and their files
    keep exactly the keys they had before the field existed."""
    from decoding.analysis import session_tree

    plain = fake_trace()
    plain.tree = session_tree.tree_of_lanes(plain)  # as the command line's runs have it
    assert plain.tree and '"colour"' not in jsonio.dumps(plain)
    assert [list(lane) for lane in jsonio.to_dict(plain)["lanes"]] == [[
        "name", "config", "processors", "token_ids", "text", "steps", "finish_reason", "sequences",
        "sequence_scores", "branch", "error", "fanout", "replay_of", "model"]] * len(LANES)
    assert all(lane.colour is None for lane in jsonio.loads(jsonio.dumps(plain)).lanes)
    coloured = fake_trace()
    for lane, colour in zip(coloured.lanes, [0, 7, 2, 13, None, 5], strict=True):
        lane.colour = colour
    coloured.tree = session_tree.tree_of_lanes(coloured)  # a node records its lane's colour
    assert [node.colour for node in coloured.tree] == [0, 7, 2, 13, None, 5]
    data = jsonio.to_dict(coloured)
    jsonschema.validate(data, run_file.schema())
    assert [lane.get("colour") for lane in data["lanes"]] == [0, 7, 2, 13, None, 5]
    assert [node.get("colour") for node in data["tree"]] == [0, 7, 2, 13, None, 5]
    first = run_file.save(coloured, tmp_path / "run.json")
    loaded = run_file.load(first)
    assert [lane.colour for lane in loaded.lanes] == [0, 7, 2, 13, None, 5]
    assert loaded.tree == coloured.tree
    assert run_file.save(loaded, tmp_path / "again.json").read_bytes() == first.read_bytes()


@pytest.mark.parametrize("colour, refusal", [(-1, r"run.lanes\[0\] \('greedy'\).colour: -1 \(allowed: a colour"),
                                             (True, "colour: expected an integer or null, got True"),
                                             ("blue", "colour: expected an integer or null, got 'blue'"),
                                             (1.5, "colour: expected an integer or null, got 1.5")])
def test_a_bad_lane_colour_is_refused_naming_the_place(colour, refusal):
    data = jsonio.to_dict(fake_trace())
    data["lanes"][0]["colour"] = colour
    with pytest.raises(jsonio.TraceFormatError, match=refusal):
        jsonio.loads(json.dumps(data))
    if not isinstance(colour, bool):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, run_file.schema())


def test_a_negative_node_colour_is_refused_naming_the_node():
    from decoding.analysis import session_tree

    trace = fake_trace()
    trace.tree = session_tree.tree_of_lanes(trace)
    data = jsonio.to_dict(trace)
    data["tree"][2]["colour"] = -3
    with pytest.raises(jsonio.TraceFormatError, match=r"run.tree\[2\] \(node 2\): colour -3 \(allowed"):
        jsonio.loads(json.dumps(data))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, run_file.schema())


def why_of(lane, step: int, prompt_ids: list[int]):
    """A "why" of a lane's step as the window stores it (numbers made up, shapes as measured)."""
    import numpy as np

    from decoding.analysis.why import Candidate, DepthSplit, WhyResult, pushes

    context = [*prompt_ids, *lane.token_ids[:step]]
    texts = [f"t{t}" for t in context]
    rows = pushes([[j] for j in range(len(context) - 1)], texts, [1.5, 0.25], 2.0,
                  np.array([[1.0 - 0.1 * j, 0.5] for j in range(len(context) - 1)]), np.full(len(context) - 1, 2.1),
                  np.arange(len(context) - 1))
    depth = DepthSplit(1.25, 0.5, [0.25, -0.5], [1.0, 0.0], [[0.125, 0.125], [-0.25, -0.25]], 0.0, [0.0, 0.0], 3.5)
    return WhyResult(lane.name, step, Candidate(lane.token_ids[step], "a"), Candidate(7, "b ✓"), context, texts,
                     len(prompt_ids), 1.5, 0.25, 0.3, 0.1, rows, words=rows[:1], depth=depth, model="fake",
                     provider="cpu", seconds=0.5)


def test_a_lanes_why_round_trips_byte_identical_and_files_without_keep_their_keys(tmp_path):
    plain = fake_trace()
    assert all("why" not in lane for lane in jsonio.to_dict(plain)["lanes"])
    trace = fake_trace()
    trace.lanes[0].why = [why_of(trace.lanes[0], 0, trace.prompt.ids), why_of(trace.lanes[0], 3, trace.prompt.ids)]
    data = jsonio.to_dict(trace)
    jsonschema.validate(data, run_file.schema())
    first = run_file.save(trace, tmp_path / "run.json")
    loaded = run_file.load(first)
    assert loaded.lanes[0].why == trace.lanes[0].why and loaded.lanes[1].why is None
    assert run_file.save(loaded, tmp_path / "again.json").read_bytes() == first.read_bytes()


def test_a_version_5_file_opens_and_a_why_of_another_lane_or_step_is_refused():
    data = jsonio.to_dict(fake_trace())
    data["schema_version"] = 5
    assert jsonio.loads(json.dumps(data)).schema_version == SCHEMA_VERSION
    trace = fake_trace()
    trace.lanes[0].why = [why_of(trace.lanes[0], 2, trace.prompt.ids)]
    data = jsonio.to_dict(trace)
    data["lanes"][0]["why"][0]["step"] = 99
    with pytest.raises(jsonio.TraceFormatError, match=r"lanes\[0\].*why\[0\]\.step: 99"):
        jsonio.loads(json.dumps(data))
    data["lanes"][0]["why"][0].update(step=2, lane="other")
    with pytest.raises(jsonio.TraceFormatError, match=r"why\[0\]\.lane"):
        jsonio.loads(json.dumps(data))
    data["lanes"][0]["why"][0]["lane"] = data["lanes"][0]["name"]
    del data["lanes"][0]["why"][0]["positions"]
    with pytest.raises(jsonio.TraceFormatError, match="positions"):
        jsonio.loads(json.dumps(data))
