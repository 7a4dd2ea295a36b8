"""What the Model comparison view draws, Qt-free: the per-step KL strip (a bar per token of the lane, top-1
flips marked and labelled), the two distributions of a step side by side, and the words around them.

Model A is the run's (the reference, whose lane chose the tokens), model B the one compared with it."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass

from gui.i18n import translate
from gui.present import colours
from gui.present.chart_rows import display_token
from gui.present.lane_html import format_prob, group_tokens, visible_piece
from gui.state.model_comparison import ModelComparison, ModelSide

TICK_PX = 48  # room a token label under the strip takes: beyond width / TICK_PX steps, every n-th is labelled
LABEL_GAP_PX = 4  # the least room between two flips' labels


@dataclass(frozen=True)
class StripBar:
    step: int
    kl: float
    flip: bool  # the two models' top-1 tokens differ here
    token: str  # the lane's token at this step, for its tick
    flip_label: str  # "A → B": both models' top-1 tokens at a flip ("" elsewhere)


@dataclass(frozen=True)
class DistributionRow:
    token_id: int
    text: str
    prob: float
    chosen: bool  # the lane's token at this step
    other_top1: bool  # the other model's top-1 token, where it is not this one's (a flip)


def strip_bars(comparison: ModelComparison) -> list[StripBar]:
    bars = []
    for step, tops, text in zip(comparison.steps, comparison.tops, comparison.token_texts, strict=True):
        label = ""
        if not step.top1_agree:
            label = f"{display_token(tops[0][0].text, 8)}→{display_token(tops[1][0].text, 8)}"
        bars.append(StripBar(step.step, step.kl, not step.top1_agree, display_token(text, 10), label))
    return bars


def tick_labels(bars: list[StripBar], limit: int) -> list[tuple[int, str]]:
    """(step, token) ticks under the strip: every token, or every n-th when more than `limit` (they would
    overlap; the running text below has them all)."""
    every = max(1, -(-len(bars) // max(limit, 1)))
    return [(bar.step, bar.token) for bar in bars if bar.step % every == 0]


def flip_texts(bars: list[StripBar], step_px: float, text_px: Callable[[str], float]) -> dict[int, str]:
    """Each flip's label (by step): written out where it does not run into the label before it (widths as drawn:
    `text_px`, so Chinese pieces count double), else just ↯."""
    texts: dict[int, str] = {}
    right = -math.inf  # where the last label drawn ends, in pixels
    for bar in bars:
        if not bar.flip:
            continue
        centre = (bar.step + 0.5) * step_px
        text = bar.flip_label
        if centre - text_px(text) / 2 < right + LABEL_GAP_PX:
            text = "↯"
        texts[bar.step] = text
        right = centre + text_px(text) / 2
    return texts


def distribution_rows(comparison: ModelComparison, step: int, side: int) -> list[DistributionRow]:
    """Model `side`'s (0: A, 1: B) top tokens at `step`, most probable first; the lane's token appended when it is
    not among them (its probability from the comparison)."""
    record = comparison.steps[step]
    own, other = comparison.tops[step][side], comparison.tops[step][1 - side]
    flip_token = other[0].id if not record.top1_agree else None
    rows = [DistributionRow(t.id, t.text, t.prob, t.id == record.token_id, t.id == flip_token) for t in own]
    if record.token_id not in {t.id for t in own}:
        prob = record.p_reference if side == 0 else record.p_other
        rows.append(DistributionRow(record.token_id, comparison.token_texts[step], prob, True, False))
    return rows


def model_label(side: ModelSide) -> str:
    return f"{side.name} ({side.precision})"


def heading(comparison: ModelComparison, stale: bool) -> str:
    text = translate("model_compare_view", "“{lane}”: {a} → {b}, teacher-forced on the lane's {count} tokens").format(
        lane=comparison.lane_name, a=model_label(comparison.reference), b=model_label(comparison.other),
        count=len(comparison.steps))
    if stale:
        text += translate("model_compare_view", " — stale: the lane changed since (compare again)")
    return text


def summary_text(comparison: ModelComparison) -> str:
    """Mean and max KL, top-1 agreement, mean |Δp(chosen)|, where the free-running greedy texts part."""
    summary = comparison.summary
    words = translate("model_compare_view", "mean KL {mean} · max KL {max} (step {max_step}) · top-1 agreement "
                                            "{agreement} · mean |Δp(chosen)| {delta}").format(
        mean=format_kl(summary["mean_kl"]), max=format_kl(summary["max_kl"]), max_step=summary["max_kl_step"],
        agreement=f"{summary['top1_agreement']:.1%}", delta=f"{summary['mean_abs_delta_p']:.4f}")
    return " · ".join(part for part in (words, flip_margins_text(comparison), greedy_text(comparison)) if part)


def greedy_text(comparison: ModelComparison) -> str:
    if comparison.greedy is None:
        return translate("model_compare_view", "free-running greedy texts not computed")
    step = comparison.summary.get("greedy_first_divergence_step")
    if step is None:
        return translate("model_compare_view", "free-running greedy texts never part ({count} tokens)").format(
            count=len(comparison.greedy["reference_ids"]))
    return translate("model_compare_view", "free-running greedy texts part at step {step}").format(step=step)


def step_caption(comparison: ModelComparison, step: int) -> str:
    """The clicked step in words: the lane's token, its p under each model, KL, the top-1 tokens."""
    record, tops = comparison.steps[step], comparison.tops[step]
    words = translate("model_compare_view", "step {step}: “{token}” p {pa} under A, {pb} under B (Δ {delta:+.4f}) · "
                                            "KL {kl}").format(
        step=step, token=display_token(comparison.token_texts[step], 20), pa=format_prob(record.p_reference),
        pb=format_prob(record.p_other), delta=record.delta_p, kl=format_kl(record.kl))
    if record.top1_agree:
        return words + " · " + translate("model_compare_view", "same top-1")
    return words + " · " + translate("model_compare_view", "top-1 flips: A “{a}”, B “{b}”").format(
        a=display_token(tops[0][0].text, 20), b=display_token(tops[1][0].text, 20))


