"""What a run records: one StepRecord per lane per step, gathered into LaneTraces and a RunTrace.

Plain dataclasses of plain values (ints, floats, strings, lists) so they serialise to JSON losslessly and the
GUI can read them without knowing anything about the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

from decoding.records.explain import ExplainResult, start_token_added
from decoding.records.model_info import LaneModelInfo, ModelInfo


class TokenProb(NamedTuple):
    """One entry of a top-N list: a candidate token and its probability (rank 0 = most likely). A tuple of
    plain values, which the garbage collector stops tracking: a long run holds hundreds of thousands of them
    (as dataclass instances, collections traversing them took a fifth of a 32-row fan-out's decoding/ time)."""

    id: int
    text: str
    prob: float
    rank: int


class StageRecord(NamedTuple):
    """One stage's effect at one step, as decoding.chain.stages computes it (a tuple of plain values, as TopList's
    entries: cheap for the collector)."""

    name: str  # the processor's parameter name (decoding.chain.parameters)
    kept: int  # tokens with a finite score after the stage
    mass: float  # the share of the previous distribution's probability on the tokens the stage kept
    rank: int | None  # the chosen token's rank after the stage (None: the stage or one before removed it)
    prob: float  # the chosen token's probability after the stage (0.0 once removed)


class TopList(Sequence[TokenProb]):
    """A top-N list kept as three tuples (ids, texts, probabilities; an entry's rank is its position) and read
    as a list of TokenProb: iterate, index, slice, len, compare. A run holds two per step record, and as N
    separate entries they were most of what Python's collector walked (80 000 for a 32-member fan-out of 64
    tokens, a fifth of its decoding time); tuples of plain values it stops tracking, so a list costs it one
    object."""

    __slots__ = ("ids", "probs", "_texts", "_text_of")

    def __init__(
        self, ids: Iterable[int], texts: Iterable[str] | Callable[[int], str], probs: Iterable[float]
    ) -> None:
        """`texts`: the entries' texts, or the function giving an id's text, called when they are first read.
        A run builds two lists per record, and few are ever read: looking up their 40 pieces as they were
        built was a tenth of a 32-member fan-out's decoding/ time (the piece table is cold after a model step)."""
        self.ids, self.probs = tuple(ids), tuple(probs)
        self._text_of = texts if callable(texts) else None
        self._texts = None if callable(texts) else tuple(texts)
        if not len(self.ids) == len(self.probs) == (len(self.ids) if self._texts is None else len(self._texts)):
            raise ValueError("a top list needs as many texts and probabilities as ids")

    @property
    def texts(self) -> tuple[str, ...]:
        if self._texts is None:  # two threads may both look them up: the same texts
            self._texts = tuple(map(self._text_of, self.ids))
        return self._texts

    def __reduce__(self) -> tuple:
        """Copies and pickles hold the texts, not the function giving them."""
        return TopList, (self.ids, self.texts, self.probs)

    @classmethod
    def of(cls, entries: Iterable[TokenProb]) -> TopList:
        """The list of these entries, whose ranks must be their positions (0, 1, 2 ...)."""
        entries = list(entries)
        if [entry.rank for entry in entries] != list(range(len(entries))):
            raise ValueError("a top list's ranks must be 0, 1, 2 ... in order")
        return cls([e.id for e in entries], [e.text for e in entries], [e.prob for e in entries])

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> TokenProb: ...

    @overload
    def __getitem__(self, index: slice) -> list[TokenProb]: ...

    def __getitem__(self, index: int | slice) -> TokenProb | list[TokenProb]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.ids)))]
        rank = range(len(self.ids))[index]  # IndexError as a list's; negative indices count from the end
        return TokenProb(self.ids[rank], self.texts[rank], self.probs[rank], rank)

    def __iter__(self) -> Iterator[TokenProb]:
        return map(TokenProb, self.ids, self.texts, self.probs, range(len(self.ids)))

    def rank_of(self, token_id: int) -> int | None:
        """The rank of `token_id` in the list, or None."""
        try:
            return self.ids.index(token_id)
        except ValueError:
            return None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TopList):
            return (self.ids, self.texts, self.probs) == (other.ids, other.texts, other.probs)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TopList({list(self)!r})"


