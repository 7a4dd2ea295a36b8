"""Why this token and not that one: the push of every earlier position on a choice, and where in depth it is made.

The knock-out (runtime.knockout) hides a position (or a group of them) from every later position — its key masked
for all later queries, positions unchanged — and reads the logits at the step again. A position's **push** toward
A over B is how much the gap logit(A) − logit(B) falls when it is hidden:

    push(j) = gap(plain) − gap(j hidden)         > 0: j pushed toward A; < 0: toward B

with the change in p(A) and p(B) beside it. The last position of the context is read directly (through its own
residual stream, not through attention), so no knock-out of it exists: it is left out.

The depth split is direct logit attribution: the final residual at the step is the embedding plus every layer's
attention and MLP outputs (each attention output the sum of its heads' outputs through o_proj); with the final
norm's scale 1/rms held at its value at this step, the gap is linear in the residual, so each component's
share is (g ⊙ x / rms) · (u_A − u_B) (g: the norm's weight, u: lm_head rows). The shares add up to the gap (the
rest is what a bias or rounding leaves). Only the direct path is counted: what a component does to later
layers is theirs (the knock-out measures such indirect effects).

Pure numpy: the arrays come from runtime, the texts from the tokenizer; WhyResult.to_dict / from_dict is the JSON
the run file and `main.py why` write (docs/json-format.md, "Why").
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TOP_PUSHERS = 5
WHY_FORMAT = "branchpoint-why"  # `main.py why --json` files: {"format", "version", "why": WhyResult.to_dict()}
WHY_VERSION = 1


class KnockoutCancelled(Exception):
    """A knock-out stopped by its caller between two calls."""


@dataclass(frozen=True)
class Candidate:
    token_id: int
    text: str


@dataclass(frozen=True)
class Push:
    """One knock-out row: hiding `positions` moves the gap by -push, p(A) by d_prob_a, p(B) by d_prob_b;
    `top_id` is the best token with them hidden."""

    positions: tuple[int, ...]
    text: str
    push: float
    d_prob_a: float
    d_prob_b: float
    top_id: int

    def to_dict(self) -> dict[str, Any]:
        return {"positions": list(self.positions), "text": self.text, "push": self.push,
                "d_prob_a": self.d_prob_a, "d_prob_b": self.d_prob_b, "top_id": self.top_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Push:
        return cls(tuple(int(p) for p in data["positions"]), str(data["text"]), float(data["push"]),
                   float(data["d_prob_a"]), float(data["d_prob_b"]), int(data["top_id"]))


@dataclass(frozen=True)
class DepthSplit:
    """The gap logit(A) − logit(B) as direct contributions: embedding, attention[l], mlp[l], heads[l][h]; `rest`
    = gap − (embedding + Σ attention + Σ mlp); each layer's attention = Σ its heads + head_rest[l]."""

    gap: float
    embedding: float
    attention: list[float]
    mlp: list[float]
    heads: list[list[float]]
    rest: float
    head_rest: list[float]
    rms: float  # the final norm's scale at this step (held fixed)

    @property
    def layers(self) -> int:
        return len(self.attention)

    def total(self) -> float:
        return self.embedding + sum(self.attention) + sum(self.mlp) + self.rest

    def to_dict(self) -> dict[str, Any]:
        return {"gap": self.gap, "embedding": self.embedding, "attention": self.attention, "mlp": self.mlp,
                "heads": self.heads, "rest": self.rest, "head_rest": self.head_rest, "rms": self.rms}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DepthSplit:
        floats = lambda values: [float(v) for v in values]  # noqa: E731
        return cls(float(data["gap"]), float(data["embedding"]), floats(data["attention"]), floats(data["mlp"]),
                   [floats(row) for row in data["heads"]], float(data["rest"]), floats(data["head_rest"]),
                   float(data["rms"]))


