"""Qt-free presentation helpers for the chart widgets: which rows a chart shows, where the cut-offs sit, how a
beam lane lays out as a tree. Only arithmetic on values the trace already holds (sums and ratios for drawing);
the decoding maths lives in decoding/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoding.chain.parameters import parameter
from decoding.records.trace import LaneTrace, StepRecord, TokenProb
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.lane_html import CharacterShare, pending_bytes, piece_label


def display_token(text: str, max_chars: int = 14, character: CharacterShare | None = None,
                  pending: bytes = b"") -> str:
    """A token piece made readable on an axis or in a title (gui.present.lane_html.piece_label: whitespace as visible
    glyphs, byte-level pieces as their character or bytes — compact below 24 characters), long pieces
    shortened."""
    shown = piece_label(text, character, pending, compact=max_chars < 24)
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "…"


@dataclass(frozen=True)
class TokenRow:
    """An inspector row: a candidate with its processed and raw probability (None: not in that top-N)."""

    token_id: int
    text: str
    prob: float | None
    prob_raw: float | None
    chosen: bool


def inspector_rows(step: StepRecord, max_rows: int) -> list[TokenRow]:
    """Rows in processed order (the order the filters cut in), then raw-only candidates in raw order. The
    chosen token is always present, also when it lies outside both top-N lists (a forced token)."""
    processed = {t.id: t for t in step.top}
    raw = {t.id: t for t in step.top_raw}
    order = [t.id for t in sorted(step.top, key=lambda t: t.rank) if t.prob > 0.0]
    order += [t.id for t in sorted(step.top_raw, key=lambda t: t.rank) if t.id not in order]
    order = order[:max_rows]
    if step.token_id not in order:
        order = order[: max_rows - 1] + [step.token_id]
    return [_row(token_id, step, processed.get(token_id), raw.get(token_id)) for token_id in order]


def _row(token_id: int, step: StepRecord, processed: TokenProb | None, raw: TokenProb | None) -> TokenRow:
    chosen = token_id == step.token_id
    text = (processed or raw).text if (processed or raw) else step.token_text
    prob = step.prob if chosen else (processed.prob if processed else None)
    prob_raw = step.prob_raw if chosen else (raw.prob if raw else None)
    return TokenRow(token_id, text, prob, prob_raw, chosen)


def _active(config: dict[str, Any], key: str, processors: list[str] | None) -> float | None:
    """A filter's parameter when the lane applies it: named in the lane's processors (when known) and not at
    its HF `off` value. A greedy lane's config may carry sampling keys it never applies."""
    value = config.get(key)
    if value is None or value == parameter(key).off or (processors is not None and key not in processors):
        return None
    return float(value)


@dataclass(frozen=True)
class Cutoffs:
    """Where to draw a step's cut-offs. Boundaries are row indices: rows before the boundary survive."""

    kept_boundary: int | None  # the effective cut of all filters together (from the step's kept-set size)
    top_k: int | None
    top_k_boundary: int | None  # None when top-k is off or cuts below the shown rows
    top_p: float | None
    min_p: float | None
    min_p_threshold: float | None  # processed probability below which min-p removed tokens
    cumulative_raw: list[
        float
    ]  # running sum of raw probabilities down the rows, as top-p sees it (see _top_p_view)
    intervals: list[
        tuple[float, float]
    ]  # each row's [low, high) slice of the processed cumulative distribution


def step_cutoffs(
    step: StepRecord, rows: list[TokenRow], config: dict[str, Any], processors: list[str] | None = None
) -> Cutoffs:
    """Cut-offs of the filters the lane applies (`processors`: the lane's processor names in order; None when
    unknown: then the config alone decides, in transformers' order)."""
    top_k = _active(config, "top_k", processors)
    min_p = _active(config, "min_p", processors)
    top1 = max((r.prob for r in rows if r.prob is not None), default=None)
    return Cutoffs(
        kept_boundary=step.kept if step.kept < len(rows) else None,
        top_k=int(top_k) if top_k else None,
        top_k_boundary=int(top_k) if top_k and top_k < len(rows) else None,
        top_p=_active(config, "top_p", processors),
        min_p=min_p,
        # min-p keeps p >= min_p * p_max; the ratio survives renormalisation: read it off the processed bars.
        min_p_threshold=min_p * top1 if min_p and top1 else None,
        cumulative_raw=_top_p_view(_running_sum([r.prob_raw for r in rows]), top_k, config, processors),
        intervals=_intervals(step, rows),
    )


