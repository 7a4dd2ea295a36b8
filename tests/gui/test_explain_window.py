"""Explaining a lane from the window, end to end on the tiny model (prepared from its Hugging Face folder, so its
inspection model can be built): the first Explain prepares the inspection model in the setup dialog (stages and
progress shown, the window's event loop running throughout), then explains on the worker; the Attention tab shows
the lane's weights, the run saves with its explanation and a window without any model shows it again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from gui.dialogs.setup_dialog import SetupDialog
from models import prepare
from models.inspection import inspection_is_prepared
from tests.gui_helpers import run_and_wait, wait_idle

PREPARE_TIMEOUT_MS = 240_000


@pytest.fixture(scope="module")
def unprepared(tmp_path_factory, tiny_hf_dir) -> Path:
    """The tiny model prepared from its HF folder into a cache of its own, without an inspection model."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path_factory.mktemp("explain-cache")))
        yield prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-explain")


class DialogWatch:
    """Polls the window's event loop every 50 ms: each tick proves it runs; a shown setup dialog's stage and
    progress are recorded."""

    def __init__(self) -> None:
        self.ticks = 0
        self.stages: list[str] = []
        self.values: list[int] = []
        self.timer = QTimer()
        self.timer.timeout.connect(self._tick)
        self.timer.start(50)

    def _tick(self) -> None:
        self.ticks += 1
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, SetupDialog):
            self.stages.append(dialog.stage.text())
            self.values.append(dialog.bar.value())


def test_explain_a_lane_prepares_shows_saves_and_reopens_without_the_model(qtbot, make_window, unprepared,
                                                                           tmp_path):
    assert not inspection_is_prepared(unprepared)
    window = make_window(unprepared)
    window.prompt.editor.setPlainText("我虽然很累，但还是决定")
    window.prompt.chat.setChecked(True)
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.state.select(0, 2)
    watch = DialogWatch()
    # returns once the dialog closed; the explanation then runs on the worker
    window.window_actions["explain_selected_lane"].trigger()
    wait_idle(qtbot, window, PREPARE_TIMEOUT_MS)
    watch.timer.stop()
    assert inspection_is_prepared(unprepared)
    seen = list(dict.fromkeys(stage.split(" —")[0] for stage in watch.stages))
    assert {"load", "export", "check"} <= set(seen), seen
    assert watch.values == sorted(watch.values) and watch.values[-1] > 500
    assert watch.ticks > 20  # the window's event loop ran all along (a frozen window would not tick)
    assert window.state.notice is None, window.state.notice

    trace = window.state.trace
    result = window.state.explanation(0)
    assert result is not None and result.token_ids == trace.prompt.ids + trace.lanes[0].token_ids
    assert window.view_shown("attention")
    query = result.prompt_length + 2  # the selected step's token
    assert window.attention.token == query
    np.testing.assert_allclose(window.attention.grid(), result.attention[:, :, query, : query + 1].mean(axis=1),
                               atol=1e-6)
    assert "我" in window.attention.column_labels()
    assert window.lens.position == query - 1
    assert window.lens.cell(result.layers, 0)[1] == pytest.approx(float(result.lens_probs[-1, query - 1, 0]))
    assert window.tokens_view.drawn_ids(0) == trace.prompt.ids
    assert "<|im_start|>" in window.tokens_view.drawn_labels(0)

    explainer = window.controller.holder.explainer()
    window.commands.explain_lane(1)  # another lane: the opened inspection model is used again
    wait_idle(qtbot, window, PREPARE_TIMEOUT_MS)
    assert window.controller.holder.explainer() is explainer and window.state.explanation(1) is not None

    path = tmp_path / "explained.json"
    assert window.files.save(path)
    reopened = make_window(None)  # no model at all
    assert reopened.files.open(path)
    reopened.state.select(0, 2)
    np.testing.assert_allclose(reopened.attention.grid(), window.attention.grid(), atol=1e-6)
    assert not reopened.attention.header.explain_button.isVisible()
    assert reopened.tokens_view.drawn_labels(0) == window.tokens_view.drawn_labels(0)  # pieces from the file
    names = [p.name for p in reopened.export_images(tmp_path / "images")]
    assert {"attention.png", "attention.svg", "logit_lens.png", "tokens.png"} <= set(names)


@pytest.mark.parametrize("key, contrast, concessive", [("delayed_release", " but", "Although"),
                                                       ("delayed_release_zh", "但", "虽然")])
def test_the_delayed_release_tour_stop_opens_the_attention_of_its_contrast_word(qtbot, window, key, contrast,
                                                                                 concessive):
    from gui.present.inside_data import word_span

    assert window.tour.start(key)
    for _ in range(2):  # the run, then the explanation
        wait_idle(qtbot, window, PREPARE_TIMEOUT_MS)
        qtbot.wait(100)
    result = window.state.explanation(0)
    assert result is not None and window.view_shown("attention")
    prompt = result.prompt_length
    query = word_span(result, contrast, last=True, within=prompt)[-1]
    keys = word_span(result, concessive, within=prompt)
    assert window.attention.token == query and window.attention.column_labels()[query] in contrast
    layer, column = window.attention.picked()
    assert column in keys  # the concessive word's token its strongest head favours
    weights = result.attention[:, :, query, keys.start:keys.stop]
    assert result.attention[layer, window.attention._heads, query, column] == pytest.approx(weights.max())
    assert "position 0 left out" in window.attention._legend.text()


def test_the_token_journey_tour_stop_selects_the_step_that_settles_latest(qtbot, window):
    from gui.present.inside_data import latest_settling

    assert window.tour.start("token_journey")
    for _ in range(2):
        wait_idle(qtbot, window, PREPARE_TIMEOUT_MS)
        qtbot.wait(100)
    result = window.state.explanation(0)
    position = latest_settling(result)
    assert window.view_shown("lens") and window.lens.position == position
    assert window.state.selection.step == position + 1 - result.prompt_length
    assert "is the model's choice" in window.lens.readout()
