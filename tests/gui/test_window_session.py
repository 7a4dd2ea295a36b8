"""User sessions on the main window (tiny model, real clicks and keys): each test replays what a new user did
when they met a bug (issue 11), then checks what every view shows after each action — the bugs live between
actions, where single-widget tests never look."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage

from tests.gui_helpers import run_and_wait, wait_idle


def _views_agree(window) -> None:
    """What every view shows matches the model: columns, timeline series, editor rows, selection readouts."""
    model = window.state
    assert len(window.text.columns) == len(model.lanes) == window.lanes.table.rowCount()
    assert len(window.timeline._series) == len(model.lanes)
    for index, lane in enumerate(model.lanes):
        assert window.lanes.table.item(index, 0).text() == lane.name
        assert lane.name in window.text.columns[index].title.text()
        assert list(window.timeline.curve_data(index)[0]) == list(range(len(lane.trace.steps)))
    selection = model.selection
    if selection is None:
        assert window.status.selection.text() == "" and window.timeline.selected() is None
    else:
        name = model.lanes[selection.lane].name
        assert window.status.selection.text().startswith(f"{name} · step {selection.step} ")
        assert f"{name} · step {selection.step} ·" in window.inspector._title.text()
        assert window.timeline.selected() == (selection.lane, selection.step)
    editor_lane = window.lanes.selected_index()
    if editor_lane >= 0:
        spec = model.lanes[editor_lane].spec
        assert window.lanes.form.widgets["num_beams"].value() == spec.num_beams
        assert window.lanes.form.widgets["do_sample"].isChecked() == spec.do_sample


def _branch_from_text(window, lane: int, step: int) -> int:
    """Right-click → Branch from here with… → the first alternative that is not the chosen token."""
    record = window.state.traces[lane].steps[step]
    rank = next(i for i, t in enumerate(record.top) if t.id != record.token_id)
    menu = window.text.columns[lane].browser.alternatives_menu(lane, record)
    menu.actions()[0].menu().actions()[rank].trigger()
    return record.top[rank].id


def test_branch_then_a_new_prompt_runs_cleanly_and_says_which_lanes_changed(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=10)
    _branch_from_text(window, 0, 4)
    wait_idle(qtbot, window)
    assert window.state.lanes[1].name == "greedy ↳4"
    _views_agree(window)
    window.prompt.editor.setPlainText("我虽然很累，但还是决定")
    run_and_wait(qtbot, window, max_new_tokens=10)
    banner = window.error_banner
    assert banner.isVisible() and "ValueError" not in banner.text()
    assert "“greedy ↳4” → “greedy (2)” (the prompt changed)" in banner.text()  # renamed by its strategy
    assert all(text.strip() for text in window.text.column_texts())  # no blank column
    assert window.state.lanes[1].spec.branch is None and not any(s.forced for s in window.state.traces[1].steps)
    _views_agree(window)


def test_a_branch_of_a_branch_and_of_a_beam_lane_works_on_the_next_run(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=8)
    _branch_from_text(window, 1, 2)  # from beam-4
    wait_idle(qtbot, window)
    _branch_from_text(window, 2, 4)  # from that branch
    wait_idle(qtbot, window)
    names = [lane.name for lane in window.state.lanes]
    assert names[1:4] == ["beam-4", "beam-4 ↳2", "beam-4 ↳2 ↳4"]
    before = [lane.token_ids for lane in window.state.traces]
    run_and_wait(qtbot, window, max_new_tokens=8)
    assert not window.error_banner.isVisible()
    assert [lane.token_ids for lane in window.state.traces] == before
    _views_agree(window)


def test_one_left_click_on_an_inspector_bar_does_not_branch_and_ctrl_z_undoes_a_branch(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.state.select(0, 3)
    qtbot.wait(50)  # the inspector lays out the new step before a user could click it
    inspector = window.inspector
    row = next(i for i, r in enumerate(inspector.rows()) if not r.chosen)
    view = inspector._canvas
    pos = view.mapFromScene(inspector.scene_pos_of_row(row) + QPointF(4, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.wait(50)
    assert len(window.state.lanes) == 5 and not window.worker.is_running()
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    wait_idle(qtbot, window)
    assert [lane.name for lane in window.state.lanes][1] == "greedy ↳3"
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(window.state.lanes) == 5 and "greedy ↳3" not in window.state.names()
    _views_agree(window)


def test_remove_a_lane_keeps_the_editor_and_status_in_sync(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=6)
    window.state.select(0, 2)  # greedy's step: the editor and status name greedy
    assert window.lanes.selected_index() == 0 and "greedy" in window.status.selection.text()
    qtbot.mouseClick(window.lanes.remove_button, Qt.MouseButton.LeftButton)
    assert window.state.lanes[0].name == "beam-4" and window.lanes.selected_index() == 0
    assert window.lanes.form.widgets["num_beams"].value() == 4  # not the removed greedy's 1
    assert not window.lanes.form.widgets["do_sample"].isChecked()
    assert "greedy" not in window.status.selection.text()
    _views_agree(window)


def test_a_lane_longer_than_the_run_counts_progress_in_its_steps(qtbot, window):
    from dataclasses import replace

    index = len(window.state.lanes)
    window.lanes.add_spec(replace(window.state.lanes[0].spec, name="long", max_new_tokens=20))
    # the lane's arrows keep to the run's limit (a value typed past it is refused in words, not clamped)
    assert window.lanes.form.widgets["max_new_tokens"].allowed[1] == window.prompt.max_new_tokens.maximum()
    run_and_wait(qtbot, window, max_new_tokens=6)
    done, limit = (int(v) for v in window.status.step.text().removeprefix("step ").split("/"))
    assert limit == 20 and done == len(window.state.traces[index].steps) <= 20
    assert all(len(lane.steps) <= 6 for lane in window.state.traces[:index])
    _views_agree(window)


def test_seed_auto_gives_fresh_samples_after_a_branch(qtbot, window):
    window.prompt.seed.setValue(-1)  # auto
    run_and_wait(qtbot, window, max_new_tokens=6)
    first = {lane.name: lane.config.get("seed") for lane in window.state.traces}
    _branch_from_text(window, 0, 2)  # from greedy: nothing to pin
    wait_idle(qtbot, window)
    assert all(spec.seed is None for spec in window.lanes.specs() if spec.do_sample)
    run_and_wait(qtbot, window, max_new_tokens=6)
    second = {lane.name: lane.config.get("seed") for lane in window.state.traces}
    assert all(second[name] != seed for name, seed in first.items() if seed is not None)
    assert window.trace.settings.seed is None  # the run records auto; each lane records its own seed


def test_stale_banners_and_the_stop_message_follow_their_causes(qtbot, window):
    window.prompt.editor.setPlainText("   ")
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    assert window.error_banner.isVisible() and "empty" in window.error_banner.text()
    qtbot.keyClicks(window.prompt.editor, "Once upon a time")
    assert not window.error_banner.isVisible()  # the cause is gone, so is the banner
    window.prompt.max_new_tokens.setValue(400)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.state.total_tokens() > 0, timeout=60_000)
    qtbot.keyClick(window.prompt.editor, Qt.Key.Key_Escape)
    wait_idle(qtbot, window)
    assert window.status.currentMessage() == "stopped"


def test_lane_edits_are_never_silent_and_names_follow_the_strategy(qtbot, window):
    table = window.lanes.table
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=table.visualItemRect(table.item(3, 0)).center())
    top_p = window.lanes.form.widgets["top_p"]
    top_p.setValue(0.5)
    assert window.state.lanes[3].name == "top-p 0.5"  # it was "top-p 0.9": the name follows the value
    top_p.setValue(0.0)
    message = window.lanes.message
    assert window.state.lanes[3].spec.top_p == 0.0 and "keeps only the most likely token" in message.text()
    height = message.height()
    temperature = window.lanes.form.widgets["temperature"]
    temperature.setValue(0.0)
    assert "temperature" in message.text() and "do_sample off" in message.text()  # said, not silently reverted
    assert window.state.lanes[3].spec.temperature is None and message.height() == height  # nothing moved
    table.item(3, 0).setText("my lane")  # renamed by the user: edits no longer rename it
    top_p.setValue(0.7)
    assert window.state.lanes[3].name == "my lane"


def test_export_images_show_the_prompt_and_every_lane(qtbot, window, tmp_path):
    window.prompt.editor.setPlainText("Although I was tired, I still went out")
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.state.select(2, 3)
    from gui.shell import image_export as export

    document = export.text_document(window.state)
    text = document.toPlainText()
    assert "Although I was tired, I still went out" in text
    for lane, column in zip(window.state.lanes, window.text.column_texts(), strict=True):
        assert lane.name in text and column.strip() in text  # the lane's whole text, as its column shows it
    paths = window.export_images(tmp_path / "images")
    image = QImage(str(tmp_path / "images" / "text.png"))
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)}
    from gui.views.style import lane_color_hex

    assert all(lane_color_hex(lane.colour).lower() in colours for lane in window.state.lanes)  # each swatch drawn
    timeline = QImage(str(tmp_path / "images" / "timeline.png"))
    assert timeline.width() >= 1000  # drawn at a size for reading, not the window's panel
    svg = (tmp_path / "images" / "timeline.svg").read_text()
    assert "<svg" in svg and "p(chosen) per step" in svg
    assert {p.name for p in paths} >= {"text.png", "report.png", "inspector.png", "beam_tree.svg"}


def test_right_click_on_a_mark_opens_the_lanes_menu_not_the_link_menu(qtbot, window):
    from PySide6.QtGui import QContextMenuEvent, QTextCursor
    from PySide6.QtWidgets import QApplication, QMenu

    from tests.gui_helpers import anchors

    run_and_wait(qtbot, window, max_new_tokens=10)
    lane = next(i for i in range(1, 5) if window.state.divergence_step(i) is not None)
    step = window.state.divergence_step(lane)
    browser = window.text.columns[lane].browser
    position = anchors(window, lane)[f"tok:{lane}:{step}"]
    document = browser.document()
    mark = position - 1  # the ◆ sits right before its token
    assert document.characterAt(mark) == "◆"
    cursor = QTextCursor(document)
    cursor.setPosition(mark)
    point = browser.cursorRect(cursor).center() + QPoint(3, 0)
    shown: list[list[str]] = []

    def read_and_close_the_menu() -> None:
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            qtbot.wait(20)  # not open yet
            return read_and_close_the_menu()
        shown.append([action.text() for action in menu.actions()])
        menu.close()

    from PySide6.QtCore import QTimer

    QTimer.singleShot(50, read_and_close_the_menu)  # the menu's exec() runs its own loop until it closes
    right_click = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, point, browser.viewport().mapToGlobal(point))
    QApplication.sendEvent(browser.viewport(), right_click)
    (texts,) = shown
    assert texts[:2] == ["Branch from here with…", "Force for all lanes…"], texts  # the lane's menu for that step
    assert not any("Link" in text for text in texts), texts  # not the text browser's link menu
    record = window.state.step_record(lane, step)
    menu = browser.alternatives_menu(lane, record)
    branch_labels = [action.text() for action in menu.actions()[0].menu().actions()]
    assert len(branch_labels) == min(10, len(record.top))  # one entry per candidate token of that step


def test_critical_thresholds_are_settings_shown_in_the_legend(qtbot, window):
    from gui.dialogs.critical_dialog import CriticalDialog

    run_and_wait(qtbot, window, max_new_tokens=10)
    before = sum(window.state.critical_count(i) for i in range(len(window.state.lanes)))
    dialog = CriticalDialog(window.state, window)
    dialog.boxes["ratio"].setValue(0.0)
    dialog.accept()
    assert "ratio" in dialog.message.text() and window.state.critical.ratio == 0.8  # refused in words
    dialog.boxes["ratio"].setValue(0.05)
    dialog.boxes["min_prob"].setValue(0.0)
    dialog.boxes["draw_distance"].setValue(0.5)
    dialog.accept()
    assert window.state.critical.ratio == 0.05 and "p₂/p₁ ≥ 0.05" in window.text.legend.text()
    after = sum(window.state.critical_count(i) for i in range(len(window.state.lanes)))
    assert after > before  # looser thresholds mark more steps, in every view
    assert sorted(window.timeline.markers()["critical"]) == sorted(
        (i, s) for i in range(len(window.state.lanes)) for s, m in enumerate(window.state.marks(i)) if m.critical)
    assert window.trace.settings.critical.ratio == 0.05  # saved with the run


def test_every_tour_stop_opens_and_runs(qtbot, window):
    from gui.state import tour

    for stop in tour.STOPS:
        if "variant" in stop.extra:  # the tiny model has no precision variants: the stop says how to make one
            assert not window.tour.start(stop.key)
            assert "prepare --variant q8_0" in window.state.notice.text and window.state.notice.level == "info"
            continue
        assert window.tour.start(stop.key)
        for _ in range(3):  # the run, then what the stop does after it (a replay, another run)
            wait_idle(qtbot, window, 120_000)
            qtbot.wait(100)
        assert window.state.notice is None or window.state.notice.level == "info", window.state.notice
        assert window.view_shown(stop.view)
        wanted = [lane.spec.name for lane in stop.lanes]
        assert [lane.name for lane in window.state.lanes if lane.name in wanted] == wanted  # added lanes come beside
        assert all(lane.trace.steps for lane in window.state.lanes)
        assert window.prompt.editor.toPlainText() == stop.prompt
        if stop.after == "temperature_fanouts":
            assert sum(1 for lane in window.state.lanes if lane.members) == 5  # the lane and 4 temperatures


def test_a_fan_out_from_the_lanes_editor_shows_its_members_everywhere(qtbot, window):
    table = window.lanes.table
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=table.visualItemRect(table.item(4, 0)).center())
    window.lanes.fanout.setValue(4)  # T 1.3 as 4 seeds
    assert window.state.lanes[4].fanout == 4
    run_and_wait(qtbot, window, max_new_tokens=6)
    lane = window.state.lanes[4]
    distinct = len({tuple(member.token_ids) for member in lane.members})
    assert len(lane.members) == 4 and f"fan-out ×4</b>: {distinct} distinct" in window.text.columns[4].title.text()
    assert window.lane_map.rows()[4:] == [(4, 0)]  # the members grouped under their lane, collapsed
    window.lane_map.toggle_members(4)  # what clicking "▸ T 1.3 ×4" does
    assert window.lane_map.rows()[4:8] == [(4, 0), (4, 1), (4, 2), (4, 3)]
    assert window.fanout.tree() is not None and "<b>4 members</b>" in window.fanout.summary()
    window.state.select(4, 1, 3)
    assert window.inspector._title.text().count("T 1.3 #3 · step 1") == 1
    assert window.status.selection.text().startswith("T 1.3 #3 · step 1")
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=table.visualItemRect(table.item(0, 0)).center())
    assert not window.lanes.fanout.isEnabled()  # greedy draws nothing: no fan-out there


def test_the_status_bar_stops_saying_loading_once_tokens_stream(qtbot, window):
    # a first run loads the model: "loading …" must give way to "running…" at the first streamed token, not
    # stay up for seconds while the text fills in
    from gui.state.tasks.run import RunTask

    run_and_wait(qtbot, window, max_new_tokens=3)
    record = window.state.traces[0].steps[0]
    events = window.state.events
    events.emit("run_started", RunTask.kind)
    window.state.set_status("loading tiny…")
    assert window.status.currentMessage() == "loading tiny…"
    events.emit("step_added", 0, record)
    assert window.status.currentMessage() == "running…"
    events.emit("step_added", 0, record)  # later steps leave the message alone
    window.state.set_status("stopped")
    events.emit("step_added", 0, record)
    assert window.status.currentMessage() == "stopped"