def _top_p_view(
    cumulative: list[float], top_k: float | None, config: dict[str, Any], processors: list[str] | None
) -> list[float]:
    """The raw running sum as top-p compares it: when top-k ran first, over the top-k set renormalised (and
    only its rows). Temperature is not undone here, so with temperature != 1 this is the raw picture; the kept
    line always shows the effective cut."""
    if not top_k or _active(config, "top_p", processors) is None or not _top_k_first(processors or []):
        return cumulative
    k = min(int(top_k), len(cumulative))
    mass = cumulative[k - 1]
    return [c / mass for c in cumulative[:k]] if mass > 0 else cumulative


def _top_k_first(processors: list[str]) -> bool:
    names = [p.lower().replace("-", "_") for p in processors]
    k = next((i for i, n in enumerate(names) if "top_k" in n), None)
    p = next((i for i, n in enumerate(names) if "top_p" in n), None)
    return k is None or p is None or k < p  # unknown order: transformers' order, top-k before top-p


def _running_sum(values: list[float | None]) -> list[float]:
    total, sums = 0.0, []
    for value in values:
        total += value or 0.0
        sums.append(total)
    return sums


def _intervals(step: StepRecord, rows: list[TokenRow]) -> list[tuple[float, float]]:
    """Each row's slice of [0, 1) under the processed distribution; the chosen row uses the engine's recorded
    interval when the step was sampled, so the draw u always lands in it."""
    intervals, low = [], 0.0
    for row in rows:
        high = low + (row.prob or 0.0)
        if row.chosen and step.draw_low is not None and step.draw_high is not None:
            intervals.append((step.draw_low, step.draw_high))
        else:
            intervals.append((low, high))
        low = high
    return intervals


def is_branch_step(lane: LaneTrace, step: int) -> bool:
    return bool(lane.branch) and lane.branch.get("step") == step


def step_summary(lane: LaneTrace, step: StepRecord, marks=None) -> list[tuple[str, str]]:
    """The inspector's number panel as (label, value) pairs; `marks` (the step's TokenMarks in the text)
    add their flags, in the legend's words."""
    with_raw = translate("chart_data", "{value}  (raw {raw})")
    pairs = [
        (translate("chart_data", "p(chosen)"), with_raw.format(value=f"{step.prob:.4f}", raw=f"{step.prob_raw:.4f}")),
        (translate("chart_data", "entropy"), with_raw.format(value=f"{step.entropy:.3f}", raw=f"{step.entropy_raw:.3f}")
         + " " + translate("chart_data", "nats")),
        (translate("chart_data", "margin"), with_raw.format(value=f"{step.margin:.4f}", raw=f"{step.margin_raw:.4f}")),
        (translate("chart_data", "kept set"), translate("chart_data", "{count} tokens").format(count=f"{step.kept:,}")),
        (translate("chart_data", "tail mass"),
         with_raw.format(value=f"{step.tail_mass:.4f}", raw=f"{step.tail_mass_raw:.4f}")),
    ]
    if step.varentropy is not None:  # a file may hold one without the other (entropy_plane reads each alone)
        value = f"{step.varentropy:.3f}"
        raw = step.varentropy_raw
        text = value if raw is None else with_raw.format(value=value, raw=f"{raw:.3f}")
        pairs.append((translate("chart_data", "varentropy"), text + " " + translate("chart_data", "nats²")))
    if step.draw is not None:
        pairs.append((translate("chart_data", "draw u"), _draw_text(step)))
    pairs += _sampler_state(step)
    named = ((translate("chart_data", "▲ critical point"), marks is not None and marks.critical),
             (translate("chart_data", "◆ first divergence from the reference"), marks is not None and marks.divergence),
             (translate("chart_data", "↳ branch point"), is_branch_step(lane, step.step)),
             (translate("chart_data", "★ forced"), step.forced))
    flags = [name for name, on in named if on]
    pairs.append((translate("chart_data", "flags"), ", ".join(flags) if flags else "—"))
    return pairs


def _sampler_state(step: StepRecord) -> list[tuple[str, str]]:
    """What a lane's stateful samplers did this step: the adaptive decision, XTC's coin, mirostat's mu."""
    pairs = []
    if step.adaptive is not None:
        pairs.append((translate("chart_data", "adaptive"), decision_name(step.adaptive)))
    if step.xtc_coin is not None:
        pairs.append((translate("chart_data", "XTC coin"), f"{step.xtc_coin:.4f}"))
    if step.mirostat_mu is not None:
        pairs.append((translate("chart_data", "mirostat μ"), f"{step.mirostat_mu:.3f} "
                      + translate("chart_data", "bits")))
    return pairs


