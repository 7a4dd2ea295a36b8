"""What the model does inside over one token sequence: the tokens, every layer's attention weights per head,
and the logit lens (`python main.py explain`; the app's inside views). Built from runtime.inspection's arrays,
written to and read from JSON (docs/json-format.md, "Explain files"). Pure numpy.

    lens = LogitLens.of_hidden(arrays.hidden, inspector.lens, tokenizer.piece)   # computed where it is read
    result = build_explain(token_ids, prompt_length, arrays.attentions, lens, tokenizer, model, provider)
    text = result.to_json();  ExplainResult.from_json(text).to_json() == text
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from decoding.records.model_info import ModelInfo

EXPLAIN_SCHEMA_VERSION = 1
# Attention weights and lens probabilities are written rounded to 7 decimals: float32 carries about 7
# significant digits, and the file stays about half the size of full float repr. A float32 read back from
# such a decimal rounds to the same decimal again (float32's error below 1 is < 3e-8 < 5e-8), so
# export -> import -> export is byte-identical.
DECIMALS = 7
# The attention weights are L x H x T x T floats: for a 30-layer, 9-head model at 256 tokens 71 MB of float32
# and about 120 MB of JSON (measured at 512: 468 MB of JSON, 36 s to write). Longer sequences are refused.
MAX_EXPLAIN_TOKENS = 256


class ExplainFormatError(ValueError):
    """Not an explain result this version can read (the message says why)."""


class TokenPieces(Protocol):
    """What building a result needs of a tokenizer (runtime.Tokenizer)."""

    def piece(self, token_id: int) -> str: ...

    def token_bytes(self, token_id: int) -> bytes: ...


@dataclass(frozen=True)
class TokenInfo:
    id: int
    text: str  # readable piece (special tokens as written, a byte of an incomplete UTF-8 character as \xNN)
    bytes: list[int]  # the bytes the token stands for


@dataclass(frozen=True)
class LensEntry:
    id: int
    text: str
    prob: float


# Hidden states [..., D] -> the lens's K best next tokens of each, best first: ids int64 [..., K], probabilities
# float32 [..., K] (runtime.inspection.InspectionModel.lens).
LensTop = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class LogitLens:
    """The logit lens of T positions read at R rows (0 = embeddings, R - 1 = the model's own): ids and
    probabilities [R, T, K] of the K most likely next tokens, best first, with each id's readable piece.

    Given whole (read from a file), or computed from the final-normed hidden states [R, T, D] where first read:
    every position costs R products with the [D, vocab] lm_head (the whole lens of 89 tokens 8x a forward pass
    over them on SmolLM2-135M), and the window reads one position at a time. A position is computed once, under
    a lock: the window and the autosave thread may read the same lens. The lock is held for one call of `top`
    over at most ROWS_PER_CALL rows, so a reader of one position waits for one such call (≈ 40 ms on 2 cores),
    not for the whole lens, while another thread computes the rest."""

    ROWS_PER_CALL = 256

    def __init__(self, ids: np.ndarray, probs: np.ndarray, texts: dict[int, str], known: np.ndarray,
                 hidden: np.ndarray | None = None, top: LensTop | None = None,
                 piece: Callable[[int], str] | None = None):
        self._ids, self._probs, self._texts, self._known = ids, probs, texts, known
        self._hidden, self._top, self._piece = hidden, top, piece
        self._lock = threading.Lock()

    @classmethod
    def whole(cls, ids: np.ndarray, probs: np.ndarray, texts: dict[int, str]) -> LogitLens:
        ids = np.asarray(ids, dtype=np.int64)
        return cls(ids, np.asarray(probs, dtype=np.float32), texts, np.ones(ids.shape[1:2], dtype=bool))

    @classmethod
    def of_hidden(cls, hidden: np.ndarray, top: LensTop, piece: Callable[[int], str], top_k: int) -> LogitLens:
        """The lens of `hidden` [R, T, D], each position computed by `top` when first read; `piece`: an id's
        text."""
        rows, length = hidden.shape[:2]
        ids = np.zeros((rows, length, top_k), dtype=np.int64)
        probs = np.zeros((rows, length, top_k), dtype=np.float32)
        return cls(ids, probs, {}, np.zeros(length, dtype=bool), hidden, top, piece)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self._ids.shape  # type: ignore[return-value]

    def column(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """ids and probabilities [R, K] of the lens after `position`."""
        self.compute([position])
        return self._ids[:, position], self._probs[:, position]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """ids and probabilities [R, T, K] of every position (computed now where not yet)."""
        self.compute(range(self.shape[1]))
        return self._ids, self._probs

    def text(self, token_id: int) -> str:
        return self._texts[token_id]

    def compute(self, positions: Iterable[int]) -> None:
        """Compute the lens at `positions` where it is not known yet, in calls of `top` of up to ROWS_PER_CALL
        rows."""
        wanted = [p for p in dict.fromkeys(positions) if not self._known[p]]  # known ones need no lock: never unset
        step = max(1, self.ROWS_PER_CALL // self.shape[0])
        for start in range(0, len(wanted), step):
            self._compute(wanted[start : start + step])

    def _compute(self, positions: list[int]) -> None:
        with self._lock:
            todo = [p for p in positions if not self._known[p]]
            if not todo:
                return
            ids, probs = self._top(self._hidden[:, todo])
            self._ids[:, todo], self._probs[:, todo] = ids, probs
            self._texts.update({int(i): self._piece(int(i)) for i in np.unique(ids) if int(i) not in self._texts})
            self._known[todo] = True
            if self._known.all():  # what computing needed can go: the session, the hidden states
                self._hidden = self._top = self._piece = None


@dataclass(eq=False)
class ExplainResult:
    """One sequence of T tokens (the first `prompt_length` are the prompt) through a model of L layers, H heads.

    attention: float32 [L, H, T, T]; row q holds query position q's weights over key positions 0..q, 0 after q.
    lens: [L + 1, T, K]; row 0 reads the embedding output, row l the output of layer l through the final norm
    and lm_head; row L is the model's own next-token distribution. Best first. Read a position's with
    lens_column (computed then), every position's with lens_ids / lens_probs."""

    model: ModelInfo
    provider: str
    prompt_length: int
    tokens: list[TokenInfo]
    attention: np.ndarray
    lens: LogitLens
    schema_version: int = EXPLAIN_SCHEMA_VERSION
    # per layer, how many positions back its attention reaches (a sliding window, Gemma 3's local layers), None
    # for a layer that sees every earlier position; None when every layer does (written only when set)
    windows: list[int | None] | None = None

    @property
    def layers(self) -> int:
        return int(self.attention.shape[0])

    @property
    def heads(self) -> int:
        return int(self.attention.shape[1])

    @property
    def token_ids(self) -> list[int]:
        return [token.id for token in self.tokens]

    @property
    def lens_k(self) -> int:
        return self.lens.shape[2]

    @property
    def lens_ids(self) -> np.ndarray:
        """[L + 1, T, K], every position (computed now where not yet)."""
        return self.lens.arrays()[0]

    @property
    def lens_probs(self) -> np.ndarray:
        return self.lens.arrays()[1]

    def lens_column(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """ids and probabilities [L + 1, K] of the lens after `position`."""
        return self.lens.column(position)

    def lens_top(self, row: int, position: int) -> list[LensEntry]:
        """The lens's best tokens after `position` as read at `row` (0 = embeddings, layers = the model's own)."""
        ids, probs = (column[row] for column in self.lens_column(position))
        return [LensEntry(int(i), self.lens.text(int(i)), float(p)) for i, p in zip(ids, probs, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "model": {key: value for key, value in asdict(self.model).items() if key != "served"},  # always local
            "provider": self.provider,
            "prompt_length": self.prompt_length,
            "tokens": [asdict(token) for token in self.tokens],
            "attention": {"layers": self.layers, "heads": self.heads, "weights": rounded(self.attention)},
            "logit_lens": [
                [
                    [{"id": i, "text": self.lens.text(i), "prob": p} for i, p in zip(ids, probs, strict=True)]
                    for ids, probs in zip(row_ids, row_probs, strict=True)
                ]
                for row_ids, row_probs in zip(self.lens_ids.tolist(), rounded(self.lens_probs), strict=True)
            ],
        } | ({"windows": list(self.windows)} if self.windows is not None else {})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> ExplainResult:
        check_version(data)
        try:
            return parse(data)
        except ExplainFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ExplainFormatError(f"not a valid explain result: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def from_json(cls, text: str) -> ExplainResult:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ExplainFormatError(f"not JSON: {exc}") from exc
        return cls.from_dict(data)



def build_explain(
    token_ids: list[int],
    prompt_length: int,
    attentions: np.ndarray,
    lens: LogitLens,
    tokenizer: TokenPieces,
    model: ModelInfo,
    provider: str,
    windows: list[int | None] | None = None,
) -> ExplainResult:
    """The result for `token_ids` from runtime.inspection's attentions and a logit lens; `windows`: the layers'
    sliding windows (ExplainResult.windows)."""
    tokens = [TokenInfo(int(i), tokenizer.piece(int(i)), list(tokenizer.token_bytes(int(i)))) for i in token_ids]
    result = ExplainResult(
        model=model,
        provider=provider,
        prompt_length=prompt_length,
        tokens=tokens,
        attention=np.asarray(attentions, dtype=np.float32),
        lens=lens,
        windows=windows,
    )
    check_shapes(result)
    return result


def whole_lens(ids: np.ndarray, probs: np.ndarray, tokenizer: TokenPieces) -> LogitLens:
    """A lens known whole ([R, T, K] ids and probabilities), its texts from `tokenizer`."""
    ids = np.asarray(ids, dtype=np.int64)
    return LogitLens.whole(ids, probs, {int(i): tokenizer.piece(int(i)) for i in np.unique(ids)})


def check_length(length: int, max_positions: int | None) -> None:
    """ValueError unless a sequence of `length` tokens can be explained: at least one token, at most the model's
    positions and MAX_EXPLAIN_TOKENS."""
    limit = min(MAX_EXPLAIN_TOKENS, max_positions or MAX_EXPLAIN_TOKENS)
    if not 1 <= length <= limit:
        why = "the model's positions" if limit == max_positions else "attention weights grow as tokens squared"
        raise ValueError(f"the sequence has {length} tokens; explain takes 1 to {limit} ({why})")


def explain_span(prompt_ids: list[int], continuation: list[int], max_positions: int | None) -> list[int]:
    """The sequence explain takes of a prompt and what followed it (a lane's tokens): all of it, or its first
    min(MAX_EXPLAIN_TOKENS, max_positions) tokens; ValueError (check_length's) when the prompt alone is
    longer or empty."""
    check_length(len(prompt_ids), max_positions)
    limit = min(MAX_EXPLAIN_TOKENS, max_positions or MAX_EXPLAIN_TOKENS)
    return [*prompt_ids, *continuation][:limit]


def with_start_token(prompt_ids: list[int], start_id: int | None) -> list[int]:
    """A plain prompt as explain takes it: the model's start token in front, where a chat prompt has it, unless it
    is there already (None: the model has none). Whatever comes first takes most heads' attention (an "attention
    sink"); with the start token there, the prompt's first word is not hidden in that sink.

    >>> with_start_token([5788, 260], 1), with_start_token([1, 5788], 1), with_start_token([5788], None)
    ([1, 5788, 260], [1, 5788], [5788])
    """
    return [start_id, *prompt_ids] if start_id is not None and prompt_ids[:1] != [start_id] else list(prompt_ids)


def start_token_added(result: ExplainResult, prompt_ids: list[int]) -> bool:
    """Whether `result` explains `prompt_ids` with a start token put in front (with_start_token): its position 0
    is not the prompt's, and each prompt token is one position later."""
    prompt = list(prompt_ids)
    return result.prompt_length == len(prompt) + 1 and result.token_ids[1 : result.prompt_length] == prompt


def head_mean(result: ExplainResult, layer: int, position: int) -> np.ndarray:
    """How much the token at `position` attends to each position 0..position in `layer`, averaged over heads."""
    return result.attention[layer, :, position, : position + 1].mean(axis=0)


def most_attended(result: ExplainResult, position: int, layers: range | None = None, count: int = 3) -> list:
    """[(earlier position, weight)] the token at `position` attends to most, averaged over heads and `layers`
    (default: all), heaviest first."""
    layers = layers or range(result.layers)
    weights = np.mean([head_mean(result, layer, position) for layer in layers], axis=0)
    order = np.argsort(-weights, kind="stable")[:count]
    return [(int(p), float(weights[p])) for p in order]


def first_top1_row(result: ExplainResult, position: int) -> int:
    """The first lens row (0 = embeddings) whose best token after `position` is the model's own final choice."""
    column = result.lens_column(position)[0][:, 0]
    return int(np.flatnonzero(column == column[-1])[0])


def rounded(values: np.ndarray) -> list:
    return np.round(values.astype(np.float64), DECIMALS).tolist()


# ------------------------------------------------------------------------------------------------ reading


def check_version(data: Any) -> None:
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ExplainFormatError("not an explain result (no schema_version)")
    if data["schema_version"] != EXPLAIN_SCHEMA_VERSION:
        raise ExplainFormatError(
            f"explain result has schema_version {data['schema_version']!r}; "
            f"this Branchpoint reads version {EXPLAIN_SCHEMA_VERSION}"
        )


def parse(data: dict[str, Any]) -> ExplainResult:
    lens = data["logit_lens"]
    attention = data["attention"]
    result = ExplainResult(
        model=ModelInfo(**data["model"]),
        provider=data["provider"],
        prompt_length=data["prompt_length"],
        tokens=[TokenInfo(**token) for token in data["tokens"]],
        attention=np.asarray(attention["weights"], dtype=np.float32),
        lens=LogitLens.whole(
            np.asarray([[[e["id"] for e in entries] for entries in row] for row in lens], dtype=np.int64),
            np.asarray([[[e["prob"] for e in entries] for entries in row] for row in lens], dtype=np.float32),
            {e["id"]: e["text"] for row in lens for entries in row for e in entries},
        ),
        schema_version=data["schema_version"],
        windows=data.get("windows"),
    )
    if (attention["layers"], attention["heads"]) != result.attention.shape[:2]:
        raise ExplainFormatError(
            f"attention says {attention['layers']} layers x {attention['heads']} heads, "
            f"its weights are {list(result.attention.shape)}"
        )
    check_shapes(result)
    return result


def check_shapes(result: ExplainResult) -> None:
    """Every array agrees with the token count T and the layer count L (ExplainFormatError naming the mismatch)."""
    length = len(result.tokens)
    if length < 1:
        raise ExplainFormatError("an explain result needs at least one token")
    if result.attention.ndim != 4 or result.attention.shape[2:] != (length, length):
        raise ExplainFormatError(
            f"attention weights are {list(result.attention.shape)}, expected [L, H, {length}, {length}]"
        )
    expected = (result.layers + 1, length)
    shape = result.lens.shape
    if len(shape) != 3 or shape[:2] != expected or shape[2] < 1:
        raise ExplainFormatError(f"the logit lens is {list(shape)}, expected [{expected[0]}, {length}, K]")
    if not 0 <= result.prompt_length <= length:
        raise ExplainFormatError(f"prompt_length {result.prompt_length} is outside [0, {length}]")
    windows = result.windows
    if windows is not None and (len(windows) != result.layers
                                or any(w is not None and (not isinstance(w, int) or w < 1) for w in windows)):
        raise ExplainFormatError(f"windows must give each of the {result.layers} layers a window of at least 1 "
                                 f"position or null, got {windows}")
