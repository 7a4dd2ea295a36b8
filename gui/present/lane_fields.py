"""What the lane editor shows for each strategy parameter: widget kind, range, step, "off" value and tooltip,
all read from the parameter table (`decoding.parameters`).

Qt-free so it can be tested on its own. Ranges are what the widgets allow; the real validation
(cross-parameter rules such as "sampling warpers need do_sample") stays in `decoding.spec.LaneSpec`, whose
ValueError the editor shows as a visible message.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from decoding.parameters import PARAMETERS, Allowed, Parameter, ParameterError, Strategies, parameter
from decoding.spec import LaneSpec, format_stop_strings, parse_stop_strings
from gui.i18n import QT_TRANSLATE_NOOP, translate


@dataclass(frozen=True)
class Field:
    name: str  # Hugging Face GenerationConfig name (= LaneSpec attribute)
    kind: str  # "bool" | "int" | "float" | "choice" | "text"
    minimum: float = 0
    maximum: float = 0
    step: float = 1
    decimals: int = 0
    off: Any = None  # the value that means "not applied"; shown when the spec leaves the parameter unset
    choices: tuple[str, ...] = ()
    special_text: str = ""  # what a spin box shows at its minimum, when that minimum means "unset"
    applies_to: Strategies = Strategies.ALL

    @property
    def tooltip(self) -> str:
        """What the parameter does and allows, in the interface's language (read when shown: the translation
        is loaded after this module)."""
        return _tooltip(parameter(self.name))

    @property
    def needs_sampling(self) -> bool:
        return self.applies_to is Strategies.SAMPLING

    @property
    def needs_beams(self) -> bool:
        return self.applies_to is Strategies.BEAM


def _field(p: Parameter) -> Field:
    """The editor's widget for one row of the parameter table."""
    off = p.off if p.is_processor else p.default
    minimum = maximum = 0.0
    if p.range is not None:
        # An open end is reachable in the widget, so typing it (temperature 0) gets LaneSpec's refusal in words
        # instead of silently snapping to the nearest allowed value.
        minimum = -p.editor_max if p.range.low == -math.inf else p.range.low
        maximum = p.editor_max if p.range.high == math.inf else p.range.high
        if p.unset_label:  # one below the range stands for "unset"
            minimum = off = p.range.low - 1
    if p.kind == "text":
        off = format_stop_strings(p.default)
    return Field(
        name=p.name,
        kind=p.kind,
        minimum=minimum,
        maximum=maximum,
        step=p.step,
        decimals=p.decimals,
        off=str(off) if p.kind == "choice" else off,
        choices=tuple(str(choice) for choice in p.choices),
        special_text=p.unset_label,
        applies_to=p.applies_to,
    )


def _tooltip(p: Parameter) -> str:
    parts = [translate("parameters", p.meaning)]
    if p.is_processor:
        parts.append(translate("lane_fields", "{off} = off.").format(off=json.dumps(p.off)))
    if p.unset_label:
        parts.append(translate("lane_fields", "{unset} = unset.").format(unset=translate("lane_fields", p.unset_label)))
    if p.kind == "text":
        parts.append(translate("lane_fields", "Separate several with |; write a newline as \\n. Empty = none."))
    parts.append(translate("lane_fields", "Allowed: {allowed}. Follows transformers' {name}.").format(
        allowed=allowed_text(p.allowed_values()), name=p.hf_name))
    return " ".join(parts)


# The rules decoding/ states in English rather than as a range or a list (decoding.parameters
# Strategies.requirement, decoding.spec's rules), for the catalogue: the window looks each one up by its
# English text; a rule the catalogue lacks is shown as it is.
RULES = (
    QT_TRANSLATE_NOOP("allowed", "unset unless do_sample=true (it applies to sample: lanes only)"),
    QT_TRANSLATE_NOOP("allowed", "none on a beam lane (beams stop on eos and length)"),
    QT_TRANSLATE_NOOP("allowed", "false when num_beams > 1 (beam sampling is not supported)"),
    QT_TRANSLATE_NOOP("allowed", "a non-empty string"),
)


