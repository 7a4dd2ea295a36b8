"""A lane on a model of another tokenizer in the window: chosen in the lane editor, run beside lanes of the run's
tokenizer; its header and the compare view say it is compared by text (the others token-aligned); saved, opened
and replayed token for token; a teacher-forced model comparison of it is refused in words."""

from __future__ import annotations

from decoding.analysis.text_align import first_text_difference
from tests.gui_helpers import one_lane_window_beside, run_and_wait, wait_idle


def test_a_lane_on_another_tokenizer_is_compared_by_text_and_saves_opens_and_replays(
        qtbot, make_window, tiny_model_dir, tiny_model_other_tokenizer_dir, tmp_path, monkeypatch):
    window = one_lane_window_beside(make_window, tiny_model_dir, "tiny-llama-t", tiny_model_other_tokenizer_dir,
                                    tmp_path, monkeypatch)
    editor = window.lanes
    editor.duplicate_selected()
    editor.duplicate_selected()
    editor.form.model.setCurrentIndex(editor.form.model.findData("tiny-llama-t"))
    assert [lane.spec.model for lane in window.state.lanes] == [None, None, "tiny-llama-t"]
    run_and_wait(qtbot, window, max_new_tokens=8)
    assert not window.error_banner.isVisible()
    trace = window.trace
    assert trace.lanes[2].prompt_ids and trace.lanes[2].prompt_ids != trace.prompt.ids
    columns = window.text.columns
    assert "by text: other tokenizer" in columns[2].summary.text()
    assert "by text" not in columns[1].summary.text() and "token-aligned" in columns[1].summary.toolTip()
    found = first_text_difference(trace.lanes[2], trace.lanes[0])
    assert window.state.divergence_step(2) == (None if found is None else found.step_a)
    compare = window.views["compare"]
    window.state.select(1, 0)
    assert compare.comparison_text() == "token-aligned"
    window.state.select(2, 0)
    assert compare.comparison_text() == "by text: other tokenizer" and "same place of the text" in compare._title.text()
    assert "a token of another tokenizer" in compare.texts()[0]
    assert not window.controller.compare_with_model(2, tiny_model_dir)
    assert "another tokenizer" in window.state.notice.text
    path = tmp_path / "run.json"
    assert window.controller.save(path)
    assert window.controller.open(path) is not None
    assert window.state.lanes[2].spec.model == "tiny-llama-t" and window.state.traces[2].prompt_ids
    window.window_actions["replay"].trigger()
    wait_idle(qtbot, window)
    assert not window.error_banner.isVisible()
    assert "identical" in window.status.currentMessage()
    assert [lane.token_ids for lane in window.state.traces] == [lane.token_ids for lane in trace.lanes]
