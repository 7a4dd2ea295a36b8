"""Plain-text views of a run for the terminal: lanes side by side (or stacked when the terminal is narrow),
with the first divergence from the first lane marked ◆ and near-ties marked ▲ before the token.

A fan-out run (`run --fanout K`) shows its ordinary lanes the same way but with critical points marked ▲, then
each fan-out as its distinct continuations, one line each, ◆ where the continuation parts from the others."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import replace

from decoding.analysis.fanout import first_split_steps
from decoding.records.partial import partial_note
from decoding.records.trace import FanoutGroup, RunTrace

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


def marked_text(trace: RunTrace, lane_index: int, tokenizer, ticks: set[int] | None = None) -> str:
    """The lane's text, ◆ before its first divergence from the first lane, ▲ before the steps in `ticks`
    (default: its near-ties)."""
    lane = trace.lanes[lane_index]
    if ticks is None:
        ticks = {tie.step for tie in trace.analysis.near_ties.get(lane.name, [])} if trace.analysis else set()
    return with_marks(token_texts(tokenizer, lane.token_ids), _divergence_from_first(trace, lane_index), ticks)


def with_marks(texts: Sequence[str], divergence: int | None, ticks: set[int]) -> str:
    parts = []
    for step, text in enumerate(texts):
        marks = (DIVERGENCE if step == divergence else "") + (NEAR_TIE if step in ticks else "")
        parts.append(marks + text)
    return "".join(parts)


def critical_steps(trace: RunTrace, name: str) -> set[int]:
    return {point.step for point in trace.analysis.critical_points.get(name, [])} if trace.analysis else set()


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
    note = partial_note(lane)
    partial = f", partial: {note}" if note else ""
    return f"{lane.name} [{lane.finish_reason or 'running'}, {len(lane.token_ids)} tok{partial}]"


def render(trace: RunTrace, tokenizer, width: int) -> str:
    columns = [(header(trace, i), marked_text(trace, i, tokenizer)) for i in range(len(trace.lanes))]
    return layout(columns, width)


def layout(columns: list[tuple[str, str]], width: int) -> str:
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


# ------------------------------------------------------------------------------------------------ fan-outs


def render_fanout_run(trace: RunTrace, tokenizer, width: int) -> str:
    """The ordinary lanes side by side (▲ critical points), then every fan-out (`fanout_block`)."""
    blocks = []
    ordinary = replace(trace, lanes=[lane for lane in trace.lanes if lane.fanout is None])
    if ordinary.lanes:
        columns = [
            (header(ordinary, i), marked_text(ordinary, i, tokenizer, critical_steps(ordinary, lane.name)))
            for i, lane in enumerate(ordinary.lanes)
        ]
        blocks.append(layout(columns, width))
    for group, found in (trace.analysis.fanouts if trace.analysis else {}).items():
        blocks.append(fanout_block(trace, group, found, tokenizer, width))
    return "\n\n".join(blocks)


def fanout_block(trace: RunTrace, group: str, found: FanoutGroup, tokenizer, width: int) -> str:
    """A title line with the fan-out's numbers, then each distinct continuation once: its members ("#3": member
    3 alone, "#3 +2": member 3 and two others with the same tokens) and its text, ◆ where it parts from every
    other continuation, ▲ at its first member's critical points."""
    continuations: dict[tuple[int, ...], list[str]] = {}
    for name in found.members:
        continuations.setdefault(tuple(trace.lane(name).token_ids), []).append(name)
    labels = {names[0]: _members_label(trace, names) for names in continuations.values()}
    parts = first_split_steps({names[0]: list(ids) for ids, names in continuations.items()})
    label_width = max(display_width(label) for label in labels.values())
    text_width = max(MIN_COLUMN, width - label_width - 2)
    lines = [_fanout_title(trace, group, found)]
    for names in continuations.values():
        first = names[0]
        text = with_marks(token_texts(tokenizer, trace.lane(first).token_ids), parts.get(first),
                          critical_steps(trace, first))
        for row, line in enumerate(wrap(text, text_width)):
            lines.append(f"{pad(labels[first] if row == 0 else '', label_width)}  {line}".rstrip())
    return "\n".join(lines)


def _members_label(trace: RunTrace, names: list[str]) -> str:
    first = trace.lane(names[0]).fanout["member"]
    return f"#{first}" + (f" +{len(names) - 1}" if len(names) > 1 else "")


def _fanout_title(trace: RunTrace, group: str, found: FanoutGroup) -> str:
    count = len(found.members)
    seeds = "" if found.seed is None else f", seeds {found.seed}..{found.seed + count - 1}"
    root = found.splits[0].step if found.splits else None
    return (
        f"── {group} × {count}{seeds}: {found.distinct_continuations} distinct continuations · "
        f"first split at step {_number(root)} · mean first-split step {_number(found.mean_first_split_step)} · "
        f"mean pairwise divergence step {_number(found.mean_pairwise_divergence_step)}"
    )


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:g}" if isinstance(value, int) else f"{value:.1f}"


def fanout_legend() -> str:
    return (f"{DIVERGENCE} a fan-out continuation parts from the others (elsewhere: from the first lane)   "
            f"{NEAR_TIE} critical point (a small change decides between strong candidates)")
