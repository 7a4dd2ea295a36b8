"""The lane parameters: one row per strategy parameter of a LaneSpec, and the one validator of numbers.

Every rule about a parameter lives in its row: its type and allowed range, the value that builds no processor
(as in transformers), its place in transformers' processor order, the strategies it means something for, what
it does, the transformers name it follows and what the window's editor needs to show it. LaneSpec validation
(the one check of a lane's values: its processors take them as they are), CLI lane parsing, the chain's choice of
processors, the window's lane editor, the CLI's help and docs/json-format.md (a test compares them) all read this
table.

Names are Hugging Face `GenerationConfig` names, except `seed` (transformers seeds one global generator,
`set_seed`; Branchpoint gives each sampled lane its own) and the samplers transformers does not have, which
take llama.cpp's names and semantics (`common_params_sampling`, `src/llama-sampling.cpp`): top_n_sigma, XTC,
DRY, mirostat, dynamic temperature, presence / frequency penalties and their window. A processor with several
parameters has one row that turns it on (its `order`) and companion rows (`stage` names it).
"""

from __future__ import annotations

import functools
import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

HF_DOCS = "https://huggingface.co/docs/transformers/"
LLAMA_CPP_SAMPLING = "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-sampling.cpp"
ENTROPIX = "https://github.com/xjdr-alt/entropix"
HF_PAGES = {"GenerationConfig": "main_classes/text_generation", "set_seed": "internal/trainer_utils"}


# ----------------------------------------------------------------------------------------------- validation