# The adaptive strategy's decisions (decoding.chain.adaptive), shown through decision_name.
DECISIONS = {
    "argmax": QT_TRANSLATE_NOOP("chart_data", "argmax (sure)"),
    "sample": QT_TRANSLATE_NOOP("chart_data", "sample"),
    "widen": QT_TRANSLATE_NOOP("chart_data", "widen (higher T, top-k)"),
}


def decision_name(decision: str) -> str:
    return translate("chart_data", DECISIONS[decision])


@dataclass(frozen=True)
class StageRow:
    """One line of the inspector's chain table: the distribution after a stage (the first line: before the
    chain), for the chosen token as the step recorded it (decoding.chain.stages), or for another candidate as
    far as the record determines it."""

    name: str  # the stage's parameter name; "" for the raw distribution before the chain
    kept: int | None  # tokens left (None: the raw line, the whole vocabulary)
    mass: float | None  # the share of the previous line's probability the stage kept
    rank: int | None  # the token's rank, 0 = most likely (None: removed, beyond the raw top list, or not known)
    prob: float | None  # the token's probability (None: the record does not determine it)
    removed_here: bool  # this stage removed the token


# Stages that keep a prefix of the distribution in rank order, leaving the kept tokens' logits as they were: a
# candidate's rank decides whether it survives, and its probability after the stage is its probability before
# divided by the share kept.
PREFIX_STAGES = frozenset({"top_k", "top_p", "min_p", "epsilon_cutoff", "eta_cutoff", "top_n_sigma", "mirostat"})


def stage_rows(step: StepRecord, token_id: int | None = None, temperature: float | None = None) -> list[StageRow]:
    """The chain stage by stage for the chosen token, or for `token_id` (another candidate: derived from its raw
    probability and rank, the chosen token's probabilities and each stage's share kept; `temperature` is the
    lane's); no rows for a step without a recorded chain."""
    if not step.stages:
        return []
    if token_id is not None and token_id != step.token_id:
        return _candidate_stage_rows(step, token_id, temperature)
    raw_rank = next((t.rank for t in step.top_raw if t.id == step.token_id), None)
    rows = [StageRow("", None, None, raw_rank, step.prob_raw, False)]
    alive = True
    for stage in step.stages:
        rows.append(StageRow(stage.name, stage.kept, stage.mass, stage.rank, stage.prob,
                             alive and stage.rank is None))
        alive = alive and stage.rank is not None
    return rows


def _candidate_stage_rows(step: StepRecord, token_id: int, temperature: float | None) -> list[StageRow]:
    """A candidate the lane did not pick, stage by stage. Exact while every stage so far is a prefix stage or
    the temperature (whose effect follows from the chosen token's probabilities: it divides every logit alike);
    past any other stage (penalties, DRY, typical, XTC, masks) the record does not say (None), except that a
    candidate with a processed probability survived the chain."""
    raw = next((t for t in step.top_raw if t.id == token_id), None)
    final = next((t.prob for t in step.top if t.id == token_id), None)
    prob, rank = (raw.prob, raw.rank) if raw is not None else (None, None)
    rows = [StageRow("", None, None, rank, prob, False)]
    chosen_before = step.prob_raw
    for index, stage in enumerate(step.stages):
        removed_here = False
        if prob == 0.0:
            rank = None
        elif prob is not None and rank is not None and stage.name in PREFIX_STAGES:
            if rank < stage.kept and stage.mass > 0:
                prob = prob / stage.mass
            else:
                prob, rank, removed_here = 0.0, None, True
        elif prob is not None and stage.name == "temperature" and temperature and chosen_before and stage.prob:
            prob = stage.prob * (prob / chosen_before) ** (1.0 / temperature)
        else:
            prob, rank = None, None
        if index == len(step.stages) - 1 and prob is None and final is not None and final > 0:
            prob = final  # the processed distribution holds it: it came through
        rows.append(StageRow(stage.name, stage.kept, stage.mass, rank, prob, removed_here))
        chosen_before = stage.prob
    return rows


def removed_by(rows: list[StageRow]) -> str | None:
    """The stage that removed the token, when the rows name one."""
    return next((row.name for row in rows if row.removed_here), None)


def stage_cells(row: StageRow, previous: StageRow | None) -> list[str]:
    """A chain line as the table shows it: stage, kept, kept mass, the token's rank (1 = top) and probability
    ("?" where the record does not determine it); a rank that a stage changed shows where from."""
    prob = "?" if row.prob is None else f"{row.prob:.4f}"
    if not row.name:
        rank = "—" if row.rank is None else f"#{row.rank + 1}"
        return [translate("chart_data", "raw (before the chain)"), "—", "—", rank, prob]
    if row.rank is None:
        rank = (translate("chart_data", "✗ removed here") if row.removed_here else
                "—" if row.prob == 0.0 or row.prob is None else "?")
    else:
        moved = previous is not None and previous.rank is not None and previous.rank != row.rank
        rank = f"#{previous.rank + 1} → #{row.rank + 1}" if moved else f"#{row.rank + 1}"
    return [row.name, f"{row.kept:,}", f"{row.mass:.4f}", rank, prob]