def format_kl(kl: float) -> str:
    """KL in nats, readable from 1e-9 to 10."""
    return f"{kl:.2e}" if 0 < kl < 1e-3 else f"{kl:.4f}"


def tokens_html(comparison: ModelComparison, selected: int | None) -> str:
    """The lane's tokens as running text, each on a background from green (KL near 0) to red (the largest KL of
    the lane), a top-1 flip marked ↯ (in the flip colour) and underlined in bold, the selected step in the
    selection colour; each token a link "step:<n>" (Qt's rich text draws no borders on inline text). Tokens that
    only together spell a character (byte-level pieces) show it once, as the lane's text does: linked to its
    first step, with the largest KL and any flip of its pieces."""
    palette = colours.current()
    top = max((s.kl for s in comparison.steps), default=0.0) or 1.0
    parts = []
    for group in group_tokens(comparison.token_texts):
        steps = [comparison.steps[i] for i in group.steps]
        kl, flip = max(s.kl for s in steps), any(not s.top1_agree for s in steps)
        if selected in group.steps:
            look = f"background:{palette.selected_background};color:{palette.selected_text}"
        else:
            look = f"background:{palette.probability(1.0 - min(kl / top, 1.0))};color:{palette.token_text}"
        mark = ""
        if flip:
            look += ";font-weight:bold;text-decoration:underline"
            mark = f'<span style="color:{palette.cutoff}">↯</span>'
        shown = html.escape(visible_piece(group.text)).replace("\n", "<br>")
        parts.append(f'<a href="step:{group.steps[0]}" style="text-decoration:none">{mark}<span style="{look}">'
                     f'{shown}</span></a>')
    return f'<span style="white-space:pre-wrap">{"".join(parts)}</span>'


def layer_points(comparison: ModelComparison) -> tuple[list[int], list[float]]:
    """The per-layer chart's points: layer number (1-based) and B's relative error against A, in percent."""
    return [d.layer + 1 for d in comparison.layers], [100 * d.relative_error for d in comparison.layers]


def layer_caption(comparison: ModelComparison) -> str:
    """Where in depth B departs: the relative error at the first and last layers and the lowest cosine."""
    layers = comparison.layers
    if not layers:
        return translate("model_compare_rows", "no per-layer states (the graph's layers are not named as "
                                               "optimum's export names them)")
    worst = min(layers, key=lambda d: d.cosine)
    return translate("model_compare_rows", "hidden state vs A, by layer: relative error {first:.2g} % at layer 1 "
                                           "→ {last:.2g} % at layer {count} · lowest cosine {cosine:.6f} (layer "
                                           "{worst})").format(
        first=100 * layers[0].relative_error, last=100 * layers[-1].relative_error, count=len(layers),
        cosine=worst.cosine, worst=worst.layer + 1)


def top_two_margin(comparison: ModelComparison, step: int) -> float:
    """Model A's p(top 1) − p(top 2) at a step (its kept top tokens, most probable first)."""
    top = comparison.tops[step][0]
    return top[0].prob - top[1].prob if len(top) > 1 else top[0].prob if top else 0.0


def flip_margins_text(comparison: ModelComparison) -> str:
    """The top-1 flips counted against A's top-two margin: how many, at which margins, beside the median margin
    of every step (a variant close to A flips only where A's first two are nearly tied)."""
    steps = comparison.steps
    if not steps:
        return ""
    margins = [top_two_margin(comparison, s.step) for s in steps]
    flips = [s.step for s in steps if not s.top1_agree]
    median = sorted(margins)[len(margins) // 2]
    if not flips:
        return translate("model_compare_rows", "no top-1 flip in {count} steps (A's median top-two margin "
                                               "{median:.2f})").format(count=len(steps), median=median)
    at = ", ".join(f"{margins[i]:.3f}" for i in flips[:6]) + (" …" if len(flips) > 6 else "")
    return translate("model_compare_rows", "{flips} top-1 flips in {count} steps, where A's top two were "
                                           "{at} apart (the median margin over all steps: {median:.2f})").format(
        flips=len(flips), count=len(steps), at=at, median=median)
