"""Qt-free rendering of lanes to the rich text QTextBrowser understands, plus the small formatting rules
behind it (probability colours, visible whitespace, markers). No maths here: probabilities, margins and
divergence come from the trace and from `decoding`.

QTextBrowser ignores CSS borders on spans, so marks use background, bold, underline and glyphs.
"""

from __future__ import annotations

import codecs
import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from decoding.records.partial import mean_raw_entropy_bounds, partial_parts
from decoding.records.trace import StepRecord, TokenProb
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present import colours
from gui.present.colours import MARK_COLOURS  # the palette in effect's: one dict, updated in place
from gui.state.run_state import TokenMarks

DIVERGENCE_GLYPH = "◆"
CRITICAL_GLYPH = "▲"
BRANCH_GLYPH = "↳"
FORCED_GLYPH = "★"
PROPOSED_GLYPH = "◌"


def probability_colour(p: float) -> str:
    """Background for a token of probability p: red (unlikely) through yellow to green (near certain); pastel
    under black text in the light palette, deep under light text in the dark one (gui.present.colours)."""
    return colours.current().probability(p)


def visible_piece(text: str) -> str:
    """A token's text as shown inside running text: newlines keep breaking lines but get a ↵, tabs a →,
    other control characters an escape (\\x1e), an empty piece (e.g. a special token) ∅, bytes of a character
    no neighbour completes (a lane that stopped inside one) as ‹e8 af›, as the token view shows them."""
    if text == "":
        return "∅"
    text = _PARTIAL_BYTES.sub(lambda m: bytes_label(piece_bytes(m.group())), text)
    text = text.replace("\t", "→\t").replace("\r\n", "↵\n").replace("\n", "↵\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def label_piece(text: str) -> str:
    """A token's text as a one-line label (tooltips, lists, chart axes): whitespace made visible."""
    if text == "":
        return "∅"
    return text.replace("\n", "↵").replace("\t", "→").replace(" ", "·")


def piece_label(text: str, character: CharacterShare | None = None, pending: bytes = b"",
                compact: bool = False) -> str:
    """label_piece, except that a piece holding only some bytes of a UTF-8 character (a byte-level piece of a
    Chinese character or an emoji) reads as that character and its share of the bytes: from `character`
    when the lane's later pieces complete it ("这 (bytes 1–2 of 3)"), or from the bytes `pending` before it
    in the lane, which it may complete ("这 (byte 3 of 3)"); else as its bytes and how many the character has
    ("‹e8 bf› 2 of 3 bytes"). `compact`: just the character or the bytes (axes, tree labels)."""
    if "\\x" not in text:
        return label_piece(text)
    own = piece_bytes(text)
    if character is None and pending:
        character = _completed_by(pending, own)
    if character is not None:
        if compact:
            return character.text
        first, last = character.start + 1, character.start + len(own)
        span = (translate("render", "byte {first} of {total}") if first == last else
                translate("render", "bytes {first}–{last} of {total}"))
        return f"{character.text} ({span.format(first=first, last=last, total=character.total)})"
    known = pending + own if pending and _decode(pending + own)[0] is not None else own
    shown = bytes_label(known)
    total = _utf8_length(known[0])
    if compact:
        return shown
    if total is None:
        return f"{shown} " + translate("render", "end of a character")
    return f"{shown} " + translate("render", "{count} of {total} bytes").format(count=len(known), total=total)


def bytes_label(data: bytes) -> str:
    """Bytes no character is spelled from, as the views show them: ‹e8 af›."""
    return "‹" + " ".join(f"{b:02x}" for b in data) + "›"


def _completed_by(pending: bytes, own: bytes) -> CharacterShare | None:
    """The character `pending` + `own` spell, if `own` completes exactly one character started in `pending`."""
    text, complete = _decode(pending + own)
    if not complete or text is None or len(text) != 1:
        return None
    return CharacterShare(text, len(pending), len(pending + own))


def pending_bytes(pieces: Sequence[str]) -> bytes:
    """The bytes of the character the lane's last pieces started and did not finish (b"" if none)."""
    data = b""
    for group in reversed(group_tokens(pieces)):
        if len(group.steps) != 1 or "\\x" not in group.text:
            break
        data = piece_bytes(group.text) + data
    text, complete = _decode(data)
    return data if data and text is not None and not complete else b""


def _utf8_length(lead: int) -> int | None:
    """Bytes of the UTF-8 character a lead byte starts (None for a continuation byte)."""
    for limit, length in ((0xE0, 2), (0xF0, 3), (0xF8, 4)):
        if 0xC0 <= lead < limit:
            return length
    return None


@dataclass(frozen=True)
class CharacterShare:
    """The character a byte-level piece is part of: its text, the byte the piece starts at, the total bytes."""

    text: str
    start: int
    total: int


def lane_characters(pieces: Sequence[str]) -> dict[int, CharacterShare]:
    """For every piece of a lane that is only part of a character completed by its neighbours: which."""
    shares: dict[int, CharacterShare] = {}
    for group in group_tokens(pieces):
        if len(group.steps) < 2:
            continue
        total = len(group.text.encode("utf-8"))
        start = 0
        for index in group.steps:
            shares[index] = CharacterShare(group.text, start, total)
            start += len(piece_bytes(pieces[index]))
    return shares


def format_prob(p: float) -> str:
    if p >= 0.995:
        return f"{p:.3f}"
    if p >= 0.001:
        return f"{p * 100:.1f}%"
    return f"{p:.1e}"


def token_html(lane: int, step: StepRecord, marks: TokenMarks, text: str | None = None,
               prob: float | None = None) -> str:
    """One token (or a group of tokens spelling one character: `text`, `prob`) as an anchor
    `tok:<lane>:<step>`, its processed probability as background colour."""
    p = step.prob if prob is None else prob
    return _anchor_html(lane, step.step, step.token_text if text is None else text, p, marks, step.forced,
                        colours.current().dark)


@lru_cache(maxsize=16384)
def _anchor_html(lane: int, step: int, text: str, p: float, marks: TokenMarks, forced: bool, dark: bool) -> str:
    """token_html's output depends on these alone: memoised, since a streaming lane re-renders its tokens at
    every redraw."""
    palette = colours.DARK if dark else colours.LIGHT
    background = palette.selected_background if marks.selected else palette.probability(p)
    colour = palette.selected_text if marks.selected else palette.token_text
    if marks.proposed and not marks.selected:  # a ghost: not taken yet, whatever its probability
        background, colour = palette.proposed_background, palette.marks["proposed"]
    style = [f"background-color:{background}", f"color:{colour}", "text-decoration:none"]
    if marks.selected or marks.divergence or marks.branch:
        style += ["font-weight:bold", "text-decoration:underline"]
    if marks.proposed:
        style.append("font-style:italic")
    prefix = "".join(_glyph(kind) for kind, on in _mark_kinds(marks, forced) if on)
    suffix = _glyph("critical", small=True) if marks.critical else ""
    shown = html.escape(visible_piece(text)).replace("\n", "<br>")
    return f'{prefix}<a href="tok:{lane}:{step}" style="{";".join(style)}">{shown}</a>{suffix}'


def _mark_kinds(marks: TokenMarks, forced: bool) -> list[tuple[str, bool]]:
    return [("proposed", marks.proposed), ("branch", marks.branch),
            ("divergence", marks.divergence and not marks.branch), ("forced", forced and not marks.branch)]


def _glyph(kind: str, small: bool = False) -> str:
    """A coloured mark glyph; small ones (critical points, after their token) are raised and reduced to keep the
    text readable."""
    glyph = {"divergence": DIVERGENCE_GLYPH, "critical": CRITICAL_GLYPH, "branch": BRANCH_GLYPH,
             "forced": FORCED_GLYPH, "proposed": PROPOSED_GLYPH}[kind]
    size = "font-size:7pt;vertical-align:super;" if small else ""
    return f'<span style="color:{MARK_COLOURS[kind]};font-weight:bold;{size}">{glyph}</span>'


def lane_fragments(lane: int, steps: Sequence[StepRecord], marks: Sequence[TokenMarks]) -> list[str]:
    """A lane's tokens as HTML pieces, one per shown token, in order (a view that already shows a prefix of
    them only adds the rest; whitespace must be pre-wrap where they are inserted). Tokens that only together
    spell a character (byte-level pieces of Chinese, emoji) are one piece showing that character, with the
    first token's anchor and the marks of any of them."""
    parts = []
    for group in group_tokens([s.token_text for s in steps]):
        first = steps[group.steps[0]]
        if len(group.steps) == 1:
            parts.append(token_html(lane, first, marks[group.steps[0]]))
            continue
        prob = math.prod(steps[i].prob for i in group.steps)  # the character's probability
        parts.append(token_html(lane, first, _merge_marks([marks[i] for i in group.steps]), group.text, prob))
    return parts


def _merge_marks(marks: Sequence[TokenMarks]) -> TokenMarks:
    names = ("divergence", "critical", "branch", "selected", "proposed")
    return TokenMarks(*(any(getattr(m, name) for m in marks) for name in names))


# ------------------------------------------------------------------------------- characters split over tokens

_PARTIAL_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")  # how runtime pieces show bytes of incomplete characters
_PARTIAL_BYTES = re.compile(r"(?:\\x[89a-f][0-9a-f])+")
MAX_GROUP = 4  # a UTF-8 character has at most 4 bytes


@dataclass(frozen=True)
class TokenGroup:
    steps: tuple[int, ...]  # indices of the tokens in the lane
    text: str


def piece_bytes(text: str) -> bytes:
    """The bytes a piece stands for: its UTF-8, with \\xNN escapes (partial characters) back to bytes."""
    out = bytearray()
    position = 0
    for match in _PARTIAL_BYTE.finditer(text):
        out += text[position:match.start()].encode("utf-8")
        out.append(int(match.group(1), 16))
        position = match.end()
    out += text[position:].encode("utf-8")
    return bytes(out)


def group_tokens(pieces: Sequence[str]) -> list[TokenGroup]:
    """Consecutive pieces whose bytes only together form valid UTF-8 become one group with the decoded text;
    every other piece is its own group. Pieces still incomplete at the end (streaming) stay as they are."""
    groups: list[TokenGroup] = []
    pending: list[int] = []
    buffer = b""
    for index, piece in enumerate(pieces):
        if not pending and "\\x" not in piece:
            groups.append(TokenGroup((index,), piece))
            continue
        pending.append(index)
        buffer += piece_bytes(piece)
        text, complete = _decode(buffer)
        if complete:
            groups.append(TokenGroup(tuple(pending), text))
        elif text is None or len(pending) >= MAX_GROUP:
            groups += [TokenGroup((i,), pieces[i]) for i in pending]
        else:
            continue
        pending, buffer = [], b""
    return groups + [TokenGroup((i,), pieces[i]) for i in pending]


def _decode(buffer: bytes) -> tuple[str | None, bool]:
    """(text, complete): None if the bytes are not UTF-8; complete False while a character is unfinished."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(buffer, final=False)
    except UnicodeDecodeError:
        return None, False
    return text, not decoder.getstate()[0]


def plain_fragments(pieces: Sequence[str]) -> list[str]:
    """Tokens without step records (other beam hypotheses), one piece per token (or character group),
    escaped; whitespace must be pre-wrap where they are inserted."""
    return [html.escape(visible_piece(group.text)).replace("\n", "<br>") for group in group_tokens(pieces)]


def known_pieces(steps: Sequence[StepRecord]) -> dict[int, str]:
    """Token id → text for every token a lane's records mention (chosen, top-N, beam candidates)."""
    pieces: dict[int, str] = {}
    for step in steps:
        pieces[step.token_id] = step.token_text
        for token in (*step.top, *step.top_raw):
            pieces.setdefault(token.id, token.text)
        for hypothesis in step.beams or ():
            pieces.setdefault(hypothesis.token_id, hypothesis.token_text)
    return pieces


def alternatives_html(step: StepRecord, count: int = 5, character: CharacterShare | None = None,
                      pending: bytes = b"") -> str:
    """Tooltip: the step's top alternatives (processed and raw probability), the chosen one in bold.
    `character`: the character the chosen byte-level piece is part of; `pending`: the bytes of a character the
    lane started before this step (see piece_label)."""
    raw = {t.id: t.prob for t in step.top_raw}
    rows = [_alternative_row(t, raw.get(t.id), t.id == step.token_id, character, pending) for t in step.top[:count]]
    if step.token_id not in {t.id for t in step.top[:count]}:
        rows.append(_alternative_row(_chosen_as_top(step), step.prob_raw, True, character, pending))
    head = translate("render", "<b>step {step}</b> · p={p} (raw {raw})").format(
        step=step.step, p=format_prob(step.prob), raw=format_prob(step.prob_raw))
    table = "".join(rows)
    foot = translate("render", "entropy {entropy} nats · margin {margin} · kept {kept}").format(
        entropy=f"{step.entropy:.2f}", margin=f"{step.margin:.3f}", kept=step.kept)
    return f"{head}<table cellspacing=0 cellpadding=2>{table}</table>{foot}"


def _chosen_as_top(step: StepRecord) -> TokenProb:
    return TokenProb(step.token_id, step.token_text, step.prob, -1)


def _alternative_row(token: TokenProb, raw: float | None, chosen: bool,
                     character: CharacterShare | None = None, pending: bytes = b"") -> str:
    label = html.escape(piece_label(token.text, character if chosen else None, pending))
    if chosen:
        label = f"<b>{label}</b>"
    raw_text = "" if raw is None else format_prob(raw)
    return (f"<tr><td>{label}</td><td align=right>{format_prob(token.prob)}</td>"
            f"<td align=right style='color:#777'>{raw_text}</td></tr>")


MARK_WORDS = {  # shown translated (mark_legend)
    "divergence": (DIVERGENCE_GLYPH, QT_TRANSLATE_NOOP("render", "first divergence from the reference lane")),
    "critical": (CRITICAL_GLYPH, QT_TRANSLATE_NOOP("render", "critical point: a small change would pick another "
    "strong token")),
    "branch": (BRANCH_GLYPH, QT_TRANSLATE_NOOP("render", "branch point")),
    "forced": (FORCED_GLYPH, QT_TRANSLATE_NOOP("render", "forced token")),
    "proposed": (PROPOSED_GLYPH, QT_TRANSLATE_NOOP("render", "proposed step, not yet taken")),
}


def proposed_tip(beam: bool) -> str:
    """What a proposed step's token says on hover, before its alternatives."""
    if beam:
        words = translate("render", "proposed, not yet taken — F8 accepts it, F9 runs the lane on (a beam lane's "
                                    "step is the search's: no candidate can be taken instead)")
    else:
        words = translate("render", "proposed, not yet taken — F8 accepts it (F7: every lane's), double-click "
                                    "another candidate in the inspector to take it instead")
    return f'<span style="color:{MARK_COLOURS["proposed"]}"><b>{PROPOSED_GLYPH}</b> <i>{html.escape(words)}</i></span>'



def mark_legend(kinds=("divergence", "critical", "branch"), short: bool = False) -> list[str]:
    """HTML legend keys of the marks, in the words every view uses (`short`: up to the colon)."""
    keys = []
    for kind in kinds:
        glyph, words = MARK_WORDS[kind]
        words = translate("render", words)
        words = re.split("[:：]", words)[0] if short else words
        keys.append(f'<span style="color:{MARK_COLOURS[kind]};font-weight:bold">{glyph}</span>&nbsp;{words}')
    return keys


def replay_words(comparison) -> str:
    """A branch-not-taken replay against its original, in words (decoding.analysis.branch_not_taken's comparison)."""
    if comparison.first_difference is None:
        return translate("render", "the same {count} tokens after the swap").format(count=comparison.shared_prefix)
    apart = translate("render", "{count} same tokens after the swap, then apart; distance {distance} ({edits} edits)")
    return apart.format(count=comparison.shared_prefix, distance=f"{comparison.distance:.2f}",
                        edits=comparison.edit_distance)


def comparison_words(aligned: bool) -> str:
    """How two lanes are compared: token by token (one tokenizer) or by text (another tokenizer)."""
    return translate("render", "token-aligned") if aligned else translate("render", "by text: other tokenizer")


def lane_summary(lane, divergence: int | None, critical: int, aligned: bool | None = None) -> tuple[str, str]:
    """A lane's numbers for its column header: (short text, tooltip spelling them out), with its number of
    critical points and its first divergence step, and how it is compared with the reference lane (`aligned`,
    RunState.aligned_with: said in the text when by text, in the tooltip always). Empty before it ran."""
    steps = lane.steps
    if not steps:
        return "", ""
    mean_p = sum(s.prob for s in steps) / len(steps)
    mean_h = sum(s.entropy for s in steps) / len(steps)
    ties = critical
    split = "—" if divergence is None else str(divergence)
    tokens = translate("render", "{count} tok").format(count=len(steps))
    bounds = mean_raw_entropy_bounds(lane)  # a served lane's top-N: the whole vocabulary's entropy as bounds
    entropy = f"{mean_h:.2f}" if bounds is None else f"{bounds[0]:.2f}–{bounds[1]:.2f}"
    text = f"{tokens}  p̄ {mean_p:.2f}  H̄ {entropy}  {CRITICAL_GLYPH}{ties}  {DIVERGENCE_GLYPH}{split}"
    where = (translate("render", "none") if divergence is None
             else translate("render", "step {step}").format(step=divergence))
    tip = translate("render", "{count} tokens ({reason}); mean p(chosen) {p}; mean entropy {entropy} nats; "
                              "{critical} critical points; first divergence from the reference lane: {where}")
    tip = tip.format(count=len(steps), reason=lane.finish_reason or translate("render", "running"), p=f"{mean_p:.3f}",
                     entropy=f"{mean_h:.3f}", critical=ties, where=where)
    if aligned is not None:
        text += "" if aligned else f"  ({comparison_words(aligned)})"
        tip += "; " + translate("render", "compared with the reference lane: {how}").format(
            how=comparison_words(aligned))
    if bounds is None:
        return text, tip
    return _partial_summary(lane, text, tip, *bounds)


def _partial_summary(lane, text: str, tip: str, low: float, high: float) -> tuple[str, str]:
    """A lane on a served model's top-N: the header says so (decoding.records.partial)."""
    alternatives, vocab_size, tail = partial_parts(lane)
    note = translate("render", "top {alternatives} of {vocab}").format(alternatives=f"{alternatives:,}",
                                                                       vocab=f"{vocab_size:,}")
    if tail is not None:
        note += translate("render", "; tail ≤ {tail}").format(tail=f"{tail:.1%}")
    text += "  " + translate("render", "partial: {note}").format(note=note)
    tip += "; " + translate("render", "partial: the server returned the {note} of each step: the lane's chain ran on "
                                      "them, renormalised; the mean raw entropy of the whole vocabulary lies between "
                                      "{low} and {high} nats").format(note=note, low=f"{low:.3f}", high=f"{high:.3f}")
    return text, tip


def prefill_text(done: int, total: int) -> str:
    """"reading the prompt: 1,536 / 4,000 tokens" while a long prompt goes through the model in chunks."""
    return translate("status", "reading the prompt: {done} / {total} tokens").format(done=f"{done:,}",
                                                                                      total=f"{total:,}")
