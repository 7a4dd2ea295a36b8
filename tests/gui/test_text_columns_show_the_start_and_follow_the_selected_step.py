"""Issue 33, items 4 and 11, as a new user met them (tiny model, real widgets): a run ends with every text column
scrolled to its start (its first tokens and the ◆ in view, not where the stream left it); a step selected
elsewhere (the lane map, the keys) scrolls its column and its token into view; a column takes the keyboard with no
step selected (Home / Right: the first step, End / Left: the last); Tab crosses the lanes table in one stop,
leaving the selected lane as it was."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.gui_helpers import run_and_wait

LONG_RUN = 160  # tokens: far more than a column shows at 1280×800


def token_in_view(window, lane: int, step: int) -> bool:
    """The token's first character lies inside its column's viewport, and the column inside the scroll area's."""
    column = window.text.columns[lane]
    rect = column.browser.token_rect(lane, step)
    inside_column = rect is not None and 0 <= rect.top() and rect.bottom() <= column.browser.viewport().height()
    area = window.text._scroll.viewport()
    left = column.mapTo(area, column.rect().topLeft()).x()
    return inside_column and 0 <= left and left + column.width() // 2 <= area.width()


def test_a_long_run_ends_at_each_columns_start_and_a_far_step_is_scrolled_into_view(qtbot, window):
    for _ in range(5):  # ten lanes: the columns scroll sideways too
        window.lanes.add_preset("Top-k 50")
    run_and_wait(qtbot, window, max_new_tokens=LONG_RUN)
    qtbot.wait(100)
    state = window.state
    for index, column in enumerate(window.text.columns):
        bar = column.browser.verticalScrollBar()
        assert bar.maximum() > 0, "the text must be longer than its column for this test"
        assert bar.value() == 0, f"{state.lanes[index].name} ends scrolled to {bar.value()} of {bar.maximum()}"
        first = column.browser.token_rect(index, 0)
        assert first is not None and first.top() >= 0
    divergent = next(i for i in range(1, len(state.lanes)) if state.divergence_step(i) is not None)
    step = state.divergence_step(divergent)
    if step < 20:  # the ◆ of an early divergence is on screen with the first tokens
        assert window.text.columns[divergent].browser.token_rect(divergent, step).top() >= 0

    # a late step of the last lane chosen in the lane map: its column and its token come into view
    last, far = len(state.lanes) - 1, len(state.lanes[-1].trace.steps) - 3
    assert not token_in_view(window, last, far)
    lane_map = window.show_view("lane_map")
    qtbot.wait(50)
    view = lane_map._view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.mapFromScene(lane_map.scene_pos_of(last, far)))
    assert state.selection is not None and (state.selection.lane, state.selection.step) == (last, far)
    qtbot.wait(50)
    assert token_in_view(window, last, far)
    # back to the first step with the keys: the column follows
    browser = window.text.columns[last].browser
    browser.setFocus()
    qtbot.keyClick(browser, Qt.Key.Key_Home)
    assert state.selection.step == 0 and token_in_view(window, last, 0)
    qtbot.keyClick(browser, Qt.Key.Key_End)
    assert state.selection.step == len(state.lanes[last].trace.steps) - 1
    assert token_in_view(window, last, state.selection.step)


def test_a_column_takes_the_keys_without_a_selection_and_tab_crosses_the_lanes_table(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    run_and_wait(qtbot, window, max_new_tokens=12)
    state = window.state
    for key, expected in ((Qt.Key.Key_Right, 0), (Qt.Key.Key_Home, 0), (Qt.Key.Key_Left, 11), (Qt.Key.Key_End, 11)):
        state._set_selection(None)  # as after opening a run: nothing selected
        browser = window.text.columns[2].browser
        browser.setFocus()
        qtbot.keyClick(browser, key)
        assert state.selection is not None and (state.selection.lane, state.selection.step) == (2, expected), key
        assert window.lanes.selected_index() == 2 and window.inspector._step.step == expected
    qtbot.keyClick(window.text.columns[2].browser, Qt.Key.Key_Right)  # from the selected step on
    assert state.selection.step == 11  # the last step stays the last

    # Tab from the lanes table: one stop, not every cell, and the selected lane stays the one chosen
    table = window.lanes.table
    window.lanes._select_row(3)
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_Tab)
    assert not table.hasFocus() and window.lanes.selected_index() == 3
    assert window.lanes.form.widgets["top_p"].value() == state.lanes[3].spec.top_p or not state.lanes[3].spec.top_p