def _draw_text(step: StepRecord) -> str:
    if step.draw_low is None or step.draw_high is None:
        return f"{step.draw:.4f}"
    within = translate("chart_data", "{draw} in [{low}, {high})")
    return within.format(draw=f"{step.draw:.4f}", low=f"{step.draw_low:.4f}", high=f"{step.draw_high:.4f}")


TIMELINE_METRICS: dict[str, str] = {  # shown through metric_label (translated)
    "prob": QT_TRANSLATE_NOOP("chart_data", "p(chosen)"),
    "prob_raw": QT_TRANSLATE_NOOP("chart_data", "p(chosen), raw"),
    "entropy": QT_TRANSLATE_NOOP("chart_data", "entropy (nats)"),
    "entropy_raw": QT_TRANSLATE_NOOP("chart_data", "entropy raw (nats)"),
    "margin": QT_TRANSLATE_NOOP("chart_data", "margin top1−top2"),
    "margin_raw": QT_TRANSLATE_NOOP("chart_data", "margin top1−top2, raw"),
}


def metric_label(metric: str) -> str:
    """A metric's name as the interface language says it."""
    return translate("chart_data", TIMELINE_METRICS[metric])


def metric_values(steps: list[StepRecord], metric: str) -> list[float]:
    if metric not in TIMELINE_METRICS:
        raise ValueError(f"metric={metric!r} is not one of {sorted(TIMELINE_METRICS)}")
    return [float(getattr(s, metric)) for s in steps]


@dataclass(frozen=True)
class BeamNode:
    """A beam candidate placed on the tree: x = step, y = slot (kept beams by beam index, the rest below)."""

    step: int
    slot: int
    parent_slot: int  # slot at step - 1; the prompt root sits at step -1, slot 0
    token_id: int
    text: str
    score: float
    kind: str  # "kept", "pruned" or "finished"


def beam_nodes(lane: LaneTrace) -> list[BeamNode]:
    nodes: list[BeamNode] = []
    for record in lane.steps:
        nodes.extend(step_nodes(record))
    return nodes


def step_nodes(record: StepRecord) -> list[BeamNode]:
    hyps = record.beams or []
    kept = sorted((h for h in hyps if h.kept), key=lambda h: h.beam)
    rest = [h for h in hyps if not h.kept]
    nodes = []
    for slot, hyp in enumerate(kept + rest):
        kind = "kept" if hyp.kept else ("finished" if hyp.finished else "pruned")
        parent = hyp.parent if record.step > 0 else 0
        nodes.append(BeamNode(record.step, slot, parent, hyp.token_id, hyp.token_text, hyp.score, kind))
    return nodes


def beam_node_token(node: BeamNode, kept_at: dict[tuple[int, int], BeamNode], max_chars: int) -> str:
    """A beam node's token, short (display_token); a byte-level piece that completes a character its beam's
    earlier pieces started reads as that character (`kept_at`: the kept nodes by (step, slot), the beams a
    node's parent slot names)."""
    if "\\x" not in node.text:
        return display_token(node.text, max_chars)
    pieces: list[str] = []
    step, slot = node.step - 1, node.parent_slot
    while step >= 0 and len(pieces) < 3 and (step, slot) in kept_at:  # a character has at most 4 bytes
        parent = kept_at[(step, slot)]
        pieces.insert(0, parent.text)
        step, slot = step - 1, parent.parent_slot
    return display_token(node.text, max_chars, pending=pending_bytes(pieces))


def best_path(lane: LaneTrace, nodes: list[BeamNode]) -> list[BeamNode]:
    """The nodes spelling the lane's best sequence (lane.token_ids), followed from the root through parent
    slots. A finished node wins at the sequence's last step (that is where the returned hypothesis ended)."""
    by_step: dict[int, list[BeamNode]] = {}
    for node in nodes:
        by_step.setdefault(node.step, []).append(node)
    path: list[BeamNode] = []
    slot = 0
    for step, token_id in enumerate(lane.token_ids):
        last = step == len(lane.token_ids) - 1
        matches = [n for n in by_step.get(step, []) if n.token_id == token_id and n.parent_slot == slot]
        if not matches:
            break
        matches.sort(key=lambda n: (n.kind != "finished") if last else (n.kind != "kept"))
        path.append(matches[0])
        slot = matches[0].slot
    return path