def depth_split(gap: float, embedding: np.ndarray, attention: np.ndarray, heads: np.ndarray, mlp: np.ndarray,
                norm_weight: np.ndarray, rms: float, direction: np.ndarray) -> DepthSplit:
    """Direct logit attribution of `gap` (the model's own logit(A) − logit(B)) at one position: embedding [D],
    attention [L, D], heads [L, H, D], mlp [L, D] (what each adds to the residual there), the final norm's
    weight [D] and scale rms (held fixed), direction = u_A − u_B [D] (lm_head rows)."""
    readout = np.asarray(norm_weight, np.float64) * np.asarray(direction, np.float64) / float(rms)
    share = lambda x: np.asarray(x, np.float64) @ readout  # noqa: E731
    attention_shares, mlp_shares, head_shares = share(attention), share(mlp), share(heads)
    embedding_share = float(share(embedding))
    rest = gap - embedding_share - float(attention_shares.sum()) - float(mlp_shares.sum())
    head_rest = attention_shares - head_shares.sum(axis=1)
    return DepthSplit(float(gap), embedding_share, attention_shares.tolist(), mlp_shares.tolist(),
                      head_shares.tolist(), float(rest), head_rest.tolist(), float(rms))


@dataclass
class WhyResult:
    """Why A and not B at one step of a lane: the knock-out of every earlier position, of word groups and of
    the user's spans, and the depth split (None when the model's graph has none)."""

    lane: str
    step: int
    a: Candidate
    b: Candidate
    token_ids: list[int]  # the context the step read: prompt, then the lane's tokens before the step
    texts: list[str]
    prompt_length: int
    logit_a: float
    logit_b: float
    prob_a: float
    prob_b: float
    positions: list[Push]  # one per position 0..T-2
    words: list[Push] = field(default_factory=list)
    spans: list[Push] = field(default_factory=list)
    depth: DepthSplit | None = None
    depth_note: str | None = None  # why there is no depth split
    model: str = ""
    provider: str = ""
    seconds: float = 0.0
    plain_seconds: float = 0.0

    @property
    def gap(self) -> float:
        return self.logit_a - self.logit_b

    def pushers(self, toward_a: bool, count: int = TOP_PUSHERS, rows: Sequence[Push] | None = None) -> list[Push]:
        """The `count` strongest pushers toward A (or toward B), strongest first, among `rows` (default: the
        positions); only rows that push that way."""
        rows = self.positions if rows is None else rows
        sign = 1.0 if toward_a else -1.0
        kept = [row for row in rows if sign * row.push > 0]
        return sorted(kept, key=lambda row: -sign * row.push)[:count]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lane": self.lane, "step": self.step,
            "a": {"token_id": self.a.token_id, "text": self.a.text},
            "b": {"token_id": self.b.token_id, "text": self.b.text},
            "token_ids": self.token_ids, "texts": self.texts, "prompt_length": self.prompt_length,
            "logit_a": self.logit_a, "logit_b": self.logit_b, "prob_a": self.prob_a, "prob_b": self.prob_b,
            "positions": [row.to_dict() for row in self.positions],
            "words": [row.to_dict() for row in self.words],
            "spans": [row.to_dict() for row in self.spans],
            "depth": None if self.depth is None else self.depth.to_dict(), "depth_note": self.depth_note,
            "model": self.model, "provider": self.provider,
            "seconds": self.seconds, "plain_seconds": self.plain_seconds,
        }

    def to_json(self) -> str:
        import json

        return json.dumps({"format": WHY_FORMAT, "version": WHY_VERSION, "why": self.to_dict()}, ensure_ascii=False,
                          indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> WhyResult:
        import json

        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != WHY_FORMAT or data.get("version") != WHY_VERSION:
            raise ValueError(f"not a {WHY_FORMAT} file of version {WHY_VERSION}")
        return cls.from_dict(data["why"])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WhyResult:
        rows = lambda key: [Push.from_dict(row) for row in data[key]]  # noqa: E731
        return cls(
            lane=str(data["lane"]), step=int(data["step"]),
            a=Candidate(int(data["a"]["token_id"]), str(data["a"]["text"])),
            b=Candidate(int(data["b"]["token_id"]), str(data["b"]["text"])),
            token_ids=[int(t) for t in data["token_ids"]], texts=[str(t) for t in data["texts"]],
            prompt_length=int(data["prompt_length"]),
            logit_a=float(data["logit_a"]), logit_b=float(data["logit_b"]),
            prob_a=float(data["prob_a"]), prob_b=float(data["prob_b"]),
            positions=rows("positions"), words=rows("words"), spans=rows("spans"),
            depth=DepthSplit.from_dict(data["depth"]) if data.get("depth") else None,
            depth_note=data.get("depth_note"),
            model=str(data.get("model", "")), provider=str(data.get("provider", "")),
            seconds=float(data.get("seconds", 0.0)), plain_seconds=float(data.get("plain_seconds", 0.0)),
        )


def pushes(groups: Sequence[Sequence[int]], texts: Sequence[str], base_logits: Sequence[float], base_log_norm: float,
           logits: np.ndarray, log_norm: np.ndarray, top_ids: np.ndarray,
           group_texts: Sequence[str] | None = None) -> list[Push]:
    """Knock-out rows as pushes: groups[r] hidden in row r; logits [rows, 2] of (A, B), log_norm [rows]; base_* the
    plain run's. A row's text is its tokens' texts joined, or group_texts[r]."""
    base_gap = float(base_logits[0]) - float(base_logits[1])
    base_a, base_b = (math.exp(float(base_logits[i]) - base_log_norm) for i in range(2))
    rows = []
    for r, group in enumerate(groups):
        prob_a, prob_b = (math.exp(float(logits[r, i]) - float(log_norm[r])) for i in range(2))
        gap = float(logits[r, 0]) - float(logits[r, 1])
        text = group_texts[r] if group_texts is not None else "".join(texts[p] for p in group)
        rows.append(Push(tuple(int(p) for p in group), text, base_gap - gap, prob_a - base_a, prob_b - base_b,
                         int(top_ids[r])))
    return rows


def character_groups(pieces: Sequence[bytes]) -> list[list[int]]:
    """Positions grouped into whole characters: a byte-level token that leaves a UTF-8 character unfinished takes
    the next tokens until it is (我 can be two tokens, 虽 three)."""
    groups: list[list[int]] = []
    pending = b""
    for position, piece in enumerate(pieces):
        if pending:
            groups[-1].append(position)
            pending += piece
        else:
            groups.append([position])
            pending = piece
        if not _unfinished(pending):
            pending = b""
    return groups


def _unfinished(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason == "unexpected end of data"
    return False


def group_text(group: Sequence[int], pieces: Sequence[bytes]) -> str:
    return b"".join(pieces[p] for p in group).decode("utf-8", errors="replace")


def word_groups(texts: Sequence[str], pieces: Sequence[bytes] | None = None) -> list[list[int]]:
    """Positions grouped into words: a token continues the word before it unless it starts with a space or
    follows one, or either side is a CJK character or punctuation (each its own group), or it is empty (a
    special token's piece). With the tokens' bytes (`pieces`), the tokens of one character go together first, so
    a character split over byte-level tokens is one group. Every position is in exactly one group, in order."""
    characters = character_groups(pieces) if pieces is not None else [[p] for p in range(len(texts))]
    shown = [group_text(c, pieces) for c in characters] if pieces is not None else list(texts)
    groups: list[list[int]] = []
    for index, text in enumerate(shown):
        previous = shown[index - 1] if index else ""
        if groups and _continues(previous, text):
            groups[-1].extend(characters[index])
        else:
            groups.append(list(characters[index]))
    return groups


def _continues(previous: str, text: str) -> bool:
    if not previous or not text or text[0].isspace() or previous[-1].isspace():
        return False
    return not (_stands_alone(text[0]) or _stands_alone(previous[-1]))


def _stands_alone(char: str) -> bool:
    """A CJK character (a word of its own for grouping) or punctuation."""
    return unicodedata.category(char).startswith("P") or unicodedata.east_asian_width(char) in ("W", "F")


def knockable(groups: Sequence[Sequence[int]], length: int) -> list[list[int]]:
    """The groups without the last position (length − 1: nothing later to hide it from); empty ones dropped."""
    kept = ([p for p in group if p < length - 1] for group in groups)
    return [group for group in kept if group]


def check_span(span: Sequence[int], length: int) -> list[int]:
    """A user's span [start, end) of positions as a group; ValueError naming what is allowed."""
    if len(span) != 2:
        raise ValueError(f"a span is two positions [start, end), got {list(span)}")
    start, end = int(span[0]), int(span[1])
    if not 0 <= start < end <= length - 1:
        raise ValueError(f"span [{start}, {end}) must lie in [0, {length - 1}) (positions before the last one)")
    return list(range(start, end))


def check_candidates(a: int, b: int, vocab_size: int) -> None:
    for name, value in (("a", a), ("b", b)):
        if not 0 <= value < vocab_size:
            raise ValueError(f"candidate {name} = token {value} is not in the vocabulary "
                             f"(allowed ids 0..{vocab_size - 1})")
    if a == b:
        raise ValueError(f"candidates a and b are the same token ({a}): pick another b to compare with")