def allowed_text(allowed: Allowed) -> str:
    """What a parameter allows (decoding.parameters.Allowed), in the interface's language."""
    numbers = allowed.range
    if allowed.kind == "integer" and numbers.high == math.inf:
        return translate("allowed", "an integer >= {low}").format(low=numbers.low_text)
    if allowed.kind == "integer":
        return translate("allowed", "an integer in [{low}, {high}]").format(low=numbers.low_text,
                                                                           high=numbers.high_text)
    if allowed.kind == "float" and numbers.low == -math.inf and numbers.high == math.inf:
        return translate("allowed", "a finite float")
    if allowed.kind == "float":
        left, right = numbers.brackets
        return translate("allowed", "a float in {left}{low}, {high}{right}").format(
            left=left, low=numbers.low_text, high=numbers.high_text, right=right)
    if allowed.kind == "bool":
        return translate("allowed", "true or false")
    if allowed.kind == "choice":
        shown = allowed.shown_choices
        return translate("allowed", "{first} or {last}").format(first=", ".join(shown[:-1]), last=shown[-1])
    if allowed.kind == "texts":
        return translate("allowed", "a list of non-empty strings")
    return translate("allowed", allowed.rule)


def error_text(error: Exception | str) -> str:
    """A refusal from decoding/ in the interface's language, worded from its fields (a ParameterError: "invalid
    top_p=1.5: allowed a float in [0, 1]"), anything else as it is."""
    if not isinstance(error, ParameterError):
        return str(error)
    return translate("allowed", "invalid {name}={value}: allowed {allowed}").format(
        name=error.parameter, value=repr(error.value), allowed=allowed_text(error.allowed))


