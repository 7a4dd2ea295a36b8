"""Logits processors in pure numpy, equal to transformers 4.57.6's processors and warpers.

Each processor is a small object over values validated before it is made (by the LaneSpec, or by
decoding.chain.chain.build_processors for a config of its own, against decoding.chain.parameters' table; the
processor checks nothing again): `processor.apply(ids, scores) -> new scores`, with `ids` int64
[rows, seq_len] (prompt + generated so far) and `scores` float32 [rows, vocab]. Inputs are never mutated;
filtered tokens get -inf, as transformers' `filter_value`.

Equality with transformers: the arithmetic is the same float32 arithmetic (temperature, penalties, top-k are
bit-identical). The softmax-based cuts (top-p, min-p, typical) use numpy's exp where torch uses its own
vectorised exp, so probabilities can differ in the last bits; a token whose cumulative probability lies
within about 1e-6 of a cut can land on the other side.

Ties at a cut: where a cut falls inside a group of exactly tied scores, every cut processor keeps the
survivors that transformers' own sort keeps when it is stable (torch's `sort` is stable on CPU for the sizes
its tests use; its unstable GPU path may pick others). Top-p sorts ascending and removes from the front, so
among tied tokens the higher ids survive; min-p's and typical's `min_tokens_to_keep` keep the first of a
stable descending (min-p) or ascending-|surprisal - entropy| (typical) order, so there the lower ids survive;
top-k, epsilon and eta keep every token tied with the k-th best.

Speed: top-p and typical sort only a partitioned prefix that provably holds the cut (checked, with a fall
back to a larger prefix and finally the full sort), so a step costs O(vocab) plus a small sort.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from decoding.chain.parameters import Strategies, active_processors, as_json, canonical, parameter

FILTER = np.float32(-np.inf)

# About how many of the best tokens top-p, typical and sampling sort before falling back to all of them.
PREFIX_TIERS = (1024, 8192)
SAMPLE_STRIDE = 16


# ----------------------------------------------------------------------------------------------- inputs


def _scores(scores: np.ndarray) -> np.ndarray:
    array = np.asarray(scores, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"scores must be a 2-D array [rows, vocab], got shape {array.shape}")
    return array


def _ids(ids: np.ndarray) -> np.ndarray:
    array = np.asarray(ids, dtype=np.int64)
    if array.ndim != 2:
        raise ValueError(f"ids must be a 2-D array [rows, seq_len], got shape {array.shape}")
    return array


def softmax32(scores: np.ndarray) -> np.ndarray:
    """Row softmax in float32, as transformers' torch.softmax computes it (max-shifted exp, one division)."""
    with np.errstate(invalid="ignore", over="ignore"):
        exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return exps / exps.sum(axis=-1, keepdims=True, dtype=np.float32)


