"""Checks of a run read from a file: every field has the type its dataclass declares, and the lanes hold
together (at least one lane, distinct names, one step per token, steps numbered from 0, a draw with its
interval, non-negative token ids, configs that make a LaneSpec). A hand-edited or damaged file is then refused
by `decoding.records.jsonio.loads` with one line that names the place, instead of failing later inside a view, an
analysis or a replay. The model's vocabulary is known only once a model is open:
`decoding.engine.replay.check_token_ids` checks the ids against it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import cache
from typing import Any

from decoding.analysis.session_tree import check_tree, node_spec
from decoding.chain.spec import lane_spec
from decoding.records.trace import LaneTrace, RunTrace, TokenProb, TopList

_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}


def check_trace(trace: RunTrace) -> None:
    """ValueError naming the first place where `trace` is not a run this version writes."""
    check_value(trace, RunTrace, "run")
    if not trace.lanes:
        raise ValueError("run.lanes: empty (a run has at least one lane)")
    names = [lane.name for lane in trace.lanes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"run.lanes: lane names repeat ({', '.join(repeated)})")
    _check_ids(trace.prompt.ids, "run.prompt.ids")
    for index, lane in enumerate(trace.lanes):
        _check_lane(lane, f"run.lanes[{index}] ({lane.name!r})")
    check_tree(trace.tree)
    for index, node in enumerate(trace.tree):
        try:
            node_spec(node)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"run.tree[{index}] (node {node.id}): its config is not a lane's: {exc}") from exc


def check_value(value: Any, hint: Any, path: str) -> None:
    """`value` against a type hint of the trace's dataclasses (dataclasses, named tuples, lists, dicts, unions,
    scalars)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin in (typing.Union, types.UnionType):
        if not any(_matches(value, arg) for arg in args):
            _refuse(path, " or ".join(_describe(arg) for arg in args), value)
        for arg in args:
            if _matches(value, arg):
                return check_value(value, arg, path)
    if hint is TopList:
        if not isinstance(value, TopList):
            _refuse(path, "a list", value)
        for index, entry in enumerate(value):
            check_value(entry, TokenProb, f"{path}[{index}]")
        return
    if dataclasses.is_dataclass(hint) or _is_named_tuple(hint):
        if not isinstance(value, hint):
            _refuse(path, "an object", value)
        for name, field_hint in _hints(hint).items():
            check_value(getattr(value, name), field_hint, f"{path}.{name}")
        return
    if origin is list:
        if not isinstance(value, list):
            _refuse(path, "a list", value)
        for index, item in enumerate(value):
            check_value(item, args[0], f"{path}[{index}]")
        return
    if origin is dict:
        if not isinstance(value, dict):
            _refuse(path, "an object", value)
        for key, item in value.items():
            check_value(key, args[0], f"{path} key {key!r}")
            check_value(item, args[1], f"{path}[{key!r}]")
        return
    if not _matches(value, hint):
        _refuse(path, _describe(hint), value)


def _check_why(why, lane: LaneTrace, path: str) -> None:
    """A lane's "why" belongs to one of its steps: its name, a step it took, and the step's context ending with the
    lane's tokens before it."""
    if why.lane != lane.name:
        raise ValueError(f"{path}.lane: {why.lane!r}, not the lane's name")
    if not 0 <= why.step < len(lane.steps):
        raise ValueError(f"{path}.step: {why.step} (allowed 0..{len(lane.steps) - 1}, a step the lane took)")
    if why.step and why.token_ids[-why.step :] != lane.token_ids[: why.step]:
        raise ValueError(f"{path}.token_ids: do not end with the lane's tokens before step {why.step}")
    if len(why.texts) != len(why.token_ids) or len(why.positions) != len(why.token_ids) - 1:
        raise ValueError(f"{path}: one text per token and one position row per token but the last")


def _is_named_tuple(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")


def _check_lane(lane: LaneTrace, path: str) -> None:
    if [step.token_id for step in lane.steps] != lane.token_ids:
        raise ValueError(f"{path}: {len(lane.steps)} steps for {len(lane.token_ids)} token ids (one step per token, "
                         "steps[i].token_id == token_ids[i])")
    for index, step in enumerate(lane.steps):
        if step.step != index:
            raise ValueError(f"{path}.steps[{index}]: step {step.step}, expected {index}")
        if len({step.draw is None, step.draw_low is None, step.draw_high is None}) > 1:
            raise ValueError(f"{path}.steps[{index}]: draw, draw_low and draw_high are set together or not at all")
    _check_ids(lane.token_ids, f"{path}.token_ids")
    if (lane.prompt_ids is not None) != (lane.model is not None and lane.model.tokenizer is not None):
        raise ValueError(f"{path}.prompt_ids: set exactly when the lane's model has a tokenizer of its own")
    if lane.prompt_ids is not None:
        _check_ids(lane.prompt_ids, f"{path}.prompt_ids")
    if lane.colour is not None and lane.colour < 0:
        raise ValueError(f"{path}.colour: {lane.colour} (allowed: a colour index, 0 or more)")
    for index, why in enumerate(lane.why or []):
        _check_why(why, lane, f"{path}.why[{index}]")
    if lane.branch is not None:
        for key, hint in (("parent", str), ("step", int), ("token_id", int)):
            check_value(lane.branch.get(key), hint, f"{path}.branch.{key}")
    try:
        lane_spec(lane)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{path}.config: {exc}") from None


def _check_ids(ids: list[int], path: str) -> None:
    negative = [token for token in ids if token < 0]
    if negative:
        raise ValueError(f"{path}: token id {negative[0]} (allowed: 0 or more)")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _matches(value: Any, hint: Any) -> bool:
    """Whether `value` has the outer type `hint` names (an int counts as a number; a bool is no integer)."""
    origin = typing.get_origin(hint) or hint
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is type(None):
        return value is None
    return isinstance(value, origin)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint) or hint
    return _NAMES.get(origin) or {list: "a list", dict: "an object"}.get(origin, "an object")


def _refuse(path: str, expected: str, value: Any) -> None:
    shown = repr(value) if not isinstance(value, list | dict) else type(value).__name__
    raise ValueError(f"{path}: expected {expected}, got {shown[:60]}")
