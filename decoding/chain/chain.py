"""A lane's chain, as llama.cpp's sampler chain (src/llama-sampling.cpp): stages, then one selector.

The stages are the processors its config turns on, transformers' logits processors (decoding.chain.processors)
and llama.cpp's samplers (decoding.chain.llama_samplers, which build on the former's base classes), each with
its parameters, in transformers' order or the lane's own (decoding.chain.parameters). The selector chooses the
token from what they leave (decoding.chain.selectors: `Argmax`, or `Sampler`, whose generator also flips XTC's
coin). Every stage and the chain itself have llama.cpp's interface: apply, accept, reset, clone. This module is
the one place that tells stages apart by their class (the other modules ask the chain).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from decoding.chain import llama_samplers as L
from decoding.chain.adaptive import decision, widened
from decoding.chain.parameters import BY_NAME, active_processors, check_int
from decoding.chain.processors import (
    BadWords,
    Epsilon,
    Eta,
    MaskProcessor,
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
    apply_processors,
    min_tokens_to_keep_for,
)
from decoding.chain.selectors import ARGMAX, Sampler, Selector
from decoding.chain.spec import LaneSpec
from decoding.records.stats import Softmax


def build_processors(
    config: Mapping[str, Any], prompt_len: int, eos_ids: Sequence[int], num_beams: int = 1,
    order: Sequence[str] | str | None = None,
) -> list[Processor]:
    """The processors a GenerationConfig-style `config` that no LaneSpec validated names: each of its values is
    checked against its row of the parameter table first (a ParameterError naming it and what it allows), then
    `stages_of` (no DRY breakers, no XTC coin: a chain's own are build_chain's).

    Example: top_k=0 is off; the warpers apply only under do_sample, the penalties always.

    >>> from decoding.chain.chain import build_processors
    >>> config = {"do_sample": True, "top_p": 0.9, "temperature": 0.7, "top_k": 0}
    >>> [p.describe() for p in build_processors(config, prompt_len=3, eos_ids=[2])]
    ['temperature=0.7', 'top_p=0.9']
    >>> [p.name for p in build_processors({"temperature": 0.7, "repetition_penalty": 1.2}, 3, [2])]
    ['repetition_penalty']
    >>> build_processors({"do_sample": True, "top_p": 1.5}, 3, [2])
    Traceback (most recent call last):
    ...
    decoding.chain.parameters.ParameterError: invalid top_p=1.5: allowed a float in [0, 1]
    """
    for name, value in config.items():
        row = BY_NAME.get(name)
        if row is not None and value is not None:
            row.check(value)
    return stages_of(config, prompt_len, eos_ids, check_int("num_beams", num_beams, 1), order)


def stages_of(
    values: Mapping[str, Any],
    prompt_len: int,
    eos_ids: Sequence[int],
    num_beams: int = 1,
    order: Sequence[str] | str | None = None,
    breakers: Callable[[int], Sequence[tuple[int, Sequence[int]]]] | None = None,
    coin: Callable[[], float] | None = None,
) -> list[Processor]:
    """The processors validated `values` (a LaneSpec's, LaneSpec.values; an unset parameter may be left out) turn
    on, nothing else (no hidden top_k=50), in transformers' order or in `order` (a list, or a preset name:
    "transformers", "llama.cpp"), each made from the values as they are. `min_new_tokens` without eos ids builds
    nothing, as in transformers. `breakers`: DRY's sequence breakers over the model's vocabulary
    (decoding.chain.llama_samplers.breaker_sequences for its size), when DRY is on. `coin`: XTC's uniform draws
    (the lane's selector's, build_chain)."""
    keep = min_tokens_to_keep_for(num_beams, eos_ids)

    def value(name: str) -> Any:
        return values.get(name, BY_NAME[name].default)

    last_n = value("penalty_last_n")
    makers = {
        "sequence_bias": lambda v: SequenceBias(v),
        "repetition_penalty": lambda v: RepetitionPenalty(v, last_n),
        "frequency_penalty": lambda v: L.FrequencyPresencePenalty(v or 0.0, value("presence_penalty") or 0.0, last_n),
        "dry_multiplier": lambda v: L.Dry(v, value("dry_base"), value("dry_allowed_length"),
                                          value("dry_penalty_last_n"), _breakers_for(value, breakers)),
        "no_repeat_ngram_size": lambda v: NoRepeatNGram(v),
        "bad_words_ids": lambda v: BadWords(v, eos_ids),
        "min_new_tokens": lambda v: MinNewTokens(v, prompt_len, eos_ids),
        "suppress_tokens": lambda v: SuppressTokens(v),
        "temperature": lambda v: Temperature(v),
        "dynatemp_range": lambda v: L.DynamicTemperature(value("temperature") or 1.0, v, value("dynatemp_exponent")),
        "top_k": lambda v: TopK(v, keep),
        "top_p": lambda v: TopP(v, keep),
        "min_p": lambda v: MinP(v, keep),
        "typical_p": lambda v: Typical(v, keep),
        "epsilon_cutoff": lambda v: Epsilon(v, keep),
        "eta_cutoff": lambda v: Eta(v, keep),
        "top_n_sigma": lambda v: L.TopNSigma(v),
        "xtc_probability": lambda v: L.Xtc(v, value("xtc_threshold"), coin),
        "mirostat": lambda v: L.Mirostat(v, value("mirostat_tau"), value("mirostat_eta")),
    }
    names = active_processors(values, order)
    if not eos_ids and "min_new_tokens" in names:
        names.remove("min_new_tokens")
    return [makers[name](values.get(name)) for name in names]


def _breakers_for(value: Callable[[str], Any], breakers: Callable | None) -> Callable[[int], Sequence] | Sequence:
    """DRY's breakers: from the lane's vocabulary when given, else none (a chain built without a tokenizer)."""
    strings = tuple(value("dry_sequence_breakers"))
    return (lambda vocab_size: breakers(vocab_size, strings)) if breakers is not None else ()


class Chain:
    """A lane's chain: `stages` (processors) applied in order, then `selector`, which chooses the token (a beam
    lane's tokens are its BeamSearch's: decoding.engine.beam). An adaptive lane (decoding.chain.adaptive) has a
    second list of stages for its "widen" steps, `widened`, sharing the stateful stages (one XTC coin a step).

    llama.cpp's interface: `apply` the stages, `accept` each token the lane takes (mirostat's mu follows it),
    `reset` to the state it was made with, `clone` with its state (the selector's generator and the stages drawing
    from it stay one). `record_state` writes the state a step used into its record."""

    name = "chain"

    def __init__(self, stages: list[Processor], selector: Selector, widened: list[Processor] | None = None) -> None:
        self.stages, self.selector, self.widened = stages, selector, widened

    def apply(self, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return apply_processors(self.stages, ids, scores)

    def accept(self, token: int, prob: float, forced: bool = False) -> None:
        for stage in self.stages:
            stage.accept(token, prob, forced)
        self.selector.accept(token, prob, forced)

    def reset(self) -> None:
        for stage in self.stages:
            stage.reset()
        self.selector.reset()

    def clone(self) -> Chain:
        return copy.deepcopy(self)  # one deep copy: shared parts (XTC's coin, the widened stages) stay shared

    def record_state(self, record: Any) -> None:
        for stage in self.stages:
            stage.record_state(record)

    @cached_property
    def stateful(self) -> bool:
        """A stage carries state from step to step (XTC's coin, mirostat's mu), or the chain is picked step by step
        (adaptive): its lane decides alone."""
        return self.widened is not None or any(stage.stateful for stage in self.stages)

    @cached_property
    def key(self) -> tuple:
        """Equal for chains whose stages are equal (same kinds, same parameters): their lanes' rows are processed
        alike, whatever their selectors (greedy and sampled lanes decide in one group)."""
        return tuple((type(p).__name__, repr(sorted(vars(p).items()))) for p in self.stages)

    @cached_property
    def filters_only(self) -> bool:
        return filters_only(self.stages)

    @cached_property
    def masks_only(self) -> bool:
        """Every stage sets ids it reads off the history to -inf (MaskProcessor.banned)."""
        return all(isinstance(stage, MaskProcessor) for stage in self.stages)

    def step(self, raw_softmax: Softmax | None) -> tuple[str | None, list[Processor], Selector]:
        """This step's (adaptive decision, stages, selector): an adaptive lane's decision from the raw distribution
        (None for any other lane) picks its widened stages or the argmax."""
        if self.widened is None:
            return None, self.stages, self.selector
        decided = decision(raw_softmax.entropy(), raw_softmax.varentropy()) if raw_softmax is not None else "sample"
        stages = self.widened if decided == "widen" else self.stages
        return decided, stages, ARGMAX if decided == "argmax" else self.selector


def build_chain(
    spec: LaneSpec, prompt_len: int, eos_ids: Sequence[int],
    breakers: Callable[[int], Sequence[tuple[int, Sequence[int]]]] | None = None,
) -> Chain:
    """The chain of LaneSpec `spec` (validated when it was made): its processors, its selector (a seeded draw
    when it samples, else argmax) and, for an adaptive lane, its widened stages."""
    if spec.do_sample and spec.seed is None:
        raise ValueError(f"lane {spec.name!r} samples without a seed (assign_seeds gives it one)")
    selector = Sampler(spec.seed) if spec.do_sample else ARGMAX
    coin = selector.next_u if spec.do_sample else None
    values = spec.values()
    stages = stages_of(values, prompt_len, eos_ids, spec.num_beams, spec.processor_order, breakers, coin)
    wide = None
    if spec.adaptive:
        shared = {stage.name: stage for stage in stages if stage.stateful}
        wide = [shared.get(p.name, p) for p in stages_of(widened(values), prompt_len, sorted(eos_ids),
                                                          order=spec.processor_order)]
    return Chain(stages, selector, wide)


def filters_only(stages: Sequence[Processor]) -> bool:
    """Every stage only sets scores to -inf."""
    return all(stage.filters_only for stage in stages)


def front_masks(stages: Sequence[Processor]) -> int:
    """How many MaskProcessors open the chain (their stages are derived from the ids they ban)."""
    count = 0
    while count < len(stages) and isinstance(stages[count], MaskProcessor):
        count += 1
    return count


def uniforms_drawn(records: Sequence[Any]) -> int:
    """How many uniforms a sampled lane's generator gave for these StepRecords of its own: one for a draw's u, one
    for XTC's coin (the same generator): what a lane continuing them skips first (Prefix.draws)."""
    return sum((record.draw is not None) + (record.xtc_coin is not None) for record in records)
