"""What a run records: one StepRecord per lane per step, gathered into LaneTraces and a RunTrace.

Plain dataclasses of plain values (ints, floats, strings, lists) so they serialise to JSON losslessly and the GUI
can read them without knowing anything about the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TokenProb:
    """One entry of a top-N list: a candidate token and its probability (rank 0 = most likely)."""

    id: int
    text: str
    prob: float
    rank: int


@dataclass
class BeamHypothesis:
    """One beam candidate at a step: its parent beam index at the previous step, the token it appended and its
    cumulative score. `kept` is False for candidates that were pruned (or moved to the finished pool)."""

    beam: int  # index among this step's kept beams (-1 for pruned candidates)
    parent: int  # index of the beam it extends at the previous step
    token_id: int
    token_text: str
    score: float
    kept: bool
    finished: bool = False


@dataclass
class StepRecord:
    """Why one lane chose one token at one step."""

    step: int
    token_id: int
    token_text: str
    prob: float  # probability of the chosen token after the lane's processors
    prob_raw: float  # ... in the raw softmax(logits)
    logprob: float
    logprob_raw: float
    entropy: float  # nats, processed distribution
    entropy_raw: float
    margin: float  # top-1 minus top-2 probability, processed
    margin_raw: float
    kept: int  # size of the kept set after filtering (tokens with non-zero processed probability)
    tail_mass: float  # processed probability outside the top-N
    tail_mass_raw: float
    top: list[TokenProb]
    top_raw: list[TokenProb]
    draw: float | None = None  # the uniform draw u of a sampled step
    draw_low: float | None = None  # cumulative probability (processed, descending order) where the chosen token's
    draw_high: float | None = None  # interval starts and ends: u fell in [draw_low, draw_high)
    forced: bool = False  # the token was forced (branch point), not chosen by the selector
    time_ms: float = 0.0
    beams: list[BeamHypothesis] | None = None  # beam lanes: every candidate considered at this step


@dataclass
class LaneTrace:
    name: str
    config: dict[str, Any]
    processors: list[str]
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    finish_reason: str | None = None  # "eos", "length", "stop_string", "cancelled", "error"
    sequences: list[list[int]] | None = None  # beam lanes: every returned hypothesis, best first
    sequence_scores: list[float] | None = None
    branch: dict[str, Any] | None = None  # {"parent": lane name, "step": s, "token_id": t} for branched lanes
