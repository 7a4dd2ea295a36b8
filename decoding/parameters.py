"""The lane parameters: one row per strategy parameter of a LaneSpec, and the one validator of numbers.

Every rule about a parameter lives in its row: its type and allowed range, the value that builds no processor
(as in transformers), its place in transformers' processor order, the strategies it means something for, what
it does, the transformers name it follows and what the window's editor needs to show it. LaneSpec validation,
CLI lane parsing, the processors' construction, the window's lane editor, the CLI's help and
docs/json-format.md (a test compares them) all read this table.

Names are Hugging Face `GenerationConfig` names, except `seed`: transformers seeds one global generator
(`set_seed`), Branchpoint gives each sampled lane its own.
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
HF_PAGES = {"GenerationConfig": "main_classes/text_generation", "set_seed": "internal/trainer_utils"}


# ----------------------------------------------------------------------------------------------- validation


def _is_number(value: Any) -> bool:
    numeric = isinstance(value, int | float | np.integer | np.floating)
    return numeric and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class Range:
    """An interval of numbers; an infinite end is always open. `high_name` names a bound that comes from
    another parameter (shown as "num_beams=4").

    >>> from decoding.parameters import Range
    >>> Range(0.0, 1.0, low_open=True).check("typical_p", 0.95)
    0.95
    >>> Range(0.0, 1.0, low_open=True).check("typical_p", 0.0)
    Traceback (most recent call last):
    ...
    decoding.parameters.ParameterError: invalid typical_p=0.0: allowed a float in (0, 1]
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
    `choices`), "texts" (a list of non-empty strings) or "rule" (any other rule, worded in English in `rule`).
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
    kind: str  # "bool" | "int" | "float" | "choice" | "text" (a list of strings)
    meaning: str  # one line
    default: Any = None  # LaneSpec's default; None = unset (the parameter does nothing)
    range: Range | None = None  # "int" and "float"
    choices: tuple[Any, ...] = ()  # "choice"
    off: Any = None  # processors: the value that builds no processor, as in transformers
    order: int | None = None  # processors: position in transformers' default processor order
    processor_range: Range | None = None  # processors: the processor's own range, when narrower than `range`
    applies_to: Strategies = Strategies.ALL
    hf: str = "GenerationConfig"  # the transformers class it follows (a logits processor, a stopping criterion)
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
        """What it follows in transformers: a GenerationConfig key, a logits processor or stopping criterion."""
        return f"GenerationConfig.{self.name}" if self.hf == "GenerationConfig" else self.hf

    @property
    def hf_link(self) -> str:
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
        return Allowed("texts")

    def accepts(self, value: Any) -> bool:
        if self.range is not None:
            return self.range.contains(value)
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":  # by type too: 1 is not True
            return any(type(value) is type(choice) and value == choice for choice in self.choices)
        return isinstance(value, tuple | list) and all(isinstance(s, str) and s for s in value)

    def check(self, value: Any) -> Any:
        """`value` (an int or float for numbers), or a ValueError naming the parameter, value and range."""
        if self.range is not None:
            return self.range.check(self.name, value)
        if not self.accepts(value):
            fail(self.name, value, self.allowed_values())
        return value

    def check_for_processor(self, value: Any) -> Any:
        """What the processor's constructor accepts (TopK and NoRepeatNGram need a value that is on)."""
        return (self.processor_range or self.range).check(self.name, value)

    def is_set(self, value: Any) -> bool:
        """Set to something that does anything: not unset, not the off value, not the default."""
        if self.kind == "text":
            return bool(value)
        return value is not None and not (_is_number(value) and value == self.off) and value != self.default


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
        range=Range(0.0, low_open=True), off=1.0, order=3, applies_to=Strategies.SAMPLING,
        hf="TemperatureLogitsWarper", hf_default=1.0, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "top_k", "int", "Keep only the k most likely tokens (all tokens tied with the k-th too).",
        range=integers(0), off=0, order=4, processor_range=integers(1), applies_to=Strategies.SAMPLING,
        hf="TopKLogitsWarper", hf_default=50, editor_max=200_000,
    ),
    Parameter(
        "top_p", "float", "Nucleus sampling: keep the smallest set of most likely tokens whose probabilities "
        "add up to at least top_p.",
        range=Range(0.0, 1.0), off=1.0, order=5, applies_to=Strategies.SAMPLING, hf="TopPLogitsWarper",
        hf_default=1.0, step=0.01, decimals=3,
    ),
    Parameter(
        "min_p", "float", "Drop the tokens whose probability is below min_p times the top token's probability.",
        range=Range(0.0, 1.0), off=0.0, order=6, applies_to=Strategies.SAMPLING, hf="MinPLogitsWarper",
        step=0.01, decimals=3,
    ),
    Parameter(
        "typical_p", "float", "Locally typical sampling: keep the tokens whose surprisal is closest to the "
        "entropy until their probabilities add up to typical_p.",
        range=Range(0.0, 1.0, low_open=True), off=1.0, order=7, applies_to=Strategies.SAMPLING,
        hf="TypicalLogitsWarper", hf_default=1.0, step=0.01, decimals=3,
    ),
    Parameter(
        "repetition_penalty", "float", "Make the tokens already in the prompt or the output less likely: "
        "positive logits are divided by it, negative ones multiplied.",
        range=Range(0.0, low_open=True), off=1.0, order=0, hf="RepetitionPenaltyLogitsProcessor",
        hf_default=1.0, step=0.05, decimals=2, editor_max=10.0,
    ),
    Parameter(
        "no_repeat_ngram_size", "int", "Forbid any n-gram of this size from appearing twice (prompt included).",
        range=integers(0), off=0, order=1, processor_range=integers(1), hf="NoRepeatNGramLogitsProcessor",
        hf_default=0, editor_max=64,
    ),
    Parameter(
        "min_new_tokens", "int", "Suppress the end-of-sequence tokens until this many tokens are generated.",
        range=integers(0), off=0, order=2, hf="MinNewTokensLengthLogitsProcessor", editor_max=4096,
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
# when do_sample) the warpers
PROCESSOR_ORDER: tuple[str, ...] = tuple(p.name for p in PROCESSORS)
# what transformers' GenerationConfig assumes for the keys a generation_config.json leaves out
GENERATION_CONFIG_DEFAULTS: dict[str, Any] = {p.name: p.hf_default for p in PARAMETERS if p.in_generation_config}


def parameter(name: str) -> Parameter:
    return BY_NAME[name]


# ------------------------------------------------------------------------------------ which processors run


def is_active(config: Mapping[str, Any], name: str) -> bool:
    """Whether a GenerationConfig-style `config` turns processor `name` on: set, not at its off value, and
    on a lane it applies to (the warpers only under do_sample, as in transformers)."""
    row = BY_NAME[name]
    value = config.get(name)
    if value is None or (_is_number(value) and value == row.off):
        return False
    return row.applies_to.include(bool(config.get("do_sample")), config.get("num_beams", 1))


def active_processors(config: Mapping[str, Any], order: Sequence[str] | None = None) -> list[str]:
    """Names of the processors `config` turns on, in `order` (default: transformers' order). An order may name
    inactive processors (they are skipped) but must name every active one, each once.

    >>> from decoding.parameters import active_processors
    >>> active_processors({"do_sample": True, "top_p": 0.9, "temperature": 0.7, "min_p": 0.0})
    ['temperature', 'top_p']
    >>> active_processors({"do_sample": False, "top_p": 0.9, "repetition_penalty": 1.2})  # warpers need do_sample
    ['repetition_penalty']
    >>> active_processors({"do_sample": True, "top_p": 0.9, "temperature": 0.7}, order=["top_p", "temperature"])
    ['top_p', 'temperature']
    """
    active = [name for name in PROCESSOR_ORDER if is_active(config, name)]
    if order is None:
        return active
    order = list(order)
    unknown = [name for name in order if name not in PROCESSOR_ORDER]
    if unknown or len(set(order)) != len(order):
        fail("processor_order", order, f"distinct names among {', '.join(PROCESSOR_ORDER)}")
    missing = [name for name in active if name not in order]
    if missing:
        fail("processor_order", order, f"an order naming every active processor (missing {', '.join(missing)})")
    return [name for name in order if name in active]


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
