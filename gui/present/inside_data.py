"""Qt-free data of the inside views (tokens, attention, logit lens): what a lane's explanation
(decoding.records.explain.ExplainResult) says, arranged the way a view draws it. Only selections, averages and
rescaling of the stored weights; the model's maths is in models/ and decoding/.

Layers and heads are numbered from 0, as the explain JSON indexes them; logit lens row 0 reads the embeddings
and row r the output of layer r - 1, so the last row is the model's own next-token distribution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from decoding.records.explain import ExplainResult, LensEntry, first_top1_row, start_token_added
from gui.i18n import translate
from gui.present.lane_html import CharacterShare, lane_characters, piece_label
from gui.state.run_state import RunState

# What the heatmaps can show for one token: where it looks (its row of every layer's attention), or who looks at
# it (every later token's weight on it).
LOOKS_AT, LOOKED_AT = "looks_at", "looked_at"


def inside_lane(state: RunState) -> int | None:
    """The lane the inside views show: the selected one, else the first one explained, else None."""
    if state.selection is not None:
        return state.selection.lane
    return next((i for i in range(len(state.lanes)) if state.explanation(i) is not None), None)


def token_labels(result: ExplainResult, start_added: bool = False) -> list[str]:
    """Every position's token as a short label: whitespace visible, a character spread over several
    byte-level tokens shown on each of them (gui.present.lane_html.piece_label); a start token put in front of
    the prompt (decoding.records.explain.with_start_token) as ‹start›."""
    pieces = [token.text for token in result.tokens]
    shares = lane_characters(pieces)
    labels = [piece_label(piece, shares.get(i), compact=True) for i, piece in enumerate(pieces)]
    if start_added:
        labels[0] = translate("inside_data", "‹start›")
    return labels


def explained_start(state: RunState, result: ExplainResult | None) -> bool:
    """Whether `result` (of the shown run) has a start token put in front of the run's plain prompt."""
    return result is not None and state.trace is not None and start_token_added(result, state.trace.prompt.ids)


def position_label(result: ExplainResult, position: int, labels: list[str] | None = None) -> str:
    """“Although”@24, with “(prompt)” for the prompt's tokens."""
    label = (labels or token_labels(result))[position]
    where = " (prompt)" if position < result.prompt_length else ""
    return f"“{label}”@{position}{where}"


# ------------------------------------------------------------------------------------------------ attention


MEAN, STRONGEST = "mean", "max"  # heads averaged, or the strongest head of each layer (cell by cell)
# With position 0 left out, a row is rescaled by 1 / (1 - its weight on position 0); a head giving position 0
# more than this share keeps too little to rescale (its leftovers would be blown up to noise): shown blank.
SINK_LIMIT = 0.99


