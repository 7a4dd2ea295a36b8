"""A lane on its own model in the window: chosen in the lane editor's model field, run beside a lane on the run's
model, named and headed by its model, saved, opened and replayed token for token."""

from __future__ import annotations

import json
from dataclasses import replace

from decoding.chain.spec import LaneSpec
from models.open_model import open_model
from tests.gui_helpers import one_lane_window_beside, run_and_wait, wait_idle


def test_a_lane_set_to_another_model_in_the_editor_runs_saves_opens_and_replays(
        qtbot, make_window, tiny_model_dir, tiny_model_b_dir, tmp_path, monkeypatch):
    window = one_lane_window_beside(make_window, tiny_model_dir, "tiny-llama-b", tiny_model_b_dir, tmp_path,
                                    monkeypatch)
    editor = window.lanes
    editor.duplicate_selected()
    field = editor.form.model
    assert field.itemText(0) == "(run's model)" and field.currentIndex() == 0
    field.setCurrentIndex(field.findData("tiny-llama-b"))
    lane = window.state.lanes[1]
    assert lane.spec.model == "tiny-llama-b" and lane.name == "greedy · tiny-llama-b"
    run_and_wait(qtbot, window, max_new_tokens=8)
    assert not window.error_banner.isVisible()
    assert "greedy · tiny-llama-b" in window.text.columns[1].title.text()
    trace = window.trace
    assert trace.lanes[0].model is None and trace.lanes[1].model.name == "tiny-random-llama-b"
    model_b = open_model(tiny_model_b_dir, "cpu")
    alone = model_b.engine().run(trace.prompt, [LaneSpec("greedy")], max_new_tokens=8)
    assert trace.lanes[1].token_ids == alone.lanes[0].token_ids != trace.lanes[0].token_ids
    assert not window.controller.explain_lane(1)  # the inspection model is the run model's: said, not run
    assert "Explain looks inside the run's model only" in window.state.notice.text
    path = tmp_path / "run.json"
    assert window.controller.save(path)
    recorded = json.loads(path.read_text(encoding="utf-8"))["lanes"]  # what the run file says each lane ran on
    assert recorded[0].get("model") is None
    assert (recorded[1]["model"]["name"], recorded[1]["model"]["hashes"]) == (model_b.info.name, model_b.info.hashes)
    assert window.controller.open(path) is not None
    assert window.state.lanes[1].spec.model == "tiny-llama-b"
    assert window.state.traces[0].model is None and window.state.traces[1].model == trace.lanes[1].model
    window.window_actions["replay"].trigger()
    wait_idle(qtbot, window)
    assert not window.error_banner.isVisible()
    assert "identical" in window.status.currentMessage()
    assert [lane.token_ids for lane in window.state.traces] == [lane.token_ids for lane in trace.lanes]


def test_a_lane_naming_a_model_that_is_gone_is_refused_in_words_and_the_run_shown_is_kept(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=4)
    before = [lane.token_ids for lane in window.trace.lanes]
    window.state.replace_spec(1, replace(window.state.lanes[1].spec, model="removed-model"))
    run_and_wait(qtbot, window, max_new_tokens=4)
    notice = window.state.notice
    assert notice is not None and "removed-model" in notice.text and window.state.lanes[1].name in notice.text
    assert [lane.token_ids for lane in window.trace.lanes] == before
