"""What the lane editor shows for each strategy parameter: widget kind, range, step, "off" value and tooltip.

Qt-free so it can be tested on its own. Ranges are what the widgets allow; the real validation
(cross-parameter rules such as "sampling warpers need do_sample") stays in `decoding.spec.LaneSpec`, whose
ValueError the editor shows as a visible message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoding.spec import SAMPLING_WARPERS, LaneSpec


@dataclass(frozen=True)
class Field:
    name: str  # Hugging Face GenerationConfig name (= LaneSpec attribute)
    kind: str  # "bool" | "int" | "float" | "choice" | "text"
    tooltip: str
    minimum: float = 0
    maximum: float = 0
    step: float = 1
    decimals: int = 0
    off: Any = None  # the value that means "not applied"; shown when the spec leaves the parameter unset
    choices: tuple[str, ...] = ()
    special_text: str = ""  # what a spin box shows at its minimum, when that minimum means "unset"

    @property
    def needs_sampling(self) -> bool:
        return self.name in SAMPLING_WARPERS or self.name == "seed"

    @property
    def needs_beams(self) -> bool:
        return self.name in BEAM_ONLY


BEAM_ONLY = frozenset({"length_penalty", "early_stopping", "num_return_sequences"})
EARLY_STOPPING_CHOICES = ("False", "True", "never")

FIELDS: tuple[Field, ...] = (
    Field("do_sample", "bool", "Draw the next token at random from the processed distribution (seeded, so "
          "runs repeat) instead of taking the most likely one. The sampling parameters below apply only "
          "when this is on.", off=False),
    Field("num_beams", "int", "Beam search: keep this many partial sequences and extend the best-scoring "
          "ones. 1 = no beam search. Cannot be combined with do_sample.", 1, 32, off=1),
    Field("temperature", "float", "Divide the logits by T before the softmax: below 1 sharpens the "
          "distribution, above 1 flattens it. 1.0 = off.", 0.01, 10.0, 0.05, 2, off=1.0),
    Field("top_k", "int", "Keep only the k most likely tokens. 0 = off.", 0, 200_000, off=0),
    Field("top_p", "float", "Nucleus sampling: keep the smallest set of most likely tokens whose "
          "probabilities add up to at least p. 1.0 = off.", 0.0, 1.0, 0.01, 3, off=1.0),
    Field("min_p", "float", "Drop tokens whose probability is below min_p times the top token's probability. "
          "0 = off.", 0.0, 1.0, 0.01, 3, off=0.0),
    Field("typical_p", "float", "Locally typical sampling: keep the tokens whose surprise is closest to the "
          "distribution's entropy until their probability reaches typical_p. 1.0 = off.", 0.001, 1.0, 0.01, 3,
          off=1.0),
    Field("repetition_penalty", "float", "Make tokens already in the prompt or output less likely: positive "
          "logits are divided by this, negative ones multiplied. 1.0 = off.", 0.01, 10.0, 0.05, 2, off=1.0),
    Field("no_repeat_ngram_size", "int", "Forbid any n-gram of this size from appearing twice. 0 = off.",
          0, 64, off=0),
    Field("min_new_tokens", "int", "Suppress the end-of-sequence token until this many tokens are generated. "
          "0 = off.", 0, 4096, off=0),
    Field("max_new_tokens", "int", "This lane's own limit on new tokens. run's = the max new tokens set next "
          "to the prompt.", 0, 4096, off=0, special_text="run's"),
    Field("stop_strings", "text", "Stop this lane as soon as its text contains one of these strings. Separate "
          "several with |; write a newline as \\n. Empty = none.", off=""),
    Field("length_penalty", "float", "Beam search: a hypothesis scores sum(logprob) / length^length_penalty. "
          "Above 0 favours longer sequences, below 0 shorter ones.", -10.0, 10.0, 0.1, 2, off=1.0),
    Field("early_stopping", "choice", "Beam search: True stops when num_beams hypotheses are finished; False "
          "stops when no better hypothesis is likely; never runs until no better one can exist.",
          off="False", choices=EARLY_STOPPING_CHOICES),
    Field("num_return_sequences", "int", "Beam search: how many finished hypotheses to return "
          "(at most num_beams).", 1, 32, off=1),
    Field("seed", "int", "Seed of this lane's own random generator: the same seed gives the same draws, and "
          "other lanes never change them. auto = derived from the lane name when the run starts.",
          -1, 2**31 - 1,
          off=-1, special_text="auto"),
)
FIELDS_BY_NAME = {f.name: f for f in FIELDS}


def field_applies(f: Field, do_sample: bool, num_beams: int) -> bool:
    """Whether the parameter means anything for this strategy (the editor disables the others)."""
    if f.needs_sampling:
        return do_sample
    if f.needs_beams:
        return num_beams > 1
    return True


def display_value(spec: LaneSpec, f: Field) -> Any:
    """The value a widget shows for the spec: its own value, or the field's off value when unset."""
    value = getattr(spec, f.name)
    if f.name == "early_stopping":
        return str(value)
    if f.name == "stop_strings":
        return format_stop_strings(value)
    return f.off if value is None else value


