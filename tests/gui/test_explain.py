"""Explaining a lane, Qt-free: the controller's explain command on a pure-numpy run with a fake inspection model
(the real one: tests/gui/test_explain_window.py). The sequence is the prompt then the lane's tokens, capped with a
notice; the inspection model is prepared first through the window's hook and opened once per model; the result is
stored with the shown run (which stays), saved with it and shown from the file without a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from decoding.chain.spec import LaneSpec
from decoding.records.explain import MAX_EXPLAIN_TOKENS, build_explain, whole_lens
from decoding.records.trace import ModelInfo
from gui.state.tasks.explain import ExplainTask
from tests.gui.test_controller import FakeHolder, make, request


class Pieces:
    def piece(self, token_id: int) -> str:
        return f"<{token_id}>"

    def token_bytes(self, token_id: int) -> bytes:
        return f"<{token_id}>".encode()


class FakeExplainer:
    """Uniform causal attention and a lens naming the next token: enough to store, save and show."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], int]] = []

    def explain(self, token_ids: list[int], prompt_length: int):
        self.calls.append((list(token_ids), prompt_length))
        length = len(token_ids)
        attention = np.tril(np.ones((length, length), dtype=np.float32))
        attention /= attention.sum(axis=1, keepdims=True)
        ids = np.array([[[i, 99] for i in (*token_ids[1:], 98)]] * 3)
        lens = whole_lens(ids, np.full(ids.shape, 0.4, dtype=np.float32), Pieces())
        return build_explain(token_ids, prompt_length, np.broadcast_to(attention, (2, 2, length, length)), lens,
                             Pieces(), ModelInfo("fake"), "CPUExecutionProvider")


class ExplainingHolder(FakeHolder):
    """A model folder whose manifest names the weights it was exported from (an inspection model can be built)."""

    positions: int | None = 512
    start: int | None = None  # the model's start token (None: it has none)

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.path = folder / "model"
        self.path.mkdir()
        source = {"kind": "hf-folder", "path": str(folder)}
        (self.path / "manifest.json").write_text(json.dumps({"name": "fake", "source": source}), encoding="utf-8")
        self._explainer: FakeExplainer | None = None
        self.opened = 0

    def max_positions(self) -> int | None:
        return self.positions

    def start_token_id(self) -> int | None:
        return self.start

    @property
    def explainer_open(self) -> bool:
        return self._explainer is not None

    def explainer(self) -> FakeExplainer:
        if self._explainer is None:
            self.opened += 1
            self._explainer = FakeExplainer()
        return self._explainer


def explaining(folder: Path, specs=None):
    model, controller, view = make(specs) if specs else make()
    controller.holder = ExplainingHolder(folder)
    prepared: list[Path] = []
    controller.prepare_inspection = lambda path: prepared.append(path)  # None: prepared
    return model, controller, view, prepared


def test_explain_stores_the_lanes_sequence_with_the_run_and_keeps_the_run(tmp_path):
    model, controller, view, prepared = explaining(tmp_path)
    controller.run(request(tokens=8))
    shown = model.trace
    model.select(1, 3)
    before = len(view.events)
    assert controller.explain_lane(1)
    assert prepared == [controller.holder.path]  # not prepared: the window's hook prepares it first
    sequence = shown.prompt.ids + model.lanes[1].trace.token_ids
    assert controller.holder.explainer().calls == [(sequence, len(shown.prompt.ids))]
    names = [event[0] for event in view.events[before:]]
    assert names[0] == "run_started" and view.events[before][1] is ExplainTask.kind
    assert "lanes_reset" not in names and "explanations_changed" in names
    assert model.trace is shown and model.selection is not None and not model.running
    result = model.explanation(1)
    assert result is not None and result.token_ids == sequence
    assert model.explanation(0) is None  # another lane: other tokens
    assert "explained 11 tokens" in view.events[-1][1]