def order_desc(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of (values, ids) sorted by value descending, equal values by ascending id (a stable
    descending sort)."""
    return np.lexsort((ids, -values))


def order_desc_from_ascending(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of (values, ids) in a stable ascending sort read backwards: value descending, equal values by
    descending id (what transformers' top-p walks from its end)."""
    return np.lexsort((-ids, -values))


def sample_thresholds(values: np.ndarray, counts: Sequence[int]) -> list[float]:
    """For each count, a value t that about count * SAMPLE_STRIDE values reach, read off a strided sample:
    t is the count-th largest sampled value, so at least `count` values are >= t."""
    sample = values[::SAMPLE_STRIDE]
    counts = [min(count, sample.size) for count in counts]
    ranked = np.partition(sample, [sample.size - count for count in counts])
    return [float(ranked[sample.size - count]) for count in counts]


def top_candidates(values: np.ndarray, count: int) -> np.ndarray:
    """Ids of the `count` largest values, largest first, equal values by lower id (a stable descending sort's
    prefix), without a full sort. A long array is first cut at a lower bound of its count-th largest value read
    off a strided sample: every winner survives, and the exact selection runs on about count * SAMPLE_STRIDE
    values."""
    if _sampled_cut(count, values.size):
        candidates = np.flatnonzero(values >= sample_thresholds(values, [count])[0])
        return candidates[_top_exact(values[candidates], count)]
    return _top_exact(values, count)


def kth_largest(values: np.ndarray, k: int) -> np.float32:
    """np.partition(values, values.size - k)[values.size - k]. In a long row without NaN (which partition
    ranks above everything) it is found among the values at or above a cut read off a strided sample: at
    least k of them, so the k-th largest is one of them."""
    if _sampled_cut(k, values.size) and not np.isnan(values.max()):
        values = values[values >= sample_thresholds(values, [k])[0]]
    return np.partition(values, values.size - k)[values.size - k]


def _sampled_cut(count: int, size: int) -> bool:
    """Whether top_candidates first cuts `size` values at a threshold read off a strided sample."""
    return count * SAMPLE_STRIDE * 8 <= size


def _top_exact(values: np.ndarray, count: int) -> np.ndarray:
    """top_candidates by one partition of all `values`."""
    if count >= values.size:
        return np.argsort(-values, kind="stable")
    kth = np.partition(values, values.size - count)[values.size - count]
    above = np.flatnonzero(values > kth)
    ties = np.flatnonzero(values == kth)[: count - above.size]  # the lowest ids among those equal to the cut
    chosen = np.concatenate([above, ties])
    return chosen[order_desc(values[chosen], chosen)]


def prefix_sets(values: np.ndarray) -> Iterator[tuple[np.ndarray, bool]]:
    """Growing candidate sets {values >= t} (about PREFIX_TIERS ids), then every finite value, each flagged
    True when it is the last. Every value outside a set is strictly smaller than every value inside it."""
    for threshold in sample_thresholds(values, [count // SAMPLE_STRIDE for count in PREFIX_TIERS]):
        if threshold > -np.inf:
            yield np.flatnonzero(values >= threshold), False
    yield np.flatnonzero(values > -np.inf), True


# ------------------------------------------------------------------------------------------------- base


class Processor:
    """A stage of a lane's chain, with llama.cpp's sampler interface (`llama_sampler_i`: name, apply, accept,
    reset, clone): `apply(ids, scores) -> new scores` (also `processor(ids, scores)`); `name` is its
    GenerationConfig key. A stateful one (`stateful`: XTC's coin, mirostat's mu) also hears each token its lane
    takes (`accept`), goes back to its first state (`reset`), is copied with its state (`clone`) and writes the
    state a step used into that step's record (`record_state`); for the others these do nothing.

    Args (of apply):
        ids: int64 [rows, seq_len], each row's prompt and generated ids so far.
        scores: float32 [rows, vocab], each row's next-token scores (-inf = filtered). Not mutated.
    """

    name: ClassVar[str]
    filters_only: ClassVar[bool] = False  # its output is its input with some scores set to -inf
    stateful: ClassVar[bool] = False  # it carries state from step to step

    def apply(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return self.process(_ids(ids), _scores(scores))

    __call__ = apply

    def accept(self, token: int, prob: float, forced: bool = False) -> None:
        """The lane took `token`, of probability `prob` in the step's processed distribution (`forced`: not
        chosen, the user's or a branch's)."""

    def reset(self) -> None:
        """Back to the state it was made with."""

    def clone(self) -> Processor:
        """An independent copy with the same state (the same object for a stateless processor)."""
        return copy.deepcopy(self) if self.stateful else self

    def record_state(self, record: Any) -> None:
        """Write the state this step used into its StepRecord (nothing for a stateless processor)."""

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The processor's parameters as plain JSON values."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.params()}

    def describe(self) -> str:
        """Short text for the UI, e.g. "top_p=0.9"."""
        shown = {key: value for key, value in self.params().items()}
        if shown.get("min_tokens_to_keep") == 1:
            del shown["min_tokens_to_keep"]
        return ", ".join(f"{key}={value}" for key, value in shown.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class MaskProcessor(Processor):
    """A processor that sets to -inf ids it reads off a row's history alone, whatever the scores. `banned` gives
    them for one row, so a lane can derive its processed distribution from the raw one without building the
    processed row (decoding.records.stats.Softmax.masked); `process` applies the same ids to every row."""

    filters_only = True

    def banned(self, ids: Sequence[int], vocab_size: int) -> np.ndarray:
        """The sorted distinct ids below `vocab_size` this processor sets to -inf after the history `ids`
        (one row's prompt and generated ids)."""
        raise NotImplementedError

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = scores.copy()
        for row, history in enumerate(ids):
            out[row, self.banned(history, scores.shape[1])] = FILTER
        return out


NO_IDS = np.zeros(0, dtype=np.int64)


# --------------------------------------------------------------------------------- penalties, constraints


class RepetitionPenalty(Processor):
    """Divide the positive and multiply the negative scores of every token already in `ids` (prompt included)
    by `penalty`, so that a repeat becomes less likely when penalty > 1. transformers'
    `RepetitionPenaltyLogitsProcessor`.

    Args:
        penalty: `repetition_penalty`, > 0; 1.0 changes nothing (off), below 1 favours repeats.
        last_n: `penalty_last_n`: only the last last_n ids count (llama.cpp's repeat penalty window); None: all.

    Example: ids 0 and 1 were seen, id 2 was not.

    >>> import numpy as np
    >>> from decoding.chain.processors import RepetitionPenalty
    >>> scores = np.array([[2.0, -1.0, 0.5]], dtype=np.float32)
    >>> RepetitionPenalty(2.0)(np.array([[0, 1]]), scores).tolist()
    [[1.0, -2.0, 0.5]]
    """

    name = "repetition_penalty"

    def __init__(self, penalty: float, last_n: int | None = None):
        self.penalty = penalty
        self.last_n = last_n

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        penalty = np.float32(self.penalty)
        if self.last_n is not None:
            ids = ids[:, max(ids.shape[1] - self.last_n, 0) :]
        seen = np.take_along_axis(scores, ids, axis=1)
        penalised = np.where(seen < 0, seen * penalty, seen / penalty)
        out = scores.copy()
        np.put_along_axis(out, ids, penalised, axis=1)
        return out

    def params(self) -> dict[str, Any]:
        return {"repetition_penalty": self.penalty} if self.last_n is None else {
            "repetition_penalty": self.penalty, "penalty_last_n": self.last_n}


class NoRepeatNGram(MaskProcessor):
    """Ban every token that would repeat an n-gram already in `ids` (prompt included): the tokens that once
    followed the row's last n-1 tokens get -inf. transformers' `NoRepeatNGramLogitsProcessor`.

    Args:
        ngram_size: `no_repeat_ngram_size`, >= 1 (0 is off and builds no processor).

    Example: after 5, 6, 5 a bigram (5, 6) already exists, so 6 may not follow the last 5.

    >>> import numpy as np
    >>> from decoding.chain.processors import NoRepeatNGram
    >>> out = NoRepeatNGram(2)(np.array([[5, 6, 5]]), np.zeros((1, 8), dtype=np.float32))
    >>> np.flatnonzero(out[0] > -np.inf).tolist()  # the ids that survive
    [0, 1, 2, 3, 4, 5, 7]
    """

    name = "no_repeat_ngram_size"

    def __init__(self, ngram_size: int):
        self.ngram_size = ngram_size

    def banned(self, ids: Sequence[int], vocab_size: int) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        size, length = self.ngram_size, ids.size
        if length < size:  # no complete n-gram yet (transformers: cur_len + 1 < n bans nothing either)
            return NO_IDS
        windows = np.lib.stride_tricks.sliding_window_view(ids, size)  # [length-size+1, size]
        match = (windows[:, : size - 1] == ids[length - size + 1 :]).all(axis=1)  # the last size-1 tokens
        followers = np.unique(windows[match, size - 1])
        return followers[followers < vocab_size]

    def params(self) -> dict[str, Any]:
        return {"no_repeat_ngram_size": self.ngram_size}


class MinNewTokens(MaskProcessor):
    """Suppress the eos ids until `min_new_tokens` tokens were generated after the prompt. transformers'
    `MinNewTokensLengthLogitsProcessor`.

    Args:
        min_new_tokens: `min_new_tokens`, >= 0 (0 is off and builds no processor).
        prompt_len: the prompt's length in ids; what follows it in `ids` counts as generated.
        eos_ids: the end-of-sequence ids to suppress.

    Example: a 3-token prompt; eos id 2 is banned after one new token, allowed after two.

    >>> import numpy as np
    >>> from decoding.chain.processors import MinNewTokens
    >>> at_least_two = MinNewTokens(2, prompt_len=3, eos_ids=[2])
    >>> scores = np.zeros((1, 4), dtype=np.float32)
    >>> np.flatnonzero(at_least_two(np.array([[7, 8, 9, 4]]), scores)[0] > -np.inf).tolist()
    [0, 1, 3]
    >>> np.flatnonzero(at_least_two(np.array([[7, 8, 9, 4, 5]]), scores)[0] > -np.inf).tolist()
    [0, 1, 2, 3]
    """

    name = "min_new_tokens"

    def __init__(self, min_new_tokens: int, prompt_len: int, eos_ids: Sequence[int]):
        self.min_new_tokens = min_new_tokens
        self.prompt_len = prompt_len
        self.eos_ids = tuple(int(token) for token in eos_ids)
        self._eos = np.unique(np.array(self.eos_ids, dtype=np.int64))

    def banned(self, ids: Sequence[int], vocab_size: int) -> np.ndarray:
        if len(ids) - self.prompt_len < self.min_new_tokens:
            return self._eos[self._eos < vocab_size]
        return NO_IDS

    def params(self) -> dict[str, Any]:
        return {"min_new_tokens": self.min_new_tokens, "eos_ids": list(self.eos_ids)}

    def describe(self) -> str:
        return f"min_new_tokens={self.min_new_tokens}"


# --------------------------------------------------------------------------------------------- warpers


class Temperature(Processor):
    """Divide every score by the temperature: below 1 sharpens the distribution, above 1 flattens it; nothing
    is filtered. transformers' `TemperatureLogitsWarper`.

    Args:
        temperature: `temperature`, > 0 (1.0 is off and builds no processor).

    Example:

    >>> import numpy as np
    >>> from decoding.chain.processors import Temperature
    >>> Temperature(0.5)(np.array([[0]]), np.array([[1.0, -2.0, 0.5]], dtype=np.float32)).tolist()
    [[2.0, -4.0, 1.0]]
    """

    name = "temperature"

    def __init__(self, temperature: float):
        self.temperature = temperature

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return scores / np.float32(self.temperature)

    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature}


class TopK(Processor):
    """Keep the tokens scoring at least the k-th best score (ties at the k-th score all survive); the others
    get -inf. transformers' `TopKLogitsWarper`.

    Args:
        top_k: `top_k`, >= 1 (0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: the third best score is 2.0, which ids 2 and 4 share: four ids survive top_k=3.

    >>> import numpy as np
    >>> from decoding.chain.processors import TopK
    >>> scores = np.array([[1.0, 3.0, 2.0, 3.0, 2.0]], dtype=np.float32)
    >>> np.flatnonzero(TopK(3)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [1, 2, 3, 4]
    """

    name = "top_k"
    filters_only = True

    def __init__(self, top_k: int, min_tokens_to_keep: int = 1):
        self.top_k = top_k
        self.min_tokens_to_keep = min_tokens_to_keep

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        vocab = scores.shape[1]
        k = min(max(self.top_k, self.min_tokens_to_keep), vocab)
        if k == vocab:
            return scores.copy()
        kth = np.array([kth_largest(row, k) for row in scores], dtype=np.float32)[:, None]
        return np.where(scores < kth, FILTER, scores)

    def params(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "min_tokens_to_keep": self.min_tokens_to_keep}


class _RowWarper(Processor):
    """A warper whose cut needs per-row work (rows are few: one per lane or per beam)."""

    filters_only = True

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = np.full_like(scores, FILTER)
        for src, dst in zip(scores, out, strict=True):
            if src.max() > -np.inf:  # a row filtered entirely stays so (transformers: NaN softmax, no cut)
                kept = self.kept_ids(src)
                dst[kept] = src[kept]
        return out

    def kept_ids(self, row: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class TopP(_RowWarper):
    """Nucleus sampling: drop the least likely tokens whose cumulative probability, summed from the least
    likely up, is <= 1 - top_p; the rest (at least `min_tokens_to_keep`) survive. transformers'
    `TopPLogitsWarper`. Ties at the cut: the order is a stable ascending sort's, so among exactly tied tokens
    the lower ids are removed first and the higher ids survive.

    Args:
        top_p: `top_p`, in [0, 1] (1.0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: probabilities 0.5, 0.3, 0.15, 0.05. The two best reach 0.75; 0.9 needs the third. Four tied
    tokens and top_p=0.5: two survive, the higher ids.

    >>> import numpy as np
    >>> from decoding.chain.processors import TopP
    >>> scores = np.log(np.array([[0.5, 0.3, 0.15, 0.05]], dtype=np.float32))
    >>> np.flatnonzero(TopP(0.75)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [0, 1]
    >>> np.flatnonzero(TopP(0.9)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [0, 1, 2]
    >>> np.flatnonzero(TopP(0.5)(np.array([[0]]), np.zeros((1, 4), np.float32))[0] > -np.inf).tolist()
    [2, 3]
    """

    name = "top_p"

    def __init__(self, top_p: float, min_tokens_to_keep: int = 1):
        self.top_p = top_p
        self.min_tokens_to_keep = min_tokens_to_keep

    def kept_ids(self, row: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            exps = np.exp(row - row.max())
        norm = exps.sum(dtype=np.float32)  # softmax = exps / norm, in float32 like torch
        total = exps.sum(dtype=np.float64)
        for ids, last in prefix_sets(row):
            kept = self._kept_among(row, exps, norm, total, ids, last)
            if kept is not None:
                return kept
        raise AssertionError("the last set always decides")

    def _kept_among(
        self, row: np.ndarray, exps: np.ndarray, norm: np.float32, total: float, ids: np.ndarray, last: bool
    ) -> np.ndarray | None:
        """The kept ids if the cut provably lies among the candidates `ids`, else None."""
        ids = ids[order_desc_from_ascending(row[ids], ids)]
        candidate_exps = exps[ids]
        # outside the last set only -inf (probability 0); else the mass of everything below the candidates
        below = 0.0 if last else (total - candidate_exps.sum(dtype=np.float64)) / float(norm)
        probs = (candidate_exps / norm).astype(np.float64)
        # transformers: cumulative sum from the least likely token up, in float64, stored as float32
        cumulative = (np.cumsum(probs[::-1])[::-1] + below).astype(np.float32)
        removed = cumulative <= np.float32(1.0 - self.top_p)
        if not last and (not removed[-1] or ids.size < self.min_tokens_to_keep):
            return None  # some tokens below the candidates may survive
        count = int(np.argmax(removed)) if removed[-1] else ids.size
        return ids[: max(count, self.min_tokens_to_keep)]

    def params(self) -> dict[str, Any]:
        return {"top_p": self.top_p, "min_tokens_to_keep": self.min_tokens_to_keep}


class MinP(Processor):
    """Drop the tokens whose probability is below min_p times the top token's probability (at least
    `min_tokens_to_keep` survive: the first of a stable descending sort, so the lower ids among ties).
    transformers' `MinPLogitsWarper`.

    Args:
        min_p: `min_p`, in [0, 1] (0.0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: probabilities 0.5, 0.3, 0.15, 0.05; min_p=0.2 keeps those of at least 0.2 * 0.5 = 0.1.

    >>> import numpy as np
    >>> from decoding.chain.processors import MinP
    >>> scores = np.log(np.array([[0.5, 0.3, 0.15, 0.05]], dtype=np.float32))
    >>> np.flatnonzero(MinP(0.2)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [0, 1, 2]
    """

    name = "min_p"
    filters_only = True

    def __init__(self, min_p: float, min_tokens_to_keep: int = 1):
        self.min_p = min_p
        self.min_tokens_to_keep = min_tokens_to_keep

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        probs = softmax32(scores)
        removed = probs < np.float32(self.min_p) * probs.max(axis=1, keepdims=True)
        if self.min_tokens_to_keep > 1:
            for row_removed, row in zip(removed, scores, strict=True):
                row_removed[top_candidates(row, self.min_tokens_to_keep)] = False
        return np.where(removed, FILTER, scores)

    def params(self) -> dict[str, Any]:
        return {"min_p": self.min_p, "min_tokens_to_keep": self.min_tokens_to_keep}


class Typical(_RowWarper):
    """Locally typical sampling: keep the tokens whose surprisal (-log p) is closest to the entropy, up to
    mass `typical_p` (the token that crosses it and any token tied with it included; `min_tokens_to_keep`
    keeps the first of a stable ascending sort by |surprisal - entropy|, the lower ids among ties).
    transformers' `TypicalLogitsWarper`.

    Args:
        typical_p: `typical_p`, in (0, 1] (1.0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: probabilities 0.4, 0.2, 0.2, 0.2 have an entropy of 1.33 nats. The 0.2 tokens (surprisal 1.61)
    are closer to it than the most likely token (0.92): typical_p=0.5 keeps them and drops id 0.

    >>> import numpy as np
    >>> from decoding.chain.processors import Typical
    >>> scores = np.log(np.array([[0.4, 0.2, 0.2, 0.2]], dtype=np.float32))
    >>> np.flatnonzero(Typical(0.5)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [1, 2, 3]
    """

    name = "typical_p"

    def __init__(self, typical_p: float, min_tokens_to_keep: int = 1):
        self.typical_p = typical_p
        self.min_tokens_to_keep = min_tokens_to_keep

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self.typical_p >= 1.0:  # the whole mass: nothing to cut (transformers only accepts < 1)
            return scores.copy()
        return super().process(ids, scores)

    def kept_ids(self, row: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            shifted_row = row - row.max()
            exps = np.exp(shifted_row)
            norm = exps.sum(dtype=np.float32)
            normalized = shifted_row - np.log(norm)  # log_softmax
            probs = exps / norm
            # entropy; filtered tokens (p = 0, log p = -inf) add nothing, as with torch's nansum
            entropy = -np.dot(probs, np.maximum(normalized, np.float32(-3e38)))
            shifted = np.abs(-normalized - entropy)
        for ids, last in prefix_sets(-shifted):
            kept = self._kept_among(shifted, probs, ids, last)
            if kept is not None:
                return kept
        raise AssertionError("the last set always decides")

    def _kept_among(
        self, shifted: np.ndarray, probs: np.ndarray, ids: np.ndarray, last: bool
    ) -> np.ndarray | None:
        """The kept ids if the mass is reached among the candidates `ids` (smallest shifted), else None."""
        ids = ids[np.lexsort((ids, shifted[ids]))]  # ascending |surprisal - entropy|, ties by lower id
        cumulative = np.cumsum(probs[ids].astype(np.float64)).astype(np.float32)
        crossing = int(np.count_nonzero(cumulative < np.float32(self.typical_p)))
        if crossing >= ids.size or ids.size < self.min_tokens_to_keep:
            if not last:
                return None
            return np.arange(shifted.size)  # transformers' cut is then the largest score: nothing removed
        kept = np.flatnonzero(shifted <= shifted[ids[crossing]])
        if self.min_tokens_to_keep == 1:
            return kept
        return np.union1d(kept, ids[: self.min_tokens_to_keep])

    def params(self) -> dict[str, Any]:
        return {"typical_p": self.typical_p, "min_tokens_to_keep": self.min_tokens_to_keep}


class Epsilon(Processor):
    """Truncation sampling: drop the tokens whose probability is below `epsilon` (every token tied with the
    `min_tokens_to_keep`-th best score survives). transformers' `EpsilonLogitsWarper`.

    Args:
        epsilon: `epsilon_cutoff`, in (0, 1) (0.0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: probabilities 0.87, 0.099, 0.001, 0.03 and epsilon 0.05 keep ids 0 and 1.

    >>> import numpy as np
    >>> from decoding.chain.processors import Epsilon
    >>> scores = np.log(np.array([[0.87, 0.099, 0.001, 0.03]], dtype=np.float32))
    >>> np.flatnonzero(Epsilon(0.05)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [0, 1]
    """

    name = "epsilon_cutoff"
    filters_only = True

    def __init__(self, epsilon: float, min_tokens_to_keep: int = 1):
        self.epsilon = epsilon
        self.min_tokens_to_keep = min_tokens_to_keep

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return _cut_below(scores, softmax32(scores), np.float32(self.epsilon), self.min_tokens_to_keep)

    def params(self) -> dict[str, Any]:
        return {"epsilon_cutoff": self.epsilon, "min_tokens_to_keep": self.min_tokens_to_keep}


class Eta(Processor):
    """Eta sampling: drop the tokens whose probability is below eta = min(epsilon, sqrt(epsilon) * exp(-H)),
    H the distribution's entropy (every token tied with the `min_tokens_to_keep`-th best score survives).
    transformers' `EtaLogitsWarper`.

    Args:
        epsilon: `eta_cutoff`, in (0, 1) (0.0 is off and builds no processor).
        min_tokens_to_keep: keep at least this many (transformers keeps 2 or more under beam search).

    Example: transformers' case: 0.01, 0.04, 0.9, 0.05 with eta_cutoff 0.0625 keeps only id 2.

    >>> import numpy as np
    >>> from decoding.chain.processors import Eta
    >>> scores = np.log(np.array([[0.01, 0.04, 0.9, 0.05]], dtype=np.float32))
    >>> np.flatnonzero(Eta(0.0625)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [2]
    """

    name = "eta_cutoff"
    filters_only = True

    def __init__(self, epsilon: float, min_tokens_to_keep: int = 1):
        self.epsilon = epsilon
        self.min_tokens_to_keep = min_tokens_to_keep

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        probs = softmax32(scores)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_probs = scores - scores.max(axis=1, keepdims=True)
            log_probs = log_probs - np.log(np.exp(log_probs).sum(axis=1, keepdims=True, dtype=np.float32))
        # torch's Categorical entropy: log-probabilities clamped at the float32 minimum, so -inf adds nothing
        entropy = -(np.maximum(log_probs, np.finfo(np.float32).min) * probs).sum(axis=1, keepdims=True)
        epsilon = np.float32(self.epsilon)
        eta = np.minimum(epsilon, np.sqrt(epsilon) * np.exp(-entropy.astype(np.float32)))
        return _cut_below(scores, probs, eta, self.min_tokens_to_keep)

    def params(self) -> dict[str, Any]:
        return {"eta_cutoff": self.epsilon, "min_tokens_to_keep": self.min_tokens_to_keep}


def _cut_below(scores: np.ndarray, probs: np.ndarray, cut: Any, keep: int) -> np.ndarray:
    """Scores with -inf where the probability is below `cut`, except the tokens scoring at least the
    keep-th best score (transformers' topk safety check: ties with it all survive)."""
    removed = probs < cut
    kth = np.array([kth_largest(row, min(keep, row.size)) for row in scores], dtype=np.float32)[:, None]
    return np.where(removed & (scores < kth), FILTER, scores)


class SuppressTokens(Processor):
    """Set the scores of the given ids to -inf at every step. transformers' `SuppressTokensLogitsProcessor`.

    Args:
        suppress_tokens: `suppress_tokens`, token ids (ids beyond the vocabulary are ignored; empty is off).

    Example:

    >>> import numpy as np
    >>> from decoding.chain.processors import SuppressTokens
    >>> np.isneginf(SuppressTokens([1, 3])(np.array([[0]]), np.zeros((1, 4), np.float32))).tolist()
    [[False, True, False, True]]
    """

    name = "suppress_tokens"
    filters_only = True

    def __init__(self, suppress_tokens: Sequence[int]):
        self.suppress_tokens = tuple(suppress_tokens)
        self._ids = np.unique(np.array(self.suppress_tokens, dtype=np.int64))

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = scores.copy()
        out[:, self._ids[self._ids < scores.shape[1]]] = FILTER
        return out

    def params(self) -> dict[str, Any]:
        return {"suppress_tokens": list(self.suppress_tokens)}


class SequenceBias(Processor):
    """Add a bias to the score of the last token of each sequence wherever the row's last ids are the
    sequence's other tokens (a one-token sequence: always). transformers' `SequenceBiasLogitsProcessor`: the
    biases of one row are summed in float32 (one-token ones first, then the longer ones in the order given),
    then added to the scores.

    Args:
        sequence_bias: `sequence_bias`, pairs (token ids, bias) (transformers' list form).

    Example: after ids 5, 6 the sequence (6, 2) applies: id 2 gets -3; id 1 always gets +1.

    >>> import numpy as np
    >>> from decoding.chain.processors import SequenceBias
    >>> SequenceBias([((1,), 1.0), ((6, 2), -3.0)])(np.array([[5, 6]]), np.zeros((1, 8), np.float32)).tolist()
    [[0.0, 1.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    """

    name = "sequence_bias"

    def __init__(self, sequence_bias: Sequence[tuple[Sequence[int], float]]):
        self.sequence_bias = canonical(parameter(self.name), sequence_bias)
        self._by_sequence = dict(self.sequence_bias)  # as transformers: a later equal sequence replaces one

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        vocab = scores.shape[1]
        if any(token >= vocab for sequence in self._by_sequence for token in sequence):
            raise ValueError(f"sequence_bias names token ids beyond the vocabulary of {vocab}")
        bias = np.zeros(scores.shape, dtype=np.float32)
        for sequence, value in self._by_sequence.items():
            if len(sequence) == 1:
                bias[:, sequence[0]] = np.float32(value)
        for sequence, value in self._by_sequence.items():
            if len(sequence) == 1 or len(sequence) > ids.shape[1]:
                continue
            matching = (ids[:, ids.shape[1] - len(sequence) + 1 :] == np.array(sequence[:-1])).all(axis=1)
            bias[matching, sequence[-1]] += np.float32(value)
        with np.errstate(invalid="ignore"):
            return scores + bias

    def params(self) -> dict[str, Any]:
        return {"sequence_bias": as_json(parameter(self.name), self.sequence_bias)}


class BadWords(MaskProcessor):
    """Ban the last token of each sequence wherever the row's last ids are the sequence's other tokens (a
    one-token sequence: always); a sequence that is one eos id alone is dropped. transformers'
    `NoBadWordsLogitsProcessor`.

    Args:
        bad_words_ids: `bad_words_ids`, token id sequences (empty is off).
        eos_ids: the end-of-sequence ids.

    Example: after 5, 6 the sequence (6, 2) bans id 2; (1,) is always banned; (0,) is eos and dropped.

    >>> import numpy as np
    >>> from decoding.chain.processors import BadWords
    >>> out = BadWords([(1,), (6, 2), (0,)], eos_ids=[0])(np.array([[5, 6]]), np.zeros((1, 4), np.float32))
    >>> np.flatnonzero(out[0] > -np.inf).tolist()
    [0, 3]
    """

    name = "bad_words_ids"

    def __init__(self, bad_words_ids: Sequence[Sequence[int]], eos_ids: Sequence[int] = ()):
        self.bad_words_ids = canonical(parameter(self.name), bad_words_ids)
        self.eos_ids = tuple(int(token) for token in eos_ids)
        self._sequences = [seq for seq in self.bad_words_ids if not (len(seq) == 1 and seq[0] in self.eos_ids)]

    def banned(self, ids: Sequence[int], vocab_size: int) -> np.ndarray:
        history = list(ids)
        found = {seq[-1] for seq in self._sequences
                 if len(seq) == 1 or (len(seq) <= len(history) and history[len(history) - len(seq) + 1 :] == list(
                     seq[:-1]))}
        return np.array(sorted(token for token in found if token < vocab_size), dtype=np.int64)

    def params(self) -> dict[str, Any]:
        return {"bad_words_ids": as_json(parameter(self.name), self.bad_words_ids), "eos_ids": list(self.eos_ids)}

    def describe(self) -> str:
        return f"bad_words_ids={len(self.bad_words_ids)} sequences"


# -------------------------------------------------------------------------------------------- building

def ignored_settings(config: dict[str, Any]) -> list[str]:
    """Warper parameters set in `config` that do nothing because do_sample is false (transformers ignores
    them too), so a caller can tell the user."""
    if config.get("do_sample"):
        return []
    sampled = {**config, "do_sample": True}
    return [
        name for name in active_processors(sampled) if parameter(name).applies_to is Strategies.SAMPLING
    ]


def min_tokens_to_keep_for(num_beams: int, eos_ids: Sequence[int]) -> int:
    """transformers keeps len(eos) + 1 tokens in the warpers under beam search (2 without eos ids), else 1."""
    return len(eos_ids) + 1 if num_beams > 1 and len(eos_ids) else 2 if num_beams > 1 else 1


def apply_processors(processors: Sequence[Processor], ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Run a chain; returns a new array (the input untouched, even with an empty chain)."""
    out = np.array(scores, dtype=np.float32)
    for processor in processors:
        out = processor(ids, out)
    return out
