"""Teacher-forced comparison of two models on one token sequence (pure numpy).

Model A (the reference) produced a sequence; model B reads the same tokens. At every generated step both give a
next-token distribution over the same vocabulary; per step this records KL(A ‖ B) in nats, whether their top-1
tokens agree, and how the probability of the token A chose changes (p_B − p_A) — the numbers
`llama-perplexity --kl-divergence` prints as aggregates, here per token. The summary adds the first step where
two free-running greedy continuations (one per model) part.

Rows are logits [steps, vocab] (any float dtype); softmaxes are taken in float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

FORMAT = "branchpoint-model-comparison"
VERSION = 1


@dataclass(frozen=True)
class StepComparison:
    step: int
    token_id: int  # the token A chose at this step (B is fed it too)
    kl: float  # KL(p_A ‖ p_B), nats
    top1_reference: int
    top1_other: int
    p_reference: float  # p_A(token_id)
    p_other: float  # p_B(token_id)

    @property
    def top1_agree(self) -> bool:
        return self.top1_reference == self.top1_other

    @property
    def delta_p(self) -> float:
        return self.p_other - self.p_reference


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64."""
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def teacher_forced(reference: np.ndarray, other: np.ndarray, chosen: Sequence[int]) -> list[StepComparison]:
    """Per-step comparison of two models' logits rows for the same positions; `chosen[i]` is the token taken
    after row i (A's). Raises ValueError when the shapes do not line up (e.g. different vocabularies)."""
    reference, other = np.asarray(reference), np.asarray(other)
    if reference.ndim != 2 or reference.shape != other.shape:
        raise ValueError(
            f"logits of different shapes {reference.shape} and {other.shape}: a token-aligned comparison needs "
            "the same vocabulary and the same positions"
        )
    if len(chosen) != reference.shape[0]:
        raise ValueError(f"{len(chosen)} chosen tokens for {reference.shape[0]} rows")
    lp, lq = log_softmax(reference), log_softmax(other)
    kls = np.maximum((np.exp(lp) * (lp - lq)).sum(axis=-1), 0.0)
    ids = np.asarray(chosen, dtype=np.int64)
    rows = np.arange(len(ids))
    p_ref, p_other = np.exp(lp[rows, ids]), np.exp(lq[rows, ids])
    top_ref, top_other = lp.argmax(axis=-1), lq.argmax(axis=-1)
    return [
        StepComparison(
            i, int(ids[i]), float(kls[i]), int(top_ref[i]), int(top_other[i]), float(p_ref[i]), float(p_other[i])
        )
        for i in range(len(ids))
    ]


