"""`python main.py replay FILE.json`: re-run an exported run with the model and verify every token.

Exit codes: 0 every lane's tokens are identical; 1 a mismatch (the first one per lane is reported) or the model
failed during the replay; 2 bad input (unreadable, damaged or foreign file, token ids outside the model's
vocabulary, missing model).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.common import EXIT_MISMATCH, UsageError, fail, load_model, one_line
from decoding.engine.replay import compare, replay
from decoding.records.trace import ModelInfo, RunTrace
from models.open_model import LaneModels
from runfiles import run_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a run exported with `run --json` or the app's Save")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument(
        "--model",
        default=None,
        help="prepared model name or folder (default: the one the file names, else the default)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        trace = run_file.load(args.file)
        model = load_model(args.model or recorded_model(trace), args.device)
        engine = model.engine(
            top_n=trace.settings.top_n,
            near_tie_threshold=trace.settings.near_tie_threshold,
            critical=trace.settings.critical,
            models=LaneModels(model, args.device),
        )
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    _warn_if_other_model(trace.model, model.info)
    try:
        replayed = replay(engine, trace, provider=model.provider)
    except ValueError as exc:  # the file asks for what the model cannot do (token ids outside its vocabulary)
        return fail(f"cannot replay {str(args.file)!r}: {exc}")
    except RuntimeError as exc:  # the model failed during the replay
        print(f"branchpoint: the replay stopped: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_MISMATCH
    _warn_if_other_lane_models(trace, replayed)
    mismatches = compare(trace, replayed)
    total = sum(len(lane.token_ids) for lane in trace.lanes)
    if mismatches:
        for mismatch in mismatches:
            print(f"MISMATCH {mismatch.describe()}")
        print(f"replay differs in {len(mismatches)} of {len(trace.lanes)} lanes")
        return EXIT_MISMATCH
    print(f"replay identical: {len(trace.lanes)} lanes, {total} tokens ({model.info.name}, {model.provider})")
    return 0


def recorded_model(trace) -> str | None:
    """The model to replay `trace` on: its folder, its prepared name, the server it ran on; None: the default."""
    if trace.model.served:
        return trace.model.name  # the server's address (its options; never a key)
    path = trace.model.path
    if path and (Path(path) / "model.onnx").is_file():
        return path
    from models.catalog import models_dir

    return trace.model.name if (models_dir() / trace.model.name / "model.onnx").is_file() else None


def _warn_if_other_model(recorded_model: ModelInfo, info: ModelInfo, lane: str = "") -> None:
    recorded_served, served = recorded_model.served, info.served
    if recorded_served and served and recorded_served.get("model") != served.get("model"):
        print(f"warning: {lane}the server now serves {served.get('model')!r}, the run was made on "
              f"{recorded_served.get('model')!r}; tokens may differ")
    recorded, loaded = recorded_model.hashes.get("model.onnx"), info.hashes.get("model.onnx")
    if recorded and loaded and recorded != loaded:
        print(
            f"warning: {lane}the model differs from the recorded one (model.onnx sha256 {loaded[:12]}… vs "
            f"{recorded[:12]}…); tokens may differ"
        )


def _warn_if_other_lane_models(trace: RunTrace, replayed: RunTrace) -> None:
    """Each lane on its own model: the same warning as the run's model gets, naming the lane."""
    for lane in trace.lanes:
        got = next((other.model for other in replayed.lanes if other.name == lane.name), None)
        if lane.model is not None and got is not None:
            _warn_if_other_model(lane.model, got, f"lane {lane.name!r}: ")
