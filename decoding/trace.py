"""What a run records: one StepRecord per lane per step, gathered into LaneTraces and a RunTrace.

Plain dataclasses of plain values (ints, floats, strings, lists) so they serialise to JSON losslessly and the
GUI can read them without knowing anything about the engine.
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
    # cumulative probability (processed, descending order) where the chosen token's interval starts and ends:
    # u fell in [draw_low, draw_high)
    draw_low: float | None = None
    draw_high: float | None = None
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
    error: str | None = None  # why the lane ended with finish_reason "error"


SCHEMA_VERSION = 1


@dataclass
class ModelInfo:
    name: str
    hashes: dict[str, str] = field(default_factory=dict)  # from the model's manifest (file -> sha256)
    path: str | None = None  # where it was loaded from (informative; replay resolves by name or path)


@dataclass
class PromptInfo:
    text: str
    ids: list[int]
    chat: bool = False
    system: str | None = None
    rendered: str | None = None  # the chat-templated text the ids encode (chat prompts)


@dataclass
class RunSettings:
    top_n: int = 20
    near_tie_threshold: float = 0.05
    max_new_tokens: int = 64
    seed: int | None = None  # the run-level base seed lanes' seeds were derived from (if any)
    eos_token_ids: list[int] = field(default_factory=list)


@dataclass
class RunTiming:
    prefill_ms: float = 0.0
    total_ms: float = 0.0
    steps: int = 0  # batched source.step calls
    tokens: int = 0  # tokens generated over all rows
    tokens_per_s: float = 0.0


@dataclass
class Divergence:
    """Lanes `a` and `b` chose different tokens first at `step` (None: identical over their common length)."""

    a: str
    b: str
    step: int | None
    token_a: int | None = None
    token_b: int | None = None


@dataclass
class NearTie:
    """A step where the top-1 and top-2 tokens were nearly equally likely (raw and/or processed)."""

    step: int
    margin: float
    margin_raw: float
    processed: bool  # margin < threshold in the processed distribution
    raw: bool  # margin_raw < threshold in the raw distribution
    top1: int
    top2: int


@dataclass
class CloseDraw:
    """How close a sampled step's draw u came to picking another token: distance to the chosen interval's
    nearer edge and the token on the other side of it (None at the ends or outside the recorded top-N)."""

    step: int
    draw: float
    distance: float
    other_token: int | None
    side: str  # "low" or "high"


@dataclass
class ForcedBranch:
    lane: str
    parent: str | None  # None: a forced token on a lane without parent ("force for all lanes")
    step: int
    token_id: int


@dataclass
class Analysis:
    near_tie_threshold: float
    divergences: list[Divergence] = field(default_factory=list)
    near_ties: dict[str, list[NearTie]] = field(default_factory=dict)  # lane name -> steps
    close_draws: dict[str, list[CloseDraw]] = field(default_factory=dict)
    forced: list[ForcedBranch] = field(default_factory=list)


@dataclass
class RunTrace:
    model: ModelInfo
    provider: str
    prompt: PromptInfo
    lanes: list[LaneTrace] = field(default_factory=list)
    settings: RunSettings = field(default_factory=RunSettings)
    timing: RunTiming = field(default_factory=RunTiming)
    analysis: Analysis | None = None
    error: str | None = None  # the source failure that ended the run early (lanes keep what they generated)
    schema_version: int = SCHEMA_VERSION

    def lane(self, name: str) -> LaneTrace:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(f"no lane named {name!r}")