def first_divergence(a: Sequence, b: Sequence) -> int | None:
    """The first index where two sequences (token ids or texts) differ; the shorter one's length when one is a
    proper prefix of the other; None when they are equal."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def summarize(steps: list[StepComparison]) -> dict:
    """Mean and max KL (with its step), top-1 agreement, the first step where the top-1 tokens differ."""
    if not steps:
        return {
            "steps": 0,
            "mean_kl": 0.0,
            "max_kl": 0.0,
            "max_kl_step": None,
            "top1_agreement": 1.0,
            "first_top1_flip": None,
            "mean_delta_p": 0.0,
        }
    kls = np.array([s.kl for s in steps])
    flips = [s.step for s in steps if not s.top1_agree]
    return {
        "steps": len(steps),
        "mean_kl": float(kls.mean()),
        "max_kl": float(kls.max()),
        "max_kl_step": int(kls.argmax()),
        "top1_agreement": 1.0 - len(flips) / len(steps),
        "first_top1_flip": flips[0] if flips else None,
        "mean_delta_p": float(np.mean([s.delta_p for s in steps])),
    }


def comparison_record(
    prompt: dict,
    reference: dict,
    other: dict,
    steps: list[StepComparison],
    token_texts: Sequence[str],
    greedy: dict,
) -> dict:
    """The JSON document of a comparison (docs/json-format.md, "Model comparison files"). `reference` / `other`:
    name, precision, file hashes (and the reference's lane spec); `greedy`: both free-running greedy id lists
    and texts."""
    ids_a, ids_b = greedy["reference_ids"], greedy["other_ids"]
    return {
        "format": FORMAT,
        "version": VERSION,
        "prompt": prompt,
        "reference": reference,
        "other": other,
        "steps": [
            asdict(step) | {"token": text, "top1_agree": step.top1_agree, "delta_p": step.delta_p}
            for step, text in zip(steps, token_texts, strict=True)
        ],
        "summary": summarize(steps)
        | {
            "greedy_first_divergence_step": first_divergence(ids_a, ids_b),
            "greedy_first_divergence_char": first_divergence(greedy["reference_text"], greedy["other_text"]),
        },
        "greedy": greedy,
    }


TOP_K_OVERLAP = 10


@dataclass(frozen=True)
class PositionScores:
    """Per-position numbers of a teacher-forced pass over a text (rows i predict token i + 1 of the text)."""

    kl: np.ndarray  # KL(p_A ‖ p_B), nats
    same_top: np.ndarray  # bool: the two argmaxes agree
    delta_p: np.ndarray  # p_B(next) − p_A(next), the text's actual next token
    top_jaccard: np.ndarray  # |top-k_A ∩ top-k_B| / |top-k_A ∪ top-k_B|


def position_scores(reference: np.ndarray, other: np.ndarray, next_ids: Sequence[int],
                    top_k: int = TOP_K_OVERLAP) -> PositionScores:
    """The columns of llama.cpp's `--kl-divergence` scoreboard, per position, for two logits rows [T, vocab]
    read over the same text; `next_ids[i]` is the text's token after row i."""
    reference, other = np.asarray(reference), np.asarray(other)
    if reference.ndim != 2 or reference.shape != other.shape or len(next_ids) != reference.shape[0]:
        raise ValueError(f"logits {reference.shape} and {other.shape} with {len(next_ids)} next tokens do not line up")
    lp, lq = log_softmax(reference), log_softmax(other)
    rows, ids = np.arange(len(next_ids)), np.asarray(next_ids, dtype=np.int64)
    kls = np.maximum((np.exp(lp) * (lp - lq)).sum(axis=-1), 0.0)
    top_a = np.argpartition(-lp, top_k - 1, axis=-1)[:, :top_k]
    top_b = np.argpartition(-lq, top_k - 1, axis=-1)[:, :top_k]
    common = np.array([len(np.intersect1d(a, b)) for a, b in zip(top_a, top_b, strict=True)])
    return PositionScores(
        kls, lp.argmax(axis=-1) == lq.argmax(axis=-1), np.exp(lq[rows, ids]) - np.exp(lp[rows, ids]),
        common / (2 * top_k - common),
    )


def scoreboard(parts: Sequence[PositionScores]) -> dict:
    """llama-perplexity's KL scoreboard over all positions of all parts: mean and 99th-percentile KL, same top
    token (fraction), RMS Δp of the text's next token, and the mean top-10 Jaccard overlap."""
    if not parts:
        raise ValueError("a scoreboard needs at least one scored text")
    kl = np.concatenate([p.kl for p in parts])
    delta = np.concatenate([p.delta_p for p in parts])
    return {
        "positions": int(kl.size),
        "mean_kl": float(kl.mean()),
        "p99_kl": float(np.percentile(kl, 99)),
        "max_kl": float(kl.max()),
        "same_top": float(np.concatenate([p.same_top for p in parts]).mean()),
        "rms_delta_p": float(np.sqrt(np.mean(delta**2))),
        "top10_jaccard": float(np.concatenate([p.top_jaccard for p in parts]).mean()),
    }


@dataclass(frozen=True)
class LayerDeparture:
    """How far model B's output of one decoder layer is from model A's over the same positions."""

    layer: int  # 0-based decoder layer
    relative_error: float  # mean over positions of ‖h_B − h_A‖ / ‖h_A‖
    cosine: float  # mean over positions of cos(h_A, h_B)


def layer_departure(reference: np.ndarray, other: np.ndarray) -> list[LayerDeparture]:
    """Per layer, the relative error and cosine of B's hidden states against A's ([L, T, D] each, the same
    positions): where in depth a precision variant departs from fp32."""
    a, b = np.asarray(reference, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if a.ndim != 3 or a.shape != b.shape:
        raise ValueError(f"hidden states {a.shape} and {b.shape}: per-layer departure needs [layers, positions, "
                         "width] of the same shape")
    norm_a, norm_b = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    tiny = np.finfo(np.float64).tiny
    relative = np.linalg.norm(b - a, axis=-1) / np.maximum(norm_a, tiny)
    cosine = (a * b).sum(axis=-1) / np.maximum(norm_a * norm_b, tiny)
    return [LayerDeparture(i, float(relative[i].mean()), float(cosine[i].mean())) for i in range(a.shape[0])]
