"""The tour's Chinese stops: on the default model (English only) they switch to gemma-3-270m where it is prepared
(the banner says so, the picker follows, a base model's prompt goes in plain) and say how to get it where not;
on gemma-3-270m the knock-out stop answers "did 虽然 push 但是?" and the weather stop shows the first step's
spread-out distribution (slow: the real models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui.state import tour
from tests.gui_helpers import wait_idle


def run_stop(qtbot, window, key: str, rounds: int = 3) -> None:
    assert window.tour.start(key)
    for _ in range(rounds):  # the run, then what the stop does after it (why, then explain)
        wait_idle(qtbot, window, 600_000)
        qtbot.wait(100)


def test_without_a_prepared_chinese_model_the_stop_says_how_to_get_one(qtbot, make_window, prepared_tiny_dir,
                                                                       monkeypatch):
    import gui.shell.tour_runner as runner
    from models.catalog import CatalogEntry

    monkeypatch.setattr(runner, "model_languages", lambda _path: ("en",))  # the tiny model as an English one
    monkeypatch.setattr(CatalogEntry, "is_prepared", lambda _entry: False)
    window = make_window(prepared_tiny_dir)
    run_stop(qtbot, window, "near_tie_zh", rounds=1)
    notice = window.state.notice.text
    assert notice.startswith(tour.title(tour.stop("near_tie_zh"))) and window.state.notice.level == "info"
    assert "prepare --catalog gemma-3-270m --accept-license" in notice and "writes English only" in notice
    assert Path(window.controller.holder.path) == prepared_tiny_dir  # the stop ran on the window's model
    assert all(lane.trace.steps for lane in window.state.lanes)


@pytest.mark.slow
def test_the_chinese_why_stop_switches_to_gemma_and_finds_that_suiran_pushed_danshi(qtbot, make_window,
                                                                                    default_model_dir,
                                                                                    gemma_model_dir):
    window = make_window(default_model_dir)
    run_stop(qtbot, window, "why_but_zh")
    assert Path(window.controller.holder.path) == gemma_model_dir
    assert window.model_picker.current == gemma_model_dir
    assert "on gemma-3-270m" in window.state.notice.text
    assert window.state.trace.model.name == "gemma-3-270m" and not window.state.request.chat
    step = next(r.step for r in window.state.lanes[0].trace.steps if r.token_text == "但是")
    (result,) = window.state.whys_at(0, step)
    assert (result.a.text, result.b.text) == ("但是", "我")
    toward = [push.text for push in result.pushers(toward_a=True)]
    assert "虽然" in toward[:2]  # after ‹bos› (the attention sink), the strongest push toward 但是
    hidden = next(push for push in result.positions if push.text == "虽然")
    assert hidden.push > 2.0 and result.prob_a + hidden.d_prob_a < result.prob_a / 3  # 但是 loses most of its p
    assert window.view_shown("why") and window.state.explanation(0) is not None


@pytest.mark.slow
def test_the_weather_stop_shows_places_and_pastimes_at_its_first_step(qtbot, make_window, default_model_dir,
                                                                    gemma_model_dir):
    window = make_window(default_model_dir)
    run_stop(qtbot, window, "weather_zh", rounds=2)
    assert Path(window.controller.holder.path) == gemma_model_dir
    assert (window.state.selection.lane, window.state.selection.step) == (0, 0) and window.view_shown("inspector")
    first = window.state.lanes[0].trace.steps[0]
    assert {"逛", "玩", "海", "户外", "游泳"} <= set(first.top_raw.texts[:8])
    assert first.top_raw.probs[0] < 0.15  # spread out: no candidate near certain


@pytest.mark.slow
def test_the_chinese_attention_and_near_tie_stops_run_on_gemma(qtbot, make_window, default_model_dir,
                                                               gemma_model_dir):
    from gui.present.inside_data import word_span

    window = make_window(default_model_dir)
    run_stop(qtbot, window, "delayed_release_zh")
    assert window.state.trace.model.name == "gemma-3-270m" and window.view_shown("attention")
    result = window.state.explanation(0)
    query = word_span(result, "但", last=True, within=result.prompt_length)[-1]
    assert window.attention.token == query and window.attention.column_labels()[query] == "但"
    _layer, column = window.attention.picked()
    assert column in word_span(result, "虽然", within=result.prompt_length)  # a head of gemma's looks back too
    run_stop(qtbot, window, "near_tie_zh")
    assert window.state.trace.model.name == "gemma-3-270m" and window.view_shown("lane_map")
    assert all("\ufffd" not in lane.trace.text for lane in window.state.lanes)  # whole characters, no broken byte
