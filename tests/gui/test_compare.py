"""Divergence side by side on hand-built traces: both lanes' distributions at the selected step, each lane's
choice and where the other's stands, the draw of a sampled lane."""

from __future__ import annotations

import pytest

from gui.views.compare_view import CompareView, compare_rows, describe_other
from tests import chart_samples as samples


@pytest.fixture
def compare(qtbot):
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=6)
    widget = CompareView(samples.model_of(lanes))
    qtbot.addWidget(widget)
    widget.resize(900, 420)
    widget.show()
    return widget


def test_both_distributions_at_the_selected_step_mark_both_choices(compare):
    model = compare.state
    step = next(s for s in range(6) if model.traces[1].token_ids[s] != model.traces[0].token_ids[s])
    model.select(1, step)  # the selected lane against the reference lane (greedy)
    a, b = model.traces[1].steps[step], model.traces[0].steps[step]
    rows_a, rows_b = compare.rows("a"), compare.rows("b")
    for rows, own, other in ((rows_a, a, b), (rows_b, b, a)):
        assert [r.token_id for r in rows if r.own] == [own.token_id]
        assert [r.token_id for r in rows if r.other] == [other.token_id]
    by_id = {t.id: t.prob for t in a.top}
    assert all(r.prob == pytest.approx(by_id[r.token_id]) for r in rows_a if r.token_id in by_id)
    caption_a, caption_b = compare.texts()
    assert model.lanes[1].name in caption_a and "the other lane&#x27;s" in caption_a
    assert (f"draw u = {a.draw:.3f}" in caption_a) == (a.draw is not None)
    compare.set_other(2)
    assert compare.rows("b")[0].token_id in {t.id for t in model.traces[2].steps[step].top}


def test_rows_keep_both_choices_even_outside_the_top():
    record = samples.timeline_lanes(samples.EN_CANDIDATES, steps=1)[1].steps[0]
    rows = compare_rows(record, other_token=999_999, count=3)
    assert rows[-1].token_id == 999_999 and rows[-1].prob is None and rows[-1].other
    assert any(r.own for r in rows)
    assert "outside the recorded top" in describe_other(record, 999_999, "x")
    assert describe_other(record, record.token_id, record.token_text) == "both lanes chose the same token here"


def test_nothing_selected_draws_nothing(compare):
    assert compare.rows("a") == [] and "Select a step" in compare._title.text()
