""""Why A, not B" from the window, end to end on the tiny model (prepared as Branchpoint prepares models, so its graph
takes the per-row mask): the key's action knocks out every earlier position on the worker and the Why tab shows
the answer (shaded text, pushers, depth grid); the numbers are `main.py why`'s; the run saves with it and a window
without any model shows it again exactly; bad requests leave a notice and everything as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decoding.chain.spec import lane_spec
from main import main
from runfiles import run_file
from tests.gui_helpers import run_and_wait, wait_idle

PROMPT = "Although I was tired, I still"


@pytest.fixture(scope="module")
def prepared(prepared_tiny_dir) -> Path:
    return prepared_tiny_dir


def lane_text(lane) -> str:
    """The lane as `--lane` takes it (greedy: the window's first lane)."""
    spec = lane_spec(lane)
    assert not spec.do_sample and spec.num_beams == 1, spec
    return "greedy"


def test_why_from_the_key_shows_saves_and_reopens_with_the_clis_numbers(qtbot, make_window, prepared, tmp_path):
    window = make_window(prepared)
    window.prompt.editor.setPlainText(PROMPT)
    run_and_wait(qtbot, window, max_new_tokens=6)
    lanes_before = [list(lane.trace.token_ids) for lane in window.state.lanes]
    window.state.select(0, 3)
    window.window_actions["why_selected_step"].trigger()
    assert window.view_shown("why")
    wait_idle(qtbot, window)
    assert window.state.notice is None, window.state.notice
    (result,) = window.state.whys_at(0, 3)
    lane = window.state.lanes[0].trace
    assert result.a.token_id == lane.steps[3].token_id
    assert result.b.token_id == next(t.id for t in lane.steps[3].top_raw if t.id != result.a.token_id)
    assert result.token_ids == list(window.state.trace.prompt.ids) + lane.token_ids[:3]
    assert len(result.positions) == len(result.token_ids) - 1 and result.depth is not None
    assert abs(result.depth.total() - result.gap) < 1e-4
    assert window.why.shown() is result and window.why.figure() is not None
    assert "Why" in window.why._title.text() and window.why._chart.grid is not None
    assert [list(lane.trace.token_ids) for lane in window.state.lanes] == lanes_before

    out = tmp_path / "why.json"
    assert main(["why", "--model", str(prepared), "--prompt", PROMPT, "--lane", lane_text(lane), "--step", "3",
                 "--device", "cpu", "--json", str(out)]) == 0
    cli = json.loads(out.read_text(encoding="utf-8"))["why"]
    assert cli["token_ids"] == result.token_ids
    assert cli["a"]["token_id"] == result.a.token_id and cli["b"]["token_id"] == result.b.token_id
    assert [row["push"] for row in cli["positions"]] == pytest.approx([row.push for row in result.positions], abs=1e-5)

    saved = run_file.save(window.state.shown_trace(), tmp_path / "run.json")
    assert run_file.load(saved).lanes[0].why == [result]
    viewer = make_window(None)
    viewer.files.open(saved)
    viewer.state.select(0, 3)
    assert viewer.why.shown() == result
    assert viewer.why._title.text() == window.why._title.text()


def test_bad_requests_leave_a_notice_and_the_run_as_it_was(qtbot, make_window, prepared):
    window = make_window(prepared)
    window.prompt.editor.setPlainText(PROMPT)
    run_and_wait(qtbot, window, max_new_tokens=4)
    lanes_before = [list(lane.trace.token_ids) for lane in window.state.lanes]
    chosen = window.state.lanes[0].trace.steps[1].token_id
    assert not window.controller.why(0, 1, b=chosen)
    assert "same token" in window.state.notice.text
    assert not window.controller.why(0, 99)
    assert "beyond" in window.state.notice.text and "0 to 3" in window.state.notice.text
    assert [list(lane.trace.token_ids) for lane in window.state.lanes] == lanes_before
    assert window.state.whys_at(0, 1) == []
