"""Issue 33, item 5, as a new user met it (tiny model, real widgets): the inspector's stage-by-stage table keeps
lines enough to read (not a four-line box) and follows the candidate clicked — for a candidate the lane did not
pick, its probability after every stage (equal to its processed probability at the end) and, for one the chain
removed, the stage that removed it, also in the row's readout ("removed by top_k")."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

from tests.gui_helpers import run_and_wait

LANE = 2  # the top-k 50 preset, given a temperature and a top-p too: a chain of three stages


def click_row(qtbot, inspector, row: int) -> None:
    view = inspector._canvas
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.mapFromScene(inspector.scene_pos_of_row(row) + QPointF(4, 0)))


def test_each_clicked_candidate_shows_its_probability_after_every_stage_and_what_removed_it(qtbot, window):
    form = window.lanes.form
    window.lanes._select_row(LANE)
    form.widgets["temperature"].setValue(0.7)
    form.widgets["top_k"].setValue(3)
    form.widgets["top_p"].setValue(0.9)
    assert window.state.lanes[LANE].spec.processors() == ["temperature", "top_k", "top_p"]
    run_and_wait(qtbot, window, max_new_tokens=8)
    inspector = window.show_view("inspector")
    window.state.select(LANE, 3)
    qtbot.wait(50)
    assert inspector._details_scroll.height() >= 6 * inspector.fontMetrics().lineSpacing()
    table = inspector.stage_table()
    assert [line[0] for line in table] == ["stage", "raw (before the chain)", "temperature", "top_k", "top_p"]
    assert "for “" in inspector._stages.text() and "(click another row" in inspector._stages.text()

    rows = inspector.rows()
    seen_kept = seen_removed = False
    for index, row in enumerate(rows):
        if row.chosen or row.prob_raw is None:
            continue
        click_row(qtbot, inspector, index)
        table = inspector.stage_table()
        assert "not chosen" in inspector._stages.text()
        probs = [line[4] for line in table[1:]]
        assert probs[0] == f"{row.prob_raw:.4f}"
        if row.prob:  # kept by every stage: its probability after the last stage is its processed one
            assert "?" not in probs and float(probs[-1]) == pytest.approx(row.prob, abs=2e-4)
            seen_kept = True
        else:  # removed: the table and the readout name the stage
            removed = [line[0] for line in table[1:] if line[3] == "✗ removed here"]
            assert len(removed) == 1 and removed[0] in ("top_k", "top_p"), table
            assert f"removed by {removed[0]}" in inspector._picked_label.text()
            assert float(probs[[line[0] for line in table[1:]].index(removed[0])]) == 0.0
            seen_removed = True
    assert seen_kept and seen_removed

    # back to the chosen token: its own line again; no step: no readout left beside "No step selected"
    click_row(qtbot, inspector, next(i for i, row in enumerate(rows) if row.chosen))
    assert "not chosen" not in inspector._stages.text()
    window.state._set_selection(None)
    assert inspector._title.text() == "No step selected" and inspector._picked_label.text() == ""