def _is_number(value: Any) -> bool:
    numeric = isinstance(value, int | float | np.integer | np.floating)
    return numeric and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class Range:
    """An interval of numbers; an infinite end is always open. `high_name` names a bound that comes from
    another parameter (shown as "num_beams=4").

    >>> from decoding.chain.parameters import Range
    >>> Range(0.0, 1.0, low_open=True).check("typical_p", 0.95)
    0.95
    >>> Range(0.0, 1.0, low_open=True).check("typical_p", 0.0)
    Traceback (most recent call last):
    ...
    decoding.chain.parameters.ParameterError: invalid typical_p=0.0: allowed a float in (0, 1]
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    high_name: str = ""

    def contains(self, value: Any) -> bool:
        if not _is_number(value) or (self.integer and not isinstance(value, int | np.integer)):
            return False
        above = value > self.low if self.low_open or self.low == -math.inf else value >= self.low
        below = value < self.high if self.high_open or self.high == math.inf else value <= self.high
        return bool(above and below)

    def describe(self) -> str:
        """The allowed values in words: "an integer >= 1", "a float in (0, 1]", "a finite float"."""
        if self.integer:
            if self.high == math.inf:
                return f"an integer >= {self.low_text}"
            return f"an integer in [{self.low_text}, {self.high_text}]"
        if self.low == -math.inf and self.high == math.inf:
            return "a finite float"
        left, right = self.brackets
        return f"a float in {left}{self.low_text}, {self.high_text}{right}"

    @property
    def low_text(self) -> str:
        return f"{self.low:g}"

    @property
    def high_text(self) -> str:
        high = "inf" if self.high == math.inf else f"{self.high:g}"
        return f"{self.high_name}={high}" if self.high_name else high

    @property
    def brackets(self) -> tuple[str, str]:
        """How each end is written: "[" / "]" closed, "(" / ")" open (an infinite end is open)."""
        left = "(" if self.low_open or self.low == -math.inf else "["
        right = ")" if self.high_open or self.high == math.inf else "]"
        return left, right

    def check(self, name: str, value: Any) -> Any:
        """`value` as an int or float, or a ParameterError naming the parameter, the value and this range."""
        if not self.contains(value):
            fail(name, value, Allowed.within(self))
        return int(value) if self.integer else float(value)


@dataclass(frozen=True)
class Allowed:
    """What a parameter allows, as data: `kind` "integer" or "float" (within `range`), "bool", "choice" (one of
    `choices`), "texts" (a list of non-empty strings) or "rule" (any other rule, worded in English in `rule`: the
    token-id list kinds, a combination of parameters such as "unset with mirostat=2").
    The window words it in its own language from these fields; `describe` is the English."""

    kind: str
    range: Range | None = None
    choices: tuple[Any, ...] = ()
    rule: str = ""

    @staticmethod
    def within(numbers: Range) -> Allowed:
        return Allowed("integer" if numbers.integer else "float", range=numbers)

    @property
    def shown_choices(self) -> list[str]:
        return [json.dumps(choice) for choice in self.choices]

    def describe(self) -> str:
        if self.range is not None:
            return self.range.describe()
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            shown = self.shown_choices
            return f"{', '.join(shown[:-1])} or {shown[-1]}"
        if self.kind == "texts":
            return "a list of non-empty strings"
        return self.rule


class ParameterError(ValueError):
    """A refused value: the parameter, the value and what the parameter allows (`allowed`: the kind of bound and
    its ends). str() is the one English sentence of every refusal, which the command line prints:
    "invalid top_p=1.5: allowed a float in [0, 1]"."""

    def __init__(self, parameter: str, value: Any, allowed: Allowed) -> None:
        super().__init__(f"invalid {parameter}={value!r}: allowed {allowed.describe()}")
        self.parameter = parameter
        self.value = value
        self.allowed = allowed

    def __reduce__(self):  # pickled and copied by its fields (ValueError's would pass only the sentence)
        return type(self), (self.parameter, self.value, self.allowed)


def fail(name: str, value: Any, allowed: Allowed | str) -> None:
    """Refuse `value` of parameter `name`: a ParameterError; a plain string states a rule in English."""
    raise ParameterError(name, value, allowed if isinstance(allowed, Allowed) else Allowed("rule", rule=allowed))


@functools.cache  # check_int runs in the per-step path (step_stats): build each range once
def integers(low: int, high: float = math.inf, high_name: str = "") -> Range:
    return Range(low, high, integer=True, high_name=high_name)


def check_int(name: str, value: Any, low: int, high: float = math.inf, high_name: str = "") -> int:
    """`value` as an int in [low, high], or a ValueError naming the parameter, the value and the range."""
    return integers(low, high, high_name).check(name, value)


# -------------------------------------------------------------------------------------------------- the table


class Strategies(Enum):
    """The lanes a parameter means something for."""

    ALL = "all"
    SAMPLING = "sampling"  # do_sample=true
    BEAM = "beam"  # num_beams > 1
    SINGLE_ROW = "greedy, sampling"  # not beam search

    def include(self, do_sample: bool, num_beams: int) -> bool:
        if self is Strategies.SAMPLING:
            return do_sample
        if self is Strategies.BEAM:
            return num_beams > 1
        if self is Strategies.SINGLE_ROW:
            return num_beams == 1
        return True

    @property
    def requirement(self) -> str | None:
        """What the value must be on a lane this parameter does not apply to; None: anything, it is ignored
        there (the beam parameters: a lane's config carries them only when it searches beams)."""
        return {
            Strategies.SAMPLING: "unset unless do_sample=true (it applies to sample: lanes only)",
            Strategies.SINGLE_ROW: "none on a beam lane (beams stop on eos and length)",
        }.get(self)


@dataclass(frozen=True)
class Parameter:
    name: str  # Hugging Face GenerationConfig name (= LaneSpec attribute)
    kind: str  # "bool" | "int" | "float" | "choice" | "text" (strings) | "ids" | "id_lists" | "biases" (below)
    meaning: str  # one line
    default: Any = None  # LaneSpec's default; None = unset (the parameter does nothing)
    range: Range | None = None  # "int" and "float"
    choices: tuple[Any, ...] = ()  # "choice"
    off: Any = None  # processors: the value that builds no processor, as in transformers
    order: int | None = None  # processors: position in transformers' default processor order
    applies_to: Strategies = Strategies.ALL
    hf: str = "GenerationConfig"  # the transformers class it follows (a logits processor, a stopping criterion)
    # ... or, for a llama.cpp sampler, the llama.cpp function whose semantics it follows
    follows: str = "transformers"  # "transformers" | "llama.cpp" | "entropix" (Branchpoint's thresholds)
    stage: str | None = None  # a companion row: the processor (its turning-on row's name) it configures
    activates: bool = False  # a companion that turns its stage on by itself when set (presence_penalty)
    in_generation_config: bool = True  # a GenerationConfig key (seed is not)
    hf_default: Any = None  # what GenerationConfig assumes when a generation_config.json leaves the key out
    # the window's lane editor
    step: float = 1
    decimals: int = 0
    editor_max: float | None = None  # spin boxes need finite ends: an infinite end shows as +-editor_max
    unset_label: str = ""  # shown at one below the range's low end, which then stands for "unset"

    @property
    def is_processor(self) -> bool:
        return self.order is not None

    @property
    def hf_name(self) -> str:
        """What it follows: a GenerationConfig key, a transformers logits processor or stopping criterion, or a
        llama.cpp sampler."""
        if self.follows != "transformers":
            return f"{self.follows} {self.hf}"
        return f"GenerationConfig.{self.name}" if self.hf == "GenerationConfig" else self.hf

    @property
    def hf_link(self) -> str:
        if self.follows != "transformers":
            return LLAMA_CPP_SAMPLING if self.follows == "llama.cpp" else ENTROPIX
        page = HF_PAGES.get(self.hf, "internal/generation_utils")  # logits processors, stopping criteria
        return f"{HF_DOCS}{page}#transformers.{self.hf}"

    def allowed(self) -> str:
        """The allowed values in words (without the "unset" a None default also allows)."""
        return self.allowed_values().describe()

    def allowed_values(self) -> Allowed:
        """The allowed values as data (without the "unset" a None default also allows)."""
        if self.range is not None:
            return Allowed.within(self.range)
        if self.kind in ("bool", "choice"):
            return Allowed(self.kind, choices=self.choices)
        if self.kind == "text":
            return Allowed("texts")
        return Allowed("rule", rule=LIST_KINDS[self.kind])  # token ids and their lists: worded in English

    def accepts(self, value: Any) -> bool:
        if self.range is not None:
            return self.range.contains(value)
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":  # by type too: 1 is not True
            return any(type(value) is type(choice) and value == choice for choice in self.choices)
        if not isinstance(value, tuple | list):
            return False
        if self.kind == "ids":
            return all(_is_token_id(token) for token in value)
        if self.kind == "id_lists":
            return all(_is_id_sequence(sequence) for sequence in value)
        if self.kind == "biases":
            return all(isinstance(pair, tuple | list) and len(pair) == 2 and _is_id_sequence(pair[0])
                       and _is_number(pair[1]) and math.isfinite(pair[1]) for pair in value)
        return all(isinstance(s, str) and s for s in value)

    def check(self, value: Any) -> Any:
        """`value` (an int or float for numbers), or a ValueError naming the parameter, value and range."""
        if self.range is not None:
            return self.range.check(self.name, value)
        if not self.accepts(value):
            fail(self.name, value, self.allowed_values())
        return value

    def is_set(self, value: Any) -> bool:
        """Set to something that does anything: not unset, not the off value, not the default."""
        if self.kind in LIST_KINDS:
            return bool(value) and canonical(self, value) != canonical(self, self.default)
        return value is not None and not (_is_number(value) and value == self.off) and value != self.default


# The list kinds: what they allow, in words. In a run file and a generation_config.json they are JSON lists
# (sequence_bias as transformers' list form, [[ids], bias] pairs); a LaneSpec holds them as tuples.
LIST_KINDS = {
    "text": "a list of non-empty strings",
    "ids": "a list of token ids (integers >= 0)",
    "id_lists": "a list of non-empty lists of token ids",
    "biases": "a list of [non-empty list of token ids, finite float] pairs",
}


def _is_token_id(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_) and value >= 0


def _is_id_sequence(value: Any) -> bool:
    return isinstance(value, tuple | list) and len(value) > 0 and all(_is_token_id(token) for token in value)


def canonical(p: Parameter, value: Any) -> Any:
    """A list kind's value as nested tuples of plain values (what a LaneSpec holds), anything else as is."""
    if p.kind not in LIST_KINDS or value is None:
        return value
    if p.kind in ("text", "ids"):
        return tuple(item if isinstance(item, str) else int(item) for item in value)
    if p.kind == "id_lists":
        return tuple(tuple(int(token) for token in sequence) for sequence in value)
    return tuple((tuple(int(token) for token in ids), float(bias)) for ids, bias in value)


def as_json(p: Parameter, value: Any) -> Any:
    """A value as a run file and a generation_config.json hold it (tuples as lists)."""
    if p.kind not in LIST_KINDS or value is None:
        return value
    if p.kind == "id_lists":
        return [list(sequence) for sequence in value]
    if p.kind == "biases":
        return [[list(ids), bias] for ids, bias in value]
    return list(value)


PARAMETERS: tuple[Parameter, ...] = (  # in the editor's order
    Parameter(
        "do_sample", "bool", "Draw the next token at random from the processed distribution (seeded, so runs "
        "repeat) instead of taking the most likely one; the sampling parameters apply only when it is on.",
        default=False, hf_default=False,
    ),
    Parameter(
        "num_beams", "int", "Beam search: keep this many partial sequences and extend the best-scoring ones "
        "(1 = no beam search; not with do_sample).",
        default=1, range=integers(1), hf_default=1, editor_max=32,
    ),
    Parameter(
        "temperature", "float", "Divide the logits by this before the softmax: below 1 sharpens the "
        "distribution, above 1 flattens it.",
        range=Range(0.0, low_open=True), off=1.0, order=8, applies_to=Strategies.SAMPLING,
        hf="TemperatureLogitsWarper", hf_default=1.0, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "top_k", "int", "Keep only the k most likely tokens (all tokens tied with the k-th too).",
        range=integers(0), off=0, order=10, applies_to=Strategies.SAMPLING,
        hf="TopKLogitsWarper", hf_default=50, editor_max=200_000,
    ),
    Parameter(
        "top_p", "float", "Nucleus sampling: keep the smallest set of most likely tokens whose probabilities "
        "add up to at least top_p.",
        range=Range(0.0, 1.0), off=1.0, order=11, applies_to=Strategies.SAMPLING, hf="TopPLogitsWarper",
        hf_default=1.0, step=0.01, decimals=3,
    ),
    Parameter(
        "min_p", "float", "Drop the tokens whose probability is below min_p times the top token's probability.",
        range=Range(0.0, 1.0), off=0.0, order=12, applies_to=Strategies.SAMPLING, hf="MinPLogitsWarper",
        step=0.01, decimals=3,
    ),
    Parameter(
        "typical_p", "float", "Locally typical sampling: keep the tokens whose surprisal is closest to the "
        "entropy until their probabilities add up to typical_p.",
        range=Range(0.0, 1.0, low_open=True), off=1.0, order=13, applies_to=Strategies.SAMPLING,
        hf="TypicalLogitsWarper", hf_default=1.0, step=0.01, decimals=3,
    ),
    Parameter(
        "repetition_penalty", "float", "Make the tokens already in the prompt or the output less likely: "
        "positive logits are divided by it, negative ones multiplied.",
        range=Range(0.0, low_open=True), off=1.0, order=1, hf="RepetitionPenaltyLogitsProcessor",
        hf_default=1.0, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "no_repeat_ngram_size", "int", "Forbid any n-gram of this size from appearing twice (prompt included).",
        range=integers(0), off=0, order=4, hf="NoRepeatNGramLogitsProcessor",
        hf_default=0, editor_max=64,
    ),
    Parameter(
        "min_new_tokens", "int", "Suppress the end-of-sequence tokens until this many tokens are generated.",
        range=integers(0), off=0, order=6, hf="MinNewTokensLengthLogitsProcessor", editor_max=4096,
    ),
    Parameter(
        "epsilon_cutoff", "float", "Truncation sampling: drop the tokens whose probability is below epsilon_cutoff.",
        range=Range(0.0, 1.0, high_open=True), off=0.0, order=14,
        applies_to=Strategies.SAMPLING, hf="EpsilonLogitsWarper", hf_default=0.0, step=0.0001, decimals=4,
    ),
    Parameter(
        "eta_cutoff", "float", "Eta sampling: drop the tokens whose probability is below min(eta_cutoff, "
        "sqrt(eta_cutoff) * exp(-entropy)).",
        range=Range(0.0, 1.0, high_open=True), off=0.0, order=15,
        applies_to=Strategies.SAMPLING, hf="EtaLogitsWarper", hf_default=0.0, step=0.0001, decimals=4,
    ),
    Parameter(
        "suppress_tokens", "ids", "Never produce these token ids (their scores become -inf).",
        default=(), order=7, hf="SuppressTokensLogitsProcessor",
    ),
    Parameter(
        "bad_words_ids", "id_lists", "Forbid these token sequences: the last token of each is banned where the "
        "tokens before it were just produced (a single id is always banned; an eos id alone is not).",
        default=(), order=5, hf="NoBadWordsLogitsProcessor",
    ),
    Parameter(
        "sequence_bias", "biases", "Add a bias to the score of the last token of each sequence where the tokens "
        "before it were just produced (a single id: always).",
        default=(), order=0, hf="SequenceBiasLogitsProcessor",
    ),
    Parameter(
        "frequency_penalty", "float", "Subtract frequency_penalty times the number of times a token occurs in the "
        "penalty window (plus presence_penalty once if it occurs) from its logit.",
        range=Range(), off=0.0, order=2, hf="llama_sampler_init_penalties", follows="llama.cpp",
        in_generation_config=False, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "presence_penalty", "float", "Subtract this from the logit of every token that occurs in the penalty window "
        "(with frequency_penalty, in one llama.cpp penalties stage).",
        range=Range(), off=0.0, stage="frequency_penalty", activates=True, hf="llama_sampler_init_penalties",
        follows="llama.cpp", in_generation_config=False, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "penalty_last_n", "int", "The penalty window: the last penalty_last_n ids of prompt and output that "
        "repetition_penalty, frequency_penalty and presence_penalty look at (unset: all of them).",
        range=integers(1), hf="llama_sampler_init_penalties", follows="llama.cpp", in_generation_config=False,
        editor_max=1_000_000, unset_label="all",
    ),
    Parameter(
        "dry_multiplier", "float", "DRY (don't repeat yourself): penalise a token that would extend a sequence "
        "already in the text by dry_multiplier * dry_base^(length - dry_allowed_length).",
        range=Range(0.0), off=0.0, order=3, hf="llama_sampler_init_dry", follows="llama.cpp",
        in_generation_config=False, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "dry_base", "float", "DRY: the base of the penalty's exponential growth with the repeated length.",
        default=1.75, range=Range(1.0), stage="dry_multiplier", hf="llama_sampler_init_dry", follows="llama.cpp",
        in_generation_config=False, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "dry_allowed_length", "int", "DRY: repeated sequences up to this length are not penalised.",
        default=2, range=integers(0), stage="dry_multiplier", hf="llama_sampler_init_dry", follows="llama.cpp",
        in_generation_config=False, editor_max=1000,
    ),
    Parameter(
        "dry_penalty_last_n", "int", "DRY: how many of the last ids it scans for repeats (-1: all of them, 0: "
        "none, which turns DRY off).",
        default=-1, range=integers(-1), stage="dry_multiplier", hf="llama_sampler_init_dry", follows="llama.cpp",
        in_generation_config=False, editor_max=1_000_000,
    ),
    Parameter(
        "dry_sequence_breakers", "text", "DRY: a repeat does not extend across these strings.",
        default=("\n", ":", "\"", "*"), stage="dry_multiplier", hf="llama_sampler_init_dry", follows="llama.cpp",
        in_generation_config=False,
    ),
    Parameter(
        "top_n_sigma", "float", "Keep the tokens whose logit is within top_n_sigma standard deviations (of the "
        "finite logits) of the largest logit.",
        range=Range(0.0), off=0.0, order=16,
        applies_to=Strategies.SAMPLING, hf="llama_sampler_init_top_n_sigma", follows="llama.cpp",
        in_generation_config=False, step=0.1, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "xtc_probability", "float", "XTC (exclude top choices): with this probability per step, drop every token "
        "at least as likely as xtc_threshold except the least likely of them.",
        range=Range(0.0, 1.0), off=0.0, order=17,
        applies_to=Strategies.SAMPLING, hf="llama_sampler_init_xtc", follows="llama.cpp",
        in_generation_config=False, step=0.05, decimals=2,
    ),
    Parameter(
        "xtc_threshold", "float", "XTC: the probability a top choice must reach to be excluded (above 0.5 XTC does "
        "nothing).",
        default=0.1, range=Range(0.0, 1.0), stage="xtc_probability", applies_to=Strategies.SAMPLING,
        hf="llama_sampler_init_xtc", follows="llama.cpp", in_generation_config=False, step=0.01, decimals=2,
    ),
    Parameter(
        "mirostat", "int", "Mirostat: keep the text's surprise near mirostat_tau by truncating each step with a "
        "running threshold mu (1: version 1, 2: version 2; 0: off).",
        range=integers(0, 2), off=0, order=18, applies_to=Strategies.SAMPLING,
        hf="llama_sampler_init_mirostat", follows="llama.cpp", in_generation_config=False,
    ),
    Parameter(
        "mirostat_tau", "float", "Mirostat: the target surprise in bits (mu starts at twice it).",
        default=5.0, range=Range(0.0), stage="mirostat", applies_to=Strategies.SAMPLING,
        hf="llama_sampler_init_mirostat", follows="llama.cpp", in_generation_config=False, step=0.1, decimals=2,
        editor_max=20.0,
    ),
    Parameter(
        "mirostat_eta", "float", "Mirostat: the learning rate of mu.",
        default=0.1, range=Range(0.0), stage="mirostat", applies_to=Strategies.SAMPLING,
        hf="llama_sampler_init_mirostat", follows="llama.cpp", in_generation_config=False, step=0.01, decimals=3,
        editor_max=1.0,
    ),
    Parameter(
        "dynatemp_range", "float", "Dynamic temperature: a temperature between temperature - dynatemp_range and "
        "temperature + dynatemp_range, higher where the distribution's entropy is higher (in place of "
        "temperature).",
        range=Range(0.0), off=0.0, order=9, applies_to=Strategies.SAMPLING, hf="llama_sampler_init_temp_ext",
        follows="llama.cpp", in_generation_config=False, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "dynatemp_exponent", "float", "Dynamic temperature: the exponent applied to the normalised entropy.",
        default=1.0, range=Range(0.0), stage="dynatemp_range", applies_to=Strategies.SAMPLING,
        hf="llama_sampler_init_temp_ext", follows="llama.cpp", in_generation_config=False, step=0.1, decimals=2,
        editor_max=10.0,
    ),
    Parameter(
        "adaptive", "bool", "Adaptive sampling (entropix-style): each step takes the most likely token, samples, "
        "or samples wider (higher temperature, top-k) by the raw distribution's entropy and varentropy.",
        default=False, applies_to=Strategies.SAMPLING, hf="decoding/chain/adaptive.py", follows="entropix",
        in_generation_config=False,
    ),
    Parameter(
        "max_new_tokens", "int", "This lane's own limit on new tokens (unset: the run's max_new_tokens).",
        range=integers(1), hf="MaxLengthCriteria", editor_max=4096, unset_label="run's",
    ),
    Parameter(
        "stop_strings", "text", "Stop the lane as soon as its text contains one of these strings.",
        default=(), applies_to=Strategies.SINGLE_ROW, hf="StopStringCriteria",
    ),
    Parameter(
        "length_penalty", "float", "Beam search: a finished hypothesis scores sum(logprobs) / "
        "length^length_penalty; above 0 favours longer sequences, below 0 shorter ones.",
        default=1.0, range=Range(), applies_to=Strategies.BEAM, hf_default=1.0, step=0.1, decimals=2,
        editor_max=10.0,
    ),
    Parameter(
        "early_stopping", "choice", "Beam search: true stops when num_beams hypotheses are finished, false when "
        "no better one is likely, \"never\" when no better one can exist.",
        default=False, choices=(False, True, "never"), applies_to=Strategies.BEAM, hf_default=False,
    ),
    Parameter(
        "num_return_sequences", "int", "Beam search: how many finished hypotheses the lane returns (at most "
        "num_beams).",
        default=1, range=integers(1), applies_to=Strategies.BEAM, hf_default=1, editor_max=32,
    ),
    Parameter(
        "seed", "int", "Seed of this lane's own random generator: the same seed gives the same draws, whatever "
        "the other lanes do (unset: derived from the lane name and the run's seed).",
        range=integers(0), applies_to=Strategies.SAMPLING, hf="set_seed", in_generation_config=False,
        editor_max=2**31 - 1, unset_label="auto",
    ),
)

BY_NAME: dict[str, Parameter] = {p.name: p for p in PARAMETERS}
PROCESSORS: tuple[Parameter, ...] = tuple(sorted((p for p in PARAMETERS if p.is_processor), key=lambda p: p.order))
# transformers' order in GenerationMixin._get_logits_processor: penalties and constraints first, then (only
# when do_sample) the warpers; llama.cpp's penalties and DRY beside transformers' penalty, its samplers after
# transformers' warpers (dynamic temperature in temperature's place), mirostat (which draws) last
PROCESSOR_ORDER: tuple[str, ...] = tuple(p.name for p in PROCESSORS)
# llama.cpp's default sampler order (common_params_sampling.samplers: penalties; dry; top_n_sigma; top_k;
# typical_p; top_p; min_p; xtc; temperature), transformers' constraints first (llama.cpp's logit bias comes
# first too), epsilon and eta after min_p, mirostat last (llama.cpp then applies temperature and mirostat only)
LLAMA_CPP_ORDER: tuple[str, ...] = (
    "sequence_bias", "no_repeat_ngram_size", "bad_words_ids", "min_new_tokens", "suppress_tokens",
    "repetition_penalty", "frequency_penalty", "dry_multiplier", "top_n_sigma", "top_k", "typical_p", "top_p",
    "min_p", "epsilon_cutoff", "eta_cutoff", "xtc_probability", "temperature", "dynatemp_range", "mirostat",
)
# a lane's processor_order may name one of these instead of listing its processors
ORDER_PRESETS: dict[str, tuple[str, ...]] = {"transformers": PROCESSOR_ORDER, "llama.cpp": LLAMA_CPP_ORDER}
# the companion rows of each processor with several parameters
COMPANIONS: dict[str, tuple[Parameter, ...]] = {
    p.name: tuple(c for c in PARAMETERS if c.stage == p.name) for p in PROCESSORS
}
# what transformers' GenerationConfig assumes for the keys a generation_config.json leaves out
GENERATION_CONFIG_DEFAULTS: dict[str, Any] = {p.name: p.hf_default for p in PARAMETERS if p.in_generation_config}


def parameter(name: str) -> Parameter:
    return BY_NAME[name]


# ------------------------------------------------------------------------------------ which processors run


def is_active(config: Mapping[str, Any], name: str) -> bool:
    """Whether a GenerationConfig-style `config` turns processor `name` on: set (or a companion that turns it on
    set), not at its off value, and on a lane it applies to (the warpers only under do_sample, as in
    transformers)."""
    row = BY_NAME[name]
    turning_on = [row, *(c for c in COMPANIONS.get(name, ()) if c.activates)]
    if not any(_turns_on(p, config.get(p.name)) for p in turning_on):
        return False
    return row.applies_to.include(bool(config.get("do_sample")), config.get("num_beams", 1))


def _turns_on(p: Parameter, value: Any) -> bool:
    if p.kind in LIST_KINDS:
        return bool(value)
    return value is not None and not (_is_number(value) and value == p.off)


def active_processors(config: Mapping[str, Any], order: Sequence[str] | None = None) -> list[str]:
    """Names of the processors `config` turns on, in `order` (default: transformers' order). An order may name
    inactive processors (they are skipped) but must name every active one, each once.

    >>> from decoding.chain.parameters import active_processors
    >>> active_processors({"do_sample": True, "top_p": 0.9, "temperature": 0.7, "min_p": 0.0})
    ['temperature', 'top_p']
    >>> active_processors({"do_sample": False, "top_p": 0.9, "repetition_penalty": 1.2})  # warpers need do_sample
    ['repetition_penalty']
    >>> active_processors({"do_sample": True, "top_p": 0.9, "temperature": 0.7}, order=["top_p", "temperature"])
    ['top_p', 'temperature']
    """
    active = [name for name in PROCESSOR_ORDER if is_active(config, name)]
    if "dynatemp_range" in active and "temperature" in active:  # llama.cpp's temp_ext: temperature is its centre
        active.remove("temperature")
    if order is None:
        return active
    order = list(ORDER_PRESETS.get(order, order)) if isinstance(order, str) else list(order)
    unknown = [name for name in order if name not in PROCESSOR_ORDER]
    if unknown or len(set(order)) != len(order):
        fail("processor_order", order, f"{' or '.join(ORDER_PRESETS)}, or distinct names among "
             f"{', '.join(PROCESSOR_ORDER)}")
    missing = [name for name in active if name not in order]
    if missing:
        fail("processor_order", order, f"an order naming every active processor (missing {', '.join(missing)})")
    chain = [name for name in order if name in active]
    if "mirostat" in chain and chain[-1] != "mirostat":
        fail("processor_order", order, "mirostat last (it draws the token, as in llama.cpp)")
    return chain


def order_preset(config: Mapping[str, Any], order: Sequence[str] | None) -> str | None:
    """The preset whose order a lane's chain follows ("transformers", "llama.cpp"), or None for a custom one:
    what a view shows for a lane's order. A chain that both presets order alike is "transformers".

    >>> from decoding.chain.parameters import order_preset
    >>> config = {"do_sample": True, "temperature": 0.7, "top_k": 40}
    >>> order_preset(config, None), order_preset(config, ["top_k", "temperature"])
    ('transformers', 'llama.cpp')
    >>> order_preset({"do_sample": True, "top_p": 0.9, "top_k": 40}, ["top_p", "top_k"]) is None
    True
    """
    chain = active_processors(config, order)
    return next((name for name, preset in ORDER_PRESETS.items() if active_processors(config, preset) == chain), None)


def check_companions(config: Mapping[str, Any]) -> None:
    """A companion parameter set to anything but its default needs its processor on: a ParameterError naming both
    (dry_base=2.0 without dry_multiplier)."""
    for stage, companions in COMPANIONS.items():
        if is_active(config, stage):
            continue
        for c in companions:
            value = config.get(c.name)
            if not c.activates and value is not None and c.is_set(canonical(c, value)):
                fail(c.name, as_json(c, value), f"its default ({json.dumps(as_json(c, c.default))}) unless {stage} "
                     "is set: it configures that processor")


def lane_help(width: int = 100) -> str:
    """The parameters a lane spec may set, for the command line's help: name, allowed values, off value and
    the lanes it applies to, then its meaning."""
    indent = " " * (2 + max(len(p.name) for p in PARAMETERS) + 2)
    blocks = []
    for p in PARAMETERS:
        facts = [p.allowed()]
        if p.is_processor:
            facts.append(f"off: {json.dumps(p.off)}")
        if p.applies_to is not Strategies.ALL:
            facts.append(f"{p.applies_to.value} lanes only")
        head = f"  {p.name:<{len(indent) - 4}}  {'; '.join(facts)}"
        blocks.append(head + "\n" + textwrap.fill(p.meaning, width, initial_indent=indent, subsequent_indent=indent))
    return "\n".join(blocks)
