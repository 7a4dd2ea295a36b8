"""A lane compared with a second model, Qt-free: both models read the lane's own tokens (prompt and generated, one
prefill each through runtime.sequence_logits.SequenceScorer, as `main.py compare-models` does), and
decoding.analysis.model_compare gives the per-step numbers. What the window keeps of it: those numbers, each step's top
tokens of both distributions (not the full logits rows: 49 152 floats a step and model), and where the two
models' free-running greedy continuations of the prompt part.

The comparison belongs to one lane's tokens: RunState drops it when a run replaces the lanes and calls it stale
when that lane is gone, edited since, or shows other tokens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from decoding.analysis import model_compare
from decoding.analysis.model_compare import LayerDeparture, StepComparison

TOP = 10  # tokens of each distribution kept per step (the view's side by side)


@dataclass(frozen=True)
class ModelSide:
    name: str
    precision: str  # "fp32", "int4"… (models.variants.precision_of)
    path: str = ""


@dataclass(frozen=True)
class TopToken:
    id: int
    text: str
    prob: float


@dataclass
class ModelComparison:
    """Model A (the run's, the reference) and model B teacher-forced on one lane's tokens."""

    lane_key: int  # the window's lane (RunState.Lane.key)
    lane_name: str
    reference: ModelSide
    other: ModelSide
    token_ids: list[int]  # the lane's generated tokens, step by step
    token_texts: list[str]
    steps: list[StepComparison]
    tops: list[tuple[list[TopToken], list[TopToken]]]  # per step: A's top tokens, B's
    greedy: dict | None = None  # both models' free-running greedy ids and texts (None: not computed)
    summary: dict = field(default_factory=dict)  # model_compare.summarize + the greedy first divergence
    layers: list[LayerDeparture] = field(default_factory=list)  # per layer, B's hidden states against A's

    def __post_init__(self) -> None:
        if not self.summary:
            self.summary = summary_of(self.steps, self.greedy)


def summary_of(steps: list[StepComparison], greedy: dict | None) -> dict:
    """model_compare.summarize, the mean |Δp(chosen)|, and the step where the free-running greedy texts part
    (compare-models' `greedy_first_divergence_step`; absent without greedy texts)."""
    summary = model_compare.summarize(steps) | {
        "mean_abs_delta_p": float(np.mean([abs(s.delta_p) for s in steps])) if steps else 0.0,
    }
    if greedy is not None:
        summary["greedy_first_divergence_step"] = model_compare.first_divergence(greedy["reference_ids"],
                                                                                  greedy["other_ids"])
    return summary


def top_tokens(logits: np.ndarray, text: Callable[[int], str], count: int = TOP) -> list[list[TopToken]]:
    """Each row's `count` most probable tokens (softmax in float64, as model_compare takes it)."""
    probs = np.exp(model_compare.log_softmax(logits))
    count = min(count, probs.shape[-1])
    best = np.argsort(-probs, axis=-1, kind="stable")[:, :count]
    return [[TopToken(int(i), text(int(i)), float(row[i])) for i in ids] for row, ids in zip(probs, best, strict=True)]


def compared_rows(scorer_a, scorer_b, prompt_ids: list[int], token_ids: list[int],
                  cancelled: Callable[[], bool] = lambda: False,
                  on_stage: Callable[[int], None] = lambda _stage: None,
                  layers: list | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Both models' logits before each generated token (rows len(prompt) - 1 … end - 1 of one prefill of the
    whole sequence: compare-models' rows). `scorer_a` / `scorer_b` make a SequenceScorer when called; each is
    dropped after its pass (one session in memory at a time). None when cancelled. `layers`: a list that gets
    each scorer's per-layer states [L, steps, D] at those rows (scorers made with `layers=True`)."""
    sequence = list(prompt_ids) + list(token_ids)
    rows = slice(len(prompt_ids) - 1, len(sequence) - 1)
    out = []
    for stage, make in enumerate((scorer_a, scorer_b)):
        if cancelled():
            return None
        on_stage(stage)
        scorer = make()
        out.append(scorer(sequence)[rows])
        if layers is not None and getattr(scorer, "last_layers", None) is not None:
            layers.append(scorer.last_layers[:, rows])
        del scorer
    return out[0], out[1]


def comparison_of(lane_key: int, lane_name: str, sides: tuple[ModelSide, ModelSide], logits: tuple, token_ids,
                  text: Callable[[int], str], greedy: dict | None, layers: list | None = None) -> ModelComparison:
    """The per-step numbers and top tokens of two models' logits rows over a lane's tokens; with both models'
    per-layer states (compared_rows' `layers`, same width) where in depth B departs from A."""
    steps = model_compare.teacher_forced(logits[0], logits[1], token_ids)
    tops_a, tops_b = top_tokens(logits[0], text), top_tokens(logits[1], text)
    departure = (model_compare.layer_departure(*layers) if layers and len(layers) == 2
                 and layers[0].shape == layers[1].shape else [])
    return ModelComparison(lane_key, lane_name, sides[0], sides[1], list(token_ids),
                           [text(t) for t in token_ids], steps, list(zip(tops_a, tops_b, strict=True)), greedy,
                           layers=departure)


def side_of(path: str | Path) -> ModelSide:
    """A prepared model's name and precision, read from its manifest."""
    from models.catalog import read_manifest
    from models.variants import precision_of

    manifest = read_manifest(path)
    return ModelSide(manifest.get("name", Path(path).name), precision_of(manifest), str(path))


def vocabulary_sizes(reference: Path, other: Path) -> tuple[int, int] | None:
    """The two prepared models' vocabulary sizes when their tokenizers' vocabularies differ (None: the same, a
    token-by-token comparison holds). OSError / ValueError when a tokenizer.json is missing or unreadable."""
    from models.catalog import tokenizer_vocabulary, vocabulary_size

    a, b = tokenizer_vocabulary(reference), tokenizer_vocabulary(other)
    return None if a == b else (vocabulary_size(a), vocabulary_size(b))


def other_models(exclude: Path | None) -> list[ModelSide]:
    """The prepared models (precision variants included) a lane of `exclude`'s run can be compared with: every
    intact one but `exclude` itself."""
    from models.catalog import list_models
    from models.variants import precision_of

    skip = Path(exclude).resolve() if exclude is not None else None
    return [ModelSide(info.name, precision_of(info.manifest), str(info.path)) for info in list_models()
            if info.valid and Path(info.path).resolve() != skip]