def as_top_list(entries: Iterable[TokenProb]) -> TopList:
    """`entries` as a TopList (a list of TokenProb is packed; their ranks must be their positions)."""
    return entries if isinstance(entries, TopList) else TopList.of(entries)


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
    top: TopList
    top_raw: TopList
    draw: float | None = None  # the uniform draw u of a sampled step
    # cumulative probability (processed, descending order) where the chosen token's interval starts and ends:
    # u fell in [draw_low, draw_high)
    draw_low: float | None = None
    draw_high: float | None = None
    forced: bool = False  # the token was forced (branch point), not chosen by the selector
    time_ms: float = 0.0
    beams: list[BeamHypothesis] | None = None  # beam lanes: every candidate considered at this step
    xtc_coin: float | None = None  # XTC's coin at this step (from the lane's generator; XTC acted if <= its p)
    mirostat_mu: float | None = None  # mirostat's running mu (bits) this step truncated with
    varentropy: float | None = None  # nats squared: variance of the surprisal, processed (None: a version 2 file)
    varentropy_raw: float | None = None
    stages: list[StageRecord] | None = None  # the chain stage by stage (decoding.chain.stages); None without processors
    adaptive: str | None = None  # an adaptive lane's decision: "argmax", "sample" or "widen" (decoding.chain.adaptive)
    # a lane on a served model's top-N (partial): the raw probability the server did not return (the tail), so the
    # raw statistics are of the returned tokens renormalised; a true raw probability is prob_raw * (1 - unseen_mass).
    # None (not written): the whole vocabulary was read
    unseen_mass: float | None = None

    def __post_init__(self) -> None:
        self.top, self.top_raw = as_top_list(self.top), as_top_list(self.top_raw)


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
    fanout: dict[str, Any] | None = None  # {"group": lane name, "member": k}: member k of a seed fan-out
    replay_of: dict[str, Any] | None = None  # {"lane", "step", "token_id"}: a branch-not-taken replay
    model: LaneModelInfo | None = None  # the lane's own model (LaneSpec.model); None: the run's model
    # the prompt's ids in the lane's own tokenizer (model.tokenizer set); None (not written): the run's prompt ids
    prompt_ids: list[int] | None = None
    # the window's colour index of the lane (gui.present.colours: its nth colour, then patterns), so a saved or
    # autosaved run opens with each lane in its colour; None (not written): a run made outside the window
    colour: int | None = None
    # "Why A, not B" at steps of this lane (decoding.analysis.why.WhyResult, checked as read); None (not written): none
    why: list[Any] | None = None


SCHEMA_VERSION = 6
# 1: no fan-outs, critical points, replays, sweeps; 2: no llama.cpp samplers; 3: no session tree; 4: every lane
# on the run's model; 5: no "why" of a lane's step
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)


@dataclass
class TreeNode:
    """One node of the session tree (decoding.analysis.session_tree): a lane's tokens from the step where it leaves its
    parent node's sequence (`step`; 0 and `parent` None for a node under the prompt), with the spec that made
    them (the lane's name, config and markers, as a LaneTrace holds them) and the user's bookmark, note and
    hidden flag. Its first token is its branch token when it has a parent."""

    id: int
    parent: int | None
    step: int
    lane: str
    kind: str  # "run", "branch", "replay", "fanout", "forced" or "continue" (decoding.analysis.session_tree.KINDS)
    config: dict[str, Any]
    token_ids: list[int]
    text: str  # the text of token_ids
    model: str  # the name of the model that made it
    branch_text: str = ""  # the text of its first token (its branch token under a parent)
    finish_reason: str | None = None
    branch: dict[str, Any] | None = None
    fanout: dict[str, Any] | None = None
    replay_of: dict[str, Any] | None = None
    bookmark: bool = False
    note: str = ""
    hidden: bool = False
    colour: int | None = None  # the window's colour of the lane that made it (LaneTrace.colour); None: not written


@dataclass
class PromptInfo:
    text: str
    ids: list[int]
    chat: bool = False
    system: str | None = None
    rendered: str | None = None  # the chat-templated text the ids encode (chat prompts)


@dataclass(frozen=True)
class CriticalSettings:
    """What makes a step a critical point (decoding.analysis.critical): a sampled draw u within `draw_distance` of the
    edge between the chosen token and a neighbour of probability >= `min_prob`, or greedy / beam top two with
    p2 / p1 >= `ratio` and p1 >= `min_prob` (processed probabilities).

    Defaults: u is uniform, so chance alone puts a draw within 0.02 of one of its interval's two edges on at
    most 4 % of sampled steps, and only those next to a real candidate count: a mark means the draw nearly
    went the other way. A runner-up 80 % as likely as the top token is 0.22 nats of log-odds away, less than
    a temperature of 0.8 or a repetition penalty of 1.2 moves. 0.1 (a token drawn 1 time in 10) keeps the
    many tiny, nearly equal tokens of a flat distribution out."""

    draw_distance: float = 0.02
    ratio: float = 0.8
    min_prob: float = 0.1

    def __post_init__(self) -> None:
        _check_range("draw_distance", self.draw_distance, 0.0, 0.5, "a float in [0, 0.5]")
        _check_range("ratio", self.ratio, 0.0, 1.0, "a float in (0, 1]", low_open=True)
        _check_range("min_prob", self.min_prob, 0.0, 1.0, "a float in [0, 1]")


def _check_range(name: str, value: Any, low: float, high: float, allowed: str, low_open: bool = False) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not low <= value <= high or (low_open and value == low):
        raise ValueError(f"invalid critical {name}={value!r}: allowed {allowed}")


