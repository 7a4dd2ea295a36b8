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
from hypothesis import HealthCheck, Phase, assume, event, example, find, given, settings
from hypothesis import strategies as st

from cli.terminal_text import render
from decoding.analysis.analysis import analyze
from decoding.analysis.compare import compare_traces
from decoding.chain.chain import build_processors
from decoding.chain.parameters import BY_NAME, PARAMETERS, ParameterError, canonical
from decoding.chain.processors import apply_processors
from decoding.chain.selectors import Sampler
from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.engine.replay import plan
from decoding.records import jsonio
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource
from tests.lane_oracle import FunctionSource, probs_of, run_lane
from tests.reference import apply_transformers, generation_model, transformers_processors

EXAMPLES = int(os.environ.get("BRANCHPOINT_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
VOCAB = 48
EOS = 3
FINISH_REASONS = {"eos", "length", "stop_string", "error"}


def _ids(low: int = 0) -> st.SearchStrategy:
    return st.integers(low, VOCAB - 1)


# Every lane parameter of decoding/chain/parameters.py as hypothesis draws it, by the lanes it applies to
# (test_every_lane_parameter_is_fuzzed fails for a parameter added to the table and not here).
STRATEGY_PARAMETERS = ("do_sample", "num_beams")  # drawn as the lane's kind
BEAM_PARAMETERS = {
    "num_return_sequences": st.integers(1, 5), "length_penalty": st.floats(-2, 2),
    "early_stopping": st.sampled_from([False, True, "never"]),
}
SAMPLING_PARAMETERS = {
    "seed": st.integers(0, 2**31 - 1), "temperature": st.floats(0.05, 5), "top_k": st.integers(0, 60),
    "top_p": st.floats(0, 1), "min_p": st.floats(0, 1), "typical_p": st.floats(0.01, 1),
    "epsilon_cutoff": st.floats(0, 0.3), "eta_cutoff": st.floats(0, 0.3), "top_n_sigma": st.floats(0, 4),
    "xtc_probability": st.floats(0, 1), "xtc_threshold": st.floats(0, 0.6), "mirostat": st.integers(0, 2),
    "mirostat_tau": st.floats(0, 10), "mirostat_eta": st.floats(0, 1), "dynatemp_range": st.floats(0, 3),
    "dynatemp_exponent": st.floats(0, 3), "adaptive": st.booleans(),
}
ANY_LANE_PARAMETERS = {
    "repetition_penalty": st.floats(0.2, 3), "no_repeat_ngram_size": st.integers(0, 4),
    "min_new_tokens": st.integers(0, 6), "max_new_tokens": st.integers(1, 10),
    "suppress_tokens": st.lists(_ids(), max_size=4).map(tuple),
    # ids from 1: transformers refuses id 0 in these (Branchpoint allows it)
    "bad_words_ids": st.lists(st.lists(_ids(1), min_size=1, max_size=3).map(tuple), max_size=3).map(tuple),
    "sequence_bias": st.lists(st.tuples(st.lists(_ids(1), min_size=1, max_size=2).map(tuple), st.floats(-5, 5)),
                              max_size=3).map(tuple),
    "frequency_penalty": st.floats(-2, 2), "presence_penalty": st.floats(-2, 2), "penalty_last_n": st.integers(1, 20),
    "dry_multiplier": st.floats(0, 3), "dry_base": st.floats(1, 3), "dry_allowed_length": st.integers(0, 4),
    "dry_penalty_last_n": st.integers(-1, 20),
    "dry_sequence_breakers": st.lists(st.sampled_from(["<1", "1>", ">", "<", "<7>", "\n"]), max_size=3).map(tuple),
}
SINGLE_ROW_PARAMETERS = {"stop_strings": _ids().map(lambda token: (f"<{token}>",))}


@st.composite
def lane_specs(draw, name: str = "lane", transformers_only: bool = False) -> LaneSpec:
    """A valid LaneSpec of any kind with any of its parameters set inside their ranges (llama.cpp's samplers
    left out when `transformers_only`). A combination the lane refuses (mirostat with top_k, a companion without
    its processor) loses the parameter the refusal names."""
    kind = draw(st.sampled_from(["greedy", "beam", "sample"]))
    values: dict = {"do_sample": kind == "sample"}
    tables = [ANY_LANE_PARAMETERS]
    if kind == "beam":
        values["num_beams"] = draw(st.integers(2, 5))
        tables.append(BEAM_PARAMETERS)
    else:
        tables.append(SINGLE_ROW_PARAMETERS)
    if kind == "sample":
        tables.append(SAMPLING_PARAMETERS)
    for table in tables:
        for key, strategy in table.items():
            if transformers_only and BY_NAME[key].follows != "transformers":
                continue
            if key == "seed" or draw(st.booleans()):  # a sampled lane's seed: always, as the draw test needs it
                values[key] = draw(strategy)
    if kind == "sample" and not transformers_only and draw(st.booleans()):
        values["processor_order"] = "llama.cpp"
    if draw(st.booleans()):
        values["forced"] = {draw(st.integers(0, 6)): draw(_ids())}
    for _ in range(len(values) + 1):
        try:
            return LaneSpec(name, **values)
        except ParameterError as error:
            if error.parameter not in values or error.parameter == "do_sample":
                break
            del values[error.parameter]
    assume(False)


def test_every_lane_parameter_is_fuzzed():
    """The lane strategy draws every parameter of the table, and sets each to something that does anything in
    some spec it makes."""
    drawn = {*STRATEGY_PARAMETERS, *BEAM_PARAMETERS, *SAMPLING_PARAMETERS, *ANY_LANE_PARAMETERS,
             *SINGLE_ROW_PARAMETERS}
    assert drawn == set(BY_NAME), f"not fuzzed: {sorted(set(BY_NAME) - drawn)}; unknown: {sorted(drawn - set(BY_NAME))}"
    for p in PARAMETERS:
        find(lane_specs(), lambda spec, p=p: p.is_set(canonical(p, getattr(spec, p.name))),
             settings=settings(max_examples=2000, database=None, phases=[Phase.generate],  # the first found
                               suppress_health_check=list(HealthCheck)))


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
@given(spec=lane_specs(transformers_only=True), logits=logit_rows,
       history=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12))
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


LLAMA_CPP_SAMPLERS = [  # each of llama.cpp's samplers at work, beside what hypothesis draws
    LaneSpec("dry", dry_multiplier=0.8, dry_allowed_length=1, dry_sequence_breakers=("<4>",)),
    LaneSpec("penalties", frequency_penalty=0.5, presence_penalty=0.4, penalty_last_n=3),
    LaneSpec("xtc", do_sample=True, xtc_probability=1.0, xtc_threshold=0.05, seed=1),
    LaneSpec("nsigma", do_sample=True, top_n_sigma=0.5, seed=2),
    LaneSpec("dynatemp", do_sample=True, temperature=0.6, dynatemp_range=0.5, dynatemp_exponent=2.0, seed=3),
    LaneSpec("mirostat 1", do_sample=True, mirostat=1, mirostat_tau=2.0, seed=4),
    LaneSpec("mirostat 2", do_sample=True, mirostat=2, mirostat_tau=1.0, mirostat_eta=0.5, seed=5),
    LaneSpec("adaptive", do_sample=True, adaptive=True, seed=6, processor_order="llama.cpp"),
]


@SETTINGS
@given(spec=lane_specs(), logits=logit_rows, history=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12))
@example(spec=LLAMA_CPP_SAMPLERS[0], logits=("normal", 1), history=[4, 9, 4, 9, 4])
@example(spec=LLAMA_CPP_SAMPLERS[1], logits=("ties", 2), history=[4, 9, 4, 9, 4])
@example(spec=LLAMA_CPP_SAMPLERS[2], logits=("normal", 3), history=[5])
@example(spec=LLAMA_CPP_SAMPLERS[3], logits=("huge", 4), history=[5])
@example(spec=LLAMA_CPP_SAMPLERS[4], logits=("flat", 5), history=[5])
@example(spec=LLAMA_CPP_SAMPLERS[5], logits=("neg_inf", 6), history=[5])
@example(spec=LLAMA_CPP_SAMPLERS[6], logits=("peaked", 7), history=[5])
@example(spec=LLAMA_CPP_SAMPLERS[7], logits=("normal", 8), history=[5])
def test_any_lane_s_step_is_a_distribution_that_holds_its_token(spec, logits, history):
    """Any lane (llama.cpp's samplers included) over any logits: a step whose processed distribution sums to 1,
    holds the chosen token and agrees with its record's numbers, or a lane stopped with its reason."""
    row = make_logits(*logits, 1)[0]
    lane = run_lane(spec, FunctionSource(lambda _: row, VOCAB), history, 1)
    if lane.finish_reason == "error":
        assert lane.error, lane
        event("stopped: " + lane.error.split(":")[0])
        return
    record = lane.steps[0]
    probs = probs_of(record.top, VOCAB)
    assert np.all(np.isfinite(probs)) and math.isclose(probs.sum(), 1.0, rel_tol=1e-5)
    # a forced token is taken whatever its probability: one a row leaves at 0 (filtered or underflowed) is
    # recorded at 0; a chosen one never is
    assert probs[record.token_id] > 0.0 or record.forced
    assert math.isclose(probs[record.token_id], record.prob, rel_tol=1e-6, abs_tol=0.0 if not record.forced else 1e-12)
    assert record.kept >= np.count_nonzero(probs) or spec.is_beam  # kept: not filtered (a huge row underflows)
    assert math.isfinite(record.entropy) and record.entropy >= 0.0
    assert record.varentropy is not None and math.isfinite(record.varentropy) and record.varentropy >= 0.0


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
