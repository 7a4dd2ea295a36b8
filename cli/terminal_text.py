"""Plain-text views of a run for the terminal: lanes side by side (or stacked when the terminal is narrow),
with the first divergence from the first lane marked ◆ and near-ties marked ▲ before the token."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from decoding.trace import RunTrace

DIVERGENCE = "◆"
NEAR_TIE = "▲"
GAP = " │ "
MIN_COLUMN = 22


def token_texts(tokenizer, token_ids: Sequence[int]) -> list[str]:
    """The text each token adds (a multi-byte character appears with the token that completes it)."""
    if hasattr(tokenizer, "incremental"):
        stream = tokenizer.incremental()
        texts = [stream.add(t) for t in token_ids]
        if texts:
            texts[-1] += stream.finish()
        return texts
    return [tokenizer.piece(t) for t in token_ids]


def marked_text(trace: RunTrace, lane_index: int, tokenizer) -> str:
    lane = trace.lanes[lane_index]
    divergence = _divergence_from_first(trace, lane_index)
    ties = {tie.step for tie in trace.analysis.near_ties.get(lane.name, [])} if trace.analysis else set()
    parts = []
    for step, text in enumerate(token_texts(tokenizer, lane.token_ids)):
        marks = (DIVERGENCE if step == divergence else "") + (NEAR_TIE if step in ties else "")
        parts.append(marks + text)
    return "".join(parts)


def _divergence_from_first(trace: RunTrace, lane_index: int) -> int | None:
    if lane_index == 0 or trace.analysis is None:
        return None
    first, other = trace.lanes[0].name, trace.lanes[lane_index].name
    for divergence in trace.analysis.divergences:
        if {divergence.a, divergence.b} == {first, other}:
            return divergence.step
    return None


def header(trace: RunTrace, lane_index: int) -> str:
    lane = trace.lanes[lane_index]
    return f"{lane.name} [{lane.finish_reason or 'running'}, {len(lane.token_ids)} tok]"


def render(trace: RunTrace, tokenizer, width: int) -> str:
    columns = [(header(trace, i), marked_text(trace, i, tokenizer)) for i in range(len(trace.lanes))]
    count = len(columns)
    column_width = (width - (count - 1) * len(GAP)) // count
    if column_width < MIN_COLUMN:
        return stacked(columns)
    return side_by_side(columns, column_width)


def stacked(columns: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"── {title}\n{text}" for title, text in columns)


def side_by_side(columns: list[tuple[str, str]], column_width: int) -> str:
    wrapped = [
        [*wrap(title, column_width), "─" * column_width, *wrap(text, column_width)] for title, text in columns
    ]
    height = max(len(lines) for lines in wrapped)
    rows = []
    for row in range(height):
        cells = [pad(lines[row] if row < len(lines) else "", column_width) for lines in wrapped]
        rows.append(GAP.join(cells).rstrip())
    return "\n".join(rows)


def char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    return sum(char_width(c) for c in text)


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def wrap(text: str, width: int) -> list[str]:
    """Hard-wrap by display width, keeping the text's own line breaks; tabs and control characters shown."""
    lines = []
    for paragraph in text.replace("\t", "    ").split("\n"):
        line, used = "", 0
        for char in paragraph:
            char = char if char.isprintable() else "�"
            w = char_width(char)
            if used + w > width:
                lines.append(line)
                line, used = "", 0
            line += char
            used += w
        lines.append(line)
    return lines


def legend() -> str:
    return f"{DIVERGENCE} diverges from the first lane   {NEAR_TIE} near-tie (top-1 − top-2 < threshold)"
