"""Which model a run or an explained sequence came from (recorded in run files and explain files)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelInfo:
    name: str
    hashes: dict[str, str] = field(default_factory=dict)  # from the model's manifest (file -> sha256)
    path: str | None = None  # where it was loaded from (informative; replay resolves by name or path)
