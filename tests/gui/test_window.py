"""The main window on the tiny exported model: real clicks and keys on the real widgets, real engine, real
ONNX Runtime, real files. Every window is shut down (worker stopped and its thread waited for) at teardown."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt, QThread
from PySide6.QtGui import QColor, QHelpEvent, QImage, QTextCursor
from PySide6.QtWidgets import QApplication, QToolTip

from decoding.chain.spec import specs_of
from gui.app import make_application
from gui.views.beam_tree import _BEST as BEST_PATH_COLOUR
from gui.views.style import CHOSEN_COLOUR, PROCESSED_COLOUR, RAW_COLOUR, lane_color_hex
from gui.views.timeline import FADED_ALPHA
from tests.gui_helpers import RUN_TIMEOUT_MS, anchors, colour_counts, run_and_wait, token_point, wait_idle


def test_run_fills_every_lane(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=12)
    assert not window.error_banner.isVisible()
    assert len(window.text.columns) == 5
    shown = window.state.shown_trace()
    # the same lanes run by the engine itself, outside the window: the window shows what they give
    alone = window.controller.holder.engine().run(shown.prompt, specs_of(shown), max_new_tokens=12)
    for lane, expected, text in zip(window.state.traces, alone.lanes, window.text.column_texts(), strict=True):
        assert lane.token_ids == expected.token_ids and 1 <= len(lane.steps) <= 12, lane.name
        assert letters(text).startswith(letters(expected.text)[:20]), (lane.name, text, expected.text)
    assert "step" in window.status.step.text()
    assert window.status.provider.text() == "CPU"
    beam = window.text.columns[1]
    assert beam.beams_button.isVisible()
    best = beam.browser.toPlainText()
    qtbot.mouseClick(beam.beams_button, Qt.MouseButton.LeftButton)  # expand the other hypotheses
    assert "beam #4" in beam.browser.toPlainText() and beam.browser.toPlainText().startswith(best)
    qtbot.mouseClick(beam.beams_button, Qt.MouseButton.LeftButton)  # and fold them again
    assert beam.browser.toPlainText() == best


def letters(text: str) -> str:
    """The letters and digits of a text, without the ‹e8 af› labels a column writes for bytes of unfinished
    characters and the \\x1e it writes for control characters."""
    return "".join(filter(str.isalnum, re.sub(r"‹[^›]*›|\\x[0-9a-f]{2}", "", text)))


def test_ctrl_enter_runs_and_escape_stops_mid_run(qtbot, window):
    window.prompt.max_new_tokens.setValue(400)
    qtbot.keyClick(window.prompt.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.state.total_tokens() > 0, timeout=RUN_TIMEOUT_MS)
    qtbot.keyClick(window.prompt.editor, Qt.Key.Key_Escape)
    wait_idle(qtbot, window)
    reasons = {lane.finish_reason for lane in window.state.traces}
    assert "cancelled" in reasons
    assert max(len(lane.steps) for lane in window.state.traces) < 400
    assert all(text.strip() for text in window.text.column_texts())  # the text so far stays


def test_clicking_a_token_selects_it_in_inspector_and_timeline(qtbot, window):
    run_and_wait(qtbot, window)
    browser = window.text.columns[2].browser
    texts = window.state.traces[2].steps
    step = min(s for s in range(2, 12)  # a token with letters, not inside a multi-token character
               if f"tok:2:{s}" in anchors(window, 2) and any(c.isalnum() for c in texts[s].token_text))
    qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=token_point(qtbot, window, 2, step))
    assert (window.state.selection.lane, window.state.selection.step) == (2, step)
    assert window.timeline.selected() == (2, step)
    chosen = [row.token_id for row in window.inspector.rows() if row.chosen]
    assert chosen == [window.state.traces[2].token_ids[step]]
    assert f"step {step} (of" in window.status.selection.text()  # the step as the inspector and timeline number it
    qtbot.keyClick(browser, Qt.Key.Key_Right)  # keyboard scrubbing from the text
    assert window.timeline.selected() == (2, step + 1)


def test_hovering_a_token_shows_its_top_five_alternatives(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=6)
    browser = window.text.columns[0].browser
    point = token_point(qtbot, window, 0, 0)
    event = QHelpEvent(QEvent.Type.ToolTip, point, browser.viewport().mapToGlobal(point))
    QApplication.sendEvent(browser.viewport(), event)
    record = window.state.traces[0].steps[0]
    text = QToolTip.text()
    assert QToolTip.isVisible() and "step 0" in text and text.count("<tr>") == min(5, len(record.top))


def test_branching_from_an_alternative_adds_a_lane_next_to_its_parent(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=12)
    parent = window.state.traces[0]
    step = 4
    record = parent.steps[step]
    rank = next(i for i, t in enumerate(record.top) if t.id != record.token_id)
    menu = window.text.columns[0].browser.alternatives_menu(0, record)
    branch_menu = menu.actions()[0].menu()
    branch_menu.actions()[rank].trigger()  # "Branch from here with…" → the alternative
    wait_idle(qtbot, window)
    assert len(window.state.traces) == 6 and not window.error_banner.isVisible()
    child = window.state.traces[1]
    picked_id = record.top[rank].id
    assert child.token_ids[:step] == parent.token_ids[:step]
    assert child.token_ids[step] == picked_id
    assert child.branch == {"parent": parent.name, "step": step, "token_id": picked_id}
    assert len(child.token_ids) > step + 1  # it continued after the picked token
    assert "↳" in window.text.column_texts()[1]  # branch point marked in the text
    assert window.lanes.specs()[1].branch.parent == parent.name


def test_the_same_run_seed_repeats_sampled_lanes(qtbot, window):
    window.prompt.seed.setValue(7)
    run_and_wait(qtbot, window, max_new_tokens=8)
    first = [lane.token_ids for lane in window.state.traces]
    assert window.trace.settings.seed == 7
    run_and_wait(qtbot, window, max_new_tokens=8)
    assert [lane.token_ids for lane in window.state.traces] == first


def test_force_a_token_for_all_lanes(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=8)
    record = window.state.traces[0].steps[2]
    token = record.top[1].id
    menu = window.text.columns[0].browser.alternatives_menu(0, record)
    menu.actions()[1].menu().actions()[1].trigger()  # "Force for all lanes…" → the runner-up
    wait_idle(qtbot, window)
    assert not window.error_banner.isVisible()
    for lane in window.state.traces:
        assert lane.token_ids[2] == token and lane.steps[2].forced
    assert all(spec.forced == {2: token} for spec in window.lanes.specs())


def test_save_then_open_restores_an_identical_view(qtbot, window, make_window, tmp_path):
    run_and_wait(qtbot, window, max_new_tokens=10)
    window.state.select(1, 2)
    path = tmp_path / "run.json"
    window.files.save(path)
    assert path.is_file() and not window.error_banner.isVisible()
    reopened = make_window(None)  # no model needed to open a run
    reopened.files.open(path)
    assert not reopened.error_banner.isVisible()
    assert reopened.text.column_texts() == window.text.column_texts()
    assert [s.name for s in reopened.lanes.specs()] == [s.name for s in window.lanes.specs()]
    assert reopened.lanes.specs() == specs_of(window.trace)  # the specs the run was made with, seeds included
    assert reopened.state.request == window.state.request
    for a, b in zip(reopened.state.traces, window.state.traces, strict=True):
        assert a.token_ids == b.token_ids and len(a.steps) == len(b.steps)
    reopened.state.select(1, 2)
    images = reopened.export_images(tmp_path / "png")
    assert reopened.state.tree == window.state.tree and len(reopened.state.tree) == len(window.state.lanes)
    # no explanation: no others
    charts = ["timeline", "lane_map", "inspector", "side_by_side", "beam_tree", "tokens", "entropy_plane",
              "session_tree"]
    assert [p.name for p in images] == ["text.png", "report.png", *(f"{c}.{e}" for c in charts for e in ("png", "svg"))]
    assert all(p.stat().st_size > 1000 for p in images)
    counts = {p.name: colour_counts(QImage(str(p))) for p in images if p.suffix == ".png"}

    def drawn(image: str, colour: str) -> int:
        return counts[image].get(colour.lower(), 0)

    def rgb(colour: QColor) -> tuple[int, int, int]:
        return colour.red(), colour.green(), colour.blue()

    def drawn_near(image: str, colour: QColor, tolerance: int = 6) -> int:
        return sum(count for name, count in counts[image].items()
                   if max(abs(a - b) for a, b in zip(rgb(QColor(name)), rgb(colour), strict=True)) <= tolerance)

    # not just bytes (an empty plot has axes, grid and title): each lane's swatch and curve, the bars, the beams;
    # on the timeline the selected lane in full, the others faded behind it (its colour over the background)
    background = QImage(str(tmp_path / "png" / "timeline.png")).pixelColor(2, 2)
    for index, lane in enumerate(reopened.state.lanes):
        full = QColor(lane_color_hex(lane.colour))
        faded = QColor(*(round(b + FADED_ALPHA * (c - b)) for c, b in zip(rgb(full), rgb(background), strict=True)))
        assert drawn("text.png", full.name()) >= 40, lane.name
        assert drawn_near("timeline.png", full if index == 1 else faded) >= 400, lane.name
    for colour, at_least in ((PROCESSED_COLOUR, 1000), (CHOSEN_COLOUR, 500), (RAW_COLOUR, 1000)):
        assert drawn("inspector.png", colour) >= at_least, colour
    assert drawn("beam_tree.png", BEST_PATH_COLOUR) >= 1000


def test_invalid_parameter_is_refused_with_a_visible_message(qtbot, window):
    table = window.lanes.table
    rect = table.visualItemRect(table.item(1, 0))  # beam-4
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    before = window.lanes.specs()[1]
    checkbox = window.lanes.form.widgets["do_sample"]
    qtbot.mouseClick(checkbox, Qt.MouseButton.LeftButton, pos=QPoint(4, checkbox.height() // 2))
    assert window.lanes.message.isVisible()
    assert "do_sample" in window.lanes.message.text()
    assert window.lanes.specs()[1] == before and not checkbox.isChecked()
    table.item(1, 0).setText("greedy")  # a duplicate name is refused too
    assert "already named" in window.lanes.message.text()
    assert window.lanes.specs()[1].name == before.name


def test_closing_mid_run_leaves_no_thread_running(qtbot, window):
    window.prompt.max_new_tokens.setValue(400)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.state.total_tokens() > 0, timeout=RUN_TIMEOUT_MS)
    thread: QThread = window.worker._thread
    window.close()
    assert not thread.isRunning()
    assert not window.worker.is_running()


@pytest.mark.slow
def test_five_default_lanes_end_to_end_on_the_default_model(qtbot, make_window, default_model_dir):
    window = make_window(default_model_dir)
    window.prompt.editor.setPlainText("The capital of France is")
    run_and_wait(qtbot, window, max_new_tokens=16, timeout_ms=600_000)  # model load + 16 steps of 8 rows
    assert not window.error_banner.isVisible()
    names = [lane.name for lane in window.state.traces]
    assert names == ["greedy", "beam-4", "top-k 50", "top-p 0.9", "T 1.3"]
    assert "Paris" in window.text.column_texts()[0]
    assert all(lane.steps for lane in window.state.traces)
    assert window.state.traces[1].sequences


def test_replay_reruns_with_the_model_and_finds_every_token_identical(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=8)
    before = [lane.token_ids for lane in window.state.traces]
    window.window_actions["replay"].trigger()
    wait_idle(qtbot, window)
    assert not window.error_banner.isVisible()
    assert [lane.token_ids for lane in window.state.traces] == before
    assert "identical" in window.status.currentMessage()
    greedy = window.state.lanes[0].trace  # a run that the model does not give (a changed file): said, where
    changed = (greedy.token_ids[3] + 1) % window.controller.holder.engine().source.vocab_size
    greedy.token_ids[3], greedy.steps[3] = changed, replace(greedy.steps[3], token_id=changed)
    window.window_actions["replay"].trigger()
    wait_idle(qtbot, window)
    notice = window.state.notice
    assert notice is not None and "Replay differs" in notice.text and "greedy" in notice.text, notice
    assert window.state.lanes[0].trace.token_ids == before[0]  # the model's own tokens, shown again


def test_an_engine_error_is_shown_and_the_text_so_far_kept(qtbot, window):
    decoder = window.controller.holder.get().decoder
    real_step, calls = decoder.step, []

    def failing_step(*args, **kwargs):
        calls.append(1)
        if len(calls) >= 4:
            raise RuntimeError("device lost")
        return real_step(*args, **kwargs)

    decoder.step = failing_step
    run_and_wait(qtbot, window, max_new_tokens=12)
    assert window.error_banner.isVisible() and "device lost" in window.error_banner.text()
    assert all(3 <= len(lane.steps) < 12 for lane in window.state.traces)
    assert all(text.strip() for text in window.text.column_texts())


def _char_formats(browser) -> list[tuple[str, str, str]]:
    """Per character of a column: (character, anchor, background colour)."""
    document = browser.document()
    cursor = QTextCursor(document)
    out = []
    for position in range(document.characterCount() - 1):
        cursor.setPosition(position + 1)
        fmt = cursor.charFormat()
        out.append((document.characterAt(position), fmt.anchorHref(), fmt.background().color().name()))
    return out


def test_streamed_tokens_are_appended_and_the_text_equals_a_whole_rebuild(qtbot):
    """A streaming lane's column only gets its new tokens inserted (nothing earlier is removed while the
    earlier marks stay), and ends identical to a column drawn at once — also when a split Chinese character
    completes at the end, a divergence appears late and the selection moves."""
    from decoding.chain.spec import LaneSpec
    from decoding.records.trace import StepRecord, TokenProb
    from gui.state.run_state import RunState
    from gui.views.redraw import RedrawScheduler
    from gui.views.text_view import TextPanel

    make_application([])
    split = ["\\xe8\\xbf", "\\x99"]  # 这 in two byte-level pieces
    texts = [[" a", "\n", " b", *split, "\t", "c"], [" a", "\n", " b", *split, "\t", "d"]]

    def step(index: int, text: str) -> StepRecord:
        top = [TokenProb(100 + index, text, 0.6, 0), TokenProb(7, "x", 0.58 if index == 2 else 0.1, 1)]
        return StepRecord(step=index, token_id=100 + index + (text == "d"), token_text=text, prob=0.6,
                          prob_raw=0.5, logprob=-0.5, logprob_raw=-0.7, entropy=1.0, entropy_raw=1.1,
                          margin=top[0].prob - top[1].prob, margin_raw=0.1, kept=2, tail_mass=0.0,
                          tail_mass_raw=0.1, top=top, top_raw=top)

    specs = [LaneSpec("greedy"), LaneSpec("other")]
    state = RunState(specs)
    streamed = TextPanel(state, RedrawScheduler())
    qtbot.addWidget(streamed)
    changes: list[int] = []  # document positions the reference lane's column was edited at
    document = streamed.columns[0].browser.document()
    document.contentsChange.connect(lambda position, _removed, _added: changes.append(position))
    for index in range(len(texts[0])):
        for lane in (1, 0):  # the reference lane lags: lane 1's divergence shows up once lane 0 catches up
            state.add_step(lane, step(index, texts[lane][index]))
            end, changes[:] = document.characterCount() - 1, []
            streamed._scheduler.flush()  # the streamed step is redrawn as the window would
            if lane == 0 and index != 4:  # at 4 the split character completes: its first piece is redrawn
                assert changes and min(changes) >= end, (index, changes, end)
    state.select(1, 2)
    whole = TextPanel(state, RedrawScheduler())  # the same lanes drawn at once
    qtbot.addWidget(whole)
    for lane in (0, 1):
        got, want = streamed.columns[lane].browser, whole.columns[lane].browser
        assert got.toPlainText() == want.toPlainText()
        assert _char_formats(got) == _char_formats(want)
    texts_shown = streamed.column_texts()
    assert "这" in texts_shown[0] and "\\xe8" not in texts_shown[0] and "◆" in texts_shown[1]


def test_run_again_and_compare_says_which_lanes_drew_differently(qtbot, window):
    window.window_actions["run_again_and_compare"].trigger()  # nothing to compare with yet
    assert "needs a run to compare with" in window.state.notice.text and not window.worker.is_running()
    run_and_wait(qtbot, window, max_new_tokens=8)  # the run seed is pinned (1): the same draws again
    window.window_actions["run_again_and_compare"].trigger()
    wait_idle(qtbot, window)
    assert "identical to the previous run" in window.status.currentMessage()
    sampled = [lane.name for lane in window.state.traces if lane.config.get("do_sample")]
    window.prompt.seed.setValue(-1)  # auto: every run draws a fresh seed
    window.window_actions["run_again_and_compare"].trigger()
    wait_idle(qtbot, window)
    notice = window.state.notice
    assert notice.level == "info" and notice.text.startswith("Run again, against the previous run:")
    assert "the draws differ" in notice.text and "seeds " in notice.text
    assert any(repr(name) in notice.text for name in sampled)
    assert "'greedy'" not in notice.text  # greedy cannot differ
