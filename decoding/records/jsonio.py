"""RunTrace <-> JSON text: export a whole run, import it without the model (files: runfiles.run_file).

The file is the RunTrace's dataclasses as JSON objects, fields in declaration order (docs/json-format.md,
runfiles/schema.json). Floats are written with Python's shortest round-trip repr, so export -> import ->
export is byte-identical. JSON has no infinities: a -inf log-probability or beam score (a filtered token) is
written as null and read back as -inf. The window's `colour` of a lane or tree node is written only when set. Lanes
explained from the app (decoding.records.explain) are stored under `explanations`, each in the explain files' own format
on one line.

Version 1 files (before fan-outs, critical points, branch-not-taken replays and temperature sweeps) open too:
their settings get the default critical-point thresholds and their analysis is computed again from the lanes
(the same function made it), so they read as current runs without fan-outs, replays or sweeps. Version 2 files
(before the llama.cpp samplers and the transformers processors beyond the core set) have no `xtc_coin` or
`mirostat_mu` in their steps: they read as runs whose lanes use neither. Version 3 files (before the session
tree, decoding.analysis.session_tree) read with a tree of one level made of their lanes: each under the prompt, a
branched
lane keeping its branch marker. Version 4 files (before lanes named their own model) read with every lane on the
run's model. Every older file saves as version 5. A lane of another tokenizer than the run's (a later addition to
version 5, optional) has `prompt_ids` and its model's `tokenizer`, and the divergences it takes part in the
differing character `char` and the other lane's `step_b`; files without them read as before. A lane on a served
model (also optional in version 5) has its model's `served` and each step's `unseen_mass`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from typing import Any

from decoding.analysis.analysis import analyze
from decoding.analysis.session_tree import tree_of_lanes
from decoding.analysis.why import WhyResult
from decoding.records.explain import ExplainResult
from decoding.records.trace import (
    READABLE_VERSIONS,
    Analysis,
    BeamHypothesis,
    CloseDraw,
    CriticalPoint,
    CriticalSettings,
    Divergence,
    FanoutGroup,
    ForcedBranch,
    LaneModelInfo,
    LaneTrace,
    ModelInfo,
    NearTie,
    PromptInfo,
    ReplayComparison,
    RunSettings,
    RunTiming,
    RunTrace,
    Split,
    SplitBranch,
    StageRecord,
    StepRecord,
    SweepPoint,
    TemperatureSweep,
    TokenProb,
    TopList,
    TreeNode,
)
from decoding.records.trace_check import check_trace


class TraceFormatError(ValueError):
    """The file is not a Branchpoint run this version can read (the message says why)."""


# ------------------------------------------------------------------------------------------------ export


def to_dict(trace: RunTrace) -> dict[str, Any]:
    """The run as JSON data; `explanations` only when the run has some (a run without has no such key)."""
    data = _finite(asdict(replace(trace, explanations=[])))
    del data["explanations"]
    _drop_unset(data["model"], "served")  # optional: only a run on a served model has it
    for record in [*data["lanes"], *data["tree"]]:  # optional: runs made outside the window have no colours, and
        if record["colour"] is None:  # their files stay as they were
            del record["colour"]
    for lane, source in zip(data["lanes"], trace.lanes, strict=True):
        _drop_unset(lane, "prompt_ids")  # optional: only a lane of another tokenizer has them (files stay as they were)
        if source.why:
            lane["why"] = [_finite(why.to_dict()) for why in source.why]
        else:
            del lane["why"]
        _drop_unset(lane["model"] or {}, "tokenizer", "served")
        for step in lane["steps"]:  # optional: only a lane on a served model's top-N has it
            _drop_unset(step, "unseen_mass")
    for divergence in (data["analysis"] or {}).get("divergences", []):
        _drop_unset(divergence, "char", "step_b")
    if trace.explanations:
        data["explanations"] = [explanation.to_dict() for explanation in trace.explanations]
    return data


def _drop_unset(record: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if record.get(key, 0) is None:
            del record[key]


def dumps(trace: RunTrace) -> str:
    """Indented, except each explanation, written on one line as its own files are: it is mostly numbers
    (L x H x T x T attention weights), and indented they would take twice the room."""
    data = to_dict(trace)
    explanations = data.pop("explanations", [])
    text = json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False)
    if explanations:
        lines = ",\n".join("  " + json.dumps(e, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                           for e in explanations)
        text = f'{text.removesuffix("}").rstrip()},\n "explanations": [\n{lines}\n ]\n}}'
    return text + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, TokenProb | StageRecord):  # named tuples, written as objects
        return {key: _finite(item) for key, item in value._asdict().items()}
    if isinstance(value, TopList):
        return [_finite(entry) for entry in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


# ------------------------------------------------------------------------------------------------ import


def loads(text: str, source: str = "<string>") -> RunTrace:
    """The run in `text`; TraceFormatError (one line naming the place) for anything this version would not
    write: not JSON, NaN or infinite numbers, another schema version, a missing or mistyped field, lanes that do
    not hold together (decoding.records.trace_check)."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise TraceFormatError(f"{source} is not JSON: {exc}") from exc
    check_version(data, source)
    try:
        trace = from_dict(data)
    except KeyError as exc:
        raise TraceFormatError(f"{source} is not a valid Branchpoint run: a required field is missing: {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise TraceFormatError(
            f"{source} is not a valid Branchpoint run: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        check_trace(trace)
    except ValueError as exc:
        raise TraceFormatError(f"{source} is not a valid Branchpoint run: {exc}") from exc
    return trace


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a number")
    return value


def check_version(data: Any, source: str) -> None:
    if not isinstance(data, dict) or "schema_version" not in data:
        raise TraceFormatError(f"{source} is not a Branchpoint run (no schema_version)")
    version = data["schema_version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = " or ".join(str(v) for v in READABLE_VERSIONS)
        if isinstance(version, int) and version > max(READABLE_VERSIONS):
            raise TraceFormatError(
                f"{source} has schema_version {version!r}; this Branchpoint reads version {readable}: the file "
                "was saved by a newer Branchpoint. Update Branchpoint to open it."
            )
        raise TraceFormatError(
            f"{source} has schema_version {version!r}; this Branchpoint reads version "
            f"{readable} (export it again with a matching version)"
        )


def from_dict(data: dict[str, Any]) -> RunTrace:
    """A RunTrace of the current version from a file's data of any readable version."""
    analysis = data.get("analysis")
    trace = RunTrace(
        model=ModelInfo(**data["model"]),
        provider=data["provider"],
        prompt=PromptInfo(**data["prompt"]),
        lanes=[_lane(lane) for lane in data["lanes"]],
        settings=_settings(data["settings"]),
        timing=RunTiming(**data["timing"]),
        error=data.get("error"),
        sweeps=[_sweep(sweep) for sweep in data.get("sweeps", [])],
        tree=[TreeNode(**node) for node in data.get("tree", [])],
        explanations=[ExplainResult.from_dict(item) for item in data.get("explanations", [])],
    )
    if analysis is not None and data["schema_version"] == 1:  # no critical points, fan-outs or replays yet
        trace.analysis = analyze(trace, analysis["near_tie_threshold"])
    elif analysis is not None:
        trace.analysis = _analysis(analysis)
    if data["schema_version"] < 4:  # before the session tree: the file's lanes are its nodes
        trace.tree = tree_of_lanes(trace)
    return trace


def _settings(data: dict[str, Any]) -> RunSettings:
    fields = dict(data)
    if "critical" in fields:  # version 1: the default thresholds
        fields["critical"] = CriticalSettings(**fields["critical"])
    return RunSettings(**fields)


def _lane(data: dict[str, Any]) -> LaneTrace:
    fields = dict(data)
    fields["steps"] = [_step(step) for step in data["steps"]]
    if data.get("model") is not None:
        fields["model"] = LaneModelInfo(**data["model"])
    if data.get("why") is not None:
        fields["why"] = [WhyResult.from_dict(why) for why in data["why"]]
    return LaneTrace(**fields)


def _step(data: dict[str, Any]) -> StepRecord:
    fields = dict(data)
    fields["top"] = _top_list(data["top"])
    fields["top_raw"] = _top_list(data["top_raw"])
    for key in ("logprob", "logprob_raw"):
        fields[key] = _neg_inf(data[key])
    if data.get("stages") is not None:
        fields["stages"] = [StageRecord(**stage) for stage in data["stages"]]
    if data.get("beams") is not None:
        fields["beams"] = [
            BeamHypothesis(**{**hyp, "score": _neg_inf(hyp["score"])}) for hyp in data["beams"]
        ]
    return StepRecord(**fields)


def _top_list(entries: list[dict[str, Any]]) -> TopList:
    return TopList.of(TokenProb(**entry) for entry in entries)


def _neg_inf(value: float | None) -> float:
    return -math.inf if value is None else value


def _analysis(data: dict[str, Any]) -> Analysis:
    return Analysis(
        near_tie_threshold=data["near_tie_threshold"],
        divergences=[Divergence(**item) for item in data["divergences"]],
        near_ties={name: [NearTie(**item) for item in items] for name, items in data["near_ties"].items()},
        close_draws={
            name: [CloseDraw(**item) for item in items] for name, items in data["close_draws"].items()
        },
        forced=[ForcedBranch(**item) for item in data["forced"]],
        critical_points={
            name: [CriticalPoint(**item) for item in items] for name, items in data["critical_points"].items()
        },
        fanouts={group: _fanout(item) for group, item in data["fanouts"].items()},
        replays=[ReplayComparison(**item) for item in data["replays"]],
    )


def _fanout(data: dict[str, Any]) -> FanoutGroup:
    splits = [
        Split(split["step"], split["members"], [SplitBranch(**branch) for branch in split["branches"]])
        for split in data["splits"]
    ]
    return FanoutGroup(**{**data, "splits": splits})


def _sweep(data: dict[str, Any]) -> TemperatureSweep:
    points = [SweepPoint(**{**point, "top": _top_list(point["top"])}) for point in data["points"]]
    return TemperatureSweep(**{**data, "points": points})


