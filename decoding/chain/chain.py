"""A lane's processor chain: the processors its GenerationConfig-style config turns on, transformers'
logits processors (decoding.chain.processors) and llama.cpp's samplers (decoding.chain.llama_samplers, which
build on the former's base classes), each with its parameters, in transformers' order or the lane's own
(decoding.chain.parameters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from decoding.chain import llama_samplers as L
from decoding.chain.parameters import PARAMETERS, active_processors, check_int
from decoding.chain.processors import (
    BadWords,
    Epsilon,
    Eta,
    MinNewTokens,
    MinP,
    NoRepeatNGram,
    Processor,
    RepetitionPenalty,
    SequenceBias,
    SuppressTokens,
    Temperature,
    TopK,
    TopP,
    Typical,
    min_tokens_to_keep_for,
)


def build_processors(
    config: dict[str, Any],
    prompt_len: int,
    eos_ids: Sequence[int],
    num_beams: int = 1,
    order: Sequence[str] | str | None = None,
    breakers: Callable[[int], Sequence[tuple[int, Sequence[int]]]] | None = None,
) -> list[Processor]:
    """The processors a lane's GenerationConfig-style `config` names, nothing else (no hidden top_k=50), in
    transformers' order or in `order` (a list, or a preset name: "transformers", "llama.cpp").
    `min_new_tokens` without eos ids builds nothing, as in transformers. `breakers`: DRY's sequence breakers
    over the model's vocabulary (decoding.chain.llama_samplers.breaker_sequences for its size), when DRY is on.
    XTC's coin and mirostat's mu come from the lane (SingleRowLaneState wires them).

    Example: top_k=0 is off; the warpers apply only under do_sample, the penalties always.

    >>> from decoding.chain.chain import build_processors
    >>> config = {"do_sample": True, "top_p": 0.9, "temperature": 0.7, "top_k": 0}
    >>> [p.describe() for p in build_processors(config, prompt_len=3, eos_ids=[2])]
    ['temperature=0.7', 'top_p=0.9']
    >>> [p.name for p in build_processors({"temperature": 0.7, "repetition_penalty": 1.2}, 3, [2])]
    ['repetition_penalty']
    """
    keep = min_tokens_to_keep_for(check_int("num_beams", num_beams, 1), eos_ids)
    value = {p.name: config.get(p.name, p.default) for p in PARAMETERS}
    last_n = config.get("penalty_last_n")
    makers = {
        "sequence_bias": lambda v: SequenceBias(v),
        "repetition_penalty": lambda v: RepetitionPenalty(v, last_n),
        "frequency_penalty": lambda v: L.FrequencyPresencePenalty(v or 0.0, value["presence_penalty"] or 0.0, last_n),
        "dry_multiplier": lambda v: L.Dry(v, value["dry_base"], value["dry_allowed_length"],
                                          value["dry_penalty_last_n"], _breakers_for(value, breakers)),
        "no_repeat_ngram_size": lambda v: NoRepeatNGram(v),
        "bad_words_ids": lambda v: BadWords(v, eos_ids),
        "min_new_tokens": lambda v: MinNewTokens(v, prompt_len, eos_ids),
        "suppress_tokens": lambda v: SuppressTokens(v),
        "temperature": lambda v: Temperature(v),
        "dynatemp_range": lambda v: L.DynamicTemperature(value["temperature"] or 1.0, v, value["dynatemp_exponent"]),
        "top_k": lambda v: TopK(v, keep),
        "top_p": lambda v: TopP(v, keep),
        "min_p": lambda v: MinP(v, keep),
        "typical_p": lambda v: Typical(v, keep),
        "epsilon_cutoff": lambda v: Epsilon(v, keep),
        "eta_cutoff": lambda v: Eta(v, keep),
        "top_n_sigma": lambda v: L.TopNSigma(v),
        "xtc_probability": lambda v: L.Xtc(v, value["xtc_threshold"]),
        "mirostat": lambda v: L.Mirostat(v, value["mirostat_tau"], value["mirostat_eta"]),
    }
    names = active_processors(config, order)
    if not eos_ids and "min_new_tokens" in names:
        names.remove("min_new_tokens")
    return [makers[name](config.get(name)) for name in names]


def _breakers_for(value: dict[str, Any], breakers: Callable | None) -> Callable[[int], Sequence] | Sequence:
    """DRY's breakers: from the lane's vocabulary when given, else none (a chain built without a tokenizer)."""
    strings = tuple(value["dry_sequence_breakers"])
    return (lambda vocab_size: breakers(vocab_size, strings)) if breakers is not None else ()
