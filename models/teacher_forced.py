"""Teacher-forced precision check over the project's fixed text set (models/data/kl_texts.json), the way
`llama-perplexity --kl-divergence` measures a quantization: both models read the same text, and at every position
their next-token distributions are compared (decoding.analysis.model_compare.scoreboard: mean / 99th-percentile KL,
same top token, RMS Δp, top-10 Jaccard). Texts are read in windows of WINDOW tokens, each from an empty KV cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from decoding.analysis.model_compare import PositionScores, position_scores, scoreboard

TEXTS_FILE = Path(__file__).parent / "data" / "kl_texts.json"
WINDOW = 512
ROWS_PER_CHUNK = 128  # softmaxes in float64 a few rows at a time (gemma's vocabulary is 262,144)


def load_texts(path: Path = TEXTS_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["texts"]


def windows(ids: list[int], size: int = WINDOW) -> list[list[int]]:
    """Consecutive windows of at most `size` tokens (each at least 2: one position to score)."""
    return [ids[start:start + size] for start in range(0, len(ids), size) if len(ids[start:start + size]) > 1]


def score_window(reference: np.ndarray, other: np.ndarray, ids: list[int]) -> list[PositionScores]:
    """Rows 0 … T − 2 (each has a next token in the window), a chunk of rows at a time."""
    last = len(ids) - 1
    parts = []
    for start in range(0, last, ROWS_PER_CHUNK):
        stop = min(start + ROWS_PER_CHUNK, last)
        parts.append(position_scores(reference[start:stop], other[start:stop], ids[start + 1:stop + 1]))
    return parts


def text_windows(encode: Callable[[str], list[int]], texts: list[dict] | None = None) -> list[tuple[str, list[int]]]:
    """(language, ids) of every window of the text set."""
    return [(t["language"], w) for t in (texts or load_texts()) for w in windows(encode(t["text"]))]


def compare_scorers(reference: Callable[[list[int]], np.ndarray], other: Callable[[list[int]], np.ndarray],
                    encode: Callable[[str], list[int]], texts: list[dict] | None = None) -> dict:
    """The scoreboard of `other` against `reference` (each: ids → logits [T, vocab]) over the text set: overall and
    per language."""
    by_language: dict[str, list[PositionScores]] = {}
    for language, ids in text_windows(encode, texts):
        by_language.setdefault(language, []).extend(score_window(reference(ids), other(ids), ids))
    everything = [p for parts in by_language.values() for p in parts]
    return scoreboard(everything) | {
        "by_language": {language: scoreboard(parts) for language, parts in by_language.items()},
        "texts": TEXTS_FILE.name,
        "window": WINDOW,
    }


def tokenizer_encoder(model_dir: Path) -> Callable[[str], list[int]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    return lambda text: tokenizer.encode(text, add_special_tokens=True).ids


def compare_models(base_dir: Path, variant_dir: Path, device: str = "cpu") -> dict:
    """Teacher-forced scoreboard of the prepared model in `variant_dir` against the one in `base_dir`."""
    from runtime.sequence_logits import SequenceScorer

    return compare_scorers(SequenceScorer(base_dir, device), SequenceScorer(variant_dir, device),
                           tokenizer_encoder(variant_dir))


def summary_text(board: dict) -> str:
    """'KL 0.0021 · same top 98.1 %' (what `main.py models`, the picker and the variant dialog show)."""
    return f"KL {board['mean_kl']:.2g} · same top {100 * board['same_top']:.1f} %"
