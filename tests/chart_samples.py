"""Hand-built traces for the chart widget tests and the sample renders (English and Chinese).

The processed distributions are computed here with a small top-k / top-p / min-p filter over a hand-written
candidate list, so the expected cut-offs are known by construction.
"""

from __future__ import annotations

import math

from decoding.records.trace import BeamHypothesis, LaneTrace, StepRecord, TokenProb

EN_CANDIDATES = [
    (" Paris", 0.46),
    (" a", 0.14),
    (" the", 0.09),
    (" located", 0.06),
    (" known", 0.05),
    (" one", 0.04),
    (" in", 0.03),
    (" not", 0.025),
    (" also", 0.02),
    (" home", 0.018),
    (" Lyon", 0.015),
    (" called", 0.012),
    (" famous", 0.01),
    (" situated", 0.009),
    (" an", 0.008),
    ("\n", 0.007),
    (" France", 0.006),
    (",", 0.005),
    (" very", 0.004),
    (" often", 0.003),
    (" now", 0.002),
    (" still", 0.002),
]
ZH_CANDIDATES = [
    ("去", 0.31),
    ("出门", 0.18),
    ("继续", 0.12),
    ("跑步", 0.08),
    ("参加", 0.07),
    ("完成", 0.05),
    ("坚持", 0.04),
    ("回家", 0.03),
    ("学习", 0.025),
    ("写", 0.02),
    ("看", 0.015),
    ("做", 0.012),
    ("把", 0.01),
    ("在", 0.009),
    ("和", 0.008),
    ("，", 0.007),
    ("。", 0.006),
    ("一个", 0.005),
    ("工作", 0.004),
    ("吃饭", 0.003),
    ("睡觉", 0.002),
]


def filtered(probs: list[float], top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0) -> list[float]:
    """Transformers' order (top-k, top-p, min-p) on an already sorted list, renormalised."""
    keep = [True] * len(probs)
    if top_k:
        keep = [k and i < top_k for i, k in enumerate(keep)]
    if top_p < 1.0:
        total, cum = sum(p for p, k in zip(probs, keep, strict=True) if k), 0.0
        for i, p in enumerate(probs):
            keep[i] = keep[i] and cum < top_p * total
            cum += p if keep[i] else 0.0
    if min_p:
        keep = [k and p >= min_p * probs[0] for p, k in zip(probs, keep, strict=True)]
    mass = sum(p for p, k in zip(probs, keep, strict=True) if k)
    return [p / mass if k else 0.0 for p, k in zip(probs, keep, strict=True)]


def _entropy(probs: list[float]) -> float:
    return -sum(p * math.log(p) for p in probs if p > 0)


def make_step(
    step: int,
    candidates,
    chosen: int,
    config: dict,
    draw: float | None = None,
    forced: bool = False,
    ids_offset: int = 1000,
) -> StepRecord:
    """A StepRecord over `candidates` (text, raw prob; sorted, top-N = all) choosing candidates[chosen]."""
    texts = [t for t, _ in candidates]
    raw = [p for _, p in candidates]
    proc = filtered(
        raw, config.get("top_k", 0) or 0, config.get("top_p", 1.0) or 1.0, config.get("min_p", 0.0) or 0
    )
    low = sum(proc[:chosen])
    tail_raw = max(0.0, 1.0 - sum(raw))
    return StepRecord(
        step=step,
        token_id=ids_offset + chosen,
        token_text=texts[chosen],
        prob=proc[chosen],
        prob_raw=raw[chosen],
        logprob=math.log(proc[chosen]) if proc[chosen] else -math.inf,
        logprob_raw=math.log(raw[chosen]),
        entropy=_entropy(proc),
        entropy_raw=_entropy(raw),
        margin=proc[0] - proc[1],
        margin_raw=raw[0] - raw[1],
        kept=sum(1 for p in proc if p > 0),
        tail_mass=0.0,
        tail_mass_raw=tail_raw,
        top=[TokenProb(ids_offset + i, t, p, i) for i, (t, p) in enumerate(zip(texts, proc, strict=True))],
        top_raw=[TokenProb(ids_offset + i, t, p, i) for i, (t, p) in enumerate(zip(texts, raw, strict=True))],
        draw=draw,
        draw_low=low if draw is not None else None,
        draw_high=low + proc[chosen] if draw is not None else None,
        forced=forced,
    )


def sampled_lane(candidates, name: str = "top-k 5 · top-p 0.8") -> LaneTrace:
    """Step 0: top_k=5, top_p=0.8, draw u=0.62 lands on the second kept token."""
    config = {"do_sample": True, "top_k": 5, "top_p": 0.8, "seed": 7}
    proc = filtered([p for _, p in candidates], 5, 0.8)
    u = proc[0] + proc[1] * 0.5
    step0 = make_step(0, candidates, 1, config, draw=u)
    return LaneTrace(
        name=name,
        config=config,
        processors=["top_k", "top_p"],
        token_ids=[step0.token_id],
        text=step0.token_text,
        steps=[step0],
    )