@dataclass
class RunSettings:
    top_n: int = 20
    near_tie_threshold: float = 0.05
    max_new_tokens: int = 64
    seed: int | None = None  # the run-level base seed lanes' seeds were derived from (if any)
    eos_token_ids: list[int] = field(default_factory=list)
    critical: CriticalSettings = field(default_factory=CriticalSettings)


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
    # lanes of different tokenizers are compared by text: `char` is the first differing character of their texts,
    # `step` a's step whose token holds it and `step_b` b's; None (not written): token-aligned
    char: int | None = None
    step_b: int | None = None


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
class CriticalPoint:
    """A step where a small change decides between strong candidates (decoding.analysis.critical): `kind` "draw" (a
    sampled step whose u fell within `distance` of the edge to `runner_up`) or "tie" (a greedy or beam step
    whose top two are close: p2 / p1 = `ratio`). `runner_up` is the token a replay of the branch not taken
    forces."""

    step: int
    kind: str
    token_id: int
    runner_up: int
    prob: float  # the chosen token's processed probability
    prob_runner_up: float
    distance: float | None = None  # "draw": |u - edge|
    ratio: float | None = None  # "tie": p2 / p1


@dataclass
class SplitBranch:
    """The members of a fan-out that took `token_id` at a split."""

    token_id: int
    members: list[str]


@dataclass
class Split:
    """A node of a fan-out's tree: `members` share every token before `step` and part there into `branches`
    (two or more). Members that ended before `step` are not in it."""

    step: int
    members: list[str]
    branches: list[SplitBranch]


@dataclass
class FanoutGroup:
    """A seed fan-out: its members (lane names, by member number) and their tree of splits, in depth-first
    order (the first is the root). Summary numbers (decoding.analysis.fanout): distinct continuations, the mean step at
    which a member's tokens part from every other member's, the mean first divergence step over pairs."""

    members: list[str]
    seed: int | None  # the group's seed: member k draws with seed + k
    splits: list[Split] = field(default_factory=list)
    distinct_continuations: int = 0
    mean_first_split_step: float | None = None
    mean_pairwise_divergence_step: float | None = None


@dataclass
class ReplayComparison:
    """A branch-not-taken replay (lane `lane` = lane `of` with `token_id` at `step` instead of
    `original_token_id`) against the lane it replays, compared on the tokens after `step`."""

    lane: str
    of: str
    step: int
    token_id: int
    original_token_id: int | None
    first_difference: int | None  # first step after `step` where the two differ (None: same tokens)
    shared_prefix: int  # tokens right after `step` that both took
    edit_distance: int  # Levenshtein distance over the token ids after `step`
    distance: float  # edit_distance / the longer continuation's length (0: identical, 1: nothing shared)


@dataclass
class SweepPoint:
    """A step's processed distribution at one temperature (0: argmax, a one-hot distribution)."""

    temperature: float
    prob: float  # the step's chosen token
    entropy: float
    kept: int
    margin: float
    top: TopList

    def __post_init__(self) -> None:
        self.top = as_top_list(self.top)


@dataclass
class TemperatureSweep:
    """How lane `lane`'s step `step` distribution changes with temperature, through the lane's own processors
    (decoding.analysis.sweep); `token_id` is the token the lane chose there."""

    lane: str
    step: int
    token_id: int
    points: list[SweepPoint]


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
    critical_points: dict[str, list[CriticalPoint]] = field(default_factory=dict)  # lane name -> steps
    fanouts: dict[str, FanoutGroup] = field(default_factory=dict)  # group (lane name) -> its members' tree
    replays: list[ReplayComparison] = field(default_factory=list)


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
    sweeps: list[TemperatureSweep] = field(default_factory=list)  # by lane and step, as the user asked for them
    tree: list[TreeNode] = field(default_factory=list)  # the session tree, parents before children
    schema_version: int = SCHEMA_VERSION
    # lanes explained from the app (decoding.records.explain): each holds its whole token sequence, prompt first, so it
    # belongs to the lane whose tokens it repeats (RunTrace.explanation_of); written last, one line each
    explanations: list[ExplainResult] = field(default_factory=list)

    def lane(self, name: str) -> LaneTrace:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(f"no lane named {name!r}")

    def explanation_of(self, lane: LaneTrace) -> ExplainResult | None:
        """The longest stored explanation of `lane`'s sequence (the prompt, then its tokens) or of its beginning:
        the model is causal, so an explanation of a sequence's first n tokens holds for every lane starting
        with them."""
        prompt = list(self.prompt.ids)
        sequence = [*prompt, *lane.token_ids]

        def explains(e: ExplainResult) -> bool:  # a start token put in front of the prompt is not the lane's
            ids = e.token_ids[1:] if start_token_added(e, prompt) else e.token_ids
            return e.prompt_length - (len(e.token_ids) - len(ids)) == len(prompt) and ids == sequence[: len(ids)]

        return max(filter(explains, self.explanations), key=lambda e: len(e.tokens), default=None)