def parse_stop_strings(text: str) -> tuple[str, ...]:
    """'\\n\\n|END' → ('\\n\\n', 'END'): |-separated, \\n for a newline, empty parts dropped."""
    return tuple(part.replace("\\n", "\n") for part in text.split("|") if part)


def format_stop_strings(strings: tuple[str, ...]) -> str:
    return "|".join(s.replace("\n", "\\n") for s in strings)


def spec_from_values(name: str, values: dict[str, Any], base: LaneSpec | None = None) -> LaneSpec:
    """Build a LaneSpec from widget values. Parameters that do not apply, or sit at their off value, are left
    unset (None), so the lane applies exactly what the user set. Raises ValueError (from LaneSpec) on invalid
    input."""
    do_sample = bool(values.get("do_sample", False))
    num_beams = int(values.get("num_beams", 1))
    kwargs: dict[str, Any] = {"do_sample": do_sample, "num_beams": num_beams}
    for f in FIELDS:
        if f.name in kwargs or f.name not in values:
            continue
        kwargs[f.name] = _spec_value(f, values[f.name], do_sample, num_beams)
    for f in FIELDS:
        if kwargs.get(f.name) is None and f.name in BEAM_ONLY:
            kwargs[f.name] = _BEAM_DEFAULTS[f.name]
    if base is not None:
        return base.with_changes(name=name, **kwargs)
    return LaneSpec(name=name, **kwargs)


_BEAM_DEFAULTS = {"length_penalty": 1.0, "early_stopping": False, "num_return_sequences": 1}


def _spec_value(f: Field, value: Any, do_sample: bool, num_beams: int) -> Any:
    if not field_applies(f, do_sample, num_beams):
        return None
    if f.name == "early_stopping":
        return {"True": True, "False": False}.get(value, value)
    if f.name == "stop_strings":
        return parse_stop_strings(value)
    if f.name in BEAM_ONLY:
        return value
    return None if value == f.off else value


def describe(spec: LaneSpec, seed: bool = True) -> str:
    """A short strategy summary for headers and lists, e.g. 'beam 4', 'sample T 1.3 · top-p 0.9 · seed 0'."""
    if spec.is_beam:
        parts = [f"beam {spec.num_beams}"]
        if spec.length_penalty != 1.0:
            parts.append(f"lp {spec.length_penalty:g}")
    elif spec.do_sample:
        parts = ["sample"]
        parts += [f"{label} {getattr(spec, attr):g}" for attr, label in _SHORT
                  if getattr(spec, attr) is not None]
        if seed and spec.seed is not None:
            parts.append(f"seed {spec.seed}")
    else:
        parts = ["greedy"]
    if spec.repetition_penalty not in (None, 1.0):
        parts.append(f"rep {spec.repetition_penalty:g}")
    if spec.no_repeat_ngram_size:
        parts.append(f"no-repeat {spec.no_repeat_ngram_size}")
    if spec.max_new_tokens:
        parts.append(f"max {spec.max_new_tokens}")
    if spec.stop_strings:
        parts.append(f"stop {format_stop_strings(spec.stop_strings)}")
    parts += [f"forced @{step}" for step in sorted(spec.forced)]
    if spec.branch is not None:
        parts.append(f"branch of {spec.branch.parent} @ {spec.branch.step}")
    return " · ".join(parts)


_SHORT = (("temperature", "T"), ("top_k", "top-k"), ("top_p", "top-p"), ("min_p", "min-p"), ("typical_p",
"typical"))
