"""Lanes of different tokenizers compared by text: their tokens are not aligned (another vocabulary, other
splits), so two such lanes part where their texts first differ, and that character lies in one step of each.

A lane's text here is its steps' token pieces joined, each piece read back as the bytes it stands for (a piece
shows the bytes of an incomplete UTF-8 character as \\x.. escapes, runtime.tokenizer.Tokenizer.piece): a
character that one tokenizer splits over two tokens and another keeps whole is the same text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from decoding.records.trace import LaneTrace

_ESCAPED_BYTE = re.compile(rb"\\x([0-9a-f]{2})")


@dataclass(frozen=True)
class TextDifference:
    """Where two lanes' texts first differ: the character's offset and each lane's step whose token holds it."""

    char: int
    step_a: int
    step_b: int


def tokenizer_of(lane: LaneTrace) -> str | None:
    """The identity of the lane's tokenizer: None for the run's, else its own model's (LaneModelInfo.tokenizer)."""
    return None if lane.model is None else lane.model.tokenizer


def token_aligned(a: LaneTrace, b: LaneTrace) -> bool:
    """Whether two lanes share a tokenizer, so that their steps compare token by token."""
    return tokenizer_of(a) == tokenizer_of(b)


def piece_bytes(piece: str) -> bytes:
    """The bytes a token piece stands for (its \\x.. escapes read back as bytes)."""
    return _ESCAPED_BYTE.sub(lambda match: bytes([int(match.group(1), 16)]), piece.encode("utf-8"))


def first_text_difference(a: LaneTrace, b: LaneTrace) -> TextDifference | None:
    """The first character where the lanes' texts differ (None: one text begins the other, or both are equal).

    >>> from decoding.records.trace import LaneTrace, StepRecord
    >>> def lane(*pieces):
    ...     steps = [StepRecord(i, i, p, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, [], []) for i, p in enumerate(pieces)]
    ...     return LaneTrace("l", {}, [], list(range(len(pieces))), steps=steps)
    >>> first_text_difference(lane("The", " cat", " sat"), lane("The c", "at", " ran"))
    TextDifference(char=8, step_a=2, step_b=2)
    """
    pieces_a, pieces_b = _bytes(a), _bytes(b)
    text_a, text_b = b"".join(pieces_a), b"".join(pieces_b)
    index = next((i for i, (x, y) in enumerate(zip(text_a, text_b, strict=False)) if x != y), None)
    if index is None:
        return None
    while index > 0 and text_a[index] & 0xC0 == 0x80:  # back to the first byte of the character
        index -= 1
    char = len(text_a[:index].decode("utf-8", errors="replace"))
    return TextDifference(char, bisect_right(_ends(pieces_a), index), bisect_right(_ends(pieces_b), index))


def same_place(a: LaneTrace, step: int, b: LaneTrace) -> int | None:
    """b's step whose token holds the first byte of a's token at `step` (None: b's text ends before it)."""
    start = sum(len(piece) for piece in _bytes(a)[:step])
    ends = _ends(_bytes(b))
    index = bisect_right(ends, start)
    return index if index < len(ends) else None


def _bytes(lane: LaneTrace) -> list[bytes]:
    return [piece_bytes(record.token_text) for record in lane.steps]


def _ends(pieces: list[bytes]) -> list[int]:
    """Where each step's bytes end in the lane's text."""
    return list(accumulate(len(piece) for piece in pieces))
