"""Compare with model… in the window, end to end on the real default model and its int4 variant: a greedy lane
runs, its tokens are read by both models on the worker; the Model comparison view shows KL for every step and
marks exactly the top-1 flips (checked against each model's logits recomputed prefix by prefix, without the
job's code); a click on a step shows both distributions; the numbers are the ones `compare-models` writes; the
comparison goes stale when the lane is edited and goes when a new run starts; refusals leave the run as it was;
the Chinese interface shows the view in Chinese."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

import main
from decoding.chain.spec import LaneSpec
from gui.dialogs import model_choice
from gui.state.model_comparison import ModelSide, comparison_of
from gui.state.run_state import Selection
from tests.gui.test_i18n import chinese  # noqa: F401 (the Chinese application, a fixture)
from tests.gui_helpers import run_and_wait, wait_idle

PROMPT = "The capital of France is"
STEPS = 12
INT4 = "SmolLM2-135M-Instruct-int4"
COMPARE_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def int4_dir() -> Path:
    from models.catalog import models_dir

    path = models_dir() / INT4
    if not (path / "model.onnx").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{INT4} is not prepared at {path}")
        pytest.skip(f"{INT4} not prepared; run `python main.py prepare --variant int4`")
    return path


def prefix_logits(model_dir: Path, prompt: list[int], tokens: list[int]) -> np.ndarray:
    """The model's next-token logits after each prefix prompt + tokens[:i], each prefix run on its own through
    the prepared decoding graph (no KV cache, no whole-sequence scorer): rows [len(tokens), vocab]."""
    from models.validate import empty_past, kv_layout, open_session, run_step

    session = open_session(model_dir / "model.onnx")
    layout = kv_layout(session)
    rows = [run_step(session, layout, np.array([prompt + tokens[:i]], np.int64), empty_past(layout), 0)[0]
            for i in range(len(tokens))]
    return np.stack(rows).astype(np.float64).reshape(len(tokens), -1)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def click_strip(qtbot, view, step: int) -> None:
    canvas = view._canvas
    point = canvas.mapFromScene(view.strip_point(step))
    point.setY(point.y() - 3)  # just above the axis: inside the plot
    qtbot.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, pos=point)


def test_compare_a_greedy_lane_with_the_int4_variant(qtbot, make_window, default_model_dir, int4_dir, monkeypatch,
                                                      tmp_path):
    window = make_window(default_model_dir)
    window.state.set_specs([LaneSpec("greedy")])
    window.prompt.editor.setPlainText(PROMPT)
    window.prompt.chat.setChecked(False)
    view = window.model_compare
    assert view.texts()["title"].startswith("No model comparison yet")
    run_and_wait(qtbot, window, max_new_tokens=STEPS)
    trace = window.state.shown_trace()
    prompt, tokens = list(trace.prompt.ids), list(trace.lanes[0].token_ids)
    assert len(tokens) == STEPS

    offered = []
    monkeypatch.setattr(model_choice, "ask_model", lambda _parent, choices, _lane, _model: offered.append(choices)
                        or int4_dir)
    window.state.select(0, 0)
    window.window_actions["compare_with_model"].trigger()
    wait_idle(qtbot, window, COMPARE_TIMEOUT_MS)
    assert window.state.notice is None, window.state.notice
    assert ModelSide(INT4, "int4", str(int4_dir)) in offered[0]
    assert default_model_dir.name not in {side.name for side in offered[0]}  # not the run's own model
    assert window.view_shown("model_compare")
    comparison = window.state.model_comparison
    assert comparison.token_ids == tokens and comparison.other.precision == "int4"
    assert comparison.reference.name == default_model_dir.name

    # every step has its KL, and exactly the steps where the two models' top-1 differ are flips
    a, b = prefix_logits(default_model_dir, prompt, tokens), prefix_logits(int4_dir, prompt, tokens)
    p, q = softmax(a), softmax(b)
    kl = (p * (np.log(p) - np.log(q))).sum(axis=-1)
    bars = view.bars()
    assert [bar.step for bar in bars] == list(range(STEPS))
    np.testing.assert_allclose([bar.kl for bar in bars], kl, rtol=1e-3, atol=1e-5)
    flips = [i for i in range(STEPS) if np.argmax(a[i]) != np.argmax(b[i])]
    assert flips, "int4 keeps every top-1 of this prompt: choose one where it does not"
    assert [bar.step for bar in bars if bar.flip] == flips
    assert all(bar.flip_label for bar in bars if bar.flip)
    # model A is the run's model: its numbers are the lane's own records (greedy: its top-1 is the token)
    for step, record in zip(comparison.steps, trace.lanes[0].steps, strict=True):
        assert step.top1_reference == record.token_id
        assert step.p_reference == pytest.approx(record.prob_raw, abs=1e-4)

    # a click on a flip's bar: both distributions side by side, the lane's token selected in the window
    step = next((f for f in flips if f != view.step), flips[0])
    click_strip(qtbot, view, step)
    assert view.step == step and window.state.selection == Selection(0, step)
    for side, probs in ((0, p[step]), (1, q[step])):
        shown = view.rows(side)
        best = np.argsort(-probs)[:10]
        assert [row.token_id for row in shown[:10]] == [int(i) for i in best]
        np.testing.assert_allclose([row.prob for row in shown[:10]], probs[best], rtol=1e-3, atol=1e-6)
        assert [row.token_id for row in shown if row.chosen] == [tokens[step]]
    for side, other_top1 in ((0, int(np.argmax(q[step]))), (1, int(np.argmax(p[step])))):  # marked where shown
        shown = [row.token_id for row in view.rows(side)]
        assert [row.token_id for row in view.rows(side) if row.other_top1] == [t for t in shown if t == other_top1]
    texts = view.texts()
    assert texts["step"].startswith(f"step {step}:") and "top-1 flips" in texts["step"]
    agreement = 1 - len(flips) / STEPS
    assert f"top-1 agreement {agreement:.1%}" in texts["summary"]
    assert "free-running greedy texts" in texts["summary"]
    figure = view.figure()
    assert figure is not None and "teacher-forced" in figure.title
    # where in depth int4 departs: one point per decoder layer, the error building up from layer 1
    layers, errors = view.layer_points()
    assert layers == list(range(1, 31)) and all(e > 0 for e in errors) and errors[-1] > errors[0]
    assert all(0.9 < d.cosine < 1 for d in comparison.layers)

    # the numbers compare-models writes for the same prompt and models
    out = tmp_path / "cmp.json"
    code = main.main(["compare-models", "--prompt", PROMPT, "--models", f"{default_model_dir.name},{INT4}",
                      "--max-new-tokens", str(STEPS), "--device", "cpu", "--json", str(out)])
    assert code == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert [s["token_id"] for s in record["steps"]] == tokens
    for mine, theirs in zip(comparison.steps, record["steps"], strict=True):
        assert mine.kl == pytest.approx(theirs["kl"], rel=1e-4, abs=1e-7)
        assert (mine.top1_reference, mine.top1_other) == (theirs["top1_reference"], theirs["top1_other"])
        assert mine.p_other == pytest.approx(theirs["p_other"], abs=1e-5)
    summary = record["summary"]
    for key in ("top1_agreement", "first_top1_flip", "max_kl_step", "greedy_first_divergence_step"):
        assert comparison.summary[key] == summary[key], key
    assert comparison.summary["mean_kl"] == pytest.approx(summary["mean_kl"], rel=1e-4)
    assert comparison.greedy["other_ids"] == record["greedy"]["other_ids"]

    # the lane edited: the comparison says it is stale; a new run drops it
    window.state.replace_spec(0, LaneSpec("greedy", repetition_penalty=1.3))
    assert window.state.comparison_stale() and "stale" in view.texts()["title"]
    run_and_wait(qtbot, window, max_new_tokens=STEPS)
    assert window.state.model_comparison is None
    assert view.texts()["title"].startswith("No model comparison yet") and view.bars() == []
    assert view.figure() is None


def other_vocabulary(model_dir: Path, folder: Path) -> Path:
    """A prepared-looking copy of `model_dir` (its files linked) whose tokenizer has one token renamed."""
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.name not in ("tokenizer.json", "manifest.json") and path.is_file():
            (folder / path.name).symlink_to(path)
    data = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["Ġrenamed-for-the-test"] = vocab.pop(next(iter(vocab)))
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["name"] = folder.name
    manifest["files"]["tokenizer.json"] = {"size": (folder / "tokenizer.json").stat().st_size}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_refusals_and_stop_leave_the_run_as_it_was(qtbot, make_window, default_model_dir, int4_dir, tmp_path,
                                                  monkeypatch):
    window = make_window(default_model_dir)
    controller, state = window.controller, window.state
    state.set_specs([LaneSpec("greedy")])
    assert not controller.compare_with_model(0, int4_dir)  # nothing run yet
    assert "finished run" in state.notice.text
    window.prompt.editor.setPlainText(PROMPT)
    run_and_wait(qtbot, window, max_new_tokens=4)
    tokens = list(state.lanes[0].trace.token_ids)
    state.clear_notice()
    # the token's menu offers the command; the user cancels the model list: nothing happens
    asked = []
    monkeypatch.setattr(model_choice, "ask_model", lambda *args: asked.append(args) or None)
    menu = window.text.columns[0].browser.alternatives_menu(0, state.lanes[0].trace.steps[1])
    next(a for a in menu.actions() if a.text() == "Compare this lane with another model…").trigger()
    assert asked and asked[0][2:] == ("greedy", default_model_dir.name)
    assert state.notice is None and not window.worker.is_running()
    # Stop while it compares: nothing shown, the lanes kept
    assert controller.compare_with_model(0, int4_dir)
    window.window_actions["stop"].trigger()
    wait_idle(qtbot, window, COMPARE_TIMEOUT_MS)
    assert state.model_comparison is None and state.job is None and state.lanes[0].trace.token_ids == tokens
    refusals = {
        "SmolLM2-135M-Instruct-missing": "is not prepared here",
        default_model_dir: "the run's own model",
        other_vocabulary(int4_dir, tmp_path / "other-vocab"): "its vocabulary has other tokens (49169 each)",
    }
    for other, words in refusals.items():
        assert not controller.compare_with_model(0, other)
        assert words in state.notice.text, state.notice.text
        assert not window.worker.is_running() and state.model_comparison is None
        assert state.lanes[0].trace.token_ids == tokens


@pytest.mark.usefixtures("chinese")
def test_the_chinese_interface_shows_the_view_in_chinese(qtbot, tmp_path, tiny_model_dir):
    from gui.main_window import MainWindow
    from runfiles import run_file
    from tests.decoding.test_jsonio import fake_trace
    from tests.gui.test_i18n import untranslated

    window = MainWindow(tiny_model_dir)
    try:
        window.show()
        window.files.open(run_file.save(fake_trace(), tmp_path / "run.json"))
        lane = window.state.lanes[0]
        count = len(lane.trace.token_ids)
        rng = np.random.default_rng(1)
        logits = rng.normal(0, 2, (2, count, max(lane.trace.token_ids) + 20))
        sides = (ModelSide(window.state.model_name, "fp32"), ModelSide("other", "int4"))
        greedy = {"reference_ids": [1, 2], "other_ids": [1, 3], "reference_text": "", "other_text": ""}
        window.show_view("timeline")
        window.state.set_model_comparison(comparison_of(lane.key, lane.name, sides, logits, lane.trace.token_ids,
                                                        lambda i: f"tok{i}", greedy))
        assert window.view_shown("model_compare")
        qtbot.wait(50)
        texts = window.model_compare.texts()
        assert re.search(r"[\u3400-\u9fff]", texts["summary"]) and re.search(r"[\u3400-\u9fff]", texts["step"])
        kept = re.compile(r"other|tok\d+|fp32|int4|KL")  # the model's name, its tokens, precisions, KL itself
        left = [(where, word) for where, word in untranslated(window) if not kept.fullmatch(word)]
        assert not left, f"left in English: {sorted(set(left))}"
    finally:
        window.shutdown()
        window.deleteLater()
        qtbot.wait(10)
