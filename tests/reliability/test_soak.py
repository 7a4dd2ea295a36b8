"""Long sessions stay flat: SOAK_RUNS (200; BRANCHPOINT_SOAK_RUNS for more) consecutive runs in one process grow
resident memory by less than 50 MB and leave no thread, file descriptor or ONNX Runtime session behind. The
engine on the default model (all default lanes, a fan-out, a branch in the run and after it; 4 new tokens a run
so CI stays within minutes), and the window on the tiny model (Run clicked, streamed, drawn)."""

from __future__ import annotations

import pytest

from decoding.engine import Engine, branch_prefix
from decoding.fanout import fan_out
from decoding.spec import Branch, LaneSpec, default_lanes
from tests.processes import HAS_PROC
from tests.reliability.resources import SOAK_RUNS, assert_flat, measure

pytestmark = pytest.mark.skipif(not HAS_PROC, reason="reads this process's resources from /proc")

PROMPTS = ["Once upon a time", "The capital of France is", "我虽然很累，但还是决定",
           "def fib(n):\n    return n if n < 2 else", "Although I was tired, I still decided to go out and"]
WARM_UP = 10  # ORT's arenas and the caches reach their working size in the first runs


def one_run(model, engine: Engine, index: int) -> None:
    prompt = model.encode_prompt(PROMPTS[index % len(PROMPTS)], chat=index % 7 == 0)
    specs = [*default_lanes(), *fan_out(LaneSpec("fan", do_sample=True, top_p=0.9), 2),
             LaneSpec("branch", branch=Branch("greedy", 1, 13))]
    trace = engine.run(prompt, specs, max_new_tokens=4, base_seed=index)
    assert trace.error is None
    after = LaneSpec("after", do_sample=True, seed=index, forced={2: 11})  # an after-run branch: a Prefix
    engine.run(prompt, [after], max_new_tokens=4, prefix=branch_prefix(trace, "greedy", 2))


@pytest.mark.slow
def test_engine_runs_on_the_default_model_stay_flat(default_model_dir):
    from models.open_model import open_model

    model = open_model(default_model_dir, device="cpu")
    engine = model.engine()
    for index in range(WARM_UP):
        one_run(model, engine, index)
    before = measure()
    for index in range(WARM_UP, WARM_UP + SOAK_RUNS):
        one_run(model, engine, index)
    after = measure()
    print(f"engine soak, {SOAK_RUNS} runs: {before} -> {after}")
    assert_flat(before, after)


@pytest.mark.slow
def test_window_runs_on_the_tiny_model_stay_flat(qtbot, window):
    from tests.gui_helpers import run_and_wait

    for _ in range(WARM_UP):
        run_and_wait(qtbot, window, max_new_tokens=4)
    before = measure()
    for index in range(SOAK_RUNS):
        window.prompt.editor.setPlainText(PROMPTS[index % len(PROMPTS)])
        run_and_wait(qtbot, window, max_new_tokens=4)
        assert not window.error_banner.isVisible()
    after = measure()
    print(f"window soak, {SOAK_RUNS} runs: {before} -> {after}")
    assert_flat(before, after)
