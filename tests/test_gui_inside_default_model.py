"""The delayed-release tour stops on the real default model, through the window (slow): the attention view opens
on the contrast word with the head that looks back at the concessive word, the one the inspection model's tests
found (" but" → "Although": layer 4 head 8; 但 → 虽然: layer 14 head 6), far above what that head gives the other
earlier tokens."""

from __future__ import annotations

import pytest

from tests.gui_helpers import wait_idle

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("key, layer, head, concessive", [("delayed_release", 4, 8, "Although"),
                                                          ("delayed_release_zh", 14, 6, "然")])
def test_the_contrast_word_opens_on_the_head_that_looks_back(qtbot, make_window, default_model_dir, key, layer,
                                                             head, concessive):
    window = make_window(default_model_dir)
    assert window.tour.start(key)
    for _ in range(2):  # the run, then the explanation (the inspection model is prepared already in CI)
        wait_idle(qtbot, window, 600_000)
        qtbot.wait(100)
    view = window.attention
    picked_layer, column = view.picked()
    assert (picked_layer, view._heads) == (layer, head)
    assert view.column_labels()[column] == concessive
    result = window.state.explanation(0)
    weight = float(result.attention[layer, head, view.token, column])
    others = [float(w) for p, w in enumerate(result.attention[layer, head, view.token, : view.token + 1])
              if p not in (0, column)]
    assert weight > 0.2 and weight > 10 * sum(others) / len(others)
    assert view.strip_bars()[column] == max(view.strip_bars())  # the peak of that head's row
