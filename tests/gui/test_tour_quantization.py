"""The tour stop "Quantization noise flips near-ties" on the real default model and its Q8_0 variant: a greedy
lane on each, run side by side; they part at a step where the fp32 lane's top two candidates are nearly tied;
that step is selected on the fp32 lane and the Model comparison view reads the fp32 lane's tokens with Q8_0
(KL for every step, the first top-1 flip exactly where the Q8_0 lane chose otherwise, every flip at a near-tie
and counted so in the summary); the run saves, opens and replays with each lane on its own model."""

from __future__ import annotations

import os

import pytest

from gui.state import tour
from tests.gui_helpers import wait_idle

INT4 = "SmolLM2-135M-Instruct-q8_0"  # the stop's variant


@pytest.fixture
def int4_prepared() -> None:
    from models.catalog import manifest_is_valid, models_dir

    if not manifest_is_valid(models_dir() / INT4):
        if os.environ.get("CI"):
            pytest.fail(f"{INT4} is not prepared (test.sh prepares it)")
        pytest.skip(f"{INT4} not prepared; run `python main.py prepare --variant q8_0`")


@pytest.mark.slow
def test_the_quantization_stop_parts_at_the_fp32_near_tie_and_compares(qtbot, make_window, default_model_dir,
                                                                        int4_prepared, tmp_path):
    window = make_window(default_model_dir)
    assert window.tour.start("quantization")
    qtbot.waitUntil(lambda: window.state.model_comparison is not None and not window.worker.is_running(),
                    timeout=300_000)
    state = window.state
    assert [lane.spec.model for lane in state.lanes] == [None, INT4] and window.view_shown("model_compare")
    parted = state.divergence_step(1)
    assert parted is not None and (state.selection.lane, state.selection.step) == (0, parted)
    probs = state.traces[0].steps[parted].top.probs
    assert probs[0] - probs[1] < state.trace.settings.near_tie_threshold  # fp32's top two nearly tied there
    comparison = state.model_comparison
    assert comparison.other.name == INT4 and len(comparison.steps) == len(state.traces[0].token_ids)
    flips = [s.step for s in comparison.steps if not s.top1_agree]
    assert flips[0] == parted  # teacher-forced on the same prefix, int4's top-1 is the int4 lane's token
    assert comparison.steps[parted].top1_other == state.traces[1].token_ids[parted]
    assert window.views["model_compare"].step == parted  # both distributions shown where the lanes part
    threshold = state.trace.settings.near_tie_threshold
    for step in flips:  # Q8_0 flips only near-ties of fp32, and the summary counts them against the margin
        top = state.traces[0].steps[step].top.probs
        assert top[0] - top[1] < threshold
    summary = window.views["model_compare"].texts()["summary"]
    assert f"{len(flips)} top-1 flips in {len(comparison.steps)} steps" in summary
    assert state.notice.text.startswith(tour.title(tour.stop("quantization")))

    path = tmp_path / "quantization.json"
    assert window.files.save(path)
    again = make_window(default_model_dir)
    assert again.files.open(path)
    assert [lane.spec.model for lane in again.state.lanes] == [None, INT4]
    again.commands.replay()
    wait_idle(qtbot, again, 300_000)
    assert [t.token_ids for t in again.state.traces] == [t.token_ids for t in state.traces]