def min_p_lane(candidates) -> LaneTrace:
    config = {"do_sample": True, "min_p": 0.05, "seed": 3}
    step0 = make_step(0, candidates, 0, config, draw=0.2)
    return LaneTrace(
        name="min-p 0.05",
        config=config,
        processors=["min_p"],
        token_ids=[step0.token_id],
        text=step0.token_text,
        steps=[step0],
    )


def timeline_lanes(candidates, steps: int = 12) -> list[LaneTrace]:
    """Three lanes whose chosen ranks vary by step, so their curves differ."""
    lanes = []
    for lane_index, name in enumerate(["greedy", "top-p 0.9", "temperature 1.3"]):
        config = {"do_sample": lane_index > 0, "top_p": 0.9 if lane_index == 1 else 1.0}
        records = []
        for s in range(steps):
            shifted = _rotate(candidates, (s * (lane_index + 1)) % 4)
            chosen = 0 if lane_index == 0 else (s + lane_index) % 3
            records.append(make_step(s, shifted, chosen, config, draw=None if lane_index == 0 else 0.5))
        lanes.append(
            LaneTrace(
                name=name,
                config=config,
                processors=[],
                steps=records,
                token_ids=[r.token_id for r in records],
                text="".join(r.token_text for r in records),
            )
        )
    return lanes


def _rotate(candidates, shift: int):
    """Same texts, a differently peaked distribution: the raw probs are re-sorted after scaling the head."""
    scale = [1.0, 0.5, 0.3, 0.8][shift]
    probs = [candidates[0][1] * scale] + [p for _, p in candidates[1:]]
    pairs = sorted(zip([t for t, _ in candidates], probs, strict=True), key=lambda tp: -tp[1])
    total = sum(p for _, p in pairs) / 0.98
    return [(t, p / total) for t, p in pairs]


def beam_lane(words: list[list[str]], name: str = "beam-2") -> LaneTrace:
    """A 2-beam lane over len(words) steps; words[s] = candidate texts at step s (>= 4). At every step beam 0
    extends beam 0 with words[s][0], beam 1 extends beam 1 (beam 0 at step 0) with words[s][1], two pruned
    candidates extend beam 1; at the last step beam 1's candidate finishes. Best sequence = beam 0
    throughout."""
    steps = []
    for s, cands in enumerate(words):
        last = s == len(words) - 1
        hyps = [
            BeamHypothesis(0, 0, 2000 + s * 10, cands[0], -0.4 * (s + 1), True),
            BeamHypothesis(
                -1 if last else 1,
                1 if s else 0,
                2000 + s * 10 + 1,
                cands[1],
                -0.7 * (s + 1),
                not last,
                finished=last,
            ),
            BeamHypothesis(-1, 1 if s else 0, 2000 + s * 10 + 2, cands[2], -1.5 * (s + 1), False),
            BeamHypothesis(-1, 0, 2000 + s * 10 + 3, cands[3], -1.9 * (s + 1), False),
        ]
        record = make_step(
            s,
            [(c, 0.5 / (i + 1)) for i, c in enumerate(cands)],
            0,
            {"num_beams": 2},
            ids_offset=2000 + s * 10,
        )
        record.beams = hyps
        steps.append(record)
    ids = [2000 + s * 10 for s in range(len(words))]
    return LaneTrace(
        name=name,
        config={"num_beams": 2},
        processors=[],
        token_ids=ids,
        text="".join(w[0] for w in words),
        steps=steps,
        sequences=[ids],
        sequence_scores=[-0.4 * len(words)],
    )


EN_BEAM_WORDS = [
    [" Paris", " a", " the", " located"],
    [".", ",", " and", " which"],
    [" It", " The", " Paris", "\n"],
    [" is", " has", " was", " lies"],
]
ZH_BEAM_WORDS = [
    ["去", "出门", "继续", "跑步"],
    ["跑步", "散步", "学习", "工作"],
    ["。", "，", "了", "吧"],
    ["<|im_end|>", "我", "他", "然后"],
]


def model_of(lanes: list[LaneTrace]):
    """A RunState showing these lanes (as an opened run would), each with the spec its config describes."""
    from decoding.chain.spec import LaneSpec
    from decoding.records.trace import ModelInfo, PromptInfo, RunTrace
    from gui.state.run_state import RunState

    def spec_of(lane: LaneTrace) -> LaneSpec:
        try:
            return LaneSpec.from_config(lane.name, lane.config, lane.branch)
        except ValueError:
            return LaneSpec(lane.name, num_beams=lane.config.get("num_beams", 1))

    model = RunState()
    trace = RunTrace(model=ModelInfo("samples"), provider="", prompt=PromptInfo("prompt", [1]), lanes=list(lanes))
    model.show_trace(trace, [spec_of(lane) for lane in lanes])
    return model