def test_a_plain_prompt_is_explained_with_the_start_token_in_front_and_a_chat_prompt_as_it_is(tmp_path):
    from dataclasses import replace

    from decoding.records.explain import start_token_added

    model, controller, view, _ = explaining(tmp_path)
    controller.holder.start = 1
    controller.run(request(tokens=6))
    assert controller.explain_lane(1)
    prompt = model.trace.prompt.ids
    sequence = [*prompt, *model.lanes[1].trace.token_ids]
    assert controller.holder.explainer().calls == [([1, *sequence], len(prompt) + 1)]
    result = model.explanation(1)  # the lane's explanation although position 0 is not the prompt's
    assert result is not None and start_token_added(result, prompt) and result.token_ids[1:] == sequence
    assert model.explanation(0) is None
    jobs = sum(1 for event in view.events if event[0] == "run_started")
    assert controller.explain_lane(1)  # stored: nothing to run again
    assert sum(1 for event in view.events if event[0] == "run_started") == jobs
    controller.run(replace(request(tokens=6), chat=True))  # a chat prompt starts with its own special tokens
    controller.explain_lane(1)
    chat_prompt = model.trace.prompt.ids
    assert controller.holder.explainer().calls[-1] == ([*chat_prompt, *model.lanes[1].trace.token_ids],
                                                       len(chat_prompt))
    assert not start_token_added(model.explanation(1), chat_prompt)


def test_an_explained_lane_is_shown_again_without_a_job_and_the_inspection_model_opens_once(tmp_path):
    model, controller, view, _ = explaining(tmp_path)
    controller.run(request(tokens=5))
    controller.explain_lane(0)
    controller.explain_lane(2)
    assert controller.holder.opened == 1 and len(controller.holder.explainer().calls) == 2
    jobs = sum(1 for event in view.events if event[0] == "run_started")
    assert controller.explain_lane(0)
    assert sum(1 for event in view.events if event[0] == "run_started") == jobs  # stored: nothing to run
    assert "is explained" in view.events[-1][1]


def test_a_long_lane_is_explained_up_to_the_limit_with_a_notice(tmp_path):
    model, controller, _, _ = explaining(tmp_path, [LaneSpec("greedy")])
    controller.run(request(tokens=MAX_EXPLAIN_TOKENS))
    assert controller.explain_lane(0)
    result = model.explanation(0)
    assert len(result.tokens) == MAX_EXPLAIN_TOKENS
    assert model.notice.level == "info" and f"first {MAX_EXPLAIN_TOKENS} of" in model.notice.text
    controller.holder.positions = 64  # a model of fewer positions: its own limit
    model.trace.explanations = []
    controller.explain_lane(0)
    assert len(model.explanation(0).tokens) == 64


def test_refusals_say_why_in_words(tmp_path):
    model, controller, _, _ = explaining(tmp_path)
    assert not controller.explain_lane(0)
    assert "needs a lane of a finished run" in model.notice.text
    controller.run(request(tokens=4))
    controller.holder.positions = 2  # the prompt alone is longer
    assert not controller.explain_lane(0)
    assert "the prompt: the sequence has 3 tokens; explain takes 1 to 2" in model.notice.text
    controller.holder.positions = 512
    controller.prepare_inspection = lambda path: "preparing its inspection model was cancelled"
    assert not controller.explain_lane(0)
    assert model.notice.text == "“greedy” was not explained: preparing its inspection model was cancelled."
    controller.prepare_inspection = None
    assert not controller.explain_lane(0)
    assert "python main.py explain prepares it" in model.notice.text
    (controller.holder.path / "manifest.json").write_text('{"name": "fake", "source": {"kind": "hub"}}')
    assert not controller.explain_lane(0)  # no weights to build it from: said before any dialog
    assert "cannot be explained" in model.notice.text and "keeps no float32 weights" in model.notice.text
    controller.holder = None
    assert not controller.explain_lane(0) and "needs the model it was made with" in model.notice.text


def test_a_failed_explanation_keeps_the_run_and_says_so(tmp_path):
    model, controller, _, _ = explaining(tmp_path)
    controller.run(request(tokens=4))

    def broken(ids, prompt_length):
        raise RuntimeError("the session broke")

    controller.holder.explainer().explain = broken
    controller.explain_lane(0)
    assert model.notice.text == "Could not explain the lane: the session broke." and model.trace.lanes
    assert model.explanation(0) is None and not model.running


def test_saved_explanations_open_and_show_without_a_model(tmp_path):
    model, controller, _, _ = explaining(tmp_path)
    controller.run(request(tokens=6))
    controller.explain_lane(2)
    path = tmp_path / "run.json"
    assert controller.save(path)
    other, other_controller, _ = make([LaneSpec("x")])
    other_controller.holder = None
    assert other_controller.open(path) is not None
    stored = other.explanation(2)
    assert stored is not None and stored.to_json() == model.explanation(2).to_json()
    assert other_controller.explain_lane(2)  # already explained: shown, no model needed
    assert other.notice is None
    other.remove_lane(2)
    assert other.shown_trace().explanations == []  # a removed lane's explanation is not saved
