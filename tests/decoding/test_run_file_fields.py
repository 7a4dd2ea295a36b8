"""Every field of every record a run file holds survives save → open, compared object by object and field by
field (not file text against file text: an export that drops a field every time stays byte-identical through
export → import → export).

The record types and their fields are read from the dataclasses themselves (RunTrace's type hints, followed to
every record type they name), and the run built here must give every field of every type a value other than
its default somewhere (a file's schema_version can only be the current one: loading checks it): a field added
later, or a record type without instances here, fails this test until the run below covers it, and then the
round trip checks it."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

import numpy as np

from decoding.analysis import session_tree
from decoding.analysis.fanout import fan_out
from decoding.analysis.sweep import sweep_inputs, temperature_sweep
from decoding.analysis.why import Candidate, DepthSplit, Push, WhyResult
from decoding.chain.spec import Branch, LaneSpec, ReplayOf
from decoding.engine.engine import Engine
from decoding.records.explain import ExplainResult, LogitLens, TokenInfo
from decoding.records.trace import (
    CloseDraw,
    CriticalPoint,
    CriticalSettings,
    Divergence,
    ForcedBranch,
    ModelInfo,
    NearTie,
    PromptInfo,
    RunTrace,
    Split,
    SplitBranch,
    TokenProb,
    TopList,
)
from decoding.records.trace_check import _hints
from runfiles import run_file
from tests.fake_source import FakeSource, FakeTokenizer, OtherWeightsSource, fake_models

VOCAB = 48
LANES = [
    LaneSpec("greedy", repetition_penalty=1.2, no_repeat_ngram_size=2, min_new_tokens=3),
    LaneSpec("beam", num_beams=3, num_return_sequences=2, length_penalty=0.7, early_stopping=True),
    LaneSpec("sampled", do_sample=True, top_k=20, top_p=0.9, min_p=0.01, typical_p=0.95, temperature=1.4, seed=4,
             stop_strings=("\n",), processor_order=("top_k", "top_p", "min_p", "typical_p", "temperature")),
    LaneSpec("branch", branch=Branch("greedy", 2, 7), forced={4: 9}),
    *fan_out(LaneSpec("fan", do_sample=True, temperature=2.0, seed=10), 3),
    LaneSpec("replay", do_sample=True, temperature=2.0, seed=10, replay_of=ReplayOf("fan #0", 1, 5)),
    LaneSpec("llama.cpp", do_sample=True, seed=6, frequency_penalty=0.3, xtc_probability=0.9, xtc_threshold=0.02,
             mirostat=2, mirostat_tau=3.0, processor_order="llama.cpp"),
    LaneSpec("adaptive", do_sample=True, seed=7, adaptive=True),
    LaneSpec("own model", do_sample=True, seed=8, top_k=5, model="fake-int4"),
    LaneSpec("other tokenizer", model="fake-other"),
]


def record_types() -> list[type]:
    """RunTrace and every dataclass or named tuple its fields name, however nested (lists, dicts, unions)."""
    found: list[type] = []

    def visit(hint: Any) -> None:
        if hint is TopList:
            hint = TokenProb
        if dataclasses.is_dataclass(hint) or (isinstance(hint, type) and hasattr(hint, "_fields")):
            if hint not in found:
                found.append(hint)
                for field_hint in _hints(hint).values():
                    visit(field_hint)
            return
        for arg in typing.get_args(hint):
            visit(arg)

    visit(RunTrace)
    return found


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else list(cls._fields)


def is_record(value: Any) -> bool:
    """A dataclass or a named tuple (TokenProb, StageRecord)."""
    return dataclasses.is_dataclass(value) or (isinstance(value, tuple) and hasattr(type(value), "_fields"))


def instances(value: Any, found: dict[type, list[Any]]) -> dict[type, list[Any]]:
    """Every record in `value`, by type."""
    if is_record(value):
        found.setdefault(type(value), []).append(value)
        for name in field_names(type(value)):
            instances(getattr(value, name), found)
    elif isinstance(value, dict):
        for item in value.values():
            instances(item, found)
    elif isinstance(value, list | tuple | TopList):
        for item in value:
            instances(item, found)
    return found


def is_default(cls: type, name: str, value: Any) -> bool:
    """Whether `value` is the field's default (for a field without one: None, zero, empty or false)."""
    if isinstance(value, np.ndarray):
        return not value.any()
    if dataclasses.is_dataclass(cls):
        field = next(f for f in dataclasses.fields(cls) if f.name == name)
        if field.default is not dataclasses.MISSING:
            return value == field.default
        if field.default_factory is not dataclasses.MISSING:
            return value == field.default_factory()
    return value is None or value is False or (not isinstance(value, bool) and value in (0, "", [], {}, ()))


