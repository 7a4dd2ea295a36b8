"""Property tests (hypothesis): any valid lane spec over any logits, through the processors, the draw and the
whole engine, ends in tokens or a lane stopped with a reason, never an exception; and any damage to a run file
is answered by a clean TraceFormatError, or gives a run every reader of runs handles. Sized for CI;
BRANCHPOINT_HYPOTHESIS_EXAMPLES raises the number of examples."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from cli.terminal_text import render
from decoding.analysis.analysis import analyze
from decoding.analysis.compare import compare_traces
from decoding.chain.chain import build_processors
from decoding.chain.processors import apply_processors
from decoding.chain.selectors import Sampler
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.engine.replay import plan
from decoding.records import jsonio
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource
from tests.reference import apply_transformers, generation_model, transformers_processors

EXAMPLES = int(os.environ.get("BRANCHPOINT_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
VOCAB = 48
EOS = 3
FINISH_REASONS = {"eos", "length", "stop_string", "error"}


@st.composite
def lane_specs(draw, name: str = "lane") -> LaneSpec:
    """A valid LaneSpec of any kind with any of its parameters set inside their ranges."""
    kind = draw(st.sampled_from(["greedy", "beam", "sample"]))
    values: dict = {"do_sample": kind == "sample"}
    if kind == "beam":
        values["num_beams"] = draw(st.integers(2, 5))
        values["num_return_sequences"] = draw(st.integers(1, values["num_beams"]))
        values["length_penalty"] = draw(st.floats(-2, 2))
        values["early_stopping"] = draw(st.sampled_from([False, True, "never"]))
    if kind == "sample":
        values["seed"] = draw(st.integers(0, 2**31 - 1))
        options = {"temperature": st.floats(0.05, 5), "top_k": st.integers(0, 60), "top_p": st.floats(0, 1),
                   "min_p": st.floats(0, 1), "typical_p": st.floats(0.01, 1)}
        for key, strategy in options.items():
            if draw(st.booleans()):
                values[key] = draw(strategy)
    for key, strategy in {"repetition_penalty": st.floats(0.2, 3), "no_repeat_ngram_size": st.integers(0, 4),
                          "min_new_tokens": st.integers(0, 6), "max_new_tokens": st.integers(1, 10)}.items():
        if draw(st.booleans()):
            values[key] = draw(strategy)
    if kind != "beam" and draw(st.booleans()):
        values["stop_strings"] = (f"<{draw(st.integers(0, VOCAB - 1))}>",)
    if draw(st.booleans()):
        values["forced"] = {draw(st.integers(0, 6)): draw(st.integers(0, VOCAB - 1))}
    try:
        return LaneSpec(name, **values)
    except ValueError:
        assume(False)


logit_rows = st.sampled_from(["normal", "peaked", "ties", "neg_inf", "huge", "flat"]).flatmap(
    lambda kind: st.integers(0, 2**32 - 1).map(lambda seed: (kind, seed)))


def make_logits(kind: str, seed: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, VOCAB)) * 3
    if kind == "peaked":
        x[:, rng.integers(0, VOCAB)] += 30
    elif kind == "ties":
        x = np.round(x)
    elif kind == "neg_inf":
        x[rng.random((rows, VOCAB)) < 0.8] = -np.inf
        x[np.arange(rows), rng.integers(0, VOCAB, rows)] = 0.0
    elif kind == "huge":
        x *= 3000
    elif kind == "flat":
        x[:] = 1.5
    return x.astype(np.float32)


@pytest.fixture(scope="module")
def generation_machinery():
    return generation_model(VOCAB)


EVERY_PROCESSOR = [  # hypothesis favours short-cut examples (a peaked row keeps one token): each processor at work
    LaneSpec("top-p", do_sample=True, top_p=0.9, seed=1),
    LaneSpec("top-k", do_sample=True, top_k=7, temperature=1.5, seed=2),
    LaneSpec("min-p", do_sample=True, min_p=0.05, seed=3),
    LaneSpec("typical", do_sample=True, typical_p=0.8, seed=4),
    LaneSpec("order", do_sample=True, top_p=0.7, temperature=0.6, seed=5, processor_order=("top_p", "temperature")),
    LaneSpec("penalties", repetition_penalty=1.7, no_repeat_ngram_size=2, min_new_tokens=3),
]


@SETTINGS
@given(spec=lane_specs(), logits=logit_rows, history=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12))
@example(spec=EVERY_PROCESSOR[0], logits=("normal", 1), history=[1, 2])
@example(spec=EVERY_PROCESSOR[0], logits=("ties", 2), history=[1, 2])
@example(spec=EVERY_PROCESSOR[1], logits=("ties", 3), history=[5])
@example(spec=EVERY_PROCESSOR[2], logits=("normal", 4), history=[5])
@example(spec=EVERY_PROCESSOR[3], logits=("normal", 5), history=[5])
@example(spec=EVERY_PROCESSOR[4], logits=("normal", 6), history=[5])
@example(spec=EVERY_PROCESSOR[5], logits=("normal", 7), history=[4, 9, 4, 9, 4])
def test_processors_and_the_draw_keep_a_valid_distribution(generation_machinery, spec, logits, history):
    """Branchpoint's processors give what transformers' give on any logits (ties at a cut may keep other ids
    of the same score: transformers' sort leaves them in no set order), and the draw takes the token whose
    interval of the processed distribution (descending probability, ties by id) holds u."""
    rows = spec.num_beams
    scores = make_logits(*logits, rows)
    processors = build_processors(spec.to_config(), 1, [EOS], spec.num_beams, spec.processor_order)
    ids = np.array([history] * rows, dtype=np.int64)
    out = apply_processors(processors, ids, scores) if processors else scores
    assert out.shape == scores.shape and out.dtype == np.float32
    assert not np.isnan(out).any() and not np.isposinf(out).any()
    expected = apply_transformers(transformers_processors(generation_machinery, spec, 1, [EOS]), ids, scores)
    for ours, theirs in zip(out, expected, strict=True):
        kept, kept_too = ours > -np.inf, theirs > -np.inf
        both = kept & kept_too
        np.testing.assert_allclose(ours[both], theirs[both], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(np.sort(ours[kept & ~kept_too]), np.sort(theirs[kept_too & ~kept]))
    finite = np.isfinite(out).any(axis=1)
    if not (spec.min_new_tokens or spec.no_repeat_ngram_size):  # else they may ban the only finite tokens
        assert finite.all()
    if spec.do_sample and finite[0]:
        draw = Sampler(spec.seed).draw(out[0])
        u = float(np.random.Generator(np.random.PCG64(spec.seed)).random())
        assert (draw.token_id, draw.u) == (inverse_cdf(u, out[0]), u)
        assert draw.low <= draw.u < draw.high


def inverse_cdf(u: float, scores: np.ndarray) -> int:
    """The token u selects from softmax(scores), walking descending probability, equal ones by ascending id."""
    weights = np.exp(scores.astype(np.float64) - scores.max())
    probs = weights / weights.sum()
    kept = np.flatnonzero(probs > 0)
    order = kept[np.lexsort((kept, -probs[kept]))]
    return int(order[min(int(np.searchsorted(np.cumsum(probs[order]), u, side="right")), order.size - 1)])


class NoisySource(SummarizingSource):
    """Summarising fake source whose rows are sometimes NaN, +inf or without a finite value."""

    def __init__(self, seed: int, poison_rate: float) -> None:
        super().__init__(vocab_size=VOCAB)
        self.rng = np.random.default_rng(seed)
        self.poison_rate = poison_rate

    def logits_for(self, history):
        logits = super().logits_for(history)
        if self.rng.random() < self.poison_rate:
            logits[self.rng.integers(0, VOCAB)] = self.rng.choice([np.nan, np.inf])
        return logits


@SETTINGS
@given(specs=st.lists(lane_specs(), min_size=1, max_size=4), seed=st.integers(0, 2**32 - 1),
       poison=st.sampled_from([0.0, 0.0, 0.05, 0.3]), max_new_tokens=st.integers(1, 10),
       branch=st.tuples(st.integers(0, 5), st.integers(0, VOCAB - 1)), data=st.data())
def test_the_engine_ends_every_lane_with_a_reason_and_the_run_saves(specs, seed, poison, max_new_tokens, branch,
                                                                    data):
    specs = [spec.with_changes(name=f"lane {i}") for i, spec in enumerate(specs)]
    parents = [s for s in specs if not s.is_beam]
    if parents and data.draw(st.booleans()):  # an in-run branch of a single-row lane
        step = min(branch[0], max_new_tokens - 1)
        specs.append(parents[0].with_changes(name="branch", branch=Branch(parents[0].name, step, branch[1]),
                                             forced={}))
    source = NoisySource(seed, poison) if data.draw(st.booleans()) else FakeSource(vocab_size=VOCAB)
    engine = Engine(source, FakeTokenizer(), [EOS])
    try:
        run = engine.start(PromptInfo("p", [1, 5, 9]), specs, max_new_tokens=max_new_tokens, base_seed=seed)
    except ValueError as error:  # refused before any model work, in words (e.g. a branch past its lane's end)
        assert str(error).startswith("invalid ") and source.prefill_calls == 0
        event("refused before the run")
        return
    trace = engine.run(run.trace.prompt, specs, max_new_tokens=max_new_tokens, base_seed=seed)
    assert trace.error is None
    event("a lane stopped with an error" if any(lane.error for lane in trace.lanes) else "ran")
    for lane in trace.lanes:
        assert lane.finish_reason in FINISH_REASONS, lane
        assert (lane.error is not None) == (lane.finish_reason == "error")
        assert [step.token_id for step in lane.steps] == lane.token_ids
        assert all(math.isfinite(step.prob) and 0.0 <= step.prob <= 1.0 for step in lane.steps)
    text = jsonio.dumps(trace)
    assert jsonio.dumps(jsonio.loads(text)) == text


# ----------------------------------------------------------------------------------------------- run files


@pytest.fixture(scope="module")
def run_text() -> str:
    specs = [LaneSpec("greedy"), LaneSpec("beam", num_beams=2), LaneSpec("sample", do_sample=True, top_p=0.9, seed=1,
             stop_strings=("<7>",)), LaneSpec("branch", branch=Branch("greedy", 2, 4))]
    trace = Engine(FakeSource(vocab_size=VOCAB), FakeTokenizer(), [EOS]).run(PromptInfo("p", [1, 5, 9]), specs,
                                                                             max_new_tokens=5)
    return jsonio.dumps(trace)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
)


def same_type(value) -> st.SearchStrategy:
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-5, 60) | st.integers(-10**9, 10**9)
    if isinstance(value, float):
        return st.floats(-2, 2) | st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(value, str):
        return st.text(max_size=6)
    if isinstance(value, list):
        return st.permutations(value).flatmap(lambda items: st.integers(0, len(items)).map(lambda n: items[:n]))
    return st.just(value)


def paths_in(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_in(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths_in(item, (*prefix, index))


@st.composite
def damaged(draw, text: str) -> str:
    """The run file after one or a few edits: a value replaced, a key deleted, a list item dropped, or the
    text cut or overwritten somewhere."""
    data = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["replace", "retype", "retype", "delete", "cut", "garble"]))
        if how in ("cut", "garble"):
            raw = json.dumps(data, ensure_ascii=False)
            at = draw(st.integers(0, len(raw)))
            return raw[:at] if how == "cut" else raw[:at] + draw(st.text(max_size=4)) + raw[at + 1:]
        paths = [p for p in paths_in(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if how == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif how == "retype":  # another value of the same JSON type: typed right, meant wrong
            parent[path[-1]] = draw(same_type(parent[path[-1]]))
        elif isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    return json.dumps(data, ensure_ascii=False)


@SETTINGS
@given(data=st.data())
def test_a_damaged_run_file_is_refused_cleanly_or_read_by_every_reader(run_text, data):
    text = data.draw(damaged(run_text))
    try:
        trace = jsonio.loads(text, source="run.json")
    except jsonio.TraceFormatError as error:
        assert str(error).startswith("run.json ") and "\n" not in str(error)
        event("refused")
        return
    event("accepted")
    # accepted: every reader of runs must handle it, the window's Open and the data its views draw included
    again = jsonio.dumps(trace)
    assert jsonio.dumps(jsonio.loads(again)) == again
    analyze(trace)
    plan(trace)
    compare_traces(trace, trace)
    render(trace, FakeTokenizer(), 100)
    read_as_the_window_does(trace)


def read_as_the_window_does(trace) -> None:
    """The window's Open (Qt-free controller and model) and the data of its text, inspector, timeline and beam
    tree views, for every lane and step."""
    import tempfile

    from gui.present import chart_rows as chart_data
    from gui.present.lane_html import lane_fragments
    from gui.state.controller import RunController
    from gui.state.run_state import RunState
    from tests.gui.test_controller import SyncRunner

    controller = RunController(RunState(), SyncRunner())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        path.write_text(jsonio.dumps(trace), encoding="utf-8")
        assert controller.open(path) is not None, controller.state.notice
    model = controller.state
    for index, lane in enumerate(model.lanes):
        marks = model.marks(index)
        model.divergence_step(index)
        model.critical_count(index)
        lane_fragments(index, lane.trace.steps, marks)
        nodes = chart_data.beam_nodes(lane.trace)
        chart_data.best_path(lane.trace, nodes)
        for metric in chart_data.TIMELINE_METRICS:
            chart_data.metric_values(lane.trace.steps, metric)
        for step in lane.trace.steps:
            rows = chart_data.inspector_rows(step, 20)
            chart_data.step_cutoffs(step, rows, lane.trace.config, lane.trace.processors)
            chart_data.step_summary(lane.trace, step, marks[step.step] if step.step < len(marks) else None)
