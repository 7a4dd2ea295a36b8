"""A lane's automatic name ("greedy", "beam-4", "T 0.7 top-k 20", "top-p 0.9 top-n-sigma 1 +2") and the short
values in it: what the lanes editor names a lane and what a branch lane that became an ordinary one is named
(Qt-free, beneath the presentation)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from decoding.chain.spec import PROCESSOR_ORDER, LaneSpec, short_value
from models.variants import VARIANTS


def value_text(value: Any) -> str:
    """A parameter's value in a lane's name or summary: numbers short (0.9, 40), token-id lists as the command
    line writes them (28|30, 5 6|7, 5 6:-2.5)."""
    if isinstance(value, tuple):
        return short_value(value)
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


AUTO_NAME_PARTS = 2  # an automatic name names this many processors, then "+N" (the full spec: the tooltip)


def auto_name(spec: LaneSpec) -> str:
    """The name a lane gets from its strategy ("greedy", "beam-4", "top-k 50", "T 0.7 top-k 20"), as the
    command line names its lanes, kept short: past two processors, "+N" counts the others ("top-p 0.9
    top-n-sigma 1 +2"), so columns, tables and legends do not grow with the chain."""
    if spec.is_beam:
        return f"beam-{spec.num_beams}"
    active = spec.processors()
    parts = [f"{name.replace('_', '-')} {value_text(getattr(spec, name))}" for name in PROCESSOR_ORDER
             if name in active and name != "temperature"]
    if "temperature" in active:
        parts.insert(0, f"T {spec.temperature:g}")
    if len(parts) > AUTO_NAME_PARTS:
        parts = [*parts[:AUTO_NAME_PARTS], f"+{len(parts) - AUTO_NAME_PARTS}"]
    name = " ".join(parts) or ("sample" if spec.do_sample else "greedy")
    return name if spec.model is None else f"{name} · {model_label(spec.model)}"


def follows_strategy(spec: LaneSpec) -> bool:
    """Whether a lane's name is its strategy's (possibly numbered): it then follows parameter edits."""
    base = re.sub(r" \(\d+\)$", "", spec.name)  # unique_name numbers a repeated name "(2)", "(3)"...
    return base == auto_name(spec)


def model_label(model: str) -> str:
    """A lane's own model as its name and summary show it: a precision variant by its precision ("int4"), any
    other model by its name (a folder by its last part), a served model by its protocol and host
    ("llamacpp 127.0.0.1:8080")."""
    protocol, plus, rest = model.partition("+")
    if plus and rest.startswith(("http://", "https://")):
        return f"{protocol} {rest.split('://', 1)[1].split('?', 1)[0].rstrip('/')}"
    name = Path(model).name
    base, _, precision = name.rpartition("-")
    return precision if base and precision in VARIANTS else name