def differences(saved: Any, opened: Any, path: str) -> list[str]:
    """Where `opened` differs from `saved`, walking records field by field (floats exactly, -inf included)."""
    if is_record(saved):
        if type(opened) is not type(saved):
            return [f"{path}: {type(saved).__name__} read back as {type(opened).__name__}"]
        return [d for name in field_names(type(saved))
                for d in differences(getattr(saved, name), getattr(opened, name), f"{path}.{name}")]
    if isinstance(saved, LogitLens):  # compared by what it reads: its arrays and each id's text
        if not isinstance(opened, LogitLens):
            return [f"{path}: a lens read back as {opened!r:.80}"]
        read = [(*lens.arrays(), {int(i): lens.text(int(i)) for i in np.unique(lens.arrays()[0])})
                for lens in (saved, opened)]
        return differences(read[0], read[1], path)
    if isinstance(saved, np.ndarray):
        same = isinstance(opened, np.ndarray) and saved.shape == opened.shape and np.array_equal(saved, opened)
        return [] if same else [f"{path}: array differs"]
    if isinstance(saved, dict):
        if not isinstance(opened, dict) or saved.keys() != opened.keys():
            return [f"{path}: keys {sorted(map(str, saved))} read back as {opened!r:.80}"]
        return [d for key in saved for d in differences(saved[key], opened[key], f"{path}[{key!r}]")]
    if isinstance(saved, list | tuple | TopList):
        if not isinstance(opened, list | tuple | TopList) or len(saved) != len(opened):
            return [f"{path}: {len(saved)} items read back as {opened!r:.80}"]
        return [d for i, (a, b) in enumerate(zip(saved, opened, strict=True))
                for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(saved, float) and isinstance(opened, float) and math.isinf(saved):
        return [] if saved == opened else [f"{path}: {saved!r} read back as {opened!r}"]
    if type(saved) is not type(opened) or saved != opened:
        return [f"{path}: {saved!r:.60} read back as {opened!r:.60}"]
    return []


def explanation(trace: RunTrace, lane_name: str) -> ExplainResult:
    """A small explanation of a lane (2 layers, 2 heads, lens top 2), weights that JSON's 7 decimals hold exactly."""
    ids = [*trace.prompt.ids, *trace.lane(lane_name).token_ids[:3]]
    length = len(ids)
    attention = np.tril(np.full((2, 2, length, length), 0.25, dtype=np.float32))
    attention[1, 0, :, 0] = 0.5
    lens_ids = np.tile(np.array([11, 12], dtype=np.int64), (3, length, 1))
    lens_probs = np.tile(np.array([0.75, 0.125], dtype=np.float32), (3, length, 1))
    tokens = [TokenInfo(i, f"t{i}", [65 + i % 26]) for i in ids]
    lens = LogitLens.whole(lens_ids, lens_probs, {11: "x", 12: "y"})
    return ExplainResult(ModelInfo("fake", {"model.onnx": "ab12"}, "/models/fake"), "CPUExecutionProvider",
                         len(trace.prompt.ids), tokens, attention, lens,
                         schema_version=1, windows=[4, None])


def why_of(trace: RunTrace, lane_name: str, step: int) -> WhyResult:
    """A "why" of a lane's step: its context, a row per position but the last, a word row, a span row and a depth
    split of two layers of two heads, with values JSON writes exactly."""
    lane = trace.lane(lane_name)
    ids = [*trace.prompt.ids, *lane.token_ids[:step]]
    rows = [Push((j,), f"t{ids[j]}", 0.25 * (j + 1), -0.125, 0.0625, 7) for j in range(len(ids) - 1)]
    depth = DepthSplit(1.5, 0.25, [0.5, -0.25], [0.75, 0.125], [[0.25, 0.125], [-0.5, 0.25]], 0.125, [0.125, 0.0], 2.0)
    return WhyResult(lane_name, step, Candidate(lane.token_ids[step], "a"), Candidate(11, "b"), ids,
                     [f"t{i}" for i in ids], len(trace.prompt.ids), 3.5, 2.0, 0.5, 0.25, rows,
                     words=rows[:1], spans=[Push((0, 1), "t1 t4", 1.0, -0.25, 0.125, 9)], depth=depth,
                     depth_note="held", model="fake", provider="CPUExecutionProvider", seconds=1.5,
                     plain_seconds=0.5)


def every_field_run() -> RunTrace:
    """A run of every lane kind (beams, sampled, a branch with a forced token, a fan-out, a branch-not-taken
    replay, a lane on its own model, one on a model of another tokenizer), then what a real run only sometimes
    holds, set by hand: a lane's error, a run's error, records of every analysis kind, a temperature sweep and an
    explanation."""
    engine = Engine(FakeSource(vocab_size=VOCAB), FakeTokenizer(), eos_token_ids=[3], top_n=24,
                    near_tie_threshold=0.3, models=fake_models({"fake-int4": OtherWeightsSource(vocab_size=VOCAB),
                                       "fake-other": OtherWeightsSource(2, vocab_size=VOCAB + 8)},
                                      other_tokenizer=["fake-other"]))
    prompt = PromptInfo("a prompt ✓ 中文", [1, 4, 9], chat=True, system="be brief", rendered="<s>a prompt")
    trace = engine.run(prompt, LANES, max_new_tokens=8, base_seed=5, provider="CPUExecutionProvider",
                       model=ModelInfo("fake", {"model.onnx": "ab12"}, "/models/fake"))
    trace.error = "RuntimeError: the source failed at step 8"
    for colour, lane in enumerate(trace.lanes, start=3):  # as the window records them: every lane its own
        lane.colour = colour
    failed = trace.lane("sampled")
    failed.finish_reason, failed.error = "error", "RuntimeError: the source failed at step 8"
    for step in trace.lane("greedy").steps:
        step.time_ms = 1.5 + step.step
    served = trace.lane("own model")  # as a lane on a served model's top-N records it (runtime.served)
    served.model.served = {"protocol": "llamacpp", "url": "http://127.0.0.1:8080", "model": "m.gguf",
                           "vocab_size": VOCAB, "alternatives": 5, "reported": {"slots": 2, "n_ctx": 4096}}
    for step in served.steps:
        step.unseen_mass = 0.125 + step.step / 64
    trace.model.served = {**served.model.served, "alternatives": 6}  # as a whole run on a served model records it
    trace.settings.critical = CriticalSettings(draw_distance=0.1, ratio=0.5, min_prob=0.05)
    analysis = trace.analysis
    analysis.divergences.append(Divergence("greedy", "beam", 2, 5, 6))
    analysis.near_ties["greedy"] = [NearTie(1, 0.01, 0.02, True, True, 5, 6)]
    analysis.close_draws["sampled"] = [CloseDraw(2, 0.4, 0.01, 7, "high")]
    analysis.forced.append(ForcedBranch("greedy", "beam", 3, 8))
    analysis.critical_points["sampled"] = [CriticalPoint(2, "draw", 5, 7, 0.4, 0.3, 0.01, 0.75)]
    analysis.fanouts["fan"].splits.append(Split(3, ["fan #1", "fan #2"], [SplitBranch(5, ["fan #1"]),
                                                                           SplitBranch(6, ["fan #2"])]))
    analysis.replays[0].shared_prefix = 2
    inputs = sweep_inputs(trace, "sampled", 1)
    trace.sweeps = [temperature_sweep(_logits(engine, trace), inputs, [0.0, 0.7, 1.5], text=lambda i: f"t{i}")]
    trace.explanations = [explanation(trace, "greedy")]
    trace.lane("greedy").why = [why_of(trace, "greedy", 2)]
    trace.tree = []
    session_tree.grow(trace.tree, trace.lanes, trace.model.name)  # a branch under the lane it comes from
    trace.tree[1].bookmark, trace.tree[1].note, trace.tree[2].hidden = True, "a note ✓", True
    session_tree.grow(trace.tree, [trace.lane("greedy")], "fake", under=(0, 2))
    return trace


def _logits(engine: Engine, trace: RunTrace) -> np.ndarray:
    history = [*trace.prompt.ids, *trace.lane("sampled").token_ids[:1]]
    return engine.source.logits_for(history)


def test_the_run_gives_every_field_of_every_record_type_a_value_other_than_its_default():
    found = instances(every_field_run(), {})
    uncovered = [f"{cls.__name__}.{name}" for cls in record_types() for name in field_names(cls)
                 if name != "schema_version"
                 and all(is_default(cls, name, getattr(item, name)) for item in found.get(cls, []))]
    assert not uncovered, f"fields this test's run leaves at their defaults (cover them): {uncovered}"


def test_every_field_of_every_record_survives_save_and_open(tmp_path):
    trace = every_field_run()
    path = run_file.save(trace, tmp_path / "run.json")
    opened = run_file.load(path)
    assert differences(trace, opened, "run") == []

