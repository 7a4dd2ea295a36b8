"""Lanes from transformers generation_config.json files (the file read here; what it means: decoding.chain.spec)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from decoding.chain.spec import LaneSpec, parse_lane, spec_from_generation_config


def read_generation_config(path: str | os.PathLike, name: str | None = None) -> LaneSpec:
    """A lane applying what the generation_config.json at `path` means in transformers."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read generation config {str(path)!r}: {exc}") from exc
    return spec_from_generation_config(data, str(path), name or f"config {path.parent.name or path.stem}")


def lane_from_text(text: str) -> LaneSpec:
    """A command line's lane: `config:PATH` read from its file, anything else as decoding.chain.spec.parse_lane."""
    kind, _, rest = text.strip().partition(":")
    if kind.strip().lower() == "config":
        return read_generation_config(rest.strip())
    return parse_lane(text)