# The parameters' meanings (decoding.parameters) for the catalogue, as the lane editor's tooltips show them
# (tests/test_i18n.py checks every meaning is here, so an edited meaning is not left untranslated).
MEANINGS = (
    QT_TRANSLATE_NOOP("parameters", "Draw the next token at random from the processed distribution (seeded, so runs "
                      "repeat) instead of taking the most likely one; the sampling parameters apply "
                      "only when it is on."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: keep this many partial sequences and extend the best-scoring ones "
                      "(1 = no beam search; not with do_sample)."),
    QT_TRANSLATE_NOOP("parameters", "Divide the logits by this before the softmax: below 1 sharpens the distribution,"
                      " above 1 flattens it."),
    QT_TRANSLATE_NOOP("parameters", "Keep only the k most likely tokens (all tokens tied with the k-th too)."),
    QT_TRANSLATE_NOOP("parameters", "Nucleus sampling: keep the smallest set of most likely tokens whose "
                      "probabilities add up to at least top_p."),
    QT_TRANSLATE_NOOP("parameters", "Drop the tokens whose probability is below min_p times the top token's "
                      "probability."),
    QT_TRANSLATE_NOOP("parameters", "Locally typical sampling: keep the tokens whose surprisal is closest to the "
                      "entropy until their probabilities add up to typical_p."),
    QT_TRANSLATE_NOOP("parameters", "Make the tokens already in the prompt or the output less likely: positive logits"
                      " are divided by it, negative ones multiplied."),
    QT_TRANSLATE_NOOP("parameters", "Forbid any n-gram of this size from appearing twice (prompt included)."),
    QT_TRANSLATE_NOOP("parameters", "Suppress the end-of-sequence tokens until this many tokens are generated."),
    QT_TRANSLATE_NOOP("parameters", "This lane's own limit on new tokens (unset: the run's max_new_tokens)."),
    QT_TRANSLATE_NOOP("parameters", "Stop the lane as soon as its text contains one of these strings."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: a finished hypothesis scores sum(logprobs) / length^length_penalty;"
                      " above 0 favours longer sequences, below 0 shorter ones."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: true stops when num_beams hypotheses are finished, false when no "
                      "better one is likely, \"never\" when no better one can exist."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: how many finished hypotheses the lane returns (at most num_beams)."),
    QT_TRANSLATE_NOOP("parameters", "Seed of this lane's own random generator: the same seed gives the same draws, "
                      "whatever the other lanes do (unset: derived from the lane name and the run's "
                      "seed)."),
)


FIELDS: tuple[Field, ...] = tuple(_field(p) for p in PARAMETERS if p.editor)  # rows the editor shows yet
FIELDS_BY_NAME = {f.name: f for f in FIELDS}
BEAM_ONLY = frozenset(f.name for f in FIELDS if f.needs_beams)
EARLY_STOPPING_CHOICES = FIELDS_BY_NAME["early_stopping"].choices


def field_applies(f: Field, do_sample: bool, num_beams: int) -> bool:
    """Whether the parameter means anything for this strategy (the editor disables the others)."""
    return f.applies_to.include(do_sample, num_beams)


def display_value(spec: LaneSpec, f: Field) -> Any:
    """The value a widget shows for the spec: its own value, or the field's off value when unset."""
    value = getattr(spec, f.name)
    if f.name == "early_stopping":
        return str(value)
    if f.name == "stop_strings":
        return format_stop_strings(value)
    return f.off if value is None else value


def spec_from_values(name: str, values: dict[str, Any], base: LaneSpec | None = None) -> LaneSpec:
    """Build a LaneSpec from widget values. Parameters that do not apply take their LaneSpec default, those at
    their off value are left unset (None), so the lane applies exactly what the user set. Raises ValueError
    (from LaneSpec) on invalid input."""
    do_sample = bool(values.get("do_sample", False))
    num_beams = int(values.get("num_beams", 1))
    kwargs: dict[str, Any] = {"do_sample": do_sample, "num_beams": num_beams}
    for f in FIELDS:
        if f.name in kwargs:
            continue
        if not field_applies(f, do_sample, num_beams):
            kwargs[f.name] = parameter(f.name).default
        elif f.name in values:
            kwargs[f.name] = _spec_value(f, values[f.name])
    if base is not None:
        return base.with_changes(name=name, **kwargs)
    return LaneSpec(name=name, **kwargs)


def _spec_value(f: Field, value: Any) -> Any:
    if f.name == "early_stopping":
        return {"True": True, "False": False}.get(value, value)
    if f.name == "stop_strings":
        return parse_stop_strings(value)
    if f.needs_beams:
        return value
    return None if value == f.off else value


def describe(spec: LaneSpec, seed: bool = True) -> str:
    """A short strategy summary for headers and lists, e.g. 'beam 4', 'sample T 1.3 · top-p 0.9 · seed 0'."""
    if spec.is_beam:
        parts = [translate("lane_fields", "beam {beams}").format(beams=spec.num_beams)]
        if spec.length_penalty != 1.0:
            parts.append(f"lp {spec.length_penalty:g}")
    elif spec.do_sample:
        parts = [translate("lane_fields", "sample")]
        parts += [f"{label} {getattr(spec, attr):g}" for attr, label in _SHORT
                  if getattr(spec, attr) is not None]
        if seed and spec.seed is not None:
            parts.append(translate("lane_fields", "seed {seed}").format(seed=spec.seed))
    else:
        parts = [translate("lane_fields", "greedy")]
    if spec.repetition_penalty not in (None, 1.0):
        parts.append(f"rep {spec.repetition_penalty:g}")
    if spec.no_repeat_ngram_size:
        parts.append(f"no-repeat {spec.no_repeat_ngram_size}")
    if spec.max_new_tokens:
        parts.append(translate("lane_fields", "max {count}").format(count=spec.max_new_tokens))
    if spec.stop_strings:
        parts.append(translate("lane_fields", "stop {strings}").format(strings=format_stop_strings(spec.stop_strings)))
    parts += [translate("lane_fields", "forced @{step}").format(step=step) for step in sorted(spec.forced)]
    if spec.branch is not None:
        branch = translate("lane_fields", "branch of {parent} @ {step}")
        parts.append(branch.format(parent=spec.branch.parent, step=spec.branch.step))
    return " · ".join(parts)


_SHORT = (("temperature", "T"), ("top_k", "top-k"), ("top_p", "top-p"), ("min_p", "min-p"), ("typical_p",
"typical"))


# What the spin boxes show for "unset" (decoding.parameters' unset_label), for the catalogue.
UNSET_LABELS = (QT_TRANSLATE_NOOP("lane_fields", "run's"), QT_TRANSLATE_NOOP("lane_fields", "auto"))

# The presets' titles (decoding.spec.PRESETS), for the catalogue; shown through preset_title.
PRESET_TITLES = (QT_TRANSLATE_NOOP("presets", "Greedy"), QT_TRANSLATE_NOOP("presets", "Beam 4"),
                 QT_TRANSLATE_NOOP("presets", "Top-k 50"), QT_TRANSLATE_NOOP("presets", "Top-p 0.9"),
                 QT_TRANSLATE_NOOP("presets", "Temperature 1.3"), QT_TRANSLATE_NOOP("presets", "Min-p 0.05"),
                 QT_TRANSLATE_NOOP("presets", "creative"), QT_TRANSLATE_NOOP("presets", "precise"))


def preset_title(title: str) -> str:
    """A preset's title (a key of PRESETS) as the interface language says it."""
    return translate("presets", title)
