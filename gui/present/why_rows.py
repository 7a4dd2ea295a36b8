"""What the "Why A, not B" view draws, Qt-free: the context's tokens shaded by their push (a diverging scale,
gui.present.colours `push`), its legend, the strongest pushers each way with their numbers, and the layer ×
component grid of the depth split (decoding.analysis.why)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from decoding.analysis.why import Push, WhyResult
from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import display_token

LEGEND_STOPS = (-1.0, -0.5, 0.0, 0.5, 1.0)


def push_scale(result: WhyResult) -> float:
    """The strongest push of any position (the scale's end), at least a small floor so zeros stay blank."""
    return max((abs(row.push) for row in result.positions), default=0.0) or 1.0


def token_html(result: WhyResult) -> str:
    """The context, each token on its push's colour (the last one, read directly, plain and underlined), each
    with its numbers as a title; a character split over byte-level tokens (我: two) is shown whole, on the push
    of its tokens hidden together."""
    scheme, scale = colours.current(), push_scale(result)
    characters = split_characters(result)
    parts, position = [], 0
    while position < len(result.texts):
        row = characters.get(position) or (result.positions[position] if position < len(result.positions) else None)
        text = row.text if position in characters else result.texts[position]
        shown = html.escape(text).replace("\n", "↵<br>")
        if row is None:
            title = translate("why", "the last token: read directly, not through attention (no knock-out)")
            parts.append(f'<span title="{html.escape(title)}" style="text-decoration:underline">{shown}</span>')
        else:
            parts.append(f'<span title="{html.escape(push_title(row))}" style="background-color:'
                         f'{scheme.push(row.push / scale)};color:{scheme.ink}">{shown}</span>')
        position += len(row.positions) if position in characters else 1
    return "".join(parts)


def split_characters(result: WhyResult) -> dict[int, Push]:
    """The word rows that are characters split over byte-level tokens (their pieces shown as \\x.. bytes), by
    their first position."""
    return {row.positions[0]: row for row in result.words
            if any("\\x" in result.texts[p] for p in row.positions)
            and list(row.positions) == list(range(row.positions[0], row.positions[-1] + 1))}


def push_title(row: Push) -> str:
    return translate("why", "position {pos}: push {push:+.3f} · Δp(A) {da:+.3f} · Δp(B) {db:+.3f}").format(
        pos=row.positions[0], push=row.push, da=row.d_prob_a, db=row.d_prob_b)


def legend_html(result: WhyResult) -> str:
    """The scale's colours from the strongest push toward B to the strongest toward A, with their values."""
    scheme, scale = colours.current(), push_scale(result)
    cells = "".join(f'<td style="background-color:{scheme.push(stop)};color:{scheme.ink}">&nbsp;{stop * scale:+.2f}'
                    f'&nbsp;</td>' for stop in LEGEND_STOPS)
    toward_b = html.escape(translate("why", "toward B “{b}”").format(b=display_token(result.b.text, 16)))
    toward_a = html.escape(translate("why", "toward A “{a}”").format(a=display_token(result.a.text, 16)))
    return (f'<table cellspacing="0" cellpadding="2"><tr><td colspan="5">{toward_b}&nbsp;◀ … ▶&nbsp;{toward_a}</td>'
            f"</tr><tr>{cells}</tr></table>")


@dataclass(frozen=True)
class PusherLine:
    text: str
    position: int
    push: float
    d_prob_a: float
    d_prob_b: float


def pusher_lines(result: WhyResult, toward_a: bool, count: int = 5) -> list[PusherLine]:
    return [PusherLine(display_token(row.text, 20), row.positions[0], row.push, row.d_prob_a, row.d_prob_b)
            for row in result.pushers(toward_a, count)]


def pushers_html(result: WhyResult, count: int = 5) -> str:
    """The strongest pushers toward A and toward B, side by side, with their push and Δp."""
    scheme = colours.current()
    push_word, none_word = translate("why", "push"), translate("why", "none")
    columns = []
    for toward_a, end in ((True, scheme.push_a), (False, scheme.push_b)):
        head = (translate("why", "pushed toward A “{token}”") if toward_a
                else translate("why", "pushed toward B “{token}”"))
        token = display_token((result.a if toward_a else result.b).text, 16)
        rows = "".join(
            f"<tr><td>“{html.escape(line.text)}”</td><td>@{line.position}</td><td>{line.push:+.3f}</td>"
            f"<td>{line.d_prob_a:+.3f}</td><td>{line.d_prob_b:+.3f}</td></tr>"
            for line in pusher_lines(result, toward_a, count)) or (
            f'<tr><td colspan="5">{html.escape(none_word)}</td></tr>')
        header = (f'<tr><th colspan="5" style="color:{end}">{html.escape(head.format(token=token))}</th></tr>'
                  f"<tr><td></td><td></td><td>{html.escape(push_word)}</td><td>Δp(A)</td>"
                  f"<td>Δp(B)</td></tr>")
        columns.append(f'<table cellspacing="0" cellpadding="2">{header}{rows}</table>')
    return f"{columns[0]}<br>{columns[1]}"  # one above the other: a narrow panel has room for both


def words_html(result: WhyResult) -> str:
    """Word groups and spans the knock-out hid together, strongest first."""
    rows = sorted([*result.words, *result.spans], key=lambda row: -abs(row.push))[:8]
    if not rows:
        return ""
    items = " · ".join(f"“{html.escape(display_token(row.text, 24))}” {row.push:+.3f}" for row in rows)
    return html.escape(translate("why", "words and spans hidden together: ")) + items


def summary_text(result: WhyResult) -> str:
    return translate("why", "Why “{a}” ({pa:.3f}), not “{b}” ({pb:.3f})? lane {lane}, step {step}: logit(A) − "
                            "logit(B) = {gap:+.3f}").format(a=display_token(result.a.text, 20), pa=result.prob_a,
                                                            b=display_token(result.b.text, 20), pb=result.prob_b,
                                                            lane=result.lane, step=result.step, gap=result.gap)


def method_text(result: WhyResult) -> str:
    text = translate("why", "A token's push: how much logit(A) − logit(B) falls when it is hidden from every later "
                            "token (its key masked for all later queries; positions unchanged). Exact forward "
                            "passes, {count} rows in {seconds:.1f} s.").format(count=len(result.positions),
                                                                              seconds=result.seconds)
    if result.positions:
        text += " " + translate("why", "Position 0 is also the attention sink: hiding it moves more than its "
                                       "word.")
    return text


@dataclass(frozen=True)
class DepthGrid:
    """Rows: the embedding, then each layer; columns: attention, MLP, then each head (attention split)."""

    row_labels: list[str]
    column_labels: list[str]
    values: list[list[float | None]]  # None: no such cell (the embedding has no heads)
    scale: float
    caption: str


def depth_grid(result: WhyResult) -> DepthGrid | None:
    depth = result.depth
    if depth is None:
        return None
    heads = len(depth.heads[0]) if depth.heads else 0
    columns = [translate("why", "attn"), translate("why", "MLP"), *(f"h{h}" for h in range(heads))]
    rows = [translate("why", "emb")] + [f"L{layer}" for layer in range(depth.layers)]
    values: list[list[float | None]] = [[depth.embedding, None, *([None] * heads)]]
    values += [[depth.attention[i], depth.mlp[i], *depth.heads[i]] for i in range(depth.layers)]
    scale = max((abs(v) for row in values for v in row if v is not None), default=0.0) or 1.0
    caption = translate("why", "where in depth (direct logit attribution; the final norm's scale held at its value, "
                               "so only each part's direct path counts): embedding {emb:+.2f} + attention "
                               "{attn:+.2f} + MLP {mlp:+.2f} + rest {rest:+.1e} = {gap:+.3f}").format(
        emb=depth.embedding, attn=sum(depth.attention), mlp=sum(depth.mlp), rest=depth.rest, gap=depth.gap)
    return DepthGrid(rows, columns, values, scale, caption)
