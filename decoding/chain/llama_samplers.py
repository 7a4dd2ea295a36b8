"""llama.cpp's samplers as Branchpoint processors, with llama.cpp's names and semantics (src/llama-sampling.cpp,
common/sampling.cpp): penalties (frequency, presence and their window), DRY, top-nσ, XTC, dynamic temperature
and mirostat. Where llama.cpp and the paper behind a sampler differ, these follow llama.cpp (each docstring says
where).

llama.cpp shrinks its candidate array where Branchpoint sets scores to -inf; so "the candidates" here are the
finite scores, which is what llama.cpp's array holds after its own truncating samplers. Probabilities are
float32 softmaxes as llama.cpp's `llama_sampler_softmax_impl` computes them (max-shifted exp, one sum), up to
the order of the sum.

Two of them hold state from step to step (`stateful`): XTC draws its coin from the lane's seeded generator
(`coin`, the chain's selector's; the coin drawn is `last_coin`), mirostat truncates with a running mu that each
token the lane takes moves (`accept`, by `Mirostat.next_mu` of its probability). `record_state` writes both into
each step's record, so a replay is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from decoding.chain.processors import FILTER, Processor, _RowWarper, order_desc, top_candidates


def _finite_ids(row: np.ndarray) -> np.ndarray:
    return np.flatnonzero(row > -np.inf)


def _probs(row: np.ndarray) -> np.ndarray:
    """The row's float32 softmax (filtered tokens: 0), one pass: the samplers below then look only at the few
    candidates they keep or drop, never sorting the vocabulary (llama.cpp sorts its whole array)."""
    with np.errstate(invalid="ignore"):
        exps = np.exp(row - row.max())
    return exps / exps.sum(dtype=np.float32)


# ------------------------------------------------------------------------------------------------ penalties


def window(ids: np.ndarray, last_n: int | None) -> np.ndarray:
    """The penalty window of each row: its last `last_n` ids (None: all of them)."""
    return ids if last_n is None else ids[:, max(ids.shape[1] - last_n, 0) :]


class FrequencyPresencePenalty(Processor):
    """llama.cpp's frequency and presence penalties (its `penalties` sampler without the repeat penalty,
    which is `repetition_penalty`): every token occurring c > 0 times in the window gets
    logit - (c * frequency_penalty + presence_penalty), in float32 as llama.cpp.

    llama.cpp's window holds the tokens its caller accepted (llama-server: the prompt's and the output's);
    here it is the last `penalty_last_n` ids of prompt and output (unset: all of them; llama.cpp's -1, the
    context size, is unset here, and its 0, penalties off, is leaving the penalties unset).

    Args:
        frequency_penalty: `frequency_penalty`, finite (0.0 with presence_penalty 0.0 is off).
        presence_penalty: `presence_penalty`, finite.
        last_n: `penalty_last_n`, >= 1, or None for the whole history.

    Example: id 0 occurs twice, id 1 once.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import FrequencyPresencePenalty
    >>> FrequencyPresencePenalty(1.0, 0.5)(np.array([[0, 1, 0]]), np.zeros((1, 3), np.float32)).tolist()
    [[-2.5, -1.5, 0.0]]
    """

    name = "frequency_penalty"

    def __init__(self, frequency_penalty: float, presence_penalty: float = 0.0, last_n: int | None = None):
        self.frequency_penalty = frequency_penalty
        self.presence_penalty = presence_penalty
        self.last_n = last_n

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = scores.copy()
        for row, history in zip(out, window(ids, self.last_n), strict=True):
            tokens, counts = np.unique(history[history < scores.shape[1]], return_counts=True)
            penalty = counts.astype(np.float32) * np.float32(self.frequency_penalty) + np.float32(
                self.presence_penalty)
            row[tokens] -= penalty
        return out

    def params(self) -> dict[str, Any]:
        return {"frequency_penalty": self.frequency_penalty, "presence_penalty": self.presence_penalty,
                "penalty_last_n": self.last_n}


# ------------------------------------------------------------------------------------------------------ DRY


class Dry(Processor):
    """DRY ("don't repeat yourself", koboldcpp's, as llama.cpp ports it): a token that would extend a sequence
    that already occurred in the window, repeating its n >= allowed_length last tokens, gets
    logit - multiplier * base^(n - allowed_length) (n the longest such repeat; the exponent clamped so the
    penalty stays a finite float32). A repeat does not reach back across a sequence breaker, and a token that is
    itself a whole breaker is never penalised.

    Sequence breakers are token sequences here (head token -> tails), as llama.cpp's
    `llama_sampler_init_dry_testing` takes them; `breaker_sequences` makes them from strings over a vocabulary
    as `llama_sampler_init_dry` does.

    Args:
        multiplier: `dry_multiplier`, >= 0 (0.0 is off).
        base: `dry_base`, >= 1.
        allowed_length: `dry_allowed_length`, >= 0.
        penalty_last_n: `dry_penalty_last_n`: the window, -1 for the whole history, 0 for none (off).
        breakers: (head token, tail tokens) pairs; an empty tail is a one-token breaker.

    Example: llama.cpp's test: after 0 1 2 0 1, token 2 would repeat "0 1 2": 0.25 each becomes 0.109 for it.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import Dry
    >>> out = Dry(1.0, 1.1, 2, 5)(np.array([[0, 1, 2, 0, 1]]), np.log(np.full((1, 4), 0.25, np.float32)))
    >>> [round(float(p), 6) for p in np.exp(out[0]) / np.exp(out[0]).sum()]
    [0.296923, 0.296923, 0.109232, 0.296923]
    """

    name = "dry_multiplier"

    def __init__(
        self, multiplier: float, base: float = 1.75, allowed_length: int = 2, penalty_last_n: int = -1,
        breakers: Sequence[tuple[int, Sequence[int]]] | Callable[[int], Sequence[tuple[int, Sequence[int]]]] = (),
    ):
        self.multiplier = multiplier
        self.base = base
        self.allowed_length = allowed_length
        self.penalty_last_n = penalty_last_n
        self._make_breakers = breakers if callable(breakers) else None
        self.breakers: dict[int, list[tuple[int, ...]]] = {}
        if not callable(breakers):
            self._add_breakers(breakers)

    def _add_breakers(self, pairs: Sequence[tuple[int, Sequence[int]]]) -> None:
        for head, tail in pairs:
            self.breakers.setdefault(int(head), []).append(tuple(int(t) for t in tail))

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._make_breakers is not None:  # over the vocabulary, once its size is known
            self._add_breakers(self._make_breakers(scores.shape[1]))
            self._make_breakers = None
        out = scores.copy()
        for row, history in zip(out, ids, strict=True):
            for token, length in self._repeats(history.tolist()).items():
                if token < row.size and () not in self.breakers.get(token, ()):
                    row[token] -= self._penalty(length)
        return out

    def _penalty(self, length: int) -> np.float32:
        exponent = length - self.allowed_length
        if self.base > 1.000001:  # llama.cpp: clamp so that base^exponent stays below float32's max
            exponent = min(exponent, int(np.float32(88.7228391) / np.float32(math.log(self.base))))
        return np.float32(self.multiplier) * np.float32(float(np.float32(self.base)) ** exponent)  # C's pow(double)

    def _repeats(self, history: list[int]) -> dict[int, int]:
        """For each token that would extend a repeat of at least allowed_length: the longest such repeat."""
        if self.multiplier == 0.0 or self.penalty_last_n == 0:
            return {}
        last = history if self.penalty_last_n == -1 else history[-self.penalty_last_n :]
        size = len(last)
        if size <= self.allowed_length:
            return {}
        recent = last[::-1]  # recent[i]: the token i places from the end
        limit = self._repeat_limit(recent)
        if limit < self.allowed_length:
            return {}
        longest: dict[int, int] = {}
        for k, n in enumerate(_z_function(recent)[1:], start=1):  # the suffix ending k tokens before the end
            n = min(n, limit)
            if n >= self.allowed_length:
                follower = recent[k - 1]  # what followed that earlier occurrence
                longest[follower] = max(longest.get(follower, 0), n)
        return longest

    def _repeat_limit(self, recent: list[int]) -> int:
        """How far back a repeat may reach: up to the most recent complete sequence breaker."""
        for i, token in enumerate(recent):
            tails = [tail for tail in self.breakers.get(token, ()) if len(tail) <= i
                     and all(tail[offset] == recent[i - offset - 1] for offset in range(len(tail)))]
            if tails:
                return i - max(len(tail) for tail in tails)
        return len(recent)

    def params(self) -> dict[str, Any]:
        return {"dry_multiplier": self.multiplier, "dry_base": self.base, "dry_allowed_length": self.allowed_length,
                "dry_penalty_last_n": self.penalty_last_n,
                "breakers": [[head, list(tail)] for head, tails in self.breakers.items() for tail in tails]}

    def describe(self) -> str:
        return f"dry_multiplier={self.multiplier}, dry_base={self.base}, dry_allowed_length={self.allowed_length}"


def _z_function(values: list[int]) -> list[int]:
    """z[k]: the length of the longest common prefix of `values` and `values[k:]` (Gusfield's Z algorithm, linear:
    a history that loops, what DRY is for, would make a plain scan quadratic)."""
    size = len(values)
    z = [0] * size
    left = right = 0
    for k in range(1, size):
        if k < right:
            z[k] = min(right - k, z[k - left])
        while k + z[k] < size and values[z[k]] == values[k + z[k]]:
            z[k] += 1
        if k + z[k] > right:
            left, right = k, k + z[k]
    return z


def breaker_sequences(
    strings: Sequence[str], vocab_size: int, text_of: Callable[[int], str], encode: Callable[[str], list[int]]
) -> list[tuple[int, tuple[int, ...]]]:
    """DRY's sequence breakers over a vocabulary, as llama.cpp's `get_overlapping_token_sequences` makes them
    (strings cut to 40 characters, tails to 20 tokens): every token whose text contains a breaker is a one-token
    breaker; a token whose text ends with the start of a breaker heads the rest of it, tokenized."""
    found: dict[tuple[int, tuple[int, ...]], None] = {}
    texts = [text_of(token) for token in range(vocab_size)]
    for string in (s[:40] for s in strings if s):
        for token, word in enumerate(texts):
            if string in word:
                found[(token, ())] = None
                continue
            position = word.find(string[0])
            while position != -1:
                overlap = word[position:]
                if string.startswith(overlap):
                    found[(token, tuple(encode(string[len(overlap):])[:20]))] = None
                position = word.find(string[0], position + 1)
    return list(found)


# -------------------------------------------------------------------------------------------- top-nσ, XTC


class TopNSigma(_RowWarper):
    """Top-nσ: keep the tokens whose logit is at least max - n * σ, σ the standard deviation of the finite
    logits (llama.cpp's: over the candidates it holds; the paper's is over the whole vocabulary, the same when
    nothing is filtered before it). Statistics in float64 here, float32 in llama.cpp: a logit within rounding
    of the cut may fall on the other side.

    Args:
        n: `top_n_sigma`, > 0 (0.0 is off: llama.cpp's n <= 0 is a no-op).

    Example: llama.cpp's test: probabilities 0.1, 0.2, 0.3, 0.4 and n = 1 keep the two best.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import TopNSigma
    >>> scores = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], dtype=np.float32))
    >>> np.flatnonzero(TopNSigma(1.0)(np.array([[0]]), scores)[0] > -np.inf).tolist()
    [2, 3]
    """

    name = "top_n_sigma"

    def __init__(self, n: float):
        self.n = n

    def kept_ids(self, row: np.ndarray) -> np.ndarray:
        finite = row[row > -np.inf].astype(np.float64)
        cut = finite.max() - self.n * finite.std()
        return np.flatnonzero((row >= np.float32(cut)) & (row > -np.inf)) if finite.size > 1 else _finite_ids(row)

    def params(self) -> dict[str, Any]:
        return {"top_n_sigma": self.n}


class Xtc(Processor):
    """XTC (exclude top choices): with probability `probability` per step (a coin from the lane's seeded
    generator, drawn only when the step has two candidates or more and threshold <= 0.5, as in llama.cpp),
    drop every candidate whose probability is at least `threshold` except the least likely of them. Tied
    candidates are ranked lower id first, so among tied least likely ones the last id survives.

    Args:
        probability: `xtc_probability`, in (0, 1] (0.0 is off).
        threshold: `xtc_threshold`, in [0, 1] (above 0.5 XTC does nothing, as in llama.cpp).
        coin: the lane's uniform draws in [0, 1) (its Sampler.next_u); XTC acts when coin <= probability.

    Example: llama.cpp's test: 0.4, 0.3, 0.2, 0.1 with threshold 0.19 (a coin of 0.5 against 0.99) keeps the
    0.2 and the 0.1.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import Xtc
    >>> xtc = Xtc(0.99, 0.19, coin=lambda: 0.5)
    >>> out = xtc(np.array([[0]]), np.log(np.array([[0.4, 0.3, 0.2, 0.1]], dtype=np.float32)))
    >>> np.flatnonzero(out[0] > -np.inf).tolist(), xtc.last_coin
    ([2, 3], 0.5)
    """

    name = "xtc_probability"
    filters_only = True
    stateful: ClassVar[bool] = True

    def __init__(self, probability: float, threshold: float = 0.1, coin: Callable[[], float] | None = None):
        self.probability = probability
        self.threshold = threshold
        self.coin = coin
        self.last_coin: float | None = None

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = scores.copy()
        self.last_coin = None
        for row in out:
            if self.threshold > 0.5 or np.count_nonzero(row > -np.inf) < 2:
                continue
            self.last_coin = self.coin()
            if self.last_coin > self.probability:
                continue
            probs = _probs(row)
            # a candidate only (finite score): at threshold 0 a filtered token's probability 0 is "at least" it
            above = np.flatnonzero((probs >= np.float32(self.threshold)) & (row > -np.inf))
            if above.size > 1:  # the least likely of them stays
                row[above[order_desc(probs[above], above)][:-1]] = FILTER
        return out

    def reset(self) -> None:
        self.last_coin = None

    def record_state(self, record: Any) -> None:
        record.xtc_coin = self.last_coin

    def params(self) -> dict[str, Any]:
        return {"xtc_probability": self.probability, "xtc_threshold": self.threshold}


# -------------------------------------------------------------------------------------- dynamic temperature


class DynamicTemperature(Processor):
    """Dynamic temperature (llama.cpp's `temp_ext`): T = max(0, t - r) + 2r * (H / log N)^exponent, H the
    entropy of the candidates' softmax and N their number (llama.cpp's min_temp + (max_temp - min_temp) *
    normalized_entropy^exponent); then divide the logits by T (T <= 0 keeps only the best token, as llama.cpp's
    temperature 0). With one candidate nothing changes. It takes temperature's place in the chain.

    Args:
        temperature: `temperature` (the centre; 1.0 when the lane leaves it unset), > 0.
        dynatemp_range: `dynatemp_range`, > 0 (0.0 is off: plain temperature).
        exponent: `dynatemp_exponent`, >= 0.

    Example: a uniform distribution has the highest entropy: T = t + r = 1.5.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import DynamicTemperature
    >>> DynamicTemperature(1.0, 0.5)(np.array([[0]]), np.array([[3.0, 3.0, 3.0]], np.float32)).tolist()
    [[2.0, 2.0, 2.0]]
    """

    name = "dynatemp_range"

    def __init__(self, temperature: float, dynatemp_range: float, exponent: float = 1.0):
        self.temperature = temperature
        self.dynatemp_range = dynatemp_range
        self.exponent = exponent

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = scores.copy()
        for row in out:
            finite = _finite_ids(row)
            if finite.size <= 1:
                continue
            temperature = self.temperature_for(row[finite])
            if temperature <= 0.0:
                best = finite[np.argmax(row[finite])]
                row[finite[finite != best]] = FILTER
            else:
                row[finite] = row[finite] / temperature
        return out

    def temperature_for(self, logits: np.ndarray) -> np.float32:
        """The temperature llama.cpp computes for these (finite) logits, in float32."""
        low = np.float32(max(0.0, self.temperature - self.dynatemp_range))
        high = np.float32(self.temperature + self.dynatemp_range)
        exps = np.exp(logits - logits.max())
        probs = exps / exps.sum(dtype=np.float32)
        positive = probs[probs > 0]
        entropy = -np.sum(positive * np.log(positive), dtype=np.float32)
        normalized = entropy / np.float32(-math.log(1.0 / logits.size))
        return np.float32(low + (high - low) * np.float32(normalized) ** np.float32(self.exponent))

    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "dynatemp_range": self.dynatemp_range,
                "dynatemp_exponent": self.exponent}


# ------------------------------------------------------------------------------------------------ mirostat


class Mirostat(Processor):
    """Mirostat (llama.cpp's `mirostat` (1) and `mirostat_v2` (2)): truncate with the lane's running target
    surprise `mu` (bits; it starts at 2 * tau), then the lane draws from what is left, and mu moves by
    -eta * (surprise of the chosen token - tau), the surprise -log2 of its probability after the truncation
    (`next_mu`). Version 2 keeps the candidates whose surprise is at most mu (at least the best one); version 1
    estimates the Zipf exponent s from the m = 100 best candidates and keeps the k best, k = (ε 2^mu / (1 -
    N^-ε))^(1/s), ε = s - 1, N the vocabulary's size. It must be the chain's last stage (it chooses the
    distribution the lane draws from), as in llama.cpp, where it draws itself.

    Args:
        version: `mirostat`, 1 or 2 (0 is off).
        tau: `mirostat_tau`, >= 0.
        eta: `mirostat_eta`, >= 0.

    Example: version 2 with mu = 2 bits keeps the tokens of probability >= 1/4.

    >>> import numpy as np
    >>> from decoding.chain.llama_samplers import Mirostat
    >>> mirostat = Mirostat(2, tau=1.0, eta=0.1)
    >>> out = mirostat(np.array([[0]]), np.log(np.array([[0.5, 0.3, 0.15, 0.05]], dtype=np.float32)))
    >>> np.flatnonzero(out[0] > -np.inf).tolist(), mirostat.mu
    ([0, 1], 2.0)
    >>> round(mirostat.next_mu(0.625), 6)  # the chosen token had 0.5 / 0.8 after the cut: 0.678 bits, below tau
    2.032193
    """

    name = "mirostat"
    filters_only = True
    stateful: ClassVar[bool] = True
    CANDIDATES_FOR_S = 100  # llama.cpp's m

    def __init__(self, version: int, tau: float = 5.0, eta: float = 0.1):
        self.version = version
        self.tau = tau
        self.eta = eta
        self.mu = self.first_mu()

    def first_mu(self) -> float:
        return float(np.float32(2.0) * np.float32(self.tau))

    def next_mu(self, chosen_prob: float) -> float:
        """mu after choosing a token of probability `chosen_prob` (after the truncation), in float32."""
        surprise = -np.log2(np.float32(chosen_prob))
        return float(np.float32(self.mu) - np.float32(self.eta) * (np.float32(surprise) - np.float32(self.tau)))

    def accept(self, token: int, prob: float, forced: bool = False) -> None:
        """mu follows the chosen tokens (a forced one moves it not)."""
        if not forced:
            self.mu = self.next_mu(prob)

    def reset(self) -> None:
        self.mu = self.first_mu()

    def record_state(self, record: Any) -> None:
        record.mirostat_mu = self.mu

    def process(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        out = np.full_like(scores, FILTER)
        for src, dst in zip(scores, out, strict=True):
            if src.max() > -np.inf:
                kept = self._kept_v2(src) if self.version == 2 else self._kept_v1(src)
                dst[kept] = src[kept]
        return out

    def _kept_v2(self, row: np.ndarray) -> np.ndarray:
        """The candidates whose surprise -log2 p is at most mu (at least the best one): the prefix of the sorted
        array llama.cpp keeps, found by a threshold (the exact test only on those near it)."""
        probs = _probs(row)
        mu = np.float32(self.mu)
        near = np.flatnonzero(probs >= np.float32(2.0 ** -(float(mu) + 1e-3)))
        kept = near[-np.log2(probs[near]) <= mu]
        return kept if kept.size else top_candidates(row, 1)

    def _kept_v1(self, row: np.ndarray) -> np.ndarray:
        """The k best candidates, k from the Zipf exponent estimated on the m best (their sorted probabilities)."""
        finite = int(np.count_nonzero(row > -np.inf))
        best = top_candidates(row, min(self.CANDIDATES_FOR_S, finite))
        probs = _probs(row)[best]
        count = min(self.CANDIDATES_FOR_S - 1, finite - 1)
        if count < 1:
            return best[:1]
        index = np.arange(count, dtype=np.float32)
        t = np.log((index + 2) / (index + 1))
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # underflowed probabilities: as in C
            b = np.log(probs[:count] / probs[1 : count + 1])
            s_hat = np.float32(np.sum(t * b, dtype=np.float32) / np.sum(t * t, dtype=np.float32))
            epsilon_hat = s_hat - np.float32(1)
            k = (epsilon_hat * np.float32(2) ** np.float32(self.mu) / (1 - np.float32(row.size) ** -epsilon_hat)) ** (
                1 / s_hat)
        k = max(int(k), 1) if np.isfinite(k) else (finite if k > 0 else 1)
        return best[:k] if k <= best.size else top_candidates(row, min(k, finite))

    def params(self) -> dict[str, Any]:
        return {"mirostat": self.version, "mirostat_tau": self.tau, "mirostat_eta": self.eta}