def _drop_first(weights: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Weights rescaled as if position 0 (which takes most of many heads' attention, an "attention sink") were
    not there: divided by 1 - its weight; NaN where that weight exceeds SINK_LIMIT."""
    rest = 1.0 - first
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rest > 1.0 - SINK_LIMIT, weights / rest, np.nan)


def _combine(weights: np.ndarray, first: np.ndarray, heads: str | int, drop_first: bool) -> np.ndarray:
    """[layers, heads, n] weights (and the same rows' weight on position 0) → [layers, n]: one head, the mean
    of the heads, or each cell's strongest head; `drop_first` rescales the mean or the head (see _drop_first).
    The strongest head is shown as computed: the sink's share differs from head to head."""
    if heads == STRONGEST:
        return weights.max(axis=1)
    if heads == MEAN:
        grid, first = weights.mean(axis=1), first.mean(axis=1)
    else:
        grid, first = weights[:, heads], first[:, heads]
    return _drop_first(grid, first) if drop_first else grid


def looks_at_grid(result: ExplainResult, query: int, heads: str | int = MEAN,
                  drop_first: bool = False) -> np.ndarray:
    """[layers, query + 1]: how much the token at `query` attends to each position 0..query in each layer: one
    head (an index), the heads' MEAN or each layer's STRONGEST head; `drop_first`: position 0 left out (NaN),
    the rest rescaled to sum to 1 (mean and single heads)."""
    weights = result.attention[:, :, query, : query + 1].astype(np.float64)
    grid = _combine(weights, weights[:, :, :1], heads, drop_first)
    if drop_first:
        grid[:, 0] = np.nan
    return grid


def looked_at_grid(result: ExplainResult, key: int, heads: str | int = MEAN,
                   drop_first: bool = False) -> np.ndarray:
    """[layers, T - key]: how much each token from `key` on attends to the token at `key`, in each layer;
    `heads` and `drop_first` as looks_at_grid (all NaN for key 0)."""
    weights = result.attention[:, :, key:, key].astype(np.float64)
    grid = _combine(weights, result.attention[:, :, key:, 0].astype(np.float64), heads, drop_first)
    return np.full_like(grid, np.nan) if drop_first and key == 0 else grid


@dataclass(frozen=True)
class HeadWeight:
    layer: int
    head: int
    weight: float  # the head's attention from the query to the key (as the model computed it)
    others: float  # the head's mean weight on every other earlier position but 0 (0 when there is none)


def head_weights(result: ExplainResult, query: int, key: int, layer: int) -> list[float]:
    """The weight each head of `layer` gives from `query` to `key`."""
    return [float(w) for w in result.attention[layer, :, query, key]]


def strongest_heads(result: ExplainResult, query: int, key: int, count: int = 3) -> list[HeadWeight]:
    """The heads giving the most weight from `query` to `key` (raw weights: no averaging hides them), with
    what each gives on average to the other earlier positions (position 0 excluded: the sink)."""
    weights = result.attention[:, :, query, key]
    order = np.argsort(-weights, axis=None, kind="stable")[:count]
    found = []
    for flat in order:
        layer, head = np.unravel_index(flat, weights.shape)
        row = result.attention[layer, head, query, : query + 1].astype(np.float64)
        others = [p for p in range(1, query + 1) if p != key]
        mean = float(row[others].mean()) if others else 0.0
        found.append(HeadWeight(int(layer), int(head), float(weights[layer, head]), mean))
    return found


@dataclass(frozen=True)
class Attended:
    position: int
    weight: float  # the grid's mean over layers
    strongest: HeadWeight


def top_attended(result: ExplainResult, grid: np.ndarray, token: int, mode: str, count: int = 5) -> list[Attended]:
    """The grid's columns (positions) with the largest mean over layers, heaviest first, each with the head
    that carries the most of it. `mode`: LOOKS_AT (columns are the positions `token` looks at) or LOOKED_AT
    (columns are the tokens from `token` on, looking at it)."""
    counts = np.isfinite(grid).sum(axis=0)
    means = np.where(counts > 0, np.nansum(grid, axis=0) / np.maximum(counts, 1), -1.0)
    order = [int(c) for c in np.argsort(-means, kind="stable")[:count] if means[c] >= 0]
    found = []
    for column in order:
        query, key = (token, column) if mode == LOOKS_AT else (token + column, token)
        position = key if mode == LOOKS_AT else query
        found.append(Attended(position, float(means[column]), strongest_heads(result, query, key, 1)[0]))
    return found


# ------------------------------------------------------------------------------------------------ logit lens


@dataclass(frozen=True)
class LensRow:
    """One row of the logit lens at a position: what the model would predict from there."""

    row: int  # 0 = embeddings, r = after layer r - 1
    entries: list[LensEntry]  # best first


def lens_row_label(row: int) -> str:
    return "embeddings" if row == 0 else f"layer {row - 1}"


def lens_rows(result: ExplainResult, position: int) -> list[LensRow]:
    """The lens after `position`, row by row (embeddings first, the model's own distribution last)."""
    return [LensRow(row, result.lens_top(row, position)) for row in range(result.layers + 1)]


@dataclass(frozen=True)
class Journey:
    """How the token after a position takes shape through the layers."""

    final: LensEntry  # the model's own top-1 (the last row's best)
    first_top1: int  # first row where it is top-1
    settled: int  # the row from which on it stays top-1
    actual: int | None  # the token that really follows in the sequence (None after its last position)


def journey(result: ExplainResult, position: int) -> Journey:
    column = result.lens_column(position)[0][:, 0]
    final = result.lens_top(result.layers, position)[0]
    differs = np.flatnonzero(column != final.id)
    settled = int(differs[-1]) + 1 if differs.size else 0
    actual = result.tokens[position + 1].id if position + 1 < len(result.tokens) else None
    return Journey(final, first_top1_row(result, position), settled, actual)


def token_probability(result: ExplainResult, position: int, token_id: int) -> list[float | None]:
    """Per lens row, the probability of `token_id` after `position` (None where it is not among the row's
    best)."""
    ids, probs = result.lens_column(position)
    found = []
    for row in range(result.layers + 1):
        hits = np.flatnonzero(ids[row] == token_id)
        found.append(float(probs[row, hits[0]]) if hits.size else None)
    return found


# ------------------------------------------------------------------------------------------------ tokens

# Special tokens as chat templates write them (<|im_start|>, <s>, </s>, [INST]): how a piece is recognised as one
# when no tokenizer is at hand (a saved run opened without its model).
_SPECIAL_LOOK = re.compile(r"^(<\|[^|<>]+\|>|</?s>|\[/?INST\])$")


@dataclass(frozen=True)
class TokenChip:
    position: int  # in its line
    token_id: int
    piece: str  # the token's text (\xNN for bytes of an unfinished character)
    label: str  # as shown
    special: bool  # a special token (the chat template's markers, end of text)
    character: CharacterShare | None  # the character it is part of, when it holds only some of its bytes


@dataclass(frozen=True)
class TokenLine:
    title: str
    chips: list[TokenChip]
    lane: int | None = None  # the lane's index (None: the prompt)


def token_chips(ids: list[int], pieces: list[str], special_ids: frozenset[int] | None = None) -> list[TokenChip]:
    """One chip per token, labelled with its piece (a piece of a character with its bytes); `special_ids` from
    the tokenizer when known, else special tokens by their look."""
    shares = lane_characters(pieces)
    chips = []
    for position, (token_id, piece) in enumerate(zip(ids, pieces, strict=True)):
        special = token_id in special_ids if special_ids is not None else bool(_SPECIAL_LOOK.match(piece))
        chips.append(TokenChip(position, token_id, piece, piece_label(piece, compact=True), special,
                               shares.get(position)))
    return chips


def prompt_pieces(state: RunState, tokenizer=None) -> list[str] | None:
    """The prompt's token pieces: from the tokenizer when at hand, else from a stored explanation (which holds
    them), else None (a saved run opened without its model: its prompt ids only)."""
    ids = state.trace.prompt.ids
    if tokenizer is not None:
        return [tokenizer.piece(i) for i in ids]
    for result in state.trace.explanations:
        if result.token_ids[: len(ids)] == ids:
            return [token.text for token in result.tokens[: len(ids)]]
    return None


def latest_settling(result: ExplainResult) -> int | None:
    """The position whose next token the model settles on latest (the generated tokens' only, words first: a
    digit or a comma settling late explains nothing): the latest row from which its final top-1 stays top-1,
    then the latest first top-1, then the most confident final choice. None when no token was generated."""
    if result.prompt_length < 1:
        return None
    generated = range(result.prompt_length - 1, len(result.tokens) - 1)
    words = [position for position in generated
             if any(ch.isalpha() for ch in bytes(result.tokens[position + 1].bytes).decode("utf-8", "replace"))]
    positions = words or list(generated)
    result.lens.compute(positions)  # in one call, not one per position

    def lateness(position: int) -> tuple[int, int, float]:
        path = journey(result, position)
        return path.settled, path.first_top1, path.final.prob

    return max(positions, key=lateness, default=None)


def word_span(result: ExplainResult, word: str, last: bool = False, within: int | None = None) -> range:
    """The positions of the tokens holding `word`'s bytes (a word may be part of a token, or spread over
    several: 但 is two byte-level tokens), at its first occurrence (`last`: its last) in the first `within`
    tokens (default: all). ValueError when it does not occur."""
    tokens = result.tokens[:within]
    data = b"".join(bytes(token.bytes) for token in tokens)
    target = word.encode("utf-8")
    start = data.rfind(target) if last else data.find(target)
    if not target or start < 0:
        raise ValueError(f"{word!r} is not in the explained tokens")
    end, offset, found = start + len(target), 0, []
    for position, token in enumerate(tokens):
        if offset < end and offset + len(token.bytes) > start:
            found.append(position)
        offset += len(token.bytes)
    return range(found[0], found[-1] + 1)


def strongest_look(result: ExplainResult, query: int, keys: range) -> tuple[int, int, int]:
    """(layer, head, key) of the single head that gives the most weight from `query` to any of `keys`."""
    weights = result.attention[:, :, query, keys.start: keys.stop]
    layer, head, index = np.unravel_index(int(np.argmax(weights)), weights.shape)
    return int(layer), int(head), keys.start + int(index)
